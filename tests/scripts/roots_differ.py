"""Two all_reduces, then a gather (or a reduce: argv[1]) to which each rank passes itself
as the root: each waits for the other's data, neither sends any, and the watchdog ends the
job at its timeout. Its report (and the notice before it) says that the other rank waits
in the same call with another root.

argv[2] says how the call is made: "first" (a blocking call, the first of its kind:
the general path, whose wait holds MPI's arguments), "warm" (two calls to rank 0 before,
so that rank 0's third runs where its plan was kept: the compiled core, where it is in
use) or "async" (async_op=True, then wait)."""

import sys

import numpy as np

import mpicoll as dist

rank, size = dist.get_rank(), dist.get_world_size()
call, how = sys.argv[1], sys.argv[2]
x = np.ones(3)
for _ in range(2):
    dist.all_reduce(x)


def rooted(root, **kw):
    if call == "gather":
        return dist.gather(x, [np.zeros(3) for _ in range(size)] if rank == root else None,
                           dst=root, **kw)
    return dist.reduce(x, dst=root, **kw)


if how == "warm":
    for _ in range(2):
        rooted(0)
if how == "async":
    rooted(rank, async_op=True).wait()
else:
    rooted(rank)
print(f"rank {rank}: unreachable", flush=True)
