"""Every rank waits inside MPI for good, after rank 0 printed "ready": the ranks but the
last in an all_reduce that needs the last rank, the last rank in a recv from rank 0 that
is never sent. For the Slurm lane's scancel and time-limit jobs.

Not tests/scripts/stuck.py: it pairs an all_reduce with a broadcast, an erroneous program
that MPICH may complete across nodes (its rank 1 then prints "unreachable" and leaves).
Extra arguments (a token to find the processes by) are ignored.
"""
import numpy as np

import mpicoll as dist

dist.barrier()
rank, size = dist.get_rank(), dist.get_world_size()
if rank == 0:
    print("ready", flush=True)
if rank == size - 1:
    dist.recv(np.ones(4), src=0)
else:
    dist.all_reduce(np.ones(4))
print("unreachable", flush=True)
