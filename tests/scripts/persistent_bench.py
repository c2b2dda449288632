"""Restart cost of mpicoll's persistent collectives against raw mpi4py and the ordinary call.

    mpiexec -n 2 python tests/scripts/persistent_bench.py [--ops all_reduce,broadcast]
        [--frameworks numpy,torch] [--rounds 30] [--json out.json]

For each collective, framework and message size (8 B to 1 MiB of float32 per rank) it
times, per call (us, the slowest rank's mean over a round of about ``--round-ms``, best of
``--rounds`` rounds, the variants interleaved in every round so that a load change hits
them alike):

- ``persistent``: mpicoll's ``coll()`` (start + wait) of a ``*_init`` collective;
- ``raw_persistent``: mpi4py's own ``req.Start(); req.Wait()`` of ``MPI_*_init`` on the
  same memory (only where the MPI has persistent collectives);
- ``raw_persistent_test``: the same, completed by polling ``req.Test()``, as mpicoll's
  blocking start does for its first tests (MPICH's ``MPI_Wait`` can be the slower of
  the two on a loaded machine);
- ``ordinary``: mpicoll's ordinary call (``dist.all_reduce(t)``, ...);
- ``raw_blocking``: mpi4py's blocking call (``comm.Allreduce(...)``) on the same memory.

Results are verified once per case before timing. Kept here until mpicoll.bench has a
case registry to hold it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from mpi4py import MPI

import mpicoll as dist

SIZES = [8, 64, 512, 4096, 32768, 262144, 1 << 20]  # bytes per rank


def _tensor(fw: str, a: np.ndarray):
    if fw == "numpy":
        return a
    import torch

    return torch.from_numpy(a)


def _case(op: str, fw: str, nbytes: int, comm, rank: int, size: int):
    """(the mpicoll persistent collective, the ordinary call, the raw calls' arguments,
    a check of the output) for one case."""
    n = max(nbytes // 4, 1)
    dt = MPI.FLOAT
    if op == "all_reduce":
        a = np.zeros(n, np.float32)
        t = _tensor(fw, a)
        coll = dist.all_reduce_init(t)
        spec = (MPI.IN_PLACE, [a, dt], MPI.SUM)
        return coll, lambda: dist.all_reduce(t), "Allreduce", spec, a, (
            lambda: a.fill(rank + 1), lambda: np.all(a == size * (size + 1) / 2))
    if op == "broadcast":
        a = np.zeros(n, np.float32)
        t = _tensor(fw, a)
        coll = dist.broadcast_init(t, src=0)
        return coll, lambda: dist.broadcast(t, src=0), "Bcast", ([a, dt], 0), a, (
            lambda: a.fill(rank + 1), lambda: np.all(a == 1))
    m = max(n // size, 1) * size  # elements per rank, divisible by the group size
    if op == "all_to_all_single":
        src, dst = np.zeros(m, np.float32), np.zeros(m, np.float32)
        ts, td = _tensor(fw, src), _tensor(fw, dst)
        coll = dist.all_to_all_single_init(td, ts)
        spec = ([src, m // size, dt], [dst, m // size, dt])
        return coll, lambda: dist.all_to_all_single(td, ts), "Alltoall", spec, dst, (
            lambda: src.fill(rank + 1),
            lambda: np.all(dst == np.repeat(np.arange(1, size + 1), m // size)))
    if op == "all_gather_into_tensor":
        src, dst = np.zeros(m // size, np.float32), np.zeros(m, np.float32)
        ts, td = _tensor(fw, src), _tensor(fw, dst)
        coll = dist.all_gather_into_tensor_init(td, ts)
        spec = ([src, dt], [dst, dt])
        return coll, lambda: dist.all_gather_into_tensor(td, ts), "Allgather", spec, dst, (
            lambda: src.fill(rank + 1),
            lambda: np.all(dst == np.repeat(np.arange(1, size + 1), m // size)))
    if op == "reduce_scatter_tensor":
        src, dst = np.zeros(m, np.float32), np.zeros(m // size, np.float32)
        ts, td = _tensor(fw, src), _tensor(fw, dst)
        coll = dist.reduce_scatter_tensor_init(td, ts)
        spec = ([src, dt], [dst, dt], MPI.SUM)
        return coll, lambda: dist.reduce_scatter_tensor(td, ts), "Reduce_scatter_block", \
            spec, dst, (lambda: src.fill(rank + 1),
                        lambda: np.all(dst == size * (size + 1) / 2))
    raise SystemExit(f"unknown op {op!r}")


_clock = time.perf_counter


def _time(fn, iters: int, comm) -> float:
    comm.Barrier()
    t0 = _clock()
    for _ in range(iters):
        fn()
    per_call = (_clock() - t0) / iters
    return comm.allreduce(per_call, op=MPI.MAX) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="persistent_bench")
    parser.add_argument("--ops", default="all_reduce,broadcast,all_to_all_single,"
                        "all_gather_into_tensor,reduce_scatter_tensor")
    parser.add_argument("--frameworks", default="numpy,torch")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--round-ms", type=float, default=5.0)
    parser.add_argument("--max-bytes", type=int, default=1 << 20)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: this thread's CPU time, which a loaded machine does not "
                        "inflate; meaningful at 1 rank (mpicoll's own cost per call)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    global _clock
    _clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    comm = MPI.COMM_WORLD.Dup()  # raw mpi4py's traffic on a communicator of its own
    rank, size = comm.Get_rank(), comm.Get_size()
    native = MPI.Get_version() >= (4, 0) or "Open MPI v5" in MPI.Get_library_version()
    rows = []
    for op in args.ops.split(","):
        for fw in args.frameworks.split(","):
            for nbytes in [s for s in SIZES if s <= args.max_bytes]:
                coll, ordinary, method, spec, _, (fill, ok) = _case(op, fw, nbytes, comm,
                                                                   rank, size)
                req = getattr(comm, f"{method}_init")(*spec) if native else None
                raw_call = getattr(comm, method)
                for name, fn in (("persistent", coll), ("ordinary", ordinary)):
                    fill()
                    fn()
                    if not ok():
                        raise SystemExit(f"{op} {fw} {nbytes} B: {name} gave a wrong result")

                def raw_persistent(req=req):
                    req.Start()
                    req.Wait()

                def raw_persistent_test(req=req):
                    req.Start()
                    while not req.Test():
                        pass

                variants = {"persistent": coll, "raw_persistent": raw_persistent,
                            "raw_persistent_test": raw_persistent_test, "ordinary": ordinary,
                            "raw_blocking": lambda raw_call=raw_call, spec=spec: raw_call(*spec)}
                if req is None:
                    del variants["raw_persistent"], variants["raw_persistent_test"]
                for fn in variants.values():
                    _time(fn, 20, comm)  # warm-up
                # short rounds (about --round-ms each), many of them: on a shared machine
                # the best round is the one no other process interrupted
                per_call = _time(variants["raw_blocking"], 20, comm)
                iters = max(5, min(2000, int(args.round_ms * 1e3 / max(per_call, 1e-3))))
                best = dict.fromkeys(variants, float("inf"))
                for _ in range(args.rounds):
                    for name, fn in variants.items():
                        best[name] = min(best[name], _time(fn, iters, comm))
                if req is not None:
                    req.Free()
                coll.free()
                row = {"op": op, "framework": fw, "bytes": nbytes, "ranks": size,
                       "persistent_path": coll.persistent, **best}
                rows.append(row)
                if rank == 0:
                    ratio = (f"{best['persistent'] / best['raw_persistent']:.2f}"
                             if "raw_persistent" in best else "-")
                    print(f"{op:24s} {fw:6s} {nbytes:>8d} B  persistent {best['persistent']:8.2f}"
                          f"  raw_persistent {best.get('raw_persistent', float('nan')):8.2f}"
                          f"  raw_persistent_test "
                          f"{best.get('raw_persistent_test', float('nan')):8.2f}"
                          f"  ordinary {best['ordinary']:8.2f}  raw_blocking "
                          f"{best['raw_blocking']:8.2f} us   ratio {ratio}", flush=True)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"library": MPI.Get_library_version().splitlines()[0].strip(),
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
