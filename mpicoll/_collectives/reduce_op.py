"""[2] ReduceOp and how each (dtype, op) pair reduces over MPI."""

from __future__ import annotations

import enum
from functools import cache
from typing import Any, NamedTuple

from .._adapter.dtypes import kind_of
from ..errors import ArgumentValueError as _Value


class ReduceOp(enum.IntEnum):
    """Reduction operations, with torch.distributed's names and values.

    ``PREMUL_SUM`` needs a factor: use ``ReduceOp.premul_sum(factor)``.
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    @staticmethod
    def premul_sum(factor: Any) -> PremulSum:
        """``PREMUL_SUM`` with its factor: inputs are multiplied by it, then summed."""
        return PremulSum(factor)


class PremulSum:
    """``ReduceOp.PREMUL_SUM`` bound to its factor (a number or a 0-d tensor)."""

    __slots__ = ("factor",)
    op = ReduceOp.PREMUL_SUM

    def __init__(self, factor: Any) -> None:
        self.factor = factor

    def __repr__(self) -> str:
        return f"ReduceOp.premul_sum({self.factor!r})"


class Plan(NamedTuple):
    """How to reduce: MPI op, whether to widen to float32, pre-scale, post-divide."""

    mpi_op: Any
    widen: bool
    factor: Any
    average: bool


_FLOATISH = ("float", "lowp", "complex")


def as_reduce_op(op: Any, opname: str) -> tuple[ReduceOp, Any]:
    """Normalise mpicoll, torch and plain-int ops to ``(ReduceOp, factor)``."""
    if isinstance(op, PremulSum):
        return ReduceOp.PREMUL_SUM, op.factor
    if isinstance(op, ReduceOp):
        return op, None
    inner = getattr(op, "op", op)  # torch.distributed.ReduceOp instance -> RedOpType
    name = getattr(inner, "name", None)
    if isinstance(name, str) and name in ReduceOp.__members__:
        # torch raises on .factor for anything but PREMUL_SUM
        factor = getattr(op, "factor", None) if name == "PREMUL_SUM" and inner is not op else None
        return ReduceOp[name], factor
    if type(inner) is int and 0 <= inner <= 8:
        return ReduceOp(inner), None
    raise _Value(opname, "type", "{arg} {got!r} is not a ReduceOp", {"arg": "op"}, got=op)


@cache
def _plan(dtype: str, rop: ReduceOp, opname: str) -> tuple[Any, bool, bool]:
    from .._mpi import MPI  # lazy: mpicoll.ReduceOp is usable before MPI starts

    kind = kind_of(dtype)
    if kind == "opaque":
        raise _Value(opname, "dtype", "{arg} {op} is not supported for dtype {got} (it can be "
                     "moved but not reduced)", {"arg": "op"}, op=rop.name, got=dtype)
    if rop in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in ("int", "uint", "bool"):
        raise _Value(opname, "dtype", "{arg} {op} needs an integer or bool dtype, got {got}",
                     {"arg": "op"}, op=rop.name, got=dtype)
    if rop in (ReduceOp.MIN, ReduceOp.MAX) and kind == "complex":
        raise _Value(opname, "dtype", "{arg} {op} is not defined for complex dtype {got}",
                     {"arg": "op"}, op=rop.name, got=dtype)
    if rop == ReduceOp.PREMUL_SUM and kind not in _FLOATISH:
        raise _Value(opname, "dtype", "{arg} {op} needs a floating or complex dtype, got {got}",
                     {"arg": "op"}, op=rop.name, got=dtype)
    # AVG of integers: the sum in the integer type divided by the group size, rounded
    # toward zero, as NCCL's (docs/dtypes.md); of bools it means nothing
    if rop == ReduceOp.AVG and kind not in (*_FLOATISH, "int", "uint"):
        raise _Value(opname, "dtype", "{arg} {op} needs a numeric dtype, got {got}",
                     {"arg": "op"}, op=rop.name, got=dtype)
    if kind == "bool":  # carried as uint8 holding 0/1
        mpi_op = {ReduceOp.SUM: MPI.MAX, ReduceOp.MAX: MPI.MAX, ReduceOp.BOR: MPI.MAX,
                  ReduceOp.PRODUCT: MPI.MIN, ReduceOp.MIN: MPI.MIN, ReduceOp.BAND: MPI.MIN,
                  ReduceOp.BXOR: MPI.BXOR}[rop]
    else:
        mpi_op = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PREMUL_SUM: MPI.SUM,
                  ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX,
                  ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[rop]
    if rop in (ReduceOp.MIN, ReduceOp.MAX) and kind in ("float", "lowp"):
        mpi_op = nan_op(rop == ReduceOp.MAX)
    # Open MPI 5's AVX kernels saturate 8- and 16-bit integer sums (100 + 100 = 127)
    # where C, numpy, torch and MPICH wrap: sum those in 32 bits and wrap on the way back
    small_int_sum = (kind in ("int", "uint") and dtype[-1] in "68" and not dtype.endswith("64")
                     and rop in (ReduceOp.SUM, ReduceOp.AVG) and _saturating_mpi())
    return mpi_op, kind == "lowp" or small_int_sum, rop == ReduceOp.AVG


@cache
def nan_op(maximum: bool) -> Any:
    """MIN or MAX that keeps NaN, as ``np.minimum``/``np.maximum`` and torch do.

    MPI's own MPI_MIN/MPI_MAX compare with ``<``/``>``, so a NaN is dropped or kept
    depending on the order of the operands: the result could differ between ranks
    and hide a diverged rank. Floating dtypes (float16/bfloat16 widened to float32)
    reduce with this user-defined, commutative operation instead.
    """
    import numpy as np

    from .._mpi import MPI  # lazy: mpicoll.ReduceOp is usable before MPI starts

    ufunc = np.maximum if maximum else np.minimum
    types = {MPI.FLOAT.handle: np.float32, MPI.DOUBLE.handle: np.float64}

    def reduce(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
        dt = types.get(datatype.handle)
        if dt is None:  # a derived type of the large-message path: its base type
            dt = types[datatype.Get_contents()[3][0].handle]
        acc = np.frombuffer(inoutbuf, dt)
        ufunc(np.frombuffer(inbuf, dt), acc, out=acc)

    return MPI.Op.Create(reduce, commute=True)


@cache
def _saturating_mpi() -> bool:
    """Open MPI with its AVX reduction kernels, which saturate small integer sums."""
    import os

    from .._mpi import MPI  # lazy: mpicoll.ReduceOp is usable before MPI starts

    excluded = os.environ.get("OMPI_MCA_op", "").replace(" ", "")
    return "Open MPI" in MPI.Get_library_version() and not (
        excluded.startswith("^") and "avx" in excluded[1:].split(","))


_FAST: dict[tuple[str, Any], Plan] = {}


def _no_factor(opname: str) -> Exception:
    return _Value(opname, "missing", "{arg} PREMUL_SUM needs a factor: use "
                  "ReduceOp.premul_sum(factor)", {"arg": "op"})


def plan(dtype: str, op: Any, opname: str) -> Plan:
    """Decide how to reduce ``dtype`` with ``op``; raises ValueError if invalid."""
    if type(op) is ReduceOp:
        hit = _FAST.get((dtype, op))
        if hit is None:
            if op == ReduceOp.PREMUL_SUM:
                raise _no_factor(opname)
            mpi_op, widen, average = _plan(dtype, op, opname)
            hit = _FAST[(dtype, op)] = Plan(mpi_op, widen, None, average)
        return hit
    rop, factor = as_reduce_op(op, opname)
    if rop == ReduceOp.PREMUL_SUM:
        if factor is None:
            raise _no_factor(opname)
        if hasattr(factor, "item"):
            factor = factor.item()
    mpi_op, widen, average = _plan(dtype, rop, opname)
    return Plan(mpi_op, widen, factor, average)


def op_name(op: Any) -> str:
    """The ReduceOp's name, for checked mode and messages."""
    try:
        return as_reduce_op(op, "")[0].name
    except ValueError:
        return repr(op)


def supports_complex(reduceOp: Any) -> bool:
    """Whether ``reduceOp`` reduces complex tensors here: SUM, AVG, PRODUCT and PREMUL_SUM
    do (torch also refuses PRODUCT; MPI's MPI_PROD multiplies complex numbers)."""
    rop, _ = as_reduce_op(reduceOp, "supports_complex")
    return rop in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.PREMUL_SUM)
