"""Six all_reduces (mostly complete without a wait), a broadcast, then rank 0 calls
all_reduce where the others call broadcast: the eighth collective differs."""

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
x = np.ones(3)
for _ in range(6):
    dist.all_reduce(x)
dist.broadcast(x, src=0)
if rank == 0:
    dist.all_reduce(x)
else:
    dist.broadcast(x, src=1)
print(f"rank {rank}: unreachable", flush=True)
