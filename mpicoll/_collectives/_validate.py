"""[2] Local argument checks, made before any communication.

Messages read ``"<op>: <argument> <problem>: expected <x>, got <y>"``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    byte_bounds = np.byte_bounds

from .._adapter import Buffer, as_buffer
from .._group import ProcessGroup


def same_dtype(op: str, a: Buffer, b: Buffer, an: str, bn: str) -> None:
    """Both buffers have one logical dtype and live on one device."""
    if a.dtype != b.dtype:
        raise ValueError(f"{op}: {an} and {bn} must have the same dtype: "
                         f"{an} is {a.dtype}, {bn} is {b.dtype}")
    da, db = a.device, b.device
    if da != db:
        raise ValueError(f"{op}: {an} and {bn} must be on the same device: "
                         f"{an} is on {da}, {bn} is on {db}")


_INT = {int}


def split_sizes(op: str, sizes: Any, n: int, dim0: int, name: str, tname: str) -> list[int] | None:
    """Validate a split-size list; None or [] means an equal split."""
    if sizes is None or (hasattr(sizes, "__len__") and len(sizes) == 0):
        if dim0 % n:
            raise ValueError(f"{op}: dim 0 of {tname} must be divisible by the group size "
                             f"{n} when {name} is not given, got {dim0}")
        return None
    if (type(sizes) is list and len(sizes) == n and {*map(type, sizes)} == _INT
            and min(sizes) >= 0 and sum(sizes) == dim0):
        return sizes  # the common case, checked in one pass
    try:
        vals = [int(s) for s in sizes]
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a list of ints, got {sizes!r}") from None
    for s, v in zip(sizes, vals):
        if v != s or isinstance(s, bool):
            raise TypeError(f"{op}: {name} must contain integers, got {s!r}")
        if v < 0:
            raise ValueError(f"{op}: {name} must be non-negative, got {vals}")
    if len(vals) != n:
        raise ValueError(f"{op}: {name} must have one entry per rank: expected "
                         f"{n} entries, got {len(vals)}")
    if sum(vals) != dim0:
        raise ValueError(f"{op}: {name} must sum to dim 0 of {tname}: expected "
                         f"{dim0}, got sum({vals}) = {sum(vals)}")
    return vals


def self_block(op: str, scounts: list[int], rcounts: list[int], me: int, sname: str,
               rname: str) -> None:
    """What this rank sends to itself must be what it receives from itself."""
    if scounts[me] != rcounts[me]:
        raise ValueError(f"{op}: this rank (group rank {me}) sends itself {scounts[me]} and "
                         f"receives from itself {rcounts[me]}: {sname}[{me}] and {rname}[{me}] "
                         "must match")


def equal_split_sizes(op: str, src: Buffer, dst: Buffer) -> None:
    """Raise: without split sizes, input and output must be of one size (called on a
    mismatch; an equal split sends input.numel / P to each rank and receives
    output.numel / P from each, so a mismatch would leave output partly written)."""
    raise ValueError(f"{op}: output and input must have the same number of elements when "
                     f"no split sizes are given: expected output to have {src.numel} "
                     f"elements (as input, shape {tuple(src.shape)}), got {dst.numel} "
                     f"(output shape {tuple(dst.shape)})")


def row_elems(op: str, a: Buffer, b: Buffer, an: str, bn: str) -> int:
    """Elements per index of dim 0, which both buffers must share."""
    sa, sb = a.shape, b.shape
    if len(sa) == 1 and len(sb) == 1:
        return 1
    for s, name in ((sa, an), (sb, bn)):
        if not s:
            raise ValueError(f"{op}: {name} must have at least one dimension, got a 0-d tensor")
    ra, rb = math.prod(sa[1:]), math.prod(sb[1:])
    if ra != rb:
        raise ValueError(f"{op}: {bn} and {an} must have the same number of elements per row "
                         f"(dim 0 index): {bn} has {rb}, {an} has {ra}")
    return ra


def tensor_list(op: str, xs: Any, n: int | None, name: str, *, writable: bool,
                distinct: bool = True) -> list[Buffer]:
    """A list of tensors of one dtype (and, if ``n``, of length ``n``)."""
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"{op}: {name} must be a list of tensors, got {type(xs).__name__}")
    if n is not None and len(xs) != n:
        raise ValueError(f"{op}: {name} must have one tensor per rank: expected {n} "
                         f"tensors, got {len(xs)}")
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
            raise ValueError(f"{op}: {name} must have one dtype: {name}[0] is "
                             f"{bufs[0].dtype}, {name}[{i}] is {b.dtype}")
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
                raise ValueError(f"{op}: {name}[{i}] and {name}[{j}] overlap in memory; "
                                 "each output must be distinct")


def root(pg: ProcessGroup, op: str, global_rank: Any, group_rank: Any, gname: str,
         rname: str) -> int:
    """The group rank named by ``src``/``dst`` (global) or ``group_src``/``group_dst``."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"{op}: give either {gname} or {rname}, not both")
        return pg.check_group_rank(group_rank, op, rname)
    if global_rank is None:
        raise ValueError(f"{op}: {gname} (a global rank) or {rname} must be given")
    return pg.group_rank(global_rank, op, gname)


def peer(pg: ProcessGroup, op: str, global_rank: Any, group_rank: Any, gname: str,
         rname: str) -> int:
    """Like :func:`root`, for the other end of a blocking message: never this rank."""
    r = root(pg, op, global_rank, group_rank, gname, rname)
    if r == pg.my_rank:
        name, value = (rname, group_rank) if group_rank is not None else (gname, global_rank)
        raise ValueError(f"{op}: {name} must be another rank: expected a rank other than "
                         f"this one, got {value} (this rank); a message to or from oneself "
                         "would deadlock")
    return r


def stacked_or_concat(op: str, big: Buffer, small: Buffer, n: int, bname: str,
                      sname: str) -> None:
    """``big`` is ``n`` copies of ``small``: shape (n*d0, ...) or (n, *small.shape)."""
    s = small.shape
    stacked = (n, *s)
    concat = (n * s[0], *s[1:]) if s else (n,)
    if tuple(big.shape) not in (stacked, concat):
        raise ValueError(f"{op}: {bname} must hold group size x {sname}: expected shape "
                         f"{concat} or {stacked}, got {tuple(big.shape)}")
