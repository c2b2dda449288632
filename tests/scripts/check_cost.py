"""The sizes check's own cost on the direct messages (issue 33), measured inside one launch:
each round times every call with the check and with ``Direct.check`` swapped for a no-op
(in alternating order)
(what ``MPICOLL_CHECK=0`` leaves: the same messages, no comparison of the tags), so
launch-to-launch noise cancels. Prints, per call and size, the median over rounds of
(checked - unchecked) in microseconds and as a share of the unchecked call.

    mpiexec -n 2 python tests/scripts/check_cost.py [rounds]
"""

import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import mpicoll as dist
from mpicoll._collectives import _messages

comm = MPI.COMM_WORLD
P, me = comm.Get_size(), comm.Get_rank()
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
SIZES = (8, 1024, 64 << 10, 1 << 20, 16 << 20)  # bytes per rank
checked = _messages.Direct.check


def unchecked(self, statuses, me, dt):
    return None


def calls(nbytes):
    b = max(nbytes // 4 // P, 1)
    n = b * P
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    ins = [np.ones(b, np.float32) for _ in range(P)]
    outs = [np.zeros(b, np.float32) for _ in range(P)]
    out1 = np.zeros(b, np.float32)
    split = [b] * P
    root = me == 0
    return {
        "all_to_all_single": lambda: dist.all_to_all_single(y, x),
        "all_to_all_single(split sizes)": lambda: dist.all_to_all_single(y, x, split, split),
        "all_to_all(separate tensors)": lambda: dist.all_to_all(outs, ins),
        "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(y, out1),
        "all_gather(separate tensors)": lambda: dist.all_gather(outs, out1),
        "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(out1, x),
        "reduce_scatter(separate tensors)": lambda: dist.reduce_scatter(out1, ins),
        "gather": lambda: dist.gather(out1, outs if root else None, dst=0),
        "scatter": lambda: dist.scatter(out1, ins if root else None, src=0),
    }


def timed(fn, iters):
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t = (time.perf_counter() - t0) / iters
    return comm.allreduce(t, op=MPI.MAX)  # the slowest rank's


for nbytes in SIZES:
    iters = max(10, min(2000, (128 << 20) // nbytes))
    cs = calls(nbytes)
    diffs = {name: [] for name in cs}
    bases = {name: [] for name in cs}
    for name, fn in cs.items():
        for _ in range(3):
            fn()  # warm: the quick path's entries and kept messages
    for r in range(ROUNDS):
        for name, fn in cs.items():
            t = {}
            for variant in ((checked, unchecked) if r % 2 else (unchecked, checked)):
                _messages.Direct.check = variant  # (the order alternates per round)
                fn()
                t[variant] = timed(fn, iters)
            _messages.Direct.check = checked
            diffs[name].append(t[checked] - t[unchecked])
            bases[name].append(t[unchecked])
    if me == 0:
        for name in cs:
            d, base = statistics.median(diffs[name]), statistics.median(bases[name])
            print(f"{P} | {name} | {nbytes} | {base * 1e6:.1f} | {d * 1e6:+.2f} | "
                  f"{d / base * 100:+.1f}%", flush=True)
