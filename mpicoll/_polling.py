"""How a blocking call waits: how many Tests come before MPI's watched Wait.

Tests of one request before its watched wait: at most ~50-100 us of polling, which
MPI's own Wait would spend polling too; a job that hangs is still caught by the
monitor once the wait is registered. No Test when ranks outnumber their cores: MPI's
Wait then gives the core to a peer sooner than a Python loop of Tests does (4 ranks
on 2 cores: 64-byte all_reduce 35 us with MPI's Wait alone, 70 us after 200 Tests).
"""

from __future__ import annotations

import os
from typing import Any

from ._start import mpi

POLLS = 200
spin = range(POLLS)  # read by every blocking wait (``_wait.wait_requests``)
chosen = ""  # what tune() chose and why, for ``python -m mpicoll info``


def tune(world: Any) -> str:
    """Choose how many Tests come before a watched wait (collective over ``world``, at
    the default group's birth): ``MPICOLL_POLLS`` if set, else 0 when this node's ranks
    outnumber the cores they may run on, else :data:`POLLS`. Returns why, for ``info``."""
    global spin, chosen
    local = world.Split_type(mpi().COMM_TYPE_SHARED)
    try:
        cores = set().union(*local.allgather(_cores()))
        ranks = local.Get_size()
    finally:
        local.Free()
    raw = os.environ.get("MPICOLL_POLLS", "")
    if raw:
        try:
            n, why = int(raw), "MPICOLL_POLLS"
        except ValueError:
            raise ValueError(f"environment variable MPICOLL_POLLS={raw!r}: expected a "
                             "number of Tests") from None
    elif ranks > len(cores):
        n, why = 0, _crowd(ranks, len(cores))
    else:
        n, why = POLLS, _crowd(ranks, len(cores))
    spin = range(max(n, 0))
    chosen = f"{max(n, 0)} Tests before a monitored wait ({why})"
    return chosen


def _crowd(ranks: int, cores: int) -> str:
    return f"{ranks} rank{'s' * (ranks != 1)} on {cores} core{'s' * (cores != 1)} of this node"


def _cores() -> list[int]:
    """The cores this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))
