"""Collectives that return new arrays of the input's framework: functional's own path.

:mod:`mpicoll.functional` runs these when no face serves the input (see
``mpicoll._route``), and ``mpicoll._autograd``'s forwards run them on tensors
detached from the graph. Each one allocates its result (``_adapter.alloc.empty``)
and calls mpicoll's in-place collective into it; sizes that only the peers know
are negotiated first with one small exchange.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import mpicoll as _m

from ._adapter import as_buffer
from ._adapter.alloc import empty as _empty
from ._collectives.reduce_op import ReduceOp

__all__ = ["all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
           "all_to_all_single", "broadcast", "receive_sizes", "reduce", "reduce_scatter",
           "reduce_scatter_tensor"]


def _done(out: Any, wrap: Any) -> Any:
    return out if wrap is None else wrap(out)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)


def _copy(x: Any) -> tuple[Any, Any]:
    out, wrap = _empty(x, _shape(x))
    dst = as_buffer(out, writable=True)
    np.copyto(dst.array, as_buffer(x).array.reshape(dst.array.shape))
    dst.commit()
    return out, wrap


def _size(group: Any, op: str) -> int:
    """The size of ``group``; ValueError on a rank outside it (there is no result to
    return there)."""
    n = _m.get_world_size(group)
    if n < 0:
        raise ValueError(f"{op}: this rank is not a member of group")
    return n


def _views(flat: Any, shapes: list[tuple[int, ...]]) -> list[Any]:
    """Consecutive pieces of a flat tensor, one of each shape (adjacent views)."""
    out, off = [], 0
    for s in shapes:
        k = math.prod(s)
        out.append(flat[off:off + k].reshape(s))
        off += k
    return out


def receive_sizes(input_split_sizes: Any, group: Any, n: int | None = None) -> list[int]:
    """What each peer sends here, given what this rank sends each peer: one small
    all-to-all of the counts.

    Args:
        input_split_sizes: the rows this rank sends to each rank of ``group``.
        group: the group of the all_to_all_single.
        n: the group's size, to check ``input_split_sizes`` against first (None:
            unchecked).

    Returns:
        The rows this rank receives from each rank (``output_split_sizes``).

    Raises:
        ValueError: ``input_split_sizes`` does not have ``n`` entries.
    """
    sizes = np.asarray([int(v) for v in input_split_sizes], dtype=np.int64)
    if n is not None and sizes.size != n:
        raise ValueError(f"all_to_all_single: input_split_sizes must have one entry per "
                         f"rank: expected {n} entries, got {sizes.size}")
    got = np.empty_like(sizes)
    _m.all_to_all_single(got, sizes, group=group)
    return [int(v) for v in got]


def all_reduce(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """A new array: the reduction of ``input`` over ``group``."""
    out, wrap = _copy(input)
    _m.all_reduce(out, op, group)
    return _done(out, wrap)


def broadcast(input: Any, src: int | None = None, group: Any = None,
              group_src: int | None = None) -> Any:
    """A new array holding the source rank's ``input``."""
    out, wrap = _copy(input)
    _m.broadcast(out, src, group, False, group_src)
    return _done(out, wrap)


def reduce(input: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           group_dst: int | None = None) -> Any:
    """A new array: the reduction on the destination, a copy of ``input`` elsewhere."""
    out, wrap = _copy(input)
    _m.reduce(out, dst, op, group, False, group_dst)
    return _done(out, wrap)


def all_gather_into_tensor(input: Any, group: Any = None, stacked: bool = False) -> Any:
    """Every rank's ``input`` (all of one shape) concatenated along dim 0, or stacked."""
    n = _size(group, "all_gather_into_tensor")
    s = _shape(input)
    shape = (n, *s) if stacked or not s else (n * s[0], *s[1:])
    out, wrap = _empty(input, shape)
    _m.all_gather_into_tensor(out, input, group)
    return _done(out, wrap)


def all_gather(input: Any, group: Any = None) -> list[Any]:
    """Every rank's ``input`` as a list; shapes may differ per rank (negotiated)."""
    shapes: list[Any] = [None] * _size(group, "all_gather")
    _m.all_gather_object(shapes, _shape(input), group)  # one small exchange of shapes
    if len({len(s) for s in shapes}) > 1 or len({s[1:] for s in shapes}) > 1:
        raise ValueError(f"all_gather: inputs must agree in every dimension but the first: "
                         f"got shapes {shapes}")
    flat, wrap = _empty(input, (sum(math.prod(s) for s in shapes),))
    outs = _views(flat, shapes)  # adjacent views of one buffer: gathered without an unpack
    _m.all_gather(outs, input, group)
    return outs if wrap is None else _views(wrap(flat), shapes)


def reduce_scatter_tensor(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """This rank's chunk (dim 0 split in group-size parts) of the reduced ``input``."""
    n = _size(group, "reduce_scatter_tensor")
    s = _shape(input)
    if not s or s[0] % n:
        raise ValueError(f"reduce_scatter_tensor: dim 0 of input must be divisible by the "
                         f"group size {n}, got shape {s}")
    out, wrap = _empty(input, (s[0] // n, *s[1:]))
    _m.reduce_scatter_tensor(out, input, op, group)
    return _done(out, wrap)


def reduce_scatter(input_list: list[Any], op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """The reduction of every rank's ``input_list[rank]`` (sizes may differ per index)."""
    n = _size(group, "reduce_scatter")
    if not isinstance(input_list, (list, tuple)) or len(input_list) != n:
        raise ValueError(f"reduce_scatter: input_list must have one tensor per rank: "
                         f"expected {n}")
    mine = input_list[_m.get_rank(group)]
    out, wrap = _empty(mine, _shape(mine))
    _m.reduce_scatter(out, list(input_list), op, group)
    return _done(out, wrap)


def all_to_all_single(input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None) -> Any:
    """The received rows of ``input`` as a new array; ``(output, output_split_sizes)``
    when the receive sizes were negotiated (only ``input_split_sizes`` given)."""
    n = _size(group, "all_to_all_single")
    s = _shape(input)
    if not s:
        raise ValueError("all_to_all_single: input must have at least one dimension")
    negotiated = output_split_sizes is None and input_split_sizes is not None
    if negotiated:
        output_split_sizes = receive_sizes(input_split_sizes, group, n)
    rows = sum(output_split_sizes) if output_split_sizes is not None else s[0]
    out, wrap = _empty(input, (rows, *s[1:]))
    _m.all_to_all_single(out, input, output_split_sizes, input_split_sizes, group)
    result = _done(out, wrap)
    return (result, output_split_sizes) if negotiated else result


def all_to_all(input_tensor_list: list[Any], group: Any = None) -> list[Any]:
    """What each rank sent here, as new arrays (shapes negotiated per peer)."""
    n = _size(group, "all_to_all")
    if not isinstance(input_tensor_list, (list, tuple)) or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: input_tensor_list must have one tensor per rank: "
                         f"expected {n}")
    # one small exchange of shapes: every rank's list, of which this rank reads its column
    table: list[Any] = [None] * n
    _m.all_gather_object(table, [_shape(t) for t in input_tensor_list], group)
    me = _m.get_rank(group)
    shapes = [row[me] for row in table]
    like = input_tensor_list[0]
    flat, wrap = _empty(like, (sum(math.prod(s) for s in shapes),))
    outs = _views(flat, shapes)
    _m.all_to_all(outs, list(input_tensor_list), group)
    return outs if wrap is None else _views(wrap(flat), shapes)
