"""[2] Where a list's tensors lie: one MPI buffer and displacements over their memory.

A list of separately allocated tensors (``[torch.empty(n) for _ in range(P)]``) is
handed to MPI where it lies, without a pack or an unpack: the buffer spans the lowest
to the highest address of the list, and each tensor is a (count, displacement) pair
in elements from the lowest. The v-collectives (``Allgatherv``, ``Alltoallv``) take
such pairs directly. MPI touches only the pairs' memory, never the gaps between them.
"""

from __future__ import annotations

from itertools import pairwise
from threading import get_ident as _ident
from typing import Any

from numpy import concatenate as _concatenate
from numpy import empty as _empty
from numpy import ndarray as _ndarray

from .. import _env
from .._adapter.views import QUICKERS
from .._mpi import MPI
from .._pending import pending as _pending
from ._large import INT_MAX

_address = MPI.buffer
_fromaddress = MPI.buffer.fromaddress
_SEQUENCES = (list, tuple)


class Layout:
    """A list's memory for MPI: ``buffer`` from ``start`` to ``end`` (addresses),
    ``counts`` and ``displs`` in elements of ``dtype``, ``arrays`` the tensors' numpy
    views; ``adjacent`` when they lie end to end in list order (``x.chunk(n)``)."""

    __slots__ = ("adjacent", "arrays", "buffer", "counts", "displs", "dtype", "end", "start")

    def __init__(self, buffer: Any, dtype: Any, start: int, end: int, counts: list[int],
                 displs: list[int], arrays: list[Any], adjacent: bool) -> None:
        self.buffer, self.dtype, self.start, self.end = buffer, dtype, start, end
        self.counts, self.displs, self.arrays, self.adjacent = counts, displs, arrays, adjacent

    def apart(self, a: Any) -> bool:
        """Whether the contiguous array ``a`` shares no memory with the list's tensors."""
        if not a.nbytes:
            return True
        lo = _address(a).address
        hi = lo + a.nbytes
        if hi <= self.start or self.end <= lo:
            return True
        size = self.dtype.itemsize
        return all(hi <= self.start + d * size or self.start + (d + c) * size <= lo
                   for c, d in zip(self.counts, self.displs, strict=True))

    def apart_from(self, other: Layout) -> bool:
        """Whether no tensor of this list shares memory with one of ``other``."""
        if self.end <= other.start or other.end <= self.start:
            return True
        return all(other.apart(a) for a in self.arrays)


def layout(xs: Any, n: int, writable: bool) -> Layout | None:
    """The :class:`Layout` of a list of ``n`` tensors that the quick path serves:
    C-contiguous numpy arrays or quick views (writable if ``writable``), of one dtype,
    not all empty, each at a whole number of elements from the lowest, and, where
    written, apart from one another; else None (the general path)."""
    s_ = _env._settings
    if s_ is None or s_.check or _pending or type(xs) not in _SEQUENCES or len(xs) != n:
        return None
    arrays: list[Any] = []
    addrs: list[int] = []
    counts: list[int] = []
    dtype = None
    start = prev = -1
    end = 0
    adjacent = ascending = True
    for x in xs:
        if type(x) is _ndarray:
            f = x.flags  # carray: C-contiguous, aligned and writeable, in one attribute
            if not (f.carray if writable else f.c_contiguous):
                return None
            a = x
        else:
            q = QUICKERS.get(type(x))
            a = q(x) if q is not None else None
            if a is None:
                return None
        if dtype is None:
            dtype = a.dtype
        elif a.dtype != dtype:
            return None
        arrays.append(a)
        counts.append(a.size)
        nbytes = a.nbytes
        if not nbytes:
            addrs.append(-1)
            continue
        addr = _address(a).address  # 0.1 us, where a.ctypes.data costs 1 us
        addrs.append(addr)
        if start < 0:
            start = addr
        elif addr != prev:  # (prev: where the previous non-empty one ends)
            adjacent = False
            if addr < prev:
                ascending = False
            if addr < start:
                start = addr
        prev = addr + nbytes
        if prev > end:
            end = prev
    if start < 0:
        return None
    size = dtype.itemsize
    if (end - start) // size > INT_MAX:
        return None
    displs = []
    for addr in addrs:
        if addr < 0:
            displs.append(0)
            continue
        off, rest = divmod(addr - start, size)
        if rest:
            return None
        displs.append(off)
    if writable and not ascending and not _disjoint(counts, displs):
        return None
    return Layout(_fromaddress(start, end - start, not writable), dtype, start, end, counts,
                  displs, arrays, adjacent)


def _disjoint(counts: list[int], displs: list[int]) -> bool:
    """Whether the (count, displacement) pieces share no element."""
    pieces = sorted((d, d + c) for c, d in zip(counts, displs, strict=True) if c)
    return all(a[1] <= b[0] for a, b in pairwise(pieces))


# (thread, dtype, elements) -> a staging buffer kept for the next call of that shape
_STAGES: dict[tuple[int, Any, int], Any] = {}
_STAGES_MAX = 16


def pack(lay: Layout) -> tuple[Any, tuple[int, Any, int]]:
    """The list's data packed into one flat buffer (one copy), and the key under which
    :func:`keep` keeps that buffer for this thread's next call of that size. A call that
    fails or is interrupted does not keep it: MPI may still use it (a pending Work's)."""
    total = sum(lay.counts)
    key = (_ident(), lay.dtype, total)
    stage = _STAGES.pop(key, None)
    if stage is None:
        stage = _empty(total, lay.dtype)
    _concatenate(lay.arrays, axis=None, out=stage)
    return stage, key


def keep(key: tuple[int, Any, int], stage: Any) -> None:
    """Keep ``stage`` (from :func:`pack`) for the next call, once MPI is done with it."""
    if len(_STAGES) >= _STAGES_MAX:
        _STAGES.clear()
    _STAGES[key] = stage
