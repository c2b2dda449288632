"""mpicoll.jax: collectives for JAX arrays, eagerly and inside ``jax.jit``.

The names and parameters of :mod:`mpicoll.functional`; each function returns new
JAX arrays. Inside ``jax.jit`` (and ``lax.scan``, ``lax.cond``, ...) each call is
one ordered host callback, so the collectives of a compiled program run in
program order on every rank. ``jax.grad`` differentiates through them (the
gradient of a collective is a collective; see ``docs/guides/jax-jit.md``) and
``jax.vmap`` batches them into one collective.

Under a transformation sizes must be known when tracing: split sizes are Python
ints, and where :mod:`mpicoll.functional` would negotiate sizes with the peers,
pass them (``sizes=``, ``output_split_sizes=``, ``output_shapes=``) or use equal
sizes on every rank.

Example::

    import jax
    import mpicoll.jax as mj

    @jax.jit
    def step(params, batch):
        grads = jax.grad(loss)(params, batch)
        grads = jax.tree.map(lambda g: mj.all_reduce(g, op=mj.ReduceOp.AVG), grads)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import mpicoll as _m

from .._collectives import _validate
from .._collectives.reduce_op import ReduceOp, as_reduce_op, plan
from . import _host
from ._ops import collective
from ._primitive import mechanism

__all__ = ["ReduceOp", "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
           "all_to_all_single", "broadcast", "mechanism", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "sendrecv"]


def _traced(*xs: Any) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def _array(x: Any, op: str, name: str = "input") -> Any:
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
        return jnp.asarray(x)
    raise TypeError(f"mpicoll.jax.{op}: {name} must be a JAX array, got {type(x).__name__}")


def _op(op: Any, dtype: Any, opname: str) -> tuple[str, Any]:
    """The static form ``(name, factor)`` of a ReduceOp, checked against the dtype."""
    rop, factor = as_reduce_op(op, opname)
    if factor is not None:
        if isinstance(factor, jax.core.Tracer):
            raise TypeError(f"mpicoll.jax.{opname}: the PREMUL_SUM factor must be a Python "
                            "number when traced (jax.jit, jax.grad, ...), got a tracer")
        factor = factor.item() if hasattr(factor, "item") else factor
    plan(str(np.dtype(dtype)), op if factor is None else ReduceOp.premul_sum(factor), opname)
    return rop.name, factor


def _root(t: _host.Twin, op: str, rank: int | None, group_rank: int | None,
          name: str) -> int:
    """A group rank from a global ``rank`` or a ``group_rank`` (exactly one given)."""
    gname = f"group_{name}"
    if (rank is None) == (group_rank is None):
        raise ValueError(f"mpicoll.jax.{op}: exactly one of {name} and {gname} must be "
                         f"given, got {name}={rank!r}, {gname}={group_rank!r}")
    if group_rank is not None:
        return t.group.check_group_rank(group_rank, op, gname)
    return t.group.group_rank(rank, op, name)


def _rows_of(x: Any, op: str, name: str = "input") -> int:
    if x.ndim == 0:
        raise ValueError(f"mpicoll.jax.{op}: {name} must have at least one dimension")
    return int(x.shape[0])


# -- reductions and broadcasts: the result has the input's shape --------------------------


def all_reduce(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """A new array: the reduction of ``input`` over ``group``. Call on every rank.

    Differentiable for SUM, AVG, PREMUL_SUM, MIN and MAX.
    """
    x = _array(input, "all_reduce")
    t = _host.twin(group, "all_reduce")
    return collective("all_reduce", (_op(op, x.dtype, "all_reduce"),), t, x)


def broadcast(input: Any, src: int | None = None, group: Any = None,
              group_src: int | None = None) -> Any:
    """A new array holding the source rank's ``input`` (same shape on every rank)."""
    x = _array(input, "broadcast")
    t = _host.twin(group, "broadcast")
    return collective("broadcast", (_root(t, "broadcast", src, group_src, "src"),), t, x)


def reduce(input: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           group_dst: int | None = None) -> Any:
    """A new array: the reduction on the destination, a copy of ``input`` elsewhere."""
    x = _array(input, "reduce")
    t = _host.twin(group, "reduce")
    root = _root(t, "reduce", dst, group_dst, "dst")
    return collective("reduce", (root, _op(op, x.dtype, "reduce")), t, x)


def sendrecv(input: Any, dst: int | None, src: int | None, group: Any = None, tag: int = 0,
             group_dst: int | None = None, group_src: int | None = None) -> Any:
    """Send ``input`` to ``dst`` and return what ``src`` sends here (same shape and dtype).

    ``dst=None`` sends nothing; ``src=None`` receives nothing and returns zeros (as
    ``MPI_PROC_NULL``), for the edges of a non-periodic shift. Ranks are global
    (``group_dst``/``group_src``: ranks in ``group``). The gradient goes back the
    other way: a sendrecv to ``src`` from ``dst``.
    """
    x = _array(input, "sendrecv")
    t = _host.twin(group, "sendrecv")
    to = None if dst is None and group_dst is None else _root(t, "sendrecv", dst, group_dst,
                                                                 "dst")
    frm = None if src is None and group_src is None else _root(t, "sendrecv", src, group_src,
                                                                  "src")
    if (to == t.rank) != (frm == t.rank):
        raise ValueError(f"mpicoll.jax.sendrecv: a rank may send to itself only if it "
                         f"receives from itself: dst is group rank {to}, src is {frm}, "
                         f"this rank is {t.rank}")
    if isinstance(tag, bool) or not isinstance(tag, int) or tag < 0:
        raise ValueError(f"mpicoll.jax.sendrecv: tag must be a non-negative int, got {tag!r}")
    return collective("sendrecv", (to, frm, tag), t, x)


# -- gathers and scatters along dim 0 -----------------------------------------------------


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


def _list(xs: Any, n: int, op: str, name: str) -> list[Any]:
    if not isinstance(xs, (list, tuple)) or len(xs) != n:
        got = len(xs) if isinstance(xs, (list, tuple)) else type(xs).__name__
        raise ValueError(f"mpicoll.jax.{op}: {name} must be a list of one array per rank: "
                         f"expected {n}, got {got}")
    arrays = [_array(a, op, f"{name}[{i}]") for i, a in enumerate(xs)]
    dtypes = {str(a.dtype) for a in arrays}
    if len(dtypes) > 1:
        raise ValueError(f"mpicoll.jax.{op}: {name} must have one dtype, got {sorted(dtypes)}")
    return arrays


# -- all-to-all --------------------------------------------------------------------------


def all_to_all_single(input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None) -> Any:
    """Exchange rows of ``input``: ``input_split_sizes[j]`` rows go to rank j.

    Returns:
        The received rows. Eagerly, when only ``input_split_sizes`` is given, the
        receive sizes are negotiated and ``(output, output_split_sizes)`` is
        returned, as in :func:`mpicoll.functional.all_to_all_single`; under a
        transformation both split lists must be given (or neither).
    """
    name = "all_to_all_single"
    x = _array(input, name)
    t = _host.twin(group, name)
    rows = _rows_of(x, name)
    negotiated = output_split_sizes is None and input_split_sizes is not None
    scounts = _validate.split_sizes(name, input_split_sizes, t.size, rows,
                                    "input_split_sizes", "input")
    if negotiated:
        if _traced(x):
            raise ValueError(f"mpicoll.jax.{name}: under jax.jit (or another "
                             "transformation) output_split_sizes must be given with "
                             "input_split_sizes: the receive sizes cannot be negotiated "
                             "while tracing")
        jax.effects_barrier()
        got = np.empty(t.size, dtype=np.int64)
        _m.all_to_all_single(got, np.asarray(scounts, dtype=np.int64), group=t.group)
        output_split_sizes = [int(v) for v in got]
    if output_split_sizes is None:
        rcounts = None
    else:
        rcounts = _validate.split_sizes(name, output_split_sizes, t.size,
                                        sum(int(v) for v in output_split_sizes),
                                        "output_split_sizes", "output")
    if (scounts is None) != (rcounts is None):
        scounts = scounts or [rows // t.size] * t.size
        rcounts = rcounts or [rows // t.size] * t.size
    if scounts is not None:
        _validate.self_block(name, scounts, rcounts, t.rank, "input_split_sizes",
                             "output_split_sizes")
    spec = (None, None) if scounts is None else (tuple(scounts), tuple(rcounts))
    out = collective("all_to_all", spec, t, x)
    return (out, output_split_sizes) if negotiated else out


def all_to_all(input_tensor_list: list[Any], group: Any = None, *,
               output_shapes: list[tuple[int, ...]] | None = None) -> list[Any]:
    """Send ``input_tensor_list[j]`` to rank j; returns what each rank sent here.

    Args:
        input_tensor_list: one array per rank, of one dtype.
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        output_shapes: the shape of what each rank sends here. Eagerly, omitted
            means negotiated; under a transformation, omitted means every array of
            every rank has one shape (then ``input_tensor_list``'s arrays must agree).
    """
    name = "all_to_all"
    t = _host.twin(group, name)
    xs = _list(input_tensor_list, t.size, name, "input_tensor_list")
    shapes_in = [tuple(a.shape) for a in xs]
    if output_shapes is None and not _traced(*xs):
        jax.effects_barrier()
        table: list[Any] = [None] * t.size
        _m.all_gather_object(table, shapes_in, t.group)
        output_shapes = [row[t.rank] for row in table]
    flat = jnp.concatenate([a.reshape(-1) for a in xs])
    if output_shapes is None:
        if len(set(shapes_in)) > 1:
            raise ValueError(f"mpicoll.jax.{name}: under jax.jit (or another transformation) "
                             "output_shapes must be given when the arrays differ in shape, "
                             f"got shapes {shapes_in}")
        out = collective("all_to_all", (None, None), t, flat)
        return list(out.reshape(t.size, *shapes_in[0]))
    shapes_out = [tuple(int(d) for d in s) for s in output_shapes]
    if len(shapes_out) != t.size:
        raise ValueError(f"mpicoll.jax.{name}: output_shapes must have one shape per rank: "
                         f"expected {t.size}, got {len(shapes_out)}")
    if shapes_out[t.rank] != shapes_in[t.rank]:
        raise ValueError(f"mpicoll.jax.{name}: output_shapes[{t.rank}] must be the shape "
                         f"this rank sends itself: expected {shapes_in[t.rank]}, got "
                         f"{shapes_out[t.rank]}")
    spec = (tuple(math.prod(s) for s in shapes_in), tuple(math.prod(s) for s in shapes_out))
    out = collective("all_to_all", spec, t, flat)
    edges = np.cumsum([0, *spec[1]])
    return [out[edges[i]:edges[i + 1]].reshape(s) for i, s in enumerate(shapes_out)]
