"""MPICH's large reduce against glibc's malloc thresholds (docs/performance.md, "A large
reduce and malloc"): raw mpi4py only, no mpicoll. Run it as it is, then with the
thresholds fixed, and compare:

    mpiexec -n 2 python tests/scripts/reduce_malloc.py [bytes]
    mpiexec -n 2 -genv MALLOC_MMAP_THRESHOLD_ 4194304 -genv MALLOC_TRIM_THRESHOLD_ 67108864 \\
        python tests/scripts/reduce_malloc.py [bytes]

Prints, on rank 0, each call's minimum and median over 7 rounds of 100 calls (1 MiB of
float32 by default; the root reduces in place). Not a test: nothing is asserted.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
root = comm.Get_rank() == 0
buf = np.ones((int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20) // 4, np.float32)
send, recv = (MPI.IN_PLACE, buf) if root else (buf, None)

calls = {
    "Reduce": lambda: comm.Reduce(send, recv, MPI.SUM, root=0),
    "Ireduce + Wait": lambda: comm.Ireduce(send, recv, MPI.SUM, root=0).Wait(),
    "Allreduce": lambda: comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM),
}
times: dict[str, list[float]] = {name: [] for name in calls}
for _ in range(7):
    for name, call in calls.items():
        for _ in range(5):
            call()
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(100):
            call()
        comm.Barrier()
        times[name].append((time.perf_counter() - start) / 100 * 1e6)
if root:
    for name, t in times.items():
        t.sort()
        print(f"{name:16s} min {t[0]:8.1f} us  median {t[len(t) // 2]:8.1f} us")
