"""mpicoll.jax's gathers and reduce-scatters along dim 0."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import mpicoll as _m

from .._collectives import _validate
from .._collectives.reduce_op import ReduceOp
from . import _host
from ._arguments import array as _array
from ._arguments import array_list as _list
from ._arguments import rows_of as _rows_of
from ._arguments import static_op as _op
from ._arguments import traced as _traced
from ._ops import collective


def all_gather_into_tensor(input: Any, group: Any = None, stacked: bool = False) -> Any:
    """Every rank's ``input`` (all of one shape) concatenated along dim 0, or stacked."""
    x = _array(input, "all_gather_into_tensor")
    t = _host.twin(group, "all_gather_into_tensor")
    if stacked or x.ndim == 0:
        return collective("all_gather", (None,), t, x[None])
    return collective("all_gather", (None,), t, x)


def all_gather(input: Any, group: Any = None, *, sizes: list[int] | None = None) -> list[Any]:
    """Every rank's ``input`` as a list; dim 0 may differ per rank.

    Args:
        input: this rank's array; every rank's must agree in all dimensions but dim 0.
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        sizes: dim 0 of every rank's input, in group-rank order. Needed under a
            transformation when the sizes differ; eagerly they are negotiated when
            omitted. Under a transformation, omitted means every rank's input has
            this rank's shape.
    """
    x = _array(input, "all_gather")
    t = _host.twin(group, "all_gather")
    rows = _rows_of(x, "all_gather")
    if sizes is None and not _traced(x):
        jax.effects_barrier()
        shapes: list[Any] = [None] * t.size
        _m.all_gather_object(shapes, tuple(x.shape), t.group)
        if len({s[1:] for s in shapes}) > 1:
            raise ValueError(f"mpicoll.jax.all_gather: inputs must agree in every dimension "
                             f"but the first: got shapes {shapes}")
        sizes = [s[0] for s in shapes]
    if sizes is None:
        return list(collective("all_gather", (None,), t, x).reshape(t.size, *x.shape))
    counts = _validate.split_sizes("all_gather", list(sizes), t.size, sum(map(int, sizes)),
                                   "sizes", "the gathered array")
    if counts[t.rank] != rows:
        raise ValueError(f"mpicoll.jax.all_gather: sizes[{t.rank}] must be dim 0 of this "
                         f"rank's input: expected {rows}, got {counts[t.rank]}")
    even = len(set(counts)) == 1  # every rank has the same sizes: the same choice
    out = collective("all_gather", (None if even else tuple(counts),), t, x)
    edges = np.cumsum([0, *counts])
    return [out[edges[i]:edges[i + 1]] for i in range(t.size)]


def reduce_scatter_tensor(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """This rank's chunk (dim 0 split in group-size parts) of the reduced ``input``.

    Differentiable for SUM, AVG and PREMUL_SUM.
    """
    x = _array(input, "reduce_scatter_tensor")
    t = _host.twin(group, "reduce_scatter_tensor")
    rows = _rows_of(x, "reduce_scatter_tensor")
    if rows % t.size:
        raise ValueError(f"mpicoll.jax.reduce_scatter_tensor: dim 0 of input must be "
                         f"divisible by the group size {t.size}, got shape {tuple(x.shape)}")
    return collective("reduce_scatter", (None, _op(op, x.dtype, "reduce_scatter_tensor")), t, x)


def reduce_scatter(input_list: list[Any], op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """The reduction of every rank's ``input_list[rank]`` (shapes may differ per index).

    Differentiable for SUM, AVG and PREMUL_SUM.
    """
    t = _host.twin(group, "reduce_scatter")
    xs = _list(input_list, t.size, "reduce_scatter", "input_list")
    counts = tuple(math.prod(a.shape) for a in xs)
    flat = jnp.concatenate([a.reshape(-1) for a in xs])
    even = len(set(counts)) == 1  # the same on every rank: index j agrees everywhere
    spec = (None if even else counts, _op(op, flat.dtype, "reduce_scatter"))
    return collective("reduce_scatter", spec, t, flat).reshape(xs[t.rank].shape)
