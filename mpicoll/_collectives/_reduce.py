"""[2]/[4] The local steps around an MPI reduction: widen, pre-scale, divide, round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._adapter import Buffer
from .._adapter.dtypes import mpi_datatype, narrow_into, widen
from .._adapter.views import PLAIN
from .._mpi import MPI
from ._entries import Reduction
from .reduce_op import Plan, ReduceOp

# (numpy dtype, ReduceOp) -> its Reduction, for the quick paths of all_reduce and reduce:
# the reductions that need no step after MPI's (no widening, AVG or pre-scaling), stored
# by their general paths (remember)
QUICK: dict[tuple[Any, ReduceOp], Reduction] = {}


def repeatable(op: Any, dtype: str, plan: Plan) -> bool:
    """Whether a quick path can repeat a reduction the general path validated: a ReduceOp
    (not a premul_sum's), a plain dtype, nothing after MPI's (widening, AVG, a factor)."""
    return type(op) is ReduceOp and dtype in PLAIN and \
        not (plan.widen or plan.average or plan.factor is not None)


def remember(buf: Buffer, op: Any, plan: Plan) -> None:
    """Store in :data:`QUICK` a reduction the general path validated, if the quick path
    can repeat it (:func:`repeatable`)."""
    if repeatable(op, buf.dtype, plan):
        QUICK[(buf.array.dtype, op)] = Reduction(mpi_datatype(buf.array.dtype), plan.mpi_op)


def send_side(plan: Plan, arr: np.ndarray, dtype: str) -> np.ndarray:
    """What to reduce from: ``arr`` itself, or a widened/pre-scaled copy.

    The caller's input is never modified: PREMUL_SUM scales a copy.
    """
    if plan.widen:
        w = widen(arr, dtype)
        if plan.factor is not None:
            w *= plan.factor
        return w
    if plan.factor is not None:
        return np.multiply(arr, plan.factor).astype(arr.dtype, copy=False)
    return arr


def recv_side(plan: Plan, out: np.ndarray, dtype: str) -> np.ndarray:
    """Where MPI writes the reduced values: ``out`` or a wider temporary."""
    if plan.widen:
        wide = np.float32 if dtype in ("float16", "bfloat16") else (
            np.int32 if out.dtype.kind == "i" else np.uint32)
        return np.empty(out.shape, dtype=wide)
    return out


def into_place(plan: Plan, arr: np.ndarray, dtype: str) -> tuple[np.ndarray, tuple]:
    """For a reduction whose result lands in ``arr``'s place: (the array MPI writes,
    the (send, recv) buffer specs).

    The reduction is in place (``MPI.IN_PLACE``) when it can be: on ``arr`` itself,
    or on the private widened copy; only a pre-scaled low-precision input needs a
    separate receive buffer.
    """
    send = send_side(plan, arr, dtype)
    if send is arr or (plan.widen and plan.factor is None):
        return send, (MPI.IN_PLACE, [send, mpi_datatype(send.dtype)])
    recv = recv_side(plan, arr, dtype)
    dt = mpi_datatype(recv.dtype)
    return recv, ([send, dt], [recv, dt])


def in_place(recv: np.ndarray, specs: tuple) -> np.ndarray:
    """:func:`into_place`'s ``recv`` holding this rank's values, for a reduction made in
    place there (direct messages): where the input is a separate pre-scaled copy (a
    premul_sum's, ``specs[0]``), its values copied into ``recv`` first."""
    if specs[0] is not MPI.IN_PLACE:
        np.copyto(recv, specs[0][0])
    return recv


def finisher(plan: Plan, recv: np.ndarray, out: Buffer, n: int) -> Callable[[], None] | None:
    """The completion step: AVG's divide, rounding back to low precision, write-back."""
    average, widened, dtype = plan.average, plan.widen, out.dtype
    if not average and not widened:
        return out.commit_hook

    if average and dtype.startswith(("int", "uint")):  # wrap the sum, then divide
        # (the logical dtype: bfloat16 and float16 are carried as 16-bit unsigned ints)
        def finish_integers() -> None:
            if widened:
                narrow_into(recv, out.array, dtype)
            divide_toward_zero(out.array, n)
            out.commit()
        return finish_integers

    def finish() -> None:
        if average:
            np.divide(recv, n, out=recv)
        if widened:
            narrow_into(recv, out.array, dtype)
        out.commit()
    return finish


def divide_toward_zero(x: np.ndarray, n: int) -> None:
    """``x //= n`` in place, rounded toward zero as C's (and NCCL's AVG) integer division,
    where numpy's floor division rounds negative quotients down."""
    if x.dtype.kind == "u":
        np.floor_divide(x, n, out=x)
        return
    inexact = np.remainder(x, n) != 0
    np.floor_divide(x, n, out=x)
    x += inexact & (x < 0)
