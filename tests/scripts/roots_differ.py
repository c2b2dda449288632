"""Two all_reduces, then a gather (or a reduce: argv[1]) to which each rank passes itself
as the root: each waits for the other's data, neither sends any, and the watchdog ends the
job at its timeout. Its report (and the notice before it) says that the other rank waits
in the same call with another root."""

import sys

import numpy as np

import mpicoll as dist

rank, size = dist.get_rank(), dist.get_world_size()
x = np.ones(3)
for _ in range(2):
    dist.all_reduce(x)
if sys.argv[1] == "gather":
    dist.gather(x, [np.zeros(3) for _ in range(size)], dst=rank)
else:
    dist.reduce(x, dst=rank)
print(f"rank {rank}: unreachable", flush=True)
