"""[2] Persistent collectives: ``*_init`` -> MPI_Allreduce_init, MPI_Bcast_init, ...

Each ``*_init`` call takes the ordinary call's arguments (less ``async_op``),
checks them as the ordinary call does, and returns a
:class:`~mpicoll._collectives._persistent.PersistentCollective` whose
``start()`` reruns the collective on the same tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._mpi import MPI
from .._process_group import resolve
from . import _reduce, _validate
from ._own_block import alltoallv_args, own_copy, then
from ._persistent import PersistentCollective
from ._refresh import derive, refresh, refuse_immutable
from .reduce_op import ReduceOp, op_name, plan

__all__ = ["PersistentCollective", "all_gather_into_tensor_init", "all_reduce_init",
           "all_to_all_single_init", "broadcast_init", "reduce_scatter_tensor_init"]


def all_reduce_init(tensor: Any, op: Any = ReduceOp.SUM,
                    group: Any = None) -> PersistentCollective:
    """Set up :func:`~mpicoll.all_reduce` of ``tensor`` once, to restart many times.

    Call on every rank of ``group``, in the same order as other collectives.
    Each start reduces ``tensor``'s current values and writes the result into
    ``tensor`` in place.

    Args:
        tensor: input and output of every start.
        op: a :class:`ReduceOp` (``ReduceOp.premul_sum(f)``: ``f`` is fixed now).
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.

    Returns:
        A PersistentCollective: ``start(async_op=False)``, calling it, ``free()``,
        or use it in a ``with`` block.
    """
    name = "all_reduce_init"
    pg = resolve(group, name)
    if pg is None:
        return PersistentCollective("all_reduce", None)
    refuse_immutable(name, tensor=tensor)
    buf = as_buffer(tensor, writable=True, op=name, name="tensor")
    p = plan(buf.dtype, op, name)
    arr, dtype = buf.array, buf.dtype
    steps = [refresh(buf, name, "tensor", reads=True, writable=True)]
    recv = arr
    specs: tuple = (MPI.IN_PLACE, [arr, mpi_datatype(arr.dtype)])
    if p.widen or p.factor is not None:
        # a private widened or pre-scaled copy, recomputed at every start
        send = _reduce.send_side(p, arr, dtype)
        steps.append(derive(send, lambda: _reduce.send_side(p, arr, dtype)))
        if p.widen:  # reduced in place in the private copy
            recv, specs = send, (MPI.IN_PLACE, [send, mpi_datatype(send.dtype)])
        else:
            dt = mpi_datatype(arr.dtype)
            specs = ([send, dt], [arr, dt])
    fin = _reduce.finisher(p, recv, buf, pg.nranks)
    return PersistentCollective(
        "all_reduce", pg, "Allreduce", (*specs, p.mpi_op), fin, [tensor], [("tensor", tensor)],
        steps, lambda: {"dtype": dtype, "numel": buf.numel, "reduce_op": op_name(op)})


def broadcast_init(tensor: Any, src: int | None = None, group: Any = None,
                   group_src: int | None = None) -> PersistentCollective:
    """Set up :func:`~mpicoll.broadcast` of ``tensor`` from rank ``src`` (global) or
    ``group_src`` once, to restart many times.

    Call on every rank of ``group``. Each start copies the source's current
    ``tensor`` into ``tensor`` on every other rank, in place.
    """
    name = "broadcast_init"
    pg = resolve(group, name)
    if pg is None:
        return PersistentCollective("broadcast", None)
    refuse_immutable(name, tensor=tensor)
    root = _validate.root(pg, name, src, group_src, "src", "group_src")
    is_root = pg.my_rank == root
    buf = as_buffer(tensor, writable=not is_root, op=name, name="tensor")
    arr = buf.array
    steps = [refresh(buf, name, "tensor", reads=is_root, writable=not is_root)]
    return PersistentCollective(
        "broadcast", pg, "Bcast", ([arr, mpi_datatype(arr.dtype)], root),
        None if is_root else buf.commit_hook, [tensor], [("tensor", tensor)], steps,
        lambda: {"dtype": buf.dtype, "numel": buf.numel, "root": root})


def all_to_all_single_init(output: Any, input: Any, output_split_sizes: list[int] | None = None,
                           input_split_sizes: list[int] | None = None,
                           group: Any = None) -> PersistentCollective:
    """Set up :func:`~mpicoll.all_to_all_single` once, to restart many times.

    Call on every rank of ``group``. The split sizes are fixed now (MPI fixes
    the counts of a persistent collective); each start sends ``input``'s
    current values and writes ``output`` in place.
    """
    name = "all_to_all_single_init"
    pg = resolve(group, name)
    if pg is None:
        return PersistentCollective("all_to_all_single", None)
    refuse_immutable(name, output=output, input=input)
    n = pg.nranks
    src = as_buffer(input, op=name, name="input")
    dst = as_buffer(output, writable=True, op=name, name="output")
    _validate.same_dtype(name, dst, src, "output", "input")
    row = _validate.row_elems(name, src, dst, "input", "output")
    scounts = _validate.split_sizes(name, input_split_sizes, n, src.shape[0],
                                    "input_split_sizes", "input")
    rcounts = _validate.split_sizes(name, output_split_sizes, n, dst.shape[0],
                                    "output_split_sizes", "output")
    if scounts is None and rcounts is None and src.numel != dst.numel:
        _validate.equal_split_sizes(name, src, dst)
    if scounts is not None or rcounts is not None:
        scounts = scounts or [src.shape[0] // n] * n
        rcounts = rcounts or [dst.shape[0] // n] * n
        _validate.self_block(name, scounts, rcounts, pg.my_rank, "input_split_sizes",
                             "output_split_sizes")
    if np.may_share_memory(src.view, dst.view):
        src.detach_input()
    sarr, rarr = src.array, dst.array
    dt = mpi_datatype(sarr.dtype)
    steps = [refresh(src, name, "input", reads=True, writable=False),
             refresh(dst, name, "output", reads=False, writable=True)]
    watch = [("output", output), ("input", input)]
    if scounts is None or rcounts is None:
        send, recv = [sarr.size // n] * n, [rarr.size // n] * n
        return PersistentCollective(
            "all_to_all_single", pg, "Alltoall", ([sarr, send[0], dt], [rarr, recv[0], dt]),
            dst.commit_hook, [output], watch, steps,
            lambda: {"dtype": src.dtype, "send": send, "recv": recv, "split_sizes": False})
    if row != 1:
        scounts = [c * row for c in scounts]
        rcounts = [c * row for c in rcounts]
    args, own = alltoallv_args(pg.my_rank, sarr, scounts, rarr, rcounts, dt)
    return PersistentCollective(
        "all_to_all_single", pg, "Alltoallv", args, then(own_copy(sarr, rarr, own),
                                                          dst.commit_hook), [output],
        watch, steps, lambda: {"dtype": src.dtype, "send": scounts, "recv": rcounts,
                               "split_sizes": True})


def all_gather_into_tensor_init(output_tensor: Any, input_tensor: Any,
                                group: Any = None) -> PersistentCollective:
    """Set up :func:`~mpicoll.all_gather_into_tensor` once, to restart many times.

    Call on every rank of ``group``. Each start gathers every rank's current
    ``input_tensor`` into ``output_tensor`` (concatenated ``(P * n, ...)`` or
    stacked ``(P, n, ...)``), in place.
    """
    name = "all_gather_into_tensor_init"
    pg = resolve(group, name)
    if pg is None:
        return PersistentCollective("all_gather_into_tensor", None)
    refuse_immutable(name, output_tensor=output_tensor, input_tensor=input_tensor)
    n = pg.nranks
    src = as_buffer(input_tensor, op=name, name="input_tensor")
    dst = as_buffer(output_tensor, writable=True, op=name, name="output_tensor")
    _validate.same_dtype(name, dst, src, "output_tensor", "input_tensor")
    _validate.stacked_or_concat(name, dst, src, n, "output_tensor", "input_tensor")
    rarr = dst.array
    count = src.numel
    dt = mpi_datatype(rarr.dtype)
    sendspec: Any = [src.array, count, dt]
    if count and np.may_share_memory(src.view, dst.view):
        mine = rarr.reshape(-1)[pg.my_rank * count:(pg.my_rank + 1) * count]
        if not dst.staged and src.array.ctypes.data == mine.ctypes.data:
            sendspec = MPI.IN_PLACE
        else:
            src.detach_input()
            sendspec = [src.array, count, dt]
    steps = [None if sendspec is MPI.IN_PLACE else
             refresh(src, name, "input_tensor", reads=True, writable=False),
             refresh(dst, name, "output_tensor", reads=False, writable=True)]
    return PersistentCollective(
        "all_gather_into_tensor", pg, "Allgather", (sendspec, [rarr, count, dt]),
        dst.commit_hook, [output_tensor],
        [("output_tensor", output_tensor), ("input_tensor", input_tensor)], steps,
        lambda: {"dtype": src.dtype, "numel": count})


def reduce_scatter_tensor_init(output: Any, input: Any, op: Any = ReduceOp.SUM,
                               group: Any = None) -> PersistentCollective:
    """Set up :func:`~mpicoll.reduce_scatter_tensor` once, to restart many times.

    Call on every rank of ``group``. Each start reduces every rank's current
    ``input`` (concatenated ``(P * n, ...)`` or stacked ``(P, n, ...)``) and
    writes this rank's chunk into ``output`` in place; ``input`` is never modified.
    """
    name = "reduce_scatter_tensor_init"
    pg = resolve(group, name)
    if pg is None:
        return PersistentCollective("reduce_scatter_tensor", None)
    refuse_immutable(name, output=output, input=input)
    n = pg.nranks
    src = as_buffer(input, op=name, name="input")
    dst = as_buffer(output, writable=True, op=name, name="output")
    _validate.same_dtype(name, dst, src, "output", "input")
    _validate.stacked_or_concat(name, src, dst, n, "input", "output")
    p = plan(dst.dtype, op, name)
    if np.may_share_memory(src.view, dst.view):
        src.detach_input()
    sarr, dtype = src.array, src.dtype
    send = _reduce.send_side(p, sarr, dtype)
    recv = _reduce.recv_side(p, dst.array, dst.dtype)
    steps = [refresh(src, name, "input", reads=True, writable=False),
             refresh(dst, name, "output", reads=False, writable=True)]
    if send is not sarr:
        steps.append(derive(send, lambda: _reduce.send_side(p, sarr, dtype)))
    dt = mpi_datatype(recv.dtype)
    count = recv.size
    return PersistentCollective(
        "reduce_scatter_tensor", pg, "Reduce_scatter_block",
        ([send, count, dt], [recv, count, dt], p.mpi_op), _reduce.finisher(p, recv, dst, n),
        [output], [("output", output), ("input", input)], steps,
        lambda: {"dtype": dst.dtype, "numel": count, "reduce_op": op_name(op)})
