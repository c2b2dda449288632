"""[2] barrier -> Barrier / Ibarrier; monitored_barrier -> tagged messages via rank 0."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import _tags
from .._env import DEFAULT_TIMEOUT, as_seconds
from .._mpi import MPI
from .._process_group import resolve
from .._wait import test_until
from .._work import Work
from ..errors import CollectiveTimeout, torch_flavoured
from ._call import issue


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None,
            timeout: Any = None) -> Work | None:
    """Block until every rank of ``group`` has entered the barrier.

    Args:
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        async_op: return a :class:`Work` instead of blocking.
        device_ids: accepted for compatibility; unused.
        timeout: seconds or timedelta; :class:`CollectiveTimeout` on expiry.
    """
    name = "barrier"
    pg = resolve(group, name)
    if pg is None:
        return None
    if timeout is None or async_op:
        return issue(name, pg, "Barrier", (), None, async_op)
    work = issue(name, pg, "Barrier", (), None, True)
    assert work is not None
    work.wait(timeout)
    return None


def monitored_barrier(group: Any = None, timeout: Any = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not arrive within ``timeout``.

    Rank 0 of the group collects one message from every other rank, then
    releases them. On expiry rank 0 raises :class:`CollectiveTimeout` naming
    the first missing rank (every missing rank if ``wait_all_ranks``).

    Each message carries the number of the call (a member's calls on the group are
    counted alike), so a message of a call that timed out, arriving late, is set aside,
    never taken for the next call's; and no receive is left running after a timeout.
    """
    name = "monitored_barrier"
    pg = resolve(group, name)
    if pg is None:
        return
    secs = as_seconds(timeout) if timeout is not None else (pg.timeout or DEFAULT_TIMEOUT)
    pg.barriers += 1
    n, deadline = pg.barriers, time.monotonic() + secs
    token, tag = [np.array([n], np.int64), MPI.INT64_T], _tags.barrier()
    if pg.my_rank != 0:
        pg.comm.Send(token, dest=0, tag=tag)
        if not _arrives(pg.comm, 0, n, tag, deadline):
            raise torch_flavoured(CollectiveTimeout)(
                f"{name}: rank 0 of the group (global {pg.ranks[0]}) did not release the "
                f"barrier within {secs} s")
        return
    missing: list[int] = []
    for r in range(1, pg.nranks):
        if (wait_all_ranks or not missing) and not _arrives(pg.comm, r, n, tag, deadline):
            missing.append(r)
    if missing:
        ranks = [pg.ranks[r] for r in missing]
        raise torch_flavoured(CollectiveTimeout)(
            f"{name}: rank(s) {ranks} (global) did not reach the barrier within {secs} s")
    for r in range(1, pg.nranks):
        pg.comm.Send(token, dest=r, tag=tag)


def _arrives(comm: Any, peer: int, n: int, tag: int, deadline: float) -> bool:
    """Receive ``peer``'s message of call ``n`` (those of earlier calls, late, set aside)
    before ``deadline``; at the deadline, the receive cancelled and completed (MPI never
    writes into a buffer after the call has returned)."""
    got, status = np.zeros(1, np.int64), MPI.Status()
    while True:
        req = comm.Irecv([got, MPI.INT64_T], source=peer, tag=tag)
        try:
            arrived = test_until(req.Test, deadline)
        finally:  # (at the deadline, or interrupted)
            if req:
                req.Cancel()
                req.Wait(status)  # (cancelled, or the message came meanwhile: complete)
                arrived = not status.Is_cancelled()
        if not arrived:
            return False
        if got[0] >= n:
            return True
