"""Functional collectives: return new arrays of the input's framework, on its device.

This is how immutable arrays (JAX) are served, and a convenience for everyone::

    import mpicoll.functional as F
    y = F.all_reduce(x)                                   # x untouched
    out, recv_sizes = F.all_to_all_single(x, input_split_sizes=sizes)  # sizes negotiated

When only ``input_split_sizes`` is given, the receive sizes are negotiated with
one small exchange of counts and returned with the result, as Horovod does;
``all_gather`` negotiates every rank's shape likewise, so sizes may differ.
"""

from __future__ import annotations

from typing import Any

from . import _new_arrays, _route
from ._collectives.reduce_op import ReduceOp

__all__ = ["all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
           "all_to_all_single", "broadcast", "reduce", "reduce_scatter",
           "reduce_scatter_tensor"]


def all_reduce(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """A new array: the reduction of ``input`` over ``group``. Call on every rank."""
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.all_reduce(input, op, group)
    return _new_arrays.all_reduce(input, op, group)


def broadcast(input: Any, src: int | None = None, group: Any = None,
              group_src: int | None = None) -> Any:
    """A new array holding the source rank's ``input`` (same shape on every rank)."""
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.broadcast(input, src, group, group_src)
    return _new_arrays.broadcast(input, src, group, group_src)


def reduce(input: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           group_dst: int | None = None) -> Any:
    """A new array: the reduction on the destination, a copy of ``input`` elsewhere."""
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.reduce(input, dst, op, group, group_dst)
    return _new_arrays.reduce(input, dst, op, group, group_dst)


def all_gather_into_tensor(input: Any, group: Any = None, stacked: bool = False) -> Any:
    """Every rank's ``input`` (all of one shape) concatenated along dim 0, or stacked."""
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.all_gather_into_tensor(input, group, stacked)
    return _new_arrays.all_gather_into_tensor(input, group, stacked)


def all_gather(input: Any, group: Any = None) -> list[Any]:
    """Every rank's ``input`` as a list; shapes may differ per rank (negotiated)."""
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.all_gather(input, group)
    return _new_arrays.all_gather(input, group)


def reduce_scatter_tensor(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """This rank's chunk (dim 0 split in group-size parts) of the reduced ``input``."""
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.reduce_scatter_tensor(input, op, group)
    return _new_arrays.reduce_scatter_tensor(input, op, group)


def reduce_scatter(input_list: list[Any], op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """The reduction of every rank's ``input_list[rank]`` (sizes may differ per index)."""
    if (face := _route.face(input_list)) is not None:  # torch autograd, JAX tracers
        return face.reduce_scatter(input_list, op, group)
    return _new_arrays.reduce_scatter(input_list, op, group)


def all_to_all_single(input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None) -> Any:
    """Exchange rows of ``input``: ``input_split_sizes[j]`` rows go to rank j.

    Returns:
        The received rows as a new array. When ``input_split_sizes`` is given
        but ``output_split_sizes`` is not, the receive sizes are negotiated (one
        small all-to-all of counts) and ``(output, output_split_sizes)`` is
        returned.
    """
    if (face := _route.face(input)) is not None:  # torch autograd, JAX tracers
        return face.all_to_all_single(input, output_split_sizes, input_split_sizes, group)
    return _new_arrays.all_to_all_single(input, output_split_sizes, input_split_sizes, group)


def all_to_all(input_tensor_list: list[Any], group: Any = None) -> list[Any]:
    """Send ``input_tensor_list[j]`` to rank j; returns what each rank sent here.

    Shapes may differ per peer: they are negotiated with one small all-to-all.
    """
    if (face := _route.face(input_tensor_list)) is not None:  # torch autograd, JAX tracers
        return face.all_to_all(input_tensor_list, group)
    return _new_arrays.all_to_all(input_tensor_list, group)
