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
    """
    name = "monitored_barrier"
    pg = resolve(group, name)
    if pg is None:
        return
    secs = as_seconds(timeout) if timeout is not None else (pg.timeout or DEFAULT_TIMEOUT)
    comm, tag = pg.comm, _tags.barrier()
    token = np.zeros(1, np.uint8)
    deadline = time.monotonic() + secs
    if pg.my_rank != 0:
        comm.Send([token, MPI.BYTE], dest=0, tag=tag)
        req = comm.Irecv([token, MPI.BYTE], source=0, tag=tag)
        _poll([req], deadline, lambda: f"{name}: rank 0 of the group (global "
              f"{pg.ranks[0]}) did not release the barrier within {secs} s")
        return
    bufs = [np.zeros(1, np.uint8) for _ in range(pg.nranks)]
    reqs = {r: comm.Irecv([bufs[r], MPI.BYTE], source=r, tag=tag) for r in range(1, pg.nranks)}
    missing: list[int] = []
    for r, req in reqs.items():
        if missing and not wait_all_ranks:
            break
        if not test_until(req.Test, deadline):
            missing.append(r)
    if missing:
        for r in reqs:
            if r in missing:
                reqs[r].Cancel()
        ranks = [pg.ranks[r] for r in missing]
        raise torch_flavoured(CollectiveTimeout)(
            f"{name}: rank(s) {ranks} (global) did not reach the barrier within {secs} s")
    for r in range(1, pg.nranks):
        comm.Send([token, MPI.BYTE], dest=r, tag=tag)


def _poll(reqs: list[Any], deadline: float, message: Any) -> None:
    for req in reqs:
        if not test_until(req.Test, deadline):
            raise torch_flavoured(CollectiveTimeout)(message())
