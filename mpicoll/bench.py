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
from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

import mpicoll as dist

COMM = MPI.COMM_WORLD
SIZES = [8, 64, 512, 4096, 32768, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def _iters(nbytes: int, quick: bool) -> int:
    budget = (16 << 20) if quick else (256 << 20)
    return int(max(5, min(2000 if not quick else 200, budget // max(nbytes, 1))))


def _time(fn: Callable[[], Any], iters: int) -> float:
    """One timed round: warm-up, barrier, ``iters`` calls; the slowest rank's mean."""
    for _ in range(max(2, iters // 10)):
        fn()
    COMM.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    mean = (time.perf_counter() - t0) / iters
    return COMM.allreduce(mean, op=MPI.MAX)


def _interleaved(variants: dict[str, tuple[Callable[[], Any], int]], rounds: int) -> dict:
    """Time every variant in turn, ``rounds`` times, and keep each one's median.

    Alternating the variants spreads the machine's noise (other processes,
    frequency changes) evenly over them, so their ratios are measured fairly.
    """
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for key, (fn, iters) in variants.items():
            samples[key].append(_time(fn, iters))
    return {k: float(np.median(v)) for k, v in samples.items()}


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
        # in place on both sides: values grow by p each call while timing; correctness is
        # checked on a call from freshly filled tensors
        "send": send, "recv": recv, "expect": None,
        "raw": lambda: COMM.Allreduce(MPI.IN_PLACE, [recv, MPI.FLOAT], MPI.SUM),
        "mpicoll": lambda s, r: dist.all_reduce(r),
        "gloo": lambda td, s, r: td.all_reduce(r),
        "verify": lambda s, r, call: _refill_then(call, s, r, 1.0, p),
    }


def _refill_then(call: Callable[[Any, Any], Any], s: Any, r: Any, fill: float,
                 want: float | None) -> bool:
    """Fill ``r`` (in place on every rank), call, and check ``r == want`` (None: no check)."""
    r[...] = fill
    call(s, r)
    return want is None or bool((np.asarray(r) == want).all())


def _broadcast(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(1, n // 4)
    recv = np.full(elems, 7.0, np.float32)
    return {
        "send": None, "recv": recv, "expect": None,
        "raw": lambda: COMM.Bcast([recv, MPI.FLOAT], root=0),
        "mpicoll": lambda s, r: dist.broadcast(r, src=0),
        "gloo": lambda td, s, r: td.broadcast(r, src=0),
        # the root holds 7s; the others are reset to 0 first
        "verify": lambda s, r, call: _refill_then(call, s, r, 7.0 if rank == 0 else 0.0, 7.0),
    }


def _reduce(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(1, n // 4)
    recv = np.full(elems, 1.0, np.float32)
    # in place on the root, as torch's reduce is; values grow on the root while timing
    raw = ((lambda: COMM.Reduce(MPI.IN_PLACE, [recv, MPI.FLOAT], MPI.SUM, root=0))
           if rank == 0 else (lambda: COMM.Reduce([recv, MPI.FLOAT], None, MPI.SUM, root=0)))
    return {
        "send": None, "recv": recv, "expect": None, "raw": raw,
        "mpicoll": lambda s, r: dist.reduce(r, dst=0),
        "gloo": lambda td, s, r: td.reduce(r, dst=0),
        # the root's result only: torch leaves the others' tensors unspecified (gloo
        # uses them as scratch)
        "verify": lambda s, r, call: _refill_then(call, s, r, 1.0, p if rank == 0 else None),
    }


def _gather(n: int, p: int, rank: int) -> dict[str, Any]:
    entry = _allgather(n, p, rank)  # rank j sends j's; the root receives them in order
    send, recv = entry["send"], entry["recv"]
    blk = send.size
    lists = _chunk_cache(p)
    root = rank == 0
    raw = ((lambda: COMM.Gather([send, blk, MPI.FLOAT], [recv, blk, MPI.FLOAT], root=0))
           if root else (lambda: COMM.Gather([send, blk, MPI.FLOAT], None, root=0)))
    return {
        **entry, "raw": raw, "expect": entry["expect"] if root else None,  # the root's only
        "mpicoll": lambda s, r: dist.gather(s, lists(r) if root else None, dst=0),
        "gloo": lambda td, s, r: td.gather(s, lists(r) if root else None, dst=0),
    }


def _scatter(n: int, p: int, rank: int) -> dict[str, Any]:
    elems = max(p, (n // 4) // p * p)
    blk = elems // p
    send = np.repeat(np.arange(p, dtype=np.float32), blk)  # the root's: block j for rank j
    recv = np.empty(blk, np.float32)
    lists = _chunk_cache(p)
    root = rank == 0
    raw = ((lambda: COMM.Scatter([send, blk, MPI.FLOAT], [recv, blk, MPI.FLOAT], root=0))
           if root else (lambda: COMM.Scatter(None, [recv, blk, MPI.FLOAT], root=0)))
    return {
        "send": send, "recv": recv, "expect": np.full(blk, rank, np.float32), "raw": raw,
        "mpicoll": lambda s, r: dist.scatter(r, lists(s) if root else None, src=0),
        "gloo": lambda td, s, r: td.scatter(r, lists(s) if root else None, src=0),
    }


def _allgather_list(n: int, p: int, rank: int) -> dict[str, Any]:
    entry = _allgather(n, p, rank)
    lists = _chunk_cache(p)
    return {
        **entry,
        "mpicoll": lambda s, r: dist.all_gather(lists(r), s),
        "gloo": lambda td, s, r: td.all_gather(lists(r), s),
    }


def _reduce_scatter_list(n: int, p: int, rank: int) -> dict[str, Any]:
    entry = _reduce_scatter(n, p, rank)
    lists = _chunk_cache(p)
    return {
        **entry,
        "mpicoll": lambda s, r: dist.reduce_scatter(r, lists(s)),
        "gloo": lambda td, s, r: td.reduce_scatter(r, lists(s)),
    }


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
        # torch 2.13's name; reduce_scatter_tensor is its deprecated alias (warns per call)
        "gloo": lambda td, s, r: td.reduce_scatter_single(r, s),
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
        "gloo": lambda td, s, r: td.all_gather_single(r, s),
    }


def _alltoall_splits(n: int, p: int, rank: int) -> dict[str, Any]:
    # equal split sizes given explicitly (MoE-style code always passes them); raw is the
    # Alltoall that equal blocks allow: what one rank cannot prove (that every peer's
    # splits are equal too) mpicoll must not assume, so it calls Alltoallv
    entry = _alltoall(n, p, rank)
    rows = [entry["send"].size // p] * p
    return {
        **entry,
        "mpicoll": lambda s, r: dist.all_to_all_single(r, s, rows, rows),
        "gloo": lambda td, s, r: td.all_to_all_single(r, s, rows, rows),
    }


def _alltoall_list(n: int, p: int, rank: int) -> dict[str, Any]:
    # the seeds' pattern: lists of .chunk() views of one buffer, made once (as a training
    # loop holds them); the call is timed, not the chunking
    entry = _alltoall(n, p, rank)
    chunks = _chunk_cache(p)
    return {
        **entry,
        "mpicoll": lambda s, r: dist.all_to_all(chunks(r), chunks(s)),
        "gloo": lambda td, s, r: td.all_to_all(chunks(r), chunks(s)),
    }


class _Grp:
    """torch.distributed with ``group=`` bound: the same calls, another backend."""

    def __init__(self, td: Any, group: Any) -> None:
        self._td, self._group = td, group

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._td, name)
        return lambda *a, **k: fn(*a, group=self._group, **k)


def _chunk_cache(p: int) -> Callable[[Any], list[Any]]:
    """``x -> x.chunk(p)``, made once per buffer (the lists a training loop would hold)."""
    lists: dict[int, tuple[Any, list[Any]]] = {}

    def chunks(x: Any) -> list[Any]:
        hit = lists.get(id(x))
        if hit is None or hit[0] is not x:
            hit = lists[id(x)] = (x, _chunks(x, p))
        return hit[1]
    return chunks


def _chunks(x: Any, p: int) -> list[Any]:
    if isinstance(x, np.ndarray):
        return np.split(x, p)
    return list(x.chunk(p))


_register: dict[str, Callable[[int, int, int], dict[str, Any]]] = {
    "all_to_all_single": _alltoall,
    "all_to_all_single(split sizes)": _alltoall_splits,
    "all_to_all(list of chunks)": _alltoall_list,
    "reduce_scatter_tensor": _reduce_scatter,
    "reduce_scatter(list of chunks)": _reduce_scatter_list,
    "all_gather_into_tensor": _allgather,
    "all_gather(list of chunks)": _allgather_list,
    "all_reduce": _allreduce,
    "broadcast": _broadcast,
    "reduce": _reduce,
    "gather": _gather,
    "scatter": _scatter,
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
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["plot"]:
        pp = argparse.ArgumentParser(prog="python -m mpicoll.bench plot")
        pp.add_argument("json", nargs="+")
        pp.add_argument("--out", default="docs/img")
        pa = pp.parse_args(argv[1:])
        for path in plot(pa.json, pa.out):
            print(f"wrote {path}")
        return 0
    ap = argparse.ArgumentParser(prog="python -m mpicoll.bench")
    ap.add_argument("--out", help="write results as JSON here (rank 0)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and iterations")
    ap.add_argument("--ops", default=",".join(_register), help="comma-separated collectives")
    ap.add_argument("--no-gloo", action="store_true", help="skip torch's gloo backend")
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per size")
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
    mpg = None
    if td is not None:
        import mpicoll.torch  # noqa: F401  registers the backend

        mpg = td.new_group(list(range(p)), backend="mpicoll")
    rows = []
    for op in args.ops.split(","):
        make = _register[op]
        for n in sizes:
            e = make(n, p, rank)
            iters = _iters(n, args.quick)
            s, r = e["send"], e["recv"]
            variants: dict[str, tuple[Callable[[], Any], int]] = {
                "raw_mpi4py": (e["raw"], iters),
                "mpicoll_numpy": (lambda: e["mpicoll"](s, r), iters),
            }
            ok = _check(e, lambda s_, r_: e["mpicoll"](s_, r_), s, r)
            if torch is not None:
                # the same memory
                ts = torch.from_numpy(s) if s is not None else None
                tr = torch.from_numpy(r)
                variants["mpicoll_torch"] = (lambda: e["mpicoll"](ts, tr), iters)
                ok &= _check(e, lambda s_, r_: e["mpicoll"](s_, r_), ts, tr)
                if mpg is not None:
                    variants["torch_backend"] = (lambda: e["gloo"](_Grp(td, mpg), ts, tr), iters)
                    ok &= _check(e, lambda s_, r_: e["gloo"](_Grp(td, mpg), s_, r_), ts, tr)
                if td is not None:
                    try:
                        ok &= _check(e, lambda s_, r_: e["gloo"](td, s_, r_), ts, tr)
                    except RuntimeError as exc:  # an op gloo lacks: raised on every rank
                        if rank == 0:
                            print(f"gloo: {op}: {exc}".splitlines()[0], flush=True)
                    else:
                        variants["gloo"] = (lambda: e["gloo"](td, ts, tr), max(3, iters // 10))
            row: dict[str, Any] = {"op": op, "bytes": n, "ranks": p, "iters": iters,
                                   **_interleaved(variants, args.rounds)}
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
    """One call on an output reset to -1 (so a variant that writes nothing fails), checked
    against ``expect`` (None: this rank's output is not specified)."""
    if "verify" in e:
        return e["verify"](s, r, call)
    _refill_then(call, s, r, -1.0, None)
    return e["expect"] is None or bool(np.array_equal(np.asarray(r), e["expect"]))


def _print_row(row: dict[str, Any]) -> None:
    cols = [f"{k}={row[k] * 1e6:.1f}us" for k in ("raw_mpi4py", "mpicoll_numpy",
                                                   "mpicoll_torch", "torch_backend", "gloo")
            if k in row]
    print(f"{row['op']:>28} {row['bytes']:>9} B  " + "  ".join(cols)
          + ("" if row["verified"] else "  UNVERIFIED"), flush=True)


def _fmt(row: dict[str, Any], key: str, ref: str | None = None, suffix: str = "") -> str:
    if key not in row:
        return "-"
    if ref is None:
        return f"{row[key] * 1e6:.1f}"
    return f"{row[key] / row[ref]:.2f}{suffix}" if ref in row else "-"


# variants of a collective, compared with its single-tensor form (same bytes, same run)
_FORM_OF = {"all_to_all(list of chunks)": "all_to_all_single",
            "all_to_all_single(split sizes)": "all_to_all_single",
            "reduce_scatter(list of chunks)": "reduce_scatter_tensor",
            "all_gather(list of chunks)": "all_gather_into_tensor"}


def _table(rows: list[dict[str, Any]]) -> str:
    """Markdown: times in microseconds and the ratios the targets are stated in."""
    head = ("| op | bytes/rank | ranks | raw mpi4py us | mpicoll numpy us | numpy/raw | "
            "mpicoll torch us | torch/raw | torch backend us | backend/mpicoll | gloo us | "
            "gloo/backend | numpy/single-tensor form |")
    lines = [head, "|" + "---|" * 13]
    single = {(r["op"], r["bytes"]): r for r in rows}
    for r in rows:
        cells = [r["op"], str(r["bytes"]), str(r["ranks"]), _fmt(r, "raw_mpi4py"),
                 _fmt(r, "mpicoll_numpy"), _fmt(r, "mpicoll_numpy", "raw_mpi4py"),
                 _fmt(r, "mpicoll_torch"), _fmt(r, "mpicoll_torch", "raw_mpi4py"),
                 _fmt(r, "torch_backend"), _fmt(r, "torch_backend", "mpicoll_torch"),
                 _fmt(r, "gloo"), _fmt(r, "gloo", "torch_backend", "x")]
        base = single.get((_FORM_OF.get(r["op"]), r["bytes"]))
        cells.append(f"{r['mpicoll_numpy'] / base['mpicoll_numpy']:.2f}" if base else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(paths: list[str], out_dir: str) -> list[str]:
    """Bandwidth-vs-size and overhead-vs-size plots (PNG) from benchmark JSON files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    ops = list(dict.fromkeys(r["op"] for run in runs for r in run["results"]))
    styles = {"raw_mpi4py": ("raw mpi4py", "k", "-"), "mpicoll_numpy": ("mpicoll numpy", "C0", "-"),
              "mpicoll_torch": ("mpicoll torch", "C1", "--"),
              "torch_backend": ("torch.distributed 'mpicoll'", "C2", "-."),
              "gloo": ("torch.distributed gloo", "C3", ":")}
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for kind in ("bandwidth", "overhead"):
        # one row per collective, one column per rank count
        fig, axes = plt.subplots(len(ops), len(runs), figsize=(5.5 * len(runs), 3 * len(ops)),
                                 squeeze=False)
        for i, run in enumerate(runs):
            for j, op in enumerate(ops):
                ax = axes[j][i]
                for key, (label, color, style) in styles.items():
                    rows = [r for r in run["results"] if r["op"] == op and key in r]
                    if not rows:
                        continue
                    sizes = [r["bytes"] for r in rows]
                    if kind == "bandwidth":
                        ys = [r["bytes"] / r[key] / 1e9 for r in rows]
                    else:
                        ys = [(r[key] - r["raw_mpi4py"]) * 1e6 for r in rows]
                    ax.plot(sizes, ys, style, color=color, label=label, marker=".")
                ax.set_xscale("log", base=2)
                if kind == "bandwidth":
                    ax.set_yscale("log")
                    ax.set_ylabel("GB/s per rank")
                else:
                    ax.set_yscale("symlog", linthresh=1)
                    ax.set_ylabel("us over raw mpi4py")
                ax.set_title(f"{op}, {run['meta']['ranks']} ranks", fontsize=9)
                ax.set_xlabel("bytes per rank")
                ax.grid(True, alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{kind}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


if __name__ == "__main__":
    sys.exit(main())
