"""Small calls with warm and with cold caches (docs/performance.md, "Small machines"): each
call timed alone, after nothing (warm) or after a 4 MiB copy that evicts this process's
code and data from the caches (cold), raw mpi4py beside mpicoll, and mpicoll with its
flight recorder off and on (the ring swapped for None in turn). Medians of 3000 calls.

    python tests/scripts/cold_calls.py          (world size 1)
"""

import time

import numpy as np
from mpi4py import MPI

import mpicoll as dist
from mpicoll import _recorder

comm = MPI.COMM_WORLD
x = np.ones(2, np.float32)
y = np.zeros(2 * comm.size, np.float32)
z = np.ones(2 * comm.size, np.float32)
big, scratch = np.ones(1 << 20, np.float32), np.zeros(1 << 20, np.float32)


def timed(f, cold: bool, n: int = 3000) -> float:
    ts = []
    for _ in range(n):
        if cold:
            np.copyto(scratch, big)
        t = time.perf_counter_ns()
        f()
        ts.append(time.perf_counter_ns() - t)
    return float(np.median(ts)) / 1000


calls = {"raw Allreduce": lambda: comm.Allreduce(MPI.IN_PLACE, x),
         "raw Iallreduce + Test": lambda: comm.Iallreduce(MPI.IN_PLACE, x).Test(),
         "mpicoll.all_reduce": lambda: dist.all_reduce(x),
         "raw Alltoall": lambda: comm.Alltoall(z, y),
         "mpicoll.all_to_all_single": lambda: dist.all_to_all_single(y, z)}
for f in calls.values():
    f()
    f()
for name, f in calls.items():
    print(f"{name:28s} warm {timed(f, False):6.2f} us   cold {timed(f, True):6.2f} us")
ring = _recorder.ring
for name in ("mpicoll.all_reduce", "mpicoll.all_to_all_single"):
    _recorder.ring = None
    off = timed(calls[name], True)
    _recorder.ring = ring
    print(f"{name:28s} cold, flight recorder off {off:6.2f} us   on "
          f"{timed(calls[name], True):6.2f} us")
