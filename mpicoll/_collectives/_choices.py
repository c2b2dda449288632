"""[3] Which of two equivalent MPI calls to make, where one library measured slower.

Every collective is issued nonblocking, so it runs MPI's nonblocking algorithms,
which are tuned apart from the blocking ones. Where a library's nonblocking call
measured far slower than its blocking call, and an equivalent call did not, mpicoll
makes the equivalent call (``python -m mpicoll info`` lists the choices; the
figures are beside each choice below).
"""

from __future__ import annotations

import os

from .._start import is_mpich, is_open_mpi

# MPICH's Ireduce_scatter_block measured 5-9x its blocking call from 512 KiB to 2 MiB of
# input per rank (2 and 4 ranks; 1.0-1.2x at 256 KiB and from 3 MiB), where Ireduce_scatter
# with equal counts stays within 1.05x; below 256 KiB the block call is the cheaper one
_SLOW_BLOCK = (256 << 10, 3 << 20)


def block_reduce_scatter(nbytes: int) -> bool:
    """Whether a reduce_scatter of equal counts, ``nbytes`` of input per rank, is
    ``Ireduce_scatter_block``: not on MPICH between 256 KiB and 3 MiB, where
    ``Ireduce_scatter`` with equal counts is the call."""
    return not (_SLOW_BLOCK[0] <= nbytes < _SLOW_BLOCK[1] and is_mpich())


# Iallgather and Iallgatherv measured 1.3-5.6x their blocking calls on Open MPI from 16 KiB
# to 4 MiB a block (2 ranks); the same gather made as Ialltoallv, each rank sending its one
# block to every rank, was 1.01-1.14x the blocking Allgather from 4 KiB there, and
# 0.21-0.84x on MPICH from 64 KiB with the own block copied locally (1.2-1.8x below).
# Measured at 2 and 4 ranks only: Alltoallv sends P - 1 messages at once where Allgather's
# algorithms take log P or P - 1 steps, so the choice stops at 8 ranks. Per-rank block:
_GATHER_BY_ALLTOALLV = {"mpich": 64 << 10, "open mpi": 4 << 10}
_GATHER_MAX_RANKS = 8


def gather_by_alltoallv(total_bytes: int, nranks: int) -> bool:
    """Whether an all_gather of ``total_bytes`` in all (the same on every rank, so every
    rank makes the same call) over ``nranks`` ranks is made as ``Ialltoallv``."""
    if not 1 < nranks <= _GATHER_MAX_RANKS:
        return False
    least = _gather_threshold()
    return least is not None and total_bytes >= least * nranks


def _gather_threshold() -> int | None:
    return _GATHER_BY_ALLTOALLV["mpich"] if is_mpich() else \
        _GATHER_BY_ALLTOALLV["open mpi"] if is_open_mpi() else None


def describe() -> list[str]:
    """The choices made on this MPI, for ``python -m mpicoll info``."""
    gather = _gather_threshold()
    by_a2a = [] if gather is None else [
        f"all_gather of {gather >> 10} KiB or more a rank, up to {_GATHER_MAX_RANKS} ranks: "
        "Ialltoallv (each rank's block sent to every rank), not Iallgather(v) "
        + ("(1.3-5.6x slower)" if gather < 64 << 10 else
           "(own block copied locally; 1.2-4x faster)")]
    if is_open_mpi():
        from .._mpi import LIBNBC_CHOSEN  # lazy: importing mpicoll._mpi starts MPI

        for call, why in (("ireduce", "libnbc's default measured 1.3-3.1x the blocking "
                           "Reduce from 64 KiB"),
                          ("iallreduce", "libnbc's default in place measured 1.3-3.1x the "
                           "blocking Allreduce from 64 KiB")):
            var = f"coll_libnbc_{call}_algorithm"
            algorithm = (f"{LIBNBC_CHOSEN[call]}, chosen by mpicoll ({why})"
                         if call in LIBNBC_CHOSEN else "set by the user: " +
                         os.environ.get("OMPI_MCA_" + var, "(in a parameter file)"))
            by_a2a.append(f"{call[1:]}: Open MPI's I{call[1:]} algorithm ({var}) "
                          f"{algorithm}")
    if not is_mpich():
        return by_a2a or ["none (no nonblocking call measured slower than its equivalent)"]
    lo, hi = (f"{n >> 10} KiB" if n < 1 << 20 else f"{n >> 20} MiB" for n in _SLOW_BLOCK)
    return [f"reduce_scatter with equal counts from {lo} to {hi} as Ireduce_scatter, not "
            "Ireduce_scatter_block (5-9x slower from 512 KiB to 2 MiB)",
            "all_to_all: a rank's own block of 4 KiB or more copied locally, not sent "
            "through Ialltoallv (1.5-2x slower)", *by_a2a]
