"""[2] all_reduce_coalesced / all_gather_coalesced: a list of tensors in one MPI call.

torch deprecates both but code still calls them; each is one Allreduce or one
Allgather over the list packed end to end (zero-copy when the tensors already
lie end to end, as views of one flat tensor do).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._adapter import Buffer
from .._adapter.dtypes import mpi_datatype
from .._process_group import resolve
from .._work import Work
from ..errors import ArgumentValueError as _Value
from . import _pack, _reduce, _validate
from ._call import issue
from ._sizes import agreed, signed
from .reduce_op import ReduceOp, op_name, plan


def _flat(bufs: list[Buffer], writable: bool) -> tuple[np.ndarray, bool]:
    """The list as one flat array (its own memory when adjacent); whether it is a copy."""
    if writable:
        flat, staged = _pack.receive_area(bufs, sum(b.numel for b in bufs))
        if staged:
            np.concatenate([b.array.reshape(-1) for b in bufs], out=flat)
        return flat, staged
    joint = _pack.joined(bufs)
    return (joint, False) if joint is not None else (_pack.pack(bufs), True)


def all_reduce_coalesced(tensors: list[Any], op: Any = ReduceOp.SUM, group: Any = None,
                         async_op: bool = False) -> Work | None:
    """All-reduce every tensor of ``tensors`` (one dtype) in place, in one MPI call."""
    name = "all_reduce_coalesced"
    pg = resolve(group, name)
    if pg is None:
        return None
    bufs = _validate.tensor_list(name, tensors, None, "tensors", writable=True)
    if not bufs:
        raise _Value(name, "length", "{arg} must not be empty", {"arg": "tensors"})
    dtype = bufs[0].dtype
    p = plan(dtype, op, name)
    flat, staged = _flat(bufs, writable=True)
    whole = Buffer(flat, flat, dtype, None, bufs[0].device, True)
    recv, specs = _reduce.into_place(p, flat, dtype)
    reduce_done = _reduce.finisher(p, recv, whole, pg.nranks)

    def finish() -> None:
        if reduce_done is not None:
            reduce_done()
        if staged:
            _pack.unpack(flat, bufs)
        else:
            _pack.commit_all(bufs)
    return issue(name, pg, "Allreduce", (*specs, p.mpi_op), finish, async_op, list(tensors),
                 keep=bufs, sig=lambda: {"dtype": dtype, "numel": flat.size,
                                         "reduce_op": op_name(op)},
                 sizes=signed(name, pg, dtype, op_name(op), -1, flat.size))


def all_gather_coalesced(output_tensor_lists: list[list[Any]], input_tensor_list: list[Any],
                         group: Any = None, async_op: bool = False) -> Work | None:
    """``output_tensor_lists[i][j]`` receives rank i's ``input_tensor_list[j]``, in one
    MPI call."""
    name = "all_gather_coalesced"
    pg = resolve(group, name)
    if pg is None:
        return None
    ins = _validate.tensor_list(name, input_tensor_list, None, "input_tensor_list",
                                writable=False)
    if not isinstance(output_tensor_lists, (list, tuple)) or len(output_tensor_lists) != \
            pg.nranks:
        raise _Value(name, "length", "{arg} must have one list per rank: expected {expected}, "
                     "got {got}", {"arg": "output_tensor_lists"}, expected=pg.nranks,
                     got=len(output_tensor_lists) if isinstance(output_tensor_lists,
                                                                (list, tuple)) else None)
    outs: list[Buffer] = []
    for i, lst in enumerate(output_tensor_lists):
        got = _validate.tensor_list(name, lst, len(ins), f"output_tensor_lists[{i}]",
                                    writable=True)
        for j, (o, x) in enumerate(zip(got, ins, strict=True)):
            if o.numel != x.numel:
                raise _Value(name, "numel_mismatch", "{arg} must have the size of {x}: "
                             "expected {expected} elements, got {got}",
                             {"arg": f"output_tensor_lists[{i}][{j}]",
                              "x": f"input_tensor_list[{j}]"}, expected=x.numel, got=o.numel)
            if o.dtype != x.dtype:
                _validate.same_dtype(name, o, x, f"output_tensor_lists[{i}][{j}]",
                                     f"input_tensor_list[{j}]")
        outs.extend(got)
    if ins:
        _validate.distinct_outputs(name, outs, "output_tensor_lists")
    send, _ = _flat(ins, writable=False) if ins else (np.empty(0, np.uint8), False)
    recv, staged = _pack.receive_area(outs, send.size * pg.nranks) if outs else (send, False)
    dt = mpi_datatype(send.dtype)

    def finish() -> None:
        if staged:
            _pack.unpack(recv, outs)
        else:
            _pack.commit_all(outs)
    outputs = [t for lst in output_tensor_lists for t in lst]
    # each entry's count beside the data, every rank comparing (MPI relays blocks
    # between ranks; lists that split one total otherwise would land shifted)
    sizes = agreed(name, pg, [x.numel for x in ins], "input_tensor_list[{peer}]",
                   ins[0].dtype) if ins else None
    return issue(name, pg, "Allgather", ([send, dt], [recv, dt]), finish, async_op, outputs,
                 keep=(ins, outs), sig=lambda: {"dtype": ins[0].dtype if ins else "",
                                               "numel": send.size}, sizes=sizes)
