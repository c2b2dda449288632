"""GPU path timings (run by hand on a CUDA machine): all_reduce of torch CUDA tensors and
CuPy arrays through mpicoll (staged via host, or direct where the MPI is GPU-aware), beside
the same call on host memory, raw mpi4py on host memory, and the copies that staging makes
(cudaMemcpy host<->device, pageable and pinned).

Run: mpiexec -n 2 python tests/scripts/gpu_bench.py
"""

from __future__ import annotations

import time

import numpy as np
import torch
from mpi4py import MPI

import mpicoll as dist
from mpicoll._adapter.device import gpu_aware

COMM = MPI.COMM_WORLD
RANK = COMM.Get_rank()


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    COMM.Barrier()
    best = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        best.append((time.perf_counter() - t0) / reps)
        COMM.Barrier()
    return min(best)


def main():
    if RANK == 0:
        print(f"MPI: {MPI.Get_library_version().splitlines()[0]}; "
              f"gpu_aware: {gpu_aware()}; device: {torch.cuda.get_device_name()}")
    try:
        import cupy
    except ImportError:
        cupy = None
    for nbytes in (1 << 20, 64 << 20):
        one_size(nbytes, cupy)


def one_size(nbytes, cupy):
    """Each row at ``nbytes``: the slowest rank's best of three means."""
    n = nbytes // 4
    reps = 50 if nbytes <= 1 << 20 else 5
    g = torch.ones(n, device="cuda")
    h = torch.ones(n)
    a = np.ones(n, dtype=np.float32)
    b = np.empty_like(a)
    pinned = torch.ones(n).pin_memory()
    rows = {
        "mpicoll torch cuda": lambda: dist.all_reduce(g),
        "mpicoll torch cpu": lambda: dist.all_reduce(h),
        "raw mpi4py Allreduce (host)": lambda: COMM.Allreduce(a, b),
        "copy D2H pageable (.cpu())": lambda: g.cpu(),
        "copy H2D pageable (.copy_)": lambda: g.copy_(h),
        "copy D2H pinned": lambda: pinned.copy_(g),
        "copy H2D pinned": lambda: g.copy_(pinned),
    }
    if cupy is not None:
        c = cupy.ones(n, dtype=cupy.float32)
        rows["mpicoll cupy"] = lambda: dist.all_reduce(c)
    for name, fn in rows.items():
        t = COMM.allreduce(timed(fn, reps), op=MPI.MAX)
        if RANK == 0:
            print(f"{nbytes >> 20:3d} MiB  {name:32s} {t * 1e3:9.3f} ms  "
                  f"{nbytes / t / 1e9:7.2f} GB/s")


if __name__ == "__main__":
    main()
