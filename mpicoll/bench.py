"""OSU-style benchmark: mpicoll (numpy, torch) vs raw mpi4py vs torch gloo.

Run under MPI: ``mpiexec -n 4 python -m mpicoll.bench --out results.json``.
For each collective and message size: warm-up, barrier, timed iterations; the
reported time is the slowest rank's mean. Results are verified after timing.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from typing import Any, Callable

import numpy as np
from mpi4py import MPI

import mpicoll as dist

COMM = MPI.COMM_WORLD
SIZES = [8, 64, 512, 4096, 32768, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def _iters(nbytes: int, quick: bool) -> int:
    budget = (16 << 20) if quick else (256 << 20)
    return int(max(5, min(2000 if not quick else 200, budget // max(nbytes, 1))))


def _time(fn: Callable[[], Any], iters: int) -> float:
    for _ in range(max(2, iters // 10)):
        fn()
    COMM.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    mean = (time.perf_counter() - t0) / iters
    return COMM.allreduce(mean, op=MPI.MAX)


# -- one entry per collective: buffers, the raw mpi4py call, the mpicoll call ----------


def _alltoall(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(p, (n // 4) // p * p)
    send = (np.arange(elems, dtype=np.float32) + rank * elems)
    recv = np.empty(elems, np.float32)
    blk = elems // p
    expect = np.concatenate([np.arange(rank * blk, (rank + 1) * blk, dtype=np.float32) + j * elems
                             for j in range(p)])
    return {
        "send": send, "recv": recv, "expect": expect,
        "raw": lambda: COMM.Alltoall([send, blk, MPI.FLOAT], [recv, blk, MPI.FLOAT]),
        "mpicoll": lambda s, r: dist.all_to_all_single(r, s),
        "gloo": lambda td, s, r: td.all_to_all_single(r, s),
    }


def _allreduce(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(1, n // 4)
    send = np.full(elems, 1.0, np.float32)
    recv = np.empty(elems, np.float32)
    return {
        # in place on both sides: the input is reset by nothing, values grow by p each call;
        # correctness is verified on a fresh call after timing
        "send": send, "recv": recv, "expect": None,
        "raw": lambda: COMM.Allreduce(MPI.IN_PLACE, [recv, MPI.FLOAT], MPI.SUM),
        "mpicoll": lambda s, r: dist.all_reduce(r),
        "gloo": lambda td, s, r: td.all_reduce(r),
        "verify": lambda r, mod: _verify_allreduce(r, mod, p),
    }


def _verify_allreduce(r: Any, call: Callable[[Any, Any], Any], p: int) -> bool:
    r[...] = 1.0 if isinstance(r, np.ndarray) else r.fill_(1.0)
    call(None, r)
    return bool((np.asarray(r) == p).all())


def _reduce_scatter(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(p, (n // 4) // p * p)
    send = np.arange(elems, dtype=np.float32) % 97
    recv = np.empty(elems // p, np.float32)
    blk = elems // p
    expect = (np.arange(elems, dtype=np.float32) % 97)[rank * blk:(rank + 1) * blk] * p
    return {
        "send": send, "recv": recv, "expect": expect,
        "raw": lambda: COMM.Reduce_scatter_block([send, blk, MPI.FLOAT], [recv, blk, MPI.FLOAT],
                                                 MPI.SUM),
        "mpicoll": lambda s, r: dist.reduce_scatter_tensor(r, s),
        "gloo": lambda td, s, r: td.reduce_scatter_tensor(r, s),
    }


def _allgather(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(p, (n // 4) // p * p)
    blk = elems // p
    send = np.full(blk, rank, np.float32)
    recv = np.empty(elems, np.float32)
    expect = np.repeat(np.arange(p, dtype=np.float32), blk)
    return {
        "send": send, "recv": recv, "expect": expect,
        "raw": lambda: COMM.Allgather([send, blk, MPI.FLOAT], [recv, blk, MPI.FLOAT]),
        "mpicoll": lambda s, r: dist.all_gather_into_tensor(r, s),
        "gloo": lambda td, s, r: td.all_gather_into_tensor(r, s),
    }


def _alltoall_list(n: int, p: int, rank: int) -> dict[str, Any]:
    entry = _alltoall(n, p, rank)
    send, recv = entry["send"], entry["recv"]
    blk = send.size // p
    return {
        **entry,
        "raw": lambda: COMM.Alltoallv([send, ([blk] * p, [i * blk for i in range(p)]), MPI.FLOAT],
                                      [recv, ([blk] * p, [i * blk for i in range(p)]), MPI.FLOAT]),
        "mpicoll": lambda s, r: dist.all_to_all(_chunks(r, p), _chunks(s, p)),
        "gloo": lambda td, s, r: td.all_to_all(_chunks(r, p), _chunks(s, p)),
    }


def _chunks(x: Any, p: int) -> list[Any]:
    if isinstance(x, np.ndarray):
        return np.split(x, p)
    return list(x.chunk(p))


_register: dict[str, Callable[[int, int, int], dict[str, Any]]] = {
    "all_to_all_single": _alltoall,
    "all_to_all(list of chunks)": _alltoall_list,
    "reduce_scatter_tensor": _reduce_scatter,
    "all_gather_into_tensor": _allgather,
    "all_reduce": _allreduce,
}


def _gloo() -> Any:
    try:
        import torch.distributed as td
    except ImportError:
        return None
    port = 0
    if COMM.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = COMM.bcast(port, root=0)
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                          rank=COMM.Get_rank(), world_size=COMM.Get_size())
    return td


def _memcpy_bandwidth() -> float:
    a = np.ones(64 << 18, np.float32)  # 64 MiB
    b = np.empty_like(a)
    np.copyto(b, a)
    t0 = time.perf_counter()
    for _ in range(10):
        np.copyto(b, a)
    return a.nbytes * 10 / (time.perf_counter() - t0) / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mpicoll.bench")
    ap.add_argument("--out", help="write results as JSON here (rank 0)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and iterations")
    ap.add_argument("--ops", default=",".join(_register), help="comma-separated collectives")
    ap.add_argument("--no-gloo", action="store_true", help="skip torch's gloo backend")
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    args = ap.parse_args(argv)
    p, rank = COMM.Get_size(), COMM.Get_rank()
    try:
        import torch
    except ImportError:
        torch = None
    td = None if (args.no_gloo or torch is None) else _gloo()
    sizes = [s for s in SIZES if s <= args.max_bytes]
    if args.quick:
        sizes = sizes[::2]
    rows = []
    for op in args.ops.split(","):
        make = _register[op]
        for n in sizes:
            e = make(n, p, rank)
            iters = _iters(n, args.quick)
            row: dict[str, Any] = {"op": op, "bytes": n, "ranks": p, "iters": iters}
            row["raw_mpi4py"] = _time(e["raw"], iters)
            s, r = e["send"], e["recv"]
            row["mpicoll_numpy"] = _time(lambda: e["mpicoll"](s, r), iters)
            ok = _check(e, lambda s_, r_: e["mpicoll"](s_, r_), s, r)
            if torch is not None:
                ts, tr = torch.from_numpy(s), torch.from_numpy(r)  # the same memory
                row["mpicoll_torch"] = _time(lambda: e["mpicoll"](ts, tr), iters)
                ok &= _check(e, lambda s_, r_: e["mpicoll"](s_, r_), ts, tr)
                if td is not None:
                    g_iters = max(3, iters // 10)
                    row["gloo"] = _time(lambda: e["gloo"](td, ts, tr), g_iters)
                    ok &= _check(e, lambda s_, r_: e["gloo"](td, s_, r_), ts, tr)
            row["verified"] = bool(COMM.allreduce(ok, op=MPI.LAND))
            rows.append(row)
            if rank == 0:
                _print_row(row)
    if rank == 0:
        mem = _memcpy_bandwidth()
        print(f"\nmemcpy bandwidth (1 core, 64 MiB): {mem:.1f} GB/s")
        print(_table(rows))
        if args.out:
            meta = {"ranks": p, "mpi": MPI.Get_library_version().splitlines()[0].strip(),
                    "memcpy_GBps": mem, "host": socket.gethostname(), "cpus": os.cpu_count()}
            with open(args.out, "w") as f:
                json.dump({"meta": meta, "results": rows}, f, indent=1)
    if td is not None:
        td.destroy_process_group()
    bad = [r for r in rows if not r["verified"]]
    return 1 if bad else 0


def _check(e: dict[str, Any], call: Callable[[Any, Any], Any], s: Any, r: Any) -> bool:
    if "verify" in e:
        return e["verify"](r, call)
    call(s, r)
    return bool(np.array_equal(np.asarray(r), e["expect"]))


def _print_row(row: dict[str, Any]) -> None:
    cols = [f"{k}={row[k] * 1e6:.1f}us" for k in ("raw_mpi4py", "mpicoll_numpy",
                                                   "mpicoll_torch", "gloo") if k in row]
    print(f"{row['op']:>28} {row['bytes']:>9} B  " + "  ".join(cols)
          + ("" if row["verified"] else "  UNVERIFIED"), flush=True)


def _table(rows: list[dict[str, Any]]) -> str:
    head = ("| op | bytes/rank | ranks | raw mpi4py (us) | mpicoll numpy (us) | ratio | "
            "mpicoll torch (us) | ratio | gloo (us) | gloo/mpicoll |")
    lines = [head, "|" + "---|" * head.count("|")[:-1] if False else "|---" * 10 + "|"]
    for r in rows:
        raw = r["raw_mpi4py"]
        cells = [r["op"], str(r["bytes"]), str(r["ranks"]), f"{raw * 1e6:.1f}",
                 f"{r['mpicoll_numpy'] * 1e6:.1f}", f"{r['mpicoll_numpy'] / raw:.3f}"]
        if "mpicoll_torch" in r:
            cells += [f"{r['mpicoll_torch'] * 1e6:.1f}", f"{r['mpicoll_torch'] / raw:.3f}"]
        else:
            cells += ["-", "-"]
        if "gloo" in r:
            cells += [f"{r['gloo'] * 1e6:.1f}", f"{r['gloo'] / r['mpicoll_numpy']:.1f}x"]
        else:
            cells += ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
