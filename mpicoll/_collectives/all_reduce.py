"""[2] all_reduce -> Allreduce (IN_PLACE)."""

from __future__ import annotations

from typing import Any

from .. import _core_loader, _departed, _polling
from .._adapter import as_buffer
from .._adapter.views import QUICKERS
from .._mpi import MPI
from .._process_group import _State, resolve
from .._work import Work
from . import _all_reduce_direct, _direct, _reduce
from ._call import issue, quick, quick_allowed, quick_array
from ._large import INT_MAX
from ._sizes import SIGNED, signed
from .reduce_op import ReduceOp, op_name, plan


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` across all ranks of ``group``; every rank gets the result.

    Call on every rank of ``group``. ``tensor`` is written in place.

    Args:
        tensor: input and output of the collective.
        op: a :class:`ReduceOp` (``ReduceOp.premul_sum(f)`` for PREMUL_SUM).
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        async_op: return a :class:`Work` instead of blocking.

    Returns:
        A Work if ``async_op``, else None (None also on non-member ranks).
    """
    name = "all_reduce"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if type(op) is ReduceOp and not async_op:
        # the common call, checked as below with what earlier calls of this dtype and op
        # established: contiguous, writable, no step after the reduction
        core = _core_loader.module
        if core is not None and quick_allowed():  # (the tests, lookup and kept Plan in C)
            found = core.reduce(name, pg, tensor, _reduce.QUICK, op, QUICKERS,
                                len(_polling.spin), _departed.left,
                                _all_reduce_direct.MAX_COUNT)
            if found is True:  # (done: the common case)
                return None
            found = _direct.core_found(core, name, pg, found, tensor,
                                       lambda hit, a: (MPI.IN_PLACE, [a, hit.datatype], hit.op))
            if found is None:
                return None
            hit, a = found
        else:
            a = quick_array(tensor)
            hit = _reduce.QUICK.get((a.dtype, op)) if a is not None else None
        if hit is not None and a.size <= INT_MAX:
            if _all_reduce_direct.chosen(pg, a.size):
                # messages, kept, run and reduced in C where the core is in use
                _all_reduce_direct.quick(name, pg, a, hit, op, keep=tensor)
                return None
            # (the core made MPI's call itself where it could: it hands a call back where
            # a rank has left, or where the call is messages with none kept yet, above)
            quick(name, pg, "Iallreduce", (MPI.IN_PLACE, [a, hit.datatype], hit.op), signed(
                name, pg, a.dtype, op, -1, a.size) if a.size >= SIGNED else None)
            return None
    return _general(name, pg, tensor, op, async_op)


def _general(name: str, pg: Any, tensor: Any, op: Any, async_op: bool) -> Work | None:
    """all_reduce's general path: any tensor, validated, planned (the dtype's step before
    and after MPI's), its quick entry stored for the next call."""
    _core_loader.load()  # (once: the next such call may take the core's path)
    buf = as_buffer(tensor, writable=True, op=name, name="tensor")
    p = plan(buf.dtype, op, name)
    _reduce.remember(buf, op, p)
    recv, specs = _reduce.into_place(p, buf.array, buf.dtype)
    args = (*specs, p.mpi_op)
    fin = _reduce.finisher(p, recv, buf, pg.nranks)
    sig = lambda: {"dtype": buf.dtype, "numel": buf.numel,  # noqa: E731
                   "reduce_op": op_name(op)}
    if _all_reduce_direct.chosen(pg, recv.size):  # (alike on every rank: group, size)
        return _all_reduce_direct.general(name, pg, _reduce.in_place(recv, specs), buf.dtype,
                                          p.mpi_op, op_name(op), fin, async_op, [tensor], sig)
    return issue(name, pg, "Allreduce", args, fin, async_op, [tensor], sig=sig,
                 sizes=signed(name, pg, buf.dtype, op_name(op), -1, recv.size))


def as_messages(group: Any, count: int) -> bool:
    """Whether an all_reduce of ``count`` elements on ``group`` (a ProcessGroup) goes as
    point-to-point messages, which the group keeps for a repeated blocking call by where
    its tensor lies (else MPI's Allreduce, which keeps nothing)."""
    return _all_reduce_direct.chosen(group, count)
