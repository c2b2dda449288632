"""mpicoll.jax's all-to-alls: rows of one array (all_to_all_single) or a list of arrays."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import mpicoll as _m

from .._collectives import _validate
from . import _host
from ._arguments import array as _array
from ._arguments import array_list as _list
from ._arguments import rows_of as _rows_of
from ._arguments import traced as _traced
from ._ops import collective


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
