"""[2] reduce_scatter_tensor -> Reduce_scatter_block; reduce_scatter (list) -> Reduce_scatter
(on groups of up to 8 ranks, point-to-point messages reduced locally: _reduce_scatter_direct)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._process_group import _State, resolve
from .._work import Work
from ..errors import ArgumentValueError as _Value
from . import _direct, _pack, _reduce, _validate
from . import _reduce_scatter_direct as _rsd
from ._call import LIST_FIRST, exchange_key, issue, quick, quick_exchange, quick_listed
from ._choices import block_reduce_scatter
from ._entries import Exchange, Reduced, ReducedList
from ._large import INT_MAX
from ._layout import Layout, apart, area, keep, pack
from ._sizes import agreed
from ._table import Table
from .reduce_op import ReduceOp, op_name, plan


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` across ranks and give rank j the j-th chunk, in ``output``.

    Call on every rank of ``group``. ``input`` is concatenated, shape
    ``(P * n, ...)``, or stacked, ``(P, n, ...)``, for an ``output`` of shape
    ``(n, ...)``. ``output`` is written in place; ``input`` is never modified.
    """
    name = "reduce_scatter_tensor"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    # the common call, on shapes, dtype and op an earlier call of the general path
    # validated and found needing no step after MPI's
    if type(op) is ReduceOp and not async_op and \
            quick_exchange(name, pg, output, input, _QUICK, (op, pg._rank)):
        return None
    return _tensor(name, pg, output, input, op, async_op)


def _tensor(name: str, pg: Any, output: Any, input: Any, op: Any,
            async_op: bool) -> Work | None:
    """reduce_scatter_tensor's general path: any tensors, validated, planned (the dtype's
    step before and after MPI's), its quick entry stored."""
    n = pg._size
    src = as_buffer(input, op=name, name="input")
    dst = as_buffer(output, writable=True, op=name, name="output")
    _validate.same_dtype(name, dst, src, "output", "input")
    _validate.stacked_or_concat(name, src, dst, n, "input", "output")
    p = plan(dst.dtype, op, name)
    if _direct.chosen(pg) and src.array.size <= INT_MAX:  # (alike on every rank)
        if np.may_share_memory(src.view, dst.view):
            src.detach_input()
        return _rsd.general(name, pg, op, p, dst, _reduce.send_side(p, src.array, src.dtype),
                            [dst.numel] * n, "", [output], None, async_op,
                            (_QUICK, exchange_key(dst.array, src.array, pg, (op, pg._rank)))
                            if _reduce.repeatable(op, dst.dtype, p) else None)
    block = block_reduce_scatter(src.array.nbytes)
    # the counts beside the data, every rank comparing (MPI relays chunks between ranks)
    sizes = agreed(name, pg, [dst.numel], "output (each rank's chunk)", dst.dtype, op_name(op))
    if _reduce.repeatable(op, dst.dtype, p):
        arr = dst.array
        if src.array.size <= INT_MAX:
            dt = mpi_datatype(arr.dtype)
            # (the MPI op, or the counts and the op: what follows the buffers)
            _QUICK[exchange_key(arr, src.array, pg, (op, pg._rank))] = Exchange(
                "Ireduce_scatter_block", arr.size, arr.size, dt, (p.mpi_op,), None, sizes) \
                if block else Exchange("Ireduce_scatter", src.array.size, arr.size, dt,
                                       ([arr.size] * n, p.mpi_op), None, sizes)
    if np.may_share_memory(src.view, dst.view):
        src.detach_input()
    send = _reduce.send_side(p, src.array, src.dtype)
    recv = _reduce.recv_side(p, dst.array, dst.dtype)
    dt = mpi_datatype(recv.dtype)
    count = recv.size
    if block:
        method, args = "Reduce_scatter_block", ([send, count, dt], [recv, count, dt], p.mpi_op)
    else:
        method, args = "Reduce_scatter", ([send, count * n, dt], [recv, count, dt],
                                          [count] * n, p.mpi_op)
    fin = _reduce.finisher(p, recv, dst, n)
    return issue(name, pg, method, args, fin, async_op, [output],
                 sig=lambda: {"dtype": dst.dtype, "numel": count, "reduce_op": op_name(op)},
                 sizes=sizes)


# quick_exchange's table for reduce_scatter_tensor (extra: the ReduceOp and the group
# rank, on which a direct call's messages depend): the calls the general path validated
_QUICK: dict[tuple, Exchange | Reduced] = Table()

# reduce_scatter's quick path: (dtype, size of output, group rank, ReduceOp, sizes of the
# list) -> its call (on a direct group, _rsd.general's)
_QUICK_LISTS: dict[tuple, ReducedList | Reduced] = Table()

reduce_scatter_single = reduce_scatter_tensor


def reduce_scatter(output: Any, input_list: list[Any], op: Any = ReduceOp.SUM,
                   group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``input_list[j]`` across ranks into rank j's ``output``.

    Call on every rank of ``group``. ``input_list[j]`` may differ in size per
    j (Reduce_scatter with per-rank counts) as long as every rank agrees.
    ``output`` is written in place.
    """
    name = "reduce_scatter"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if type(op) is ReduceOp and not async_op:
        # a list of sizes, dtype and op an earlier call of the general path validated and
        # found needing no step after MPI's: adjacent views as one buffer, separate
        # tensors packed into a staging buffer kept for the next call (MPI's
        # Reduce_scatter takes no displacements)
        found = quick_listed(name, pg, output, input_list, LIST_FIRST, _QUICK_LISTS,
                             (pg._rank, op))
        if found is True or (found is not False and _listed(name, pg, output, input_list,
                                                            *found)):
            return None
    return _reduce_scatter(name, pg, output, input_list, op, async_op)


def _reduce_scatter(name: str, pg: Any, output: Any, input_list: Any, op: Any,
                    async_op: bool) -> Work | None:
    """reduce_scatter's general path: any tensors, validated, planned (the dtype's step
    before and after MPI's), its quick entry stored."""
    n = pg._size
    dst = as_buffer(output, writable=True, op=name, name="output")
    ins = _validate.tensor_list(name, input_list, n, "input_list", writable=False)
    _validate.same_dtype(name, dst, ins[0], "output", "input_list")
    counts = [b.numel for b in ins]
    if counts[pg.my_rank] != dst.numel:
        raise _Value(name, "numel_mismatch", "{arg} must have the size of {i}: expected "
                     "{expected} elements, got {got}",
                     {"arg": "output", "i": f"input_list[{pg.my_rank}]"},
                     expected=counts[pg.my_rank], got=dst.numel)
    p = plan(dst.dtype, op, name)
    packed = _pack.pack(ins)
    if np.may_share_memory(packed, dst.view):
        packed = packed.copy()
    send = _reduce.send_side(p, packed, dst.dtype)
    if _direct.chosen(pg) and packed.size <= INT_MAX:  # (alike on every rank)
        return _rsd.general(name, pg, op, p, dst, send, counts, f" (its input_list[{pg._rank}])",
                            [output], ins, async_op, (_QUICK_LISTS, (
                                dst.array.dtype, dst.numel, pg._rank, op, *counts))
                            if _reduce.repeatable(op, dst.dtype, p) else None)
    recv = _reduce.recv_side(p, dst.array, dst.dtype)
    dt = mpi_datatype(recv.dtype)
    # the counts travel beside the data (_sizes); the same call on every rank even where
    # they disagree, which the block call's choice by local counts would not give
    sizes = agreed(name, pg, counts, "input_list[{peer}] (the chunk for rank {peer})",
                   dst.dtype, op_name(op))
    if sizes is None and min(counts) == max(counts) and block_reduce_scatter(packed.nbytes):
        method, args = "Reduce_scatter_block", ([send, counts[0], dt], [recv, counts[0], dt],
                                                p.mpi_op)
    else:
        method, args = "Reduce_scatter", ([send, dt], [recv, dt], counts, p.mpi_op)
    if _reduce.repeatable(op, dst.dtype, p):
        _QUICK_LISTS[(recv.dtype, dst.numel, pg.my_rank, op, *counts)] = ReducedList(
            "I" + method[0].lower() + method[1:],
            counts[0] if method == "Reduce_scatter_block" else list(counts), dt, p.mpi_op,
            sizes)
    fin = _reduce.finisher(p, recv, dst, n)
    return issue(name, pg, method, args, fin, async_op, [output], keep=ins,
                 sig=lambda: {"dtype": dst.dtype, "counts": counts, "reduce_op": op_name(op)},
                 sizes=sizes)


def _listed(name: str, pg: Any, output: Any, input_list: Any, hit: ReducedList | Reduced,
            a: Any, inl: Layout) -> bool:
    """reduce_scatter's quick call of entry ``hit`` from the list of layout ``inl`` into
    the array ``a``, whose kept Plan (if any) the core did not run: made here. False: the
    general path's (the list and the output share memory)."""
    if not apart(inl, a):
        return False
    if hit.method == "reduced":  # direct messages (_rsd.general's)
        _rsd.exchanged(name, pg, hit, None, a, (output, tuple(input_list)), 5, inl)
        return True
    method, counts, dt, mpi_op, sizes = hit
    if inl.end_to_end:
        send = area(inl)
        args = ([send, counts, dt], [a, counts, dt], mpi_op) if type(counts) \
            is int else ([send, dt], [a, dt], counts, mpi_op)
        quick(name, pg, method, args, sizes, 4)
    else:
        send, key = pack(inl)
        args = ([send, counts, dt], [a, counts, dt], mpi_op) if type(counts) \
            is int else ([send, dt], [a, dt], counts, mpi_op)
        quick(name, pg, method, args, sizes, 4)
        keep(key, send)
    return True
