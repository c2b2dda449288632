"""Checked mode (MPICOLL_CHECK=1): after one all_reduce, rank 1 exits (argv[1] "exit")
or sleeps (argv[1] "sleep") while the others call a second all_reduce, whose signature
exchange waits for it. The job must end: at rank 1's exit, or at the watchdog's timeout."""

import sys
import time

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
x = np.ones(3)
dist.all_reduce(x)
if rank == 1:
    if sys.argv[1] == "exit":
        sys.exit(0)
    time.sleep(120)
dist.all_reduce(x)
print(f"rank {rank}: unreachable", flush=True)
