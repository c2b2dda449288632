"""mpicoll.jax's argument checks: arrays, ReduceOps, roots and lists, in the forms JAX keeps."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._collectives.reduce_op import ReduceOp, as_reduce_op, plan
from ._host import Twin


def traced(*xs: Any) -> bool:
    """Whether any of ``xs`` is a tracer: the call is under a JAX transformation."""
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def array(x: Any, op: str, name: str = "input") -> Any:
    """``x`` as a JAX array (numpy arrays and Python scalars converted), else TypeError."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
        return jnp.asarray(x)
    raise TypeError(f"mpicoll.jax.{op}: {name} must be a JAX array, got {type(x).__name__}")


def static_op(op: Any, dtype: Any, opname: str) -> tuple[str, Any]:
    """The static form ``(name, factor)`` of a ReduceOp, checked against the dtype."""
    rop, factor = as_reduce_op(op, opname)
    if factor is not None:
        if isinstance(factor, jax.core.Tracer):
            raise TypeError(f"mpicoll.jax.{opname}: the PREMUL_SUM factor must be a Python "
                            "number when traced (jax.jit, jax.grad, ...), got a tracer")
        factor = factor.item() if hasattr(factor, "item") else factor
    plan(str(np.dtype(dtype)), op if factor is None else ReduceOp.premul_sum(factor), opname)
    return rop.name, factor


def root(t: Twin, op: str, rank: int | None, group_rank: int | None,
         name: str) -> int:
    """A group rank from a global ``rank`` or a ``group_rank`` (exactly one given)."""
    gname = f"group_{name}"
    if (rank is None) == (group_rank is None):
        raise ValueError(f"mpicoll.jax.{op}: exactly one of {name} and {gname} must be "
                         f"given, got {name}={rank!r}, {gname}={group_rank!r}")
    if group_rank is not None:
        return t.group.check_group_rank(group_rank, op, gname)
    return t.group.group_rank(rank, op, name)


def rows_of(x: Any, op: str, name: str = "input") -> int:
    """Dim 0 of ``x``, which must have one."""
    if x.ndim == 0:
        raise ValueError(f"mpicoll.jax.{op}: {name} must have at least one dimension")
    return int(x.shape[0])


def array_list(xs: Any, n: int, op: str, name: str) -> list[Any]:
    """``xs`` as a list of ``n`` JAX arrays of one dtype (one per rank)."""
    if not isinstance(xs, (list, tuple)) or len(xs) != n:
        got = len(xs) if isinstance(xs, (list, tuple)) else type(xs).__name__
        raise ValueError(f"mpicoll.jax.{op}: {name} must be a list of one array per rank: "
                         f"expected {n}, got {got}")
    arrays = [array(a, op, f"{name}[{i}]") for i, a in enumerate(xs)]
    dtypes = {str(a.dtype) for a in arrays}
    if len(dtypes) > 1:
        raise ValueError(f"mpicoll.jax.{op}: {name} must have one dtype, got {sorted(dtypes)}")
    return arrays
