"""[3] Which of two equivalent MPI calls to make, where one library measured slower.

Every collective is issued nonblocking, so it runs MPI's nonblocking algorithms,
which are tuned apart from the blocking ones. Where a library's nonblocking call
measured far slower than its blocking call, and an equivalent call did not, mpicoll
makes the equivalent call (``python -m mpicoll info`` lists the choices; the
measurements are in docs/performance.md).
"""

from __future__ import annotations

from .._start import is_mpich

# MPICH's Ireduce_scatter_block measured 5-9x its blocking call from 512 KiB to 2 MiB of
# input per rank (2 and 4 ranks; 1.0-1.2x at 256 KiB and from 3 MiB), where Ireduce_scatter
# with equal counts stays within 1.05x; below 256 KiB the block call is the cheaper one
_SLOW_BLOCK = (256 << 10, 3 << 20)


def block_reduce_scatter(nbytes: int) -> bool:
    """Whether a reduce_scatter of equal counts, ``nbytes`` of input per rank, is
    ``Ireduce_scatter_block``: not on MPICH between 256 KiB and 3 MiB, where
    ``Ireduce_scatter`` with equal counts is the call."""
    return not (_SLOW_BLOCK[0] <= nbytes < _SLOW_BLOCK[1] and is_mpich())


def describe() -> list[str]:
    """The choices made on this MPI, for ``python -m mpicoll info``."""
    if not is_mpich():
        return ["none (no nonblocking call measured slower than its equivalent)"]
    lo, hi = (f"{n >> 10} KiB" if n < 1 << 20 else f"{n >> 20} MiB" for n in _SLOW_BLOCK)
    return [f"reduce_scatter with equal counts from {lo} to {hi} as Ireduce_scatter, not "
            "Ireduce_scatter_block (5-9x slower from 512 KiB to 2 MiB)",
            "all_to_all: a rank's own block of 4 KiB or more copied locally, not sent "
            "through Ialltoallv (1.5-2x slower)"]
