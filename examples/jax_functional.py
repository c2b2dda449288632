"""JAX arrays with mpicoll's functional form (JAX arrays are immutable).

Run: mpiexec -n 2 python examples/jax_functional.py
"""
import jax.numpy as jnp

import mpicoll.functional as F

import mpicoll as dist

rank, world = dist.get_rank(), dist.get_world_size()

x = jnp.arange(4.0) + 10 * rank
total = F.all_reduce(x)                               # a new jax.Array
gathered = F.all_gather(jnp.full((rank + 1,), rank))  # uneven sizes, negotiated
out, recv_sizes = F.all_to_all_single(jnp.arange(world * 2.0) + 100 * rank,
                                      input_split_sizes=[2] * world)

print(f"rank {rank}: all_reduce {total.tolist()} all_gather "
      f"{[g.tolist() for g in gathered]} all_to_all_single {out.tolist()} "
      f"recv_sizes {recv_sizes} type {type(total).__name__}", flush=True)
