"""Rank 1 arrives late (argv[1] seconds) at the second all_reduce; the job completes."""

import sys
import time

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
x = np.ones(3)
dist.all_reduce(x)
if rank == 1:
    time.sleep(float(sys.argv[1]))
dist.all_reduce(x)
print(f"rank {rank}: done {x.tolist()}", flush=True)
