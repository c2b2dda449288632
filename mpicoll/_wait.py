"""Waiting for MPI requests: the one way mpicoll waits, watched by the monitor.

Every collective is issued as MPI's nonblocking variant, blocking calls included
(a blocking MPI collective never matches a nonblocking one, and torch code may
pass ``async_op=True`` on some ranks only), so every wait comes through here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import _env, _polling
from ._env import timeout_for
from ._mpi import MPI
from ._watched import watched
from .errors import CollectiveTimeout, torch_flavoured


def test_until(test: Callable[[], bool], deadline: float) -> bool:
    """Poll ``test`` until it is true (True) or ``deadline`` passes (False)."""
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(1e-4)
    return True


def wait_requests(reqs: list[Any], op: str, group: Any, seq: int, args: Any,
                  timeout: Any = None, status: Any = None, peer: int | None = None,
                  statuses: list[Any] | None = None) -> None:
    """Wait for ``reqs``: the one way mpicoll waits.

    With ``timeout`` (a caller's ``wait(timeout=...)``) it polls and raises
    :class:`CollectiveTimeout` on expiry, the operation left pending. Without,
    it blocks in MPI under the monitor's eye (group timeout, departed peers,
    signals). ``status`` receives a single request's status; ``statuses`` one per
    request, of point-to-point requests only (Testall and Waitall).
    """
    if statuses is not None:
        return _wait_all(reqs, op, group, seq, args, timeout, statuses)
    if timeout is not None:
        secs = _env.as_seconds(timeout)
        # each Test, never Testall, which MPICH 5.0 fails (MPI_ERR_IN_STATUS with every
        # status MPI_SUCCESS) on a persistent collective's request
        test = (lambda: reqs[0].Test(status)) if status is not None or len(reqs) == 1 else (
            lambda: all([r.Test() for r in reqs]))
        if not test_until(test, time.monotonic() + secs):
            raise torch_flavoured(CollectiveTimeout)(f"{op}: not completed within {secs:g} s")
        return
    if len(reqs) == 1:
        # a few Tests before the watched wait (_polling): a small message's peers are
        # usually a few microseconds away, and MPI's Wait (MPICH's measured ~1.5 us slower
        # than a Test loop at 2 ranks) and registering with the monitor cost more than that
        test = reqs[0].Test
        for _ in _polling.spin:
            if test(status):
                return
    elif len(reqs) == 2 and status is None:
        # the same for data beside its counts (_collectives/_sizes): each Test, never
        # Testall (see above); a completed request tests True again
        first, second = reqs[0].Test, reqs[1].Test
        for _ in _polling.spin:
            if first() and second():
                return
    token = watched.begin(op, group, seq, args, timeout_for(group), peer)
    try:
        if status is not None:
            reqs[0].Wait(status)
        elif len(reqs) == 1:
            reqs[0].Wait()
        else:
            MPI.Request.Waitall(reqs)
    finally:
        watched.end(token)


def _wait_all(reqs: list[Any], op: str, group: Any, seq: int, args: Any, timeout: Any,
              statuses: list[Any]) -> None:
    """:func:`wait_requests` of point-to-point requests whose statuses are read after
    (Testall and Waitall: a completed request tested again would lose its status)."""
    testall = MPI.Request.Testall
    if timeout is not None:
        secs = _env.as_seconds(timeout)
        if not test_until(lambda: testall(reqs, statuses), time.monotonic() + secs):
            raise torch_flavoured(CollectiveTimeout)(f"{op}: not completed within {secs:g} s")
        return
    for _ in _polling.spin:
        if testall(reqs, statuses):
            return
    token = watched.begin(op, group, seq, args, timeout_for(group))
    try:
        MPI.Request.Waitall(reqs, statuses)
    finally:
        watched.end(token)
