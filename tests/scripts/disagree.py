"""Ranks that disagree about a collective. Usage: disagree.py <case>.

Each rank prints what it got ("ok", or the exception type and message), so a
test can check that every rank reports the same error instead of hanging.
"""
import sys

import numpy as np

import mpicoll as dist
from mpicoll.errors import MPIError, SignatureMismatch, SizeMismatch

case = sys.argv[1]
rank, size = dist.get_rank(), dist.get_world_size()
try:
    if case == "splits":
        # rank 0 believes it receives 2 rows from each peer; they send it only 1
        # (its own block matches: a mismatch there is refused locally, before communicating)
        inp = np.arange(size, dtype=np.float32) + 10 * rank
        recv = [1] + [2] * (size - 1) if rank == 0 else [1] * size
        out = np.zeros(sum(recv), np.float32)
        dist.all_to_all_single(out, inp, recv, [1] * size)
    elif case == "dtype":
        dist.all_reduce(np.ones(4, np.float32 if rank == 0 else np.float64))
    elif case == "op":
        dist.all_reduce(np.ones(4), op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX)
    elif case == "root":
        dist.broadcast(np.ones(4), src=0 if rank == 0 else 1)
    elif case in ("collective", "collective_large"):
        # 4 elements: direct messages on 2 to 8 ranks (tags that differ); 1024: MPI's
        # collectives, which carry none
        n = 4 if case == "collective" else 1024
        if rank == 0:
            dist.all_reduce(np.ones(n))
        else:
            dist.broadcast(np.ones(n), src=0)
    elif case == "skip_barrier":
        # rank 1 skips an all_reduce and goes on to the barrier the others reach next
        if rank != 1:
            dist.all_reduce(np.ones(4))
        dist.barrier()
    elif case == "gather_counts":
        gl = [np.zeros(2) for _ in range(size)] if rank == 0 else None
        dist.gather(np.ones(2 if rank == 0 else 3), gl, dst=0)
    print(f"rank {rank}: ok", flush=True)
except (SignatureMismatch, SizeMismatch, MPIError) as e:
    print(f"rank {rank}: {type(e).__name__}: {e}", flush=True)
