"""mpicoll.jax: collectives for JAX arrays, eagerly and inside ``jax.jit``.

The names and parameters of :mod:`mpicoll.functional`; each function returns new
JAX arrays. Inside ``jax.jit`` (and ``lax.scan``, ``lax.cond``, ...) each call is
one ordered call into the host (mpicoll's XLA FFI handler where it is built, else a
host callback), so the collectives of a compiled program run in program order on
every rank. ``jax.grad`` differentiates through them (the
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

# isort: off
# In the order the API reference lists them (mkdocstrings' members_order: source).
from .._collectives.reduce_op import ReduceOp
from ._primitive import mechanism
from ._same_shape import all_reduce, broadcast, reduce, sendrecv
from ._gather_scatter import all_gather_into_tensor, all_gather
from ._gather_scatter import reduce_scatter_tensor, reduce_scatter
from ._all_to_all import all_to_all_single, all_to_all
# isort: on

__all__ = ["ReduceOp", "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
           "all_to_all_single", "broadcast", "mechanism", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "sendrecv"]
