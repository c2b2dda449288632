"""torch autograd through the functional collectives: each backward is a collective.

``mpicoll.functional`` hands a call here when a torch input requires grad (see
``mpicoll._route``). The forward is functional's own (``mpicoll._new_arrays``); the
backward follows the convention of ``torch.distributed.nn.functional``: the objective is
the sum over ranks of what each rank computes, so the gradient of an all_gather is a
reduce_scatter(SUM) of the output gradients, of an all_to_all the reverse all_to_all, of
an all_reduce(SUM) an all_reduce(SUM). Unlike torch's, the backward honours the
reduction: AVG and PREMUL_SUM scale the gradient, MIN and MAX send it to the ranks that
hold the extreme (shared among ties), and PRODUCT or the bitwise ops raise in backward
(the forward runs). The same rules as ``mpicoll.jax`` (``mpicoll/jax/_ops.py``).

Backward runs collectives: every rank of the group must call ``backward()``.
With ``create_graph=True`` the backward collectives are differentiable too.
"""

from __future__ import annotations

from typing import Any

import torch

import mpicoll as _m

from . import _new_arrays
from ._collectives.reduce_op import ReduceOp, as_reduce_op

__all__ = ["all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
           "all_to_all_single", "broadcast", "reduce", "reduce_scatter",
           "reduce_scatter_tensor"]


def _coefficient(name: str, op: Any, group: Any) -> float:
    """``c`` of a linear reduction ``c * sum``; RuntimeError for the others."""
    rop, factor = as_reduce_op(op, name)
    if rop == ReduceOp.SUM:
        return 1.0
    if rop == ReduceOp.AVG:
        return 1.0 / _m.get_world_size(group)
    if rop == ReduceOp.PREMUL_SUM:
        return factor.item() if hasattr(factor, "item") else factor
    extra = ", MIN and MAX" if name == "all_reduce" else ""
    raise RuntimeError(f"mpicoll.functional.{name}: backward is defined for op SUM, AVG, "
                       f"PREMUL_SUM{extra}, not {rop.name}: detach the input or run the "
                       "collective under torch.no_grad()")


def _group_rank(group: Any, rank: int | None, group_rank: int | None) -> int:
    return group_rank if group_rank is not None else _m.get_group_rank(
        group if group is not None else _m.group.WORLD, rank)


class _AllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, op: Any, group: Any) -> torch.Tensor:
        y = _new_arrays.all_reduce(x, op, group)
        ctx.op, ctx.group = op, group
        ctx.extreme = as_reduce_op(op, "all_reduce")[0] in (ReduceOp.MIN, ReduceOp.MAX)
        if ctx.extreme:
            ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        g = g.contiguous()
        if ctx.extreme:
            x, y = ctx.saved_tensors
            hit = (x == y).to(g.dtype)
            ties = all_reduce(hit, ReduceOp.SUM, ctx.group)
            return hit * all_reduce(g, ReduceOp.SUM, ctx.group) / ties.clamp_min(1), None, None
        _coefficient("all_reduce", ctx.op, ctx.group)
        return all_reduce(g, ctx.op, ctx.group), None, None


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, src: Any, group: Any, group_src: Any) -> Any:
        y = _new_arrays.broadcast(x, src, group, group_src)
        ctx.group, ctx.root = group, _group_rank(group, src, group_src)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        got = reduce(g.contiguous(), None, ReduceOp.SUM, ctx.group, ctx.root)
        if _m.get_rank(ctx.group) != ctx.root:
            got = torch.zeros_like(g)
        return got, None, None, None


class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dst: Any, op: Any, group: Any,
                group_dst: Any) -> Any:
        y = _new_arrays.reduce(x, dst, op, group, group_dst)
        ctx.group, ctx.op, ctx.root = group, op, _group_rank(group, dst, group_dst)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        c = _coefficient("reduce", ctx.op, ctx.group)
        back = c * broadcast(g.contiguous(), None, ctx.group, ctx.root)
        if _m.get_rank(ctx.group) != ctx.root:
            back = back + g
        return back, None, None, None, None


class _AllGatherIntoTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: Any, stacked: bool) -> Any:
        ctx.group, ctx.shape = group, x.shape
        return _new_arrays.all_gather_into_tensor(x, group, stacked)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        n = _m.get_world_size(ctx.group)
        mine = reduce_scatter_tensor(g.contiguous().reshape(n, -1), ReduceOp.SUM, ctx.group)
        return mine.reshape(ctx.shape), None, None


class _AllGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: Any) -> Any:
        ctx.group = group
        # separate tensors, not views of one buffer: autograd forbids in-place changes
        # to views made inside a Function, and torch's own all_gather allows them
        return tuple(p.clone() for p in _new_arrays.all_gather(x, group))

    @staticmethod
    def backward(ctx: Any, *gs: torch.Tensor) -> tuple[Any, ...]:
        return reduce_scatter([g.contiguous() for g in gs], ReduceOp.SUM, ctx.group), None


class _ReduceScatterTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, op: Any, group: Any) -> Any:
        ctx.op, ctx.group = op, group
        return _new_arrays.reduce_scatter_tensor(x, op, group)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        c = _coefficient("reduce_scatter_tensor", ctx.op, ctx.group)
        return c * all_gather_into_tensor(g.contiguous(), ctx.group), None, None


class _ReduceScatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, op: Any, group: Any, *xs: torch.Tensor) -> Any:
        ctx.op, ctx.group = op, group
        ctx.shapes = [x.shape for x in xs]
        return _new_arrays.reduce_scatter(list(xs), op, group)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        c = _coefficient("reduce_scatter", ctx.op, ctx.group)
        if g.requires_grad:  # create_graph=True: a differentiable gather (shapes negotiated)
            parts = all_gather(g.contiguous(), ctx.group)
        else:  # rank j's result has the shape of input_list[j], the same on every rank
            parts = [torch.empty(s, dtype=g.dtype, device=g.device) for s in ctx.shapes]
            _m.all_gather(parts, g.contiguous(), ctx.group)
        return (None, None, *(c * p for p in parts))


class _AllToAllSingle(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, out_splits: Any, in_splits: Any, group: Any) -> Any:
        ctx.splits, ctx.group = (out_splits, in_splits), group
        return _new_arrays.all_to_all_single(x, out_splits, in_splits, group)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        out_splits, in_splits = ctx.splits
        back = all_to_all_single(g.contiguous(), in_splits, out_splits, ctx.group)
        return back, None, None, None


class _AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, group: Any, *xs: torch.Tensor) -> Any:
        ctx.group, ctx.shapes = group, [x.shape for x in xs]
        return tuple(p.clone() for p in _new_arrays.all_to_all(list(xs), group))  # as all_gather

    @staticmethod
    def backward(ctx: Any, *gs: torch.Tensor) -> tuple[Any, ...]:
        back = all_to_all([g.contiguous() for g in gs], ctx.group)
        return (None, *back)


# -- the functional signatures -----------------------------------------------------------


def all_reduce(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """Differentiable :func:`mpicoll.functional.all_reduce`."""
    return _AllReduce.apply(input, op, group)


def broadcast(input: Any, src: int | None = None, group: Any = None,
              group_src: int | None = None) -> Any:
    """Differentiable :func:`mpicoll.functional.broadcast`."""
    return _Broadcast.apply(input, src, group, group_src)


def reduce(input: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           group_dst: int | None = None) -> Any:
    """Differentiable :func:`mpicoll.functional.reduce`."""
    return _Reduce.apply(input, dst, op, group, group_dst)


def all_gather_into_tensor(input: Any, group: Any = None, stacked: bool = False) -> Any:
    """Differentiable :func:`mpicoll.functional.all_gather_into_tensor`."""
    return _AllGatherIntoTensor.apply(input, group, stacked)


def all_gather(input: Any, group: Any = None) -> list[Any]:
    """Differentiable :func:`mpicoll.functional.all_gather` (shapes negotiated)."""
    return list(_AllGather.apply(input, group))


def reduce_scatter_tensor(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """Differentiable :func:`mpicoll.functional.reduce_scatter_tensor`."""
    return _ReduceScatterTensor.apply(input, op, group)


def reduce_scatter(input_list: list[Any], op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """Differentiable :func:`mpicoll.functional.reduce_scatter`."""
    if not isinstance(input_list, (list, tuple)):
        return _new_arrays.reduce_scatter(input_list, op, group)  # functional's own error
    return _ReduceScatter.apply(op, group, *input_list)


def all_to_all_single(input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None) -> Any:
    """Differentiable :func:`mpicoll.functional.all_to_all_single` (negotiates the
    receive sizes first when only ``input_split_sizes`` is given)."""
    negotiated = output_split_sizes is None and input_split_sizes is not None
    if negotiated:  # functional's own exchange of counts: ranks may differ in requires_grad
        output_split_sizes = _new_arrays.receive_sizes(input_split_sizes, group)
    out = _AllToAllSingle.apply(input, output_split_sizes, input_split_sizes, group)
    return (out, output_split_sizes) if negotiated else out


def all_to_all(input_tensor_list: list[Any], group: Any = None) -> list[Any]:
    """Differentiable :func:`mpicoll.functional.all_to_all` (shapes negotiated)."""
    if not isinstance(input_tensor_list, (list, tuple)):
        return _new_arrays.all_to_all(input_tensor_list, group)  # functional's own error
    return list(_AllToAll.apply(group, *input_tensor_list))
