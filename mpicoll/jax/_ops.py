"""[2] The collectives as differentiable JAX functions: each one's VJP is a collective.

Convention (torch.distributed.nn's): the objective is the **sum over ranks** of
what each rank computes from its outputs. With ``y = op(x_0, ..., x_{P-1})`` on
every rank and cotangents ``g_r``, the gradient for rank s's input is
``sum_r (dy_r/dx_s)^T g_r``:

==================================  ============================================
forward                              backward (cotangent of the input)
==================================  ============================================
all_reduce SUM / AVG / PREMUL_SUM f  all_reduce of g with the same op
all_reduce MIN / MAX                 sum_r g_r where x is the extreme, shared
                                     equally among ties (as ``jnp.max``)
broadcast from root                  reduce(SUM) of g to root; 0 elsewhere
reduce to root (c * sum)             c * broadcast of g_root, plus g on non-roots
all_gather (counts)                  reduce_scatter(SUM) of g (counts)
reduce_scatter (counts, c * sum)     c * all_gather of g (counts)
all_to_all (sends s, receives r)     all_to_all of g (sends r, receives s)
sendrecv (to dst, from src)          sendrecv of g (to src, from dst)
==================================  ============================================

Backward collectives are collectives too: every rank runs them, in the reverse
order of the forward ones, which is the same order on every rank.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from ._host import Twin
from ._primitive import bind

_LINEAR = {"SUM", "AVG", "PREMUL_SUM"}


def collective(kind: str, spec: tuple, t: Twin, x: Any) -> Any:
    """Collective ``kind`` on ``x``; differentiable for floating and complex dtypes."""
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        return bind(x, kind, spec, t)  # nothing to differentiate
    return _diff(kind, spec, t, x)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def _diff(kind: str, spec: tuple, t: Twin, x: Any) -> Any:
    return bind(x, kind, spec, t)


def _fwd(kind: str, spec: tuple, t: Twin, x: Any) -> tuple[Any, Any]:
    y = _diff(kind, spec, t, x)  # itself differentiable: grad of grad differentiates this
    keep = kind == "all_reduce" and spec[0][0] in ("MIN", "MAX")
    return y, (x, y) if keep else None


def _bwd(kind: str, spec: tuple, t: Twin, res: Any, g: Any) -> tuple[Any]:
    return (_transpose(kind, spec, t, res, g),)


_diff.defvjp(_fwd, _bwd)


def _coefficient(kind: str, op: tuple[str, Any], t: Twin) -> Any:
    """``c`` of a linear reduction ``c * sum``; NotImplementedError for the others."""
    name, factor = op
    if name not in _LINEAR:
        raise NotImplementedError(
            f"mpicoll.jax.{kind}: jax.grad is defined for op SUM, AVG and PREMUL_SUM"
            f"{' (and MIN, MAX)' if kind == 'all_reduce' else ''}, not {name}")
    return {"SUM": 1, "AVG": 1 / t.size, "PREMUL_SUM": factor}[name]


def _transpose(kind: str, spec: tuple, t: Twin, res: Any, g: Any) -> Any:
    sum_ = ("SUM", None)
    if kind == "all_reduce":
        op = spec[0]
        if op[0] in ("MIN", "MAX"):
            x, y = res
            hit = (x == y).astype(g.dtype)
            ties = collective("all_reduce", (sum_,), t, hit)
            return hit * collective("all_reduce", (sum_,), t, g) / jnp.maximum(ties, 1)
        _coefficient(kind, op, t)  # raises for ops without a gradient
        return collective("all_reduce", (op,), t, g)
    if kind == "broadcast":
        (root,) = spec
        got = collective("reduce", (root, sum_), t, g)
        return got if t.rank == root else jnp.zeros_like(g)
    if kind == "reduce":
        root, op = spec
        c = _coefficient(kind, op, t)
        back = c * collective("broadcast", (root,), t, g)
        return back if t.rank == root else back + g
    if kind == "all_gather":
        return collective("reduce_scatter", (spec[0], sum_), t, g)
    if kind == "reduce_scatter":
        counts, op = spec
        return _coefficient(kind, op, t) * collective("all_gather", (counts,), t, g)
    if kind == "all_to_all":
        scounts, rcounts = spec
        return collective("all_to_all", (rcounts, scounts), t, g)
    if kind == "sendrecv":
        dst, src, tag = spec
        return collective("sendrecv", (src, dst, tag), t, g)
    raise AssertionError(kind)
