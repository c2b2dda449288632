"""[2] Local argument checks, made before any communication.

Messages read ``"<op>: <argument> <problem>: expected <x>, got <y>"``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    byte_bounds = np.byte_bounds

from .._adapter import Buffer, as_buffer
from .._process_group import ProcessGroup
from ..errors import ArgumentTypeError as _Type
from ..errors import ArgumentValueError as _Value


def same_dtype(op: str, a: Buffer, b: Buffer, an: str, bn: str) -> None:
    """Both buffers have one logical dtype and live on one device."""
    if a.dtype != b.dtype:
        raise _Value(op, "dtype_mismatch", "{a} and {b} must have the same dtype: "
                     "{a} is {expected}, {b} is {got}", {"a": an, "b": bn},
                     expected=a.dtype, got=b.dtype)
    da, db = a.device, b.device
    if da != db:
        raise _Value(op, "device_mismatch", "{a} and {b} must be on the same device: "
                     "{a} is on {expected}, {b} is on {got}", {"a": an, "b": bn},
                     expected=da, got=db)


_INT = {int}


def split_sizes(op: str, sizes: Any, n: int, dim0: int, name: str, tname: str) -> list[int] | None:
    """Validate a split-size list; None or [] means an equal split."""
    if sizes is None or (hasattr(sizes, "__len__") and len(sizes) == 0):
        if dim0 % n:
            raise _Value(op, "indivisible", "dim 0 of {t} must be divisible by the group size "
                         "{expected} when {sizes} is not given, got {got}",
                         {"t": tname, "sizes": name}, expected=n, got=dim0)
        return None
    if (type(sizes) is list and len(sizes) == n and {*map(type, sizes)} == _INT
            and min(sizes) >= 0 and sum(sizes) == dim0):
        return sizes  # the common case, checked in one pass
    try:
        vals = [operator.index(s) for s in sizes]  # ints, never floats (as torch)
    except TypeError:
        bad = next((s for s in sizes if not _is_index(s)), sizes) \
            if hasattr(sizes, "__iter__") else sizes
        if bad is sizes:
            raise _Type(op, "type", "{arg} must be a list of ints, got {got!r}", {"arg": name},
                        got=sizes) from None
        raise _Type(op, "type", "{arg} must contain integers, got {got!r}", {"arg": name},
                    got=bad) from None
    for s, v in zip(sizes, vals, strict=True):
        if isinstance(s, bool):
            raise _Type(op, "type", "{arg} must contain integers, got {got!r}", {"arg": name},
                        got=s)
        if v < 0:
            raise _Value(op, "negative", "{arg} must be non-negative, got {got}",
                         {"arg": name}, got=vals)
    if len(vals) != n:
        raise _Value(op, "length", "{arg} must have one entry per rank: expected "
                     "{expected} {entries}, got {got}" + alone(n, len(vals)),
                     {"arg": name}, expected=n, entries="entry" if n == 1 else "entries",
                     got=len(vals))
    if sum(vals) != dim0:
        raise _Value(op, "split_sum", "{arg} must sum to dim 0 of {t}: expected "
                     "{expected}, got sum({vals}) = {got}", {"arg": name, "t": tname},
                     expected=dim0, vals=vals, got=sum(vals))
    return vals


def _is_index(x: Any) -> bool:
    try:
        operator.index(x)
    except TypeError:
        return False
    return True


def alone(n: int, wanted: int) -> str:
    """A hint for a list sized for more ranks than a group of ``n`` has, where the whole
    job is one process: the script was run without an MPI launcher."""
    from .._mpi import MPI  # lazy: importing it starts MPI, which `import mpicoll` must not

    if n != 1 or wanted <= 1 or MPI.COMM_WORLD.Get_size() != 1:
        return ""
    return (f". The job has 1 process: was the script started without an MPI launcher? "
            f"Run it as `mpiexec -n {wanted} python script.py`")


def self_block(op: str, scounts: list[int], rcounts: list[int], me: int, sname: str,
               rname: str) -> None:
    """What this rank sends to itself must be what it receives from itself."""
    if scounts[me] != rcounts[me]:
        raise _Value(op, "self_block", "this rank (group rank {me}) sends itself {expected} "
                     "and receives from itself {got}: {s} and {r} must match",
                     {"s": f"{sname}[{me}]", "r": f"{rname}[{me}]"}, me=me,
                     expected=scounts[me], got=rcounts[me])


def equal_split_sizes(op: str, src: Buffer, dst: Buffer) -> None:
    """Raise: without split sizes, input and output must be of one size (called on a
    mismatch; an equal split sends input.numel / P to each rank and receives
    output.numel / P from each, so a mismatch would leave output partly written)."""
    raise _Value(op, "numel_mismatch", "{out} and {inp} must have the same number of elements "
                 "when no split sizes are given: expected {out} to have {expected} elements "
                 "(as {inp}, shape {ishape}), got {got} ({out} shape {oshape})",
                 {"out": "output", "inp": "input"}, expected=src.numel, got=dst.numel,
                 ishape=tuple(src.shape), oshape=tuple(dst.shape))


def row_elems(op: str, a: Buffer, b: Buffer, an: str, bn: str) -> int:
    """Elements per index of dim 0, which both buffers must share."""
    sa, sb = a.shape, b.shape
    if len(sa) == 1 and len(sb) == 1:
        return 1
    for s, name in ((sa, an), (sb, bn)):
        if not s:
            raise _Value(op, "zero_dim", "{arg} must have at least one dimension, got a 0-d "
                         "tensor", {"arg": name})
    ra, rb = math.prod(sa[1:]), math.prod(sb[1:])
    if ra != rb:
        raise _Value(op, "row_mismatch", "{b} and {a} must have the same number of elements "
                     "per row (dim 0 index): {b} has {got}, {a} has {expected}",
                     {"b": bn, "a": an}, expected=ra, got=rb)
    return ra


def tensor_list(op: str, xs: Any, n: int | None, name: str, *, writable: bool,
                distinct: bool = True) -> list[Buffer]:
    """A list of tensors of one dtype (and, if ``n``, of length ``n``)."""
    if not isinstance(xs, (list, tuple)):
        raise _Type(op, "type", "{arg} must be a list of tensors, got {got}", {"arg": name},
                    got=type(xs).__name__)
    if n is not None and len(xs) != n:
        raise _Value(op, "length", "{arg} must have one tensor per rank: expected {expected} "
                     "tensors, got {got}", {"arg": name}, expected=n, got=len(xs))
    bufs = []
    for i, x in enumerate(xs):
        try:
            bufs.append(as_buffer(x, writable=writable, op=op, name=name))
        except (TypeError, ValueError, BufferError):
            # again, naming the element (formatting every name up front costs per call)
            as_buffer(x, writable=writable, op=op, name=f"{name}[{i}]")
            raise
    for i, b in enumerate(bufs[1:], 1):
        if b.dtype != bufs[0].dtype:
            raise _Value(op, "dtype_mismatch", "{arg} must have one dtype: {first} is "
                         "{expected}, {other} is {got}",
                         {"arg": name, "first": f"{name}[0]", "other": f"{name}[{i}]"},
                         expected=bufs[0].dtype, got=b.dtype)
    if writable and distinct:
        distinct_outputs(op, bufs, name)
    return bufs


def distinct_outputs(op: str, bufs: list[Buffer], name: str) -> None:
    """Output tensors of one list must not overlap each other."""
    spans = sorted((*byte_bounds(b.view), i) for i, b in enumerate(bufs) if b.numel)
    for k, (_, hi, i) in enumerate(spans):
        for lo2, _, j in spans[k + 1:]:
            if lo2 >= hi:
                break
            # bounds overlap: interleaved strided views may still be disjoint
            if np.shares_memory(bufs[i].view, bufs[j].view, max_work=10**6):
                raise _Value(op, "overlap", "{a} and {b} overlap in memory; each output must "
                             "be distinct", {"a": f"{name}[{i}]", "b": f"{name}[{j}]"})


def root(pg: ProcessGroup, op: str, global_rank: Any, group_rank: Any, gname: str,
         rname: str) -> int:
    """The group rank named by ``src``/``dst`` (global) or ``group_src``/``group_dst``."""
    if group_rank is not None:
        if global_rank is not None:
            raise _Value(op, "both", "give either {g} or {r}, not both", {"g": gname, "r": rname})
        return pg.check_group_rank(group_rank, op, rname)
    if global_rank is None:
        raise _Value(op, "missing", "{g} (a global rank) or {r} must be given",
                     {"g": gname, "r": rname})
    return pg.group_rank(global_rank, op, gname)


def peer(pg: ProcessGroup, op: str, global_rank: Any, group_rank: Any, gname: str,
         rname: str) -> int:
    """Like :func:`root`, for the other end of a blocking message: never this rank."""
    r = root(pg, op, global_rank, group_rank, gname, rname)
    if r == pg.my_rank:
        name, value = (rname, group_rank) if group_rank is not None else (gname, global_rank)
        raise _Value(op, "self_peer", "{arg} must be another rank: expected a rank other than "
                     "this one, got {got} (this rank); a message to or from oneself would "
                     "deadlock", {"arg": name}, got=value)
    return r


def stacked_or_concat(op: str, big: Buffer, small: Buffer, n: int, bname: str,
                      sname: str) -> None:
    """``big`` is ``n`` copies of ``small``, rank by rank in memory order: shape
    (n*d0, ...), (n, *small.shape), or any shape of ``n`` times as many elements, as
    NCCL accepts (accelerate's gather passes a flat output for a 2-D input)."""
    s = small.shape
    if big.numel != n * small.numel:
        stacked = (n, *s)
        concat = (n * s[0], *s[1:]) if s else (n,)
        raise _Value(op, "shape", "{big} must hold group size x {small}: expected shape "
                     "{expected} or {stacked} (or any shape of {numel} elements), got {got}",
                     {"big": bname, "small": sname}, expected=concat, stacked=stacked,
                     numel=n * small.numel, got=tuple(big.shape))
