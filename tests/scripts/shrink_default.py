"""shrink_group on the default group at 3 ranks: rank 2 is left out and ends; ranks 0 and
1 shrink WORLD, and group=None then means the new group of 2."""

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
dist.barrier()
if rank == 2:
    print("rank 2: left out", flush=True)
else:
    g = dist.shrink_group([2])
    assert dist.get_world_size() == 2 and dist.get_rank() == rank
    assert dist.get_process_group_ranks(g) == [0, 1]
    t = np.array([rank + 1.0])
    dist.all_reduce(t)  # the default group: now the two of them
    assert t[0] == 3.0, t
    print(f"rank {rank}: shrunk, sum {t[0]}", flush=True)
