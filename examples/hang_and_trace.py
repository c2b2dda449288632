"""A training loop with two planted faults, for the flight recorder (docs/debugging.md).

Every step reduces a 1 MiB gradient across the ranks and, every fourth step,
exchanges tokens with an uneven all_to_all_single. Rank 2 is slow: it sleeps 10 ms
before each step (a straggler). At step 12, rank 1 takes a branch that skips the
all_reduce (the bug) and goes on to receive a message nobody sends, so the job hangs.

Run it with a short timeout and a dump folder; the watchdog ends the job and every rank
writes its flight record, which ``python -m mpicoll trace`` reads::

    MPICOLL_TIMEOUT=5 MPICOLL_TRACE_DIR=trace mpiexec -n 4 python examples/hang_and_trace.py
    python -m mpicoll trace trace --plot trace.png
"""
import time

import numpy as np

import mpicoll as dist

rank, size = dist.get_rank(), dist.get_world_size()
grad = np.ones(256 * 1024, np.float32)  # 1 MiB
send = [rank + j + 1 for j in range(size)]  # tokens for rank j
recv = [i + rank + 1 for i in range(size)]  # tokens from rank i
tokens = np.full((sum(send), 8), rank, np.float32)
routed = np.empty((sum(recv), 8), np.float32)

for step in range(20):
    if rank == 2:
        time.sleep(0.01)  # the straggler
    if rank == 1 and step == 12:  # the bug: this rank skips the step's all_reduce ...
        dist.recv(np.empty(1, np.float32), src=0)  # ... and waits for a message instead
    dist.all_reduce(grad)
    if step % 4 == 3:
        dist.all_to_all_single(routed, tokens, recv, send)
print(f"rank {rank}: done")
