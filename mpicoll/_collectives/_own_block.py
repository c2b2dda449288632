"""[2] This rank's own block in an exchange, and Alltoallv's arguments around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._start import is_mpich
from ._pack import displs

# MPICH's Alltoallv sends a rank's block to itself through its message path, which
# measured 1.5-2x slower than Alltoall for blocks of 1 MiB (and slower from 4 KiB up);
# copying that block locally instead makes Alltoallv as fast as Alltoall. Open MPI
# copies it locally already.
SELF_COPY_BYTES = 4096


def own_blocks(send: Any, recv: Any, own: tuple[int, int, int]) -> tuple[Any, Any]:
    """(receive part, send part) of this rank's own block, ``own`` = (send offset,
    receive offset, count) in elements of the contiguous arrays ``send`` and ``recv``
    (as bytes where their dtypes differ: a staged view holds another's bytes)."""
    s0, r0, c = own
    r, s = recv.reshape(-1)[r0:r0 + c], send.reshape(-1)[s0:s0 + c]
    return (r, s) if r.dtype == s.dtype else (r.view(np.uint8), s.view(np.uint8))


def own_block_copy(send: Any, recv: Any, own: tuple[int, int, int]) -> tuple[Any, Any, Any]:
    """:func:`own_blocks` as (destination, index, source), to copy with
    ``destination[index] = source``."""
    r, s = own_blocks(send, recv, own)
    return r, Ellipsis, s


def alltoallv_args(me: int, send: np.ndarray, scounts: list[int], recv: np.ndarray,
                   rcounts: list[int], dt: Any) -> tuple[tuple, tuple[int, int, int] | None]:
    """Alltoallv's buffer specs, and where this rank's own block lies when MPI is better
    left out of it: (send offset, receive offset, count), to copy locally
    (:func:`own_blocks`); None otherwise. Counts and data are flat elements."""
    sdispls, rdispls = displs(scounts), displs(rcounts)
    own = None
    c = scounts[me]
    if c * send.itemsize >= SELF_COPY_BYTES and is_mpich():
        own = sdispls[me], rdispls[me], c
        scounts, rcounts = list(scounts), list(rcounts)
        scounts[me] = rcounts[me] = 0
    return ([send, (scounts, sdispls), dt], [recv, (rcounts, rdispls), dt]), own


def own_copy(send: np.ndarray, recv: np.ndarray,
             own: tuple[int, int, int] | None) -> Callable[[], None] | None:
    """The local copy of this rank's own block (:func:`alltoallv_args`), or None."""
    if own is None:
        return None
    pair = own_blocks(send, recv, own)
    return lambda: np.copyto(*pair)


def then(first: Callable[[], None] | None,
         second: Callable[[], None] | None) -> Callable[[], None] | None:
    """Run ``first`` then ``second`` at completion (either may be None)."""
    if first is None or second is None:
        return first or second

    def both() -> None:
        first()
        second()
    return both


def flat_copy(dst: Any, src: Any) -> tuple[Any, Any, Any]:
    """The copy of ``src`` into ``dst`` (contiguous, of one size) as (destination, index,
    source), flat (as bytes where their dtypes differ: a staged view holds another's)."""
    d, s = dst.reshape(-1), src.reshape(-1)
    if d.dtype != s.dtype:
        d, s = d.view(np.uint8), s.view(np.uint8)
    return d, Ellipsis, s
