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
from typing import Any, NamedTuple

from numpy import concatenate as _concatenate
from numpy import empty as _empty
from numpy import ndarray as _ndarray

from .. import _core_loader, _env
from .._adapter.views import QUICKERS
from .._mpi import MPI
from .._pending import pending as _pending
from ._large import INT_MAX

_address = MPI.buffer
_fromaddress = MPI.buffer.fromaddress
_SEQUENCES = (list, tuple)


class Layout(NamedTuple):
    """A list's memory for MPI, made once per call. The compiled core makes its own, the
    same fields in the same order (``mpicoll._core.Layout``, a tuple of named fields that
    it reads by index): this one is made where the core is not in use."""

    read_only: bool
    dtype: Any  # the tensors' numpy dtype
    start: int  # the lowest address of a tensor's memory
    end: int  # the highest address past a tensor's memory
    counts: list[int]  # each tensor's number of elements
    addresses: list[int]  # each tensor's address, -1 where it is empty
    arrays: list[Any]  # each tensor's numpy array
    end_to_end: bool  # in list order, as x.chunk(n) gives: one buffer, no displacements


def area(lay: Layout) -> Any:
    """The list's memory as one buffer, from the lowest address to the highest, owning
    none (made where used: a call whose messages are kept needs none)."""
    start = lay.start
    return _fromaddress(start, lay.end - start, lay.read_only)


def displs(lay: Layout) -> list[int]:
    """Each tensor's displacement from the lowest address, in elements."""
    start, size = lay.start, lay.dtype.itemsize
    return [(a - start) // size if a >= 0 else 0 for a in lay.addresses]


def apart(lay: Layout, a: Any) -> bool:
    """Whether the contiguous array ``a`` shares no memory with the list's tensors."""
    if not a.nbytes:
        return True
    lo = _address(a).address
    hi = lo + a.nbytes
    if hi <= lay.start or lay.end <= lo:
        return True
    return all(hi <= b or b + x.nbytes <= lo for b, x in zip(lay.addresses, lay.arrays, strict=True)
               if b >= 0)


def lists_apart(lay: Layout, other: Layout) -> bool:
    """Whether no tensor of one list shares memory with one of the other (answers for
    lists whose spans meet are kept: addresses and sizes decide it)."""
    if lay.end <= other.start or other.end <= lay.start:
        return True
    key = (lay.dtype.itemsize, *lay.counts, *lay.addresses, None, *other.counts,
           *other.addresses)
    found = _APART.get(key)
    if found is None:
        if len(_APART) >= _APART_MAX:
            _APART.clear()
        found = _APART[key] = all(apart(other, a) for a in lay.arrays)
    return found


_APART: dict[tuple, bool] = {}
_APART_MAX = 1024


def layout(xs: Any, n: int, writable: bool) -> Layout | None:
    """The :data:`Layout` of a list of ``n`` tensors that the quick path serves:
    C-contiguous numpy arrays or quick views (writable if ``writable``), of one dtype,
    not all empty, each at a whole number of elements from the lowest, and, where
    written, apart from one another; else None (the general path)."""
    s_ = _env._settings
    if s_ is None or s_.check or _pending or type(xs) not in _SEQUENCES or len(xs) != n:
        return None
    core = _core_loader.module or _core_loader.load()
    if core is not None:  # (the same, in C: mpicoll/_core.c, layout)
        return core.layout(xs, writable, QUICKERS, INT_MAX)
    return layout_here(xs, writable)


def layout_here(xs: Any, writable: bool) -> Layout | None:
    """:func:`layout` of the list or tuple ``xs``, made here (the compiled core makes the
    same in C)."""
    arrays: list[Any] = []
    addrs: list[int] = []
    counts: list[int] = []
    dtype = None
    start = prev = first = -1  # the lowest address; where the previous non-empty tensor
    end = size = 0  # ends; the first one's address
    adjacent = ascending = owning = True
    for x in xs:
        if type(x) is _ndarray:
            f = x.flags
            # carray: C-contiguous, aligned and writeable, read in one attribute
            if not (f.carray if writable else f.c_contiguous):
                return None
            owning = owning and f.owndata
            a = x
        else:
            q = QUICKERS.get(type(x))
            a = q(x) if q is not None else None
            if a is None:
                return None
            owning = False
        if a.dtype is not dtype:  # (numpy's dtypes of one kind are usually one object)
            if dtype is None:
                dtype = a.dtype
                size = dtype.itemsize
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
        if addr != prev:
            if start < 0:
                start = first = addr
            else:
                adjacent = False
                if (addr - first) % size:  # not a whole number of elements apart
                    return None
                if addr < prev:
                    ascending = False
                    if addr < start:
                        start = addr
        prev = addr + nbytes
        if prev > end:
            end = prev
    if start < 0:
        return None
    if (end - start) // size > INT_MAX:
        return None
    if not adjacent:
        # written tensors must be apart: in increasing order they are, and numpy arrays
        # that each own their memory are unless two are one (one address twice)
        if writable and not ascending and not (
                owning and len(set(addrs)) == len(addrs)) and not _disjoint(counts, addrs, size):
            return None
    return Layout(not writable, dtype, start, end, counts, addrs, arrays, adjacent)


def _disjoint(counts: list[int], addrs: list[int], size: int) -> bool:
    """Whether the tensors at ``addrs`` of ``counts`` elements share no byte."""
    pieces = sorted((a, a + c * size) for c, a in zip(counts, addrs, strict=True) if c)
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
