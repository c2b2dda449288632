"""[2] barrier -> messages whose tags carry its signature, or Ibarrier;
monitored_barrier -> tagged messages via rank 0.

On a group that sends direct messages (2 to 8 ranks, :mod:`._direct`), where their tags
carry signatures (:mod:`._signature`; the check on), a barrier is a message of no data
from every rank to every other: a rank leaves once it has one from each peer, so once
every rank has entered. Each tag says "barrier", so a rank whose peer is in another
collective at the same point raises SignatureMismatch there, on both sides, where MPI's
barrier and the peer's call would wait on each other until the watchdog ended the job:
a rank that skipped a collective, then called barrier, is caught at the barrier.
Elsewhere, MPI's Ibarrier; also on Open MPI, whose shared-memory single-copy path (CMA,
Open MPI 5.0) writes a message longer than the receive it meets, above its eager limit
(4 KiB), past the receive buffer: a barrier's receive of nothing that met another
collective's message would overwrite memory, where MPI's barrier waits.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import _core_loader, _departed, _tags
from .._env import DEFAULT_TIMEOUT, as_seconds
from .._mpi import MPI
from .._process_group import resolve
from .._start import is_open_mpi
from .._wait import test_until
from .._work import Work
from ..errors import CollectiveTimeout, torch_flavoured
from . import _direct
from ._call import issue, quick_allowed
from ._signature import bits, signature
from ._sizes import exchange, sizes_on

# what a barrier's messages are sent from and received into: no data (a longer message,
# another collective's, is cut short: an MPI error, then its tag compared all the same)
_NONE = np.zeros(1, np.uint8)
# the quick entry a group keeps its barrier's messages under (the same for every group:
# each keeps its own)
_HIT = ("barrier",)


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
        return _barrier(name, pg, async_op)
    work = _barrier(name, pg, True)
    assert work is not None
    work.wait(timeout)
    return None


def _barrier(name: str, pg: Any, async_op: bool) -> Work | None:
    """The barrier's messages where the group sends them and their tags carry its
    signature; else MPI's Ibarrier. A blocking barrier's messages are kept by the group
    (one set: nothing of them depends on the call) and run in the compiled core, as a
    repeated call's are (:func:`._direct.run_kept`)."""
    if not _direct.chosen(pg) or not bits() or not sizes_on() or is_open_mpi():
        return issue(name, pg, "Barrier", (), None, async_op)
    core = None
    if not async_op and quick_allowed():  # (checked mode first compares every call)
        core = _core_loader.module or _core_loader.load()
        if core is not None and not _departed.left and _direct.run_kept(
                core, name, pg, _HIT, _NONE, None, None):
            return None
    n = pg._size
    nothing = [0] * n
    d = _direct.plan(pg, nothing, nothing, exchange(name, pg, nothing, nothing, "barrier"),
                     signature(name, ""))
    bufs = (_NONE, d.zeros, _NONE, d.zeros, MPI.BYTE)
    if core is None or _departed.left:
        return _direct.issue(name, pg, d, (), bufs, None, None, async_op, sig=_no_arguments)
    # (the group keeps none yet: made, run this once by the Python path, kept)
    key = _direct.plan_key(_HIT, _NONE, None)
    reqs, posts = d.prepare(pg.direct, bufs)
    sts = [MPI.Status() for _ in reqs]
    plan = _direct.new_plan(core, _HIT, reqs, sts, d, MPI.BYTE, None, (), posts=posts)
    _direct.issue(name, pg, d, (), bufs, None, None, False, started=plan)
    _direct.put_back(pg.kept, key, plan)
    return None


def _no_arguments() -> dict[str, Any]:
    """A barrier's signature for checked mode: the collective alone."""
    return {}


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
