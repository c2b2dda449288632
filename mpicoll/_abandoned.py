"""Requests an error left running, and the memory they write: kept, never freed under them.

MPI writes into a receive's buffer until the request completes, whatever Python has
done with the call that posted it. Where a call raises with requests of its own still
running (data abandoned after counts that disagree; messages MPI left pending when it
failed a wait on others), those requests and what holds their buffers are kept for
the process's life in :data:`ABANDONED`, so that a late write lands in memory nobody
else owns, never in a freed tensor.
"""

from __future__ import annotations

from typing import Any

from ._mpi import MPI
from ._wait import wait_requests

# the data of calls whose counts disagreed, not waited for (Work._given_up, and a
# blocking call's wait: _collectives/_waits), and requests an error left running
# (settle): MPI may still write into their buffers, or never complete them, so the
# requests and buffers are kept for the process's life
ABANDONED: list[tuple] = []
_PENDING = MPI.ERR_PENDING


def running(reqs: list[Any]) -> list[Any]:
    """The requests of ``reqs`` that MPI has not completed (:func:`_unfinished`)."""
    return [r for r in reqs if _unfinished(r)]


def _unfinished(r: Any) -> bool:
    """Whether MPI has not completed request ``r`` (active, not null). A request that
    failed is complete: MPICH keeps one active, and asking about it raises again."""
    try:
        return bool(r) and not r.Get_status()
    except MPI.Exception:
        return False


def settle(reqs: list[Any], sts: list[Any], op: str, group: Any, seq: int,
           held: tuple) -> None:
    """After MPI failed a wait on point-to-point requests ``reqs`` (``sts``: their
    statuses): wait for those it left running or marked pending (MPI_ERR_PENDING),
    never the failed ones, so that none writes into its buffer after the call raised.
    MPICH reports a receive cut short at once, the others still running, and keeps the
    failed one active: a wait on a list holding it fails at once again. Those still
    running after a further failure or an interrupt are kept with ``held`` (the call's
    arguments and the caller's tensors) for the process's life."""
    def open_(k: int) -> bool:  # (MPI said pending, or has not completed it)
        return bool(reqs[k]) and (sts[k].Get_error() == _PENDING or _unfinished(reqs[k]))

    left: list[int] = []
    try:
        left = [k for k in range(len(reqs)) if open_(k)]
        while left:
            try:
                wait_requests([reqs[k] for k in left], op, group, seq, held[0],
                              statuses=[sts[k] for k in left])
                return
            except MPI.Exception:
                still = [k for k in left if open_(k)]
                if len(still) == len(left):  # (none completed: MPI's error is another)
                    break
                left = still
    except BaseException:  # (an interrupt: what may still run is kept)
        ABANDONED.append((reqs, held))
        raise
    if left:
        ABANDONED.append(([reqs[k] for k in left], held))
