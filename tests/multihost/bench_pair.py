"""A short benchmark for the multihost lane: one host vs across hosts.

Under mpiexec: ``python tests/multihost/bench_pair.py LABEL OUT.json`` times mpicoll's
all_to_all_single and all_reduce (numpy float32, 1 MiB and 16 MiB per rank; the slowest
rank's mean over the iterations, median of 7 repeats), verifies the results and writes them
as JSON (rank 0).
Without mpiexec: ``python tests/multihost/bench_pair.py --table A.json B.json ...`` prints
a markdown table, one column per file.
"""

from __future__ import annotations

import json
import socket
import sys
import time

SIZES = [1 << 20, 16 << 20]
ITERS = {1 << 20: 20, 16 << 20: 5}  # per repeat
REPEATS = 7  # the median of the repeats' means is reported (this machine is shared)


def bench(label: str, out: str) -> int:
    import numpy as np
    from mpi4py import MPI

    import mpicoll as dist

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rows, ok = [], True
    for nbytes in SIZES:
        elems = nbytes // 4 // size * size
        blk = elems // size
        send = np.arange(elems, dtype=np.float32) % 1024 + rank
        recv = np.empty(elems, np.float32)
        acc = np.ones(elems, np.float32)
        ops = {
            "all_to_all_single": lambda: dist.all_to_all_single(recv, send),
            "all_reduce": lambda: dist.all_reduce(acc),
        }
        for op, fn in ops.items():
            for _ in range(2):  # warm-up: connections, registration
                fn()
            means = []
            for _ in range(REPEATS):
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(ITERS[nbytes]):
                    fn()
                means.append(comm.allreduce((time.perf_counter() - t0) / ITERS[nbytes],
                                            op=MPI.MAX))
            rows.append({"op": op, "bytes": elems * 4, "seconds": sorted(means)[REPEATS // 2],
                         "repeat_means": means})
        # verify once more on fresh data
        dist.all_to_all_single(recv, send)
        want = np.concatenate([(np.arange(elems, dtype=np.float32) % 1024 + j)[
            rank * blk:(rank + 1) * blk] for j in range(size)])
        acc[...] = rank + 1
        dist.all_reduce(acc)
        ok &= bool(np.array_equal(recv, want)) and bool((acc == size * (size + 1) / 2).all())
    ok = comm.allreduce(ok, op=MPI.LAND)
    hosts = sorted(set(comm.allgather(socket.gethostname())))
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"label": label, "ranks": size, "hosts": hosts, "verified": ok,
                       "rows": rows}, f, indent=1)
    return 0 if ok else 1


def table(paths: list[str]) -> int:
    """Markdown table; every column after the first also as a slowdown against the first."""
    runs = [json.load(open(p)) for p in paths]

    def name(r: dict) -> str:
        n = len(r["hosts"])
        return f"{r['label']} ({r['ranks']} ranks, {n} host{'s' * (n > 1)})"

    head = ["op", "bytes/rank", *map(name, runs)]
    head += [f"{r['label']} / {runs[0]['label']}" for r in runs[1:]]
    print("| " + " | ".join(head) + " |")
    print("|---" * len(head) + "|")
    for i, row in enumerate(runs[0]["rows"]):
        times = [r["rows"][i]["seconds"] for r in runs]
        cells = [row["op"], f"{row['bytes'] >> 20} MiB"]
        cells += [f"{t * 1e3:.2f} ms ({row['bytes'] / t / 1e9:.2f} GB/s)" for t in times]
        cells += [f"{t / times[0]:.1f}x" for t in times[1:]]
        print("| " + " | ".join(cells) + " |")
    bad = [r["label"] for r in runs if not r["verified"]]
    if bad:
        print(f"UNVERIFIED: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--table"]:
        sys.exit(table(sys.argv[2:]))
    sys.exit(bench(sys.argv[1], sys.argv[2]))
