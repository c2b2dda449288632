"""Every rank makes 12 all_reduces and 4 all_to_all_singles; the last rank sleeps 200 ms
before each call, so it arrives last every time (the ranks start together; 30 ms was
less than what 4 ranks on 2 cores in CI stalled a rank for once). The job ends
normally: each rank writes its flight record at exit (MPICOLL_TRACE_DIR)."""
import time

import numpy as np
from mpi4py import MPI

import mpicoll as dist

rank, size = dist.get_rank(), dist.get_world_size()
# start together (mpi4py's own barrier: not recorded): a rank still starting up when the
# others issue the first collective would be last in it, not the straggler
MPI.COMM_WORLD.Barrier()
x = np.ones(1024, np.float32)
out = np.empty(4 * size, np.float32)
for i in range(16):
    if rank == size - 1:
        time.sleep(0.2)
    if i % 4 == 3:
        dist.all_to_all_single(out, np.ones(4 * size, np.float32))
    else:
        dist.all_reduce(x)
print(f"rank {rank} done")
