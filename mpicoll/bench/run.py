"""``python -m mpicoll.bench``: OSU-style timings of every case, per message size.

For each case and size it times raw mpi4py, mpicoll on each framework's tensors
over the same memory, torch.distributed on the ``"mpicoll"`` backend, and gloo;
checks every variant's result; prints a table; writes JSON (rank 0).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import time
from typing import Any

import numpy as np

import mpicoll

from .registry import Case, Ctx, cases
from .report import print_row, table
from .timing import interleaved

SIZES = [8, 64, 512, 4096, 32768, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", help="write results as JSON here (rank 0)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and iterations")
    ap.add_argument("--ops", default=None,
                    help="comma-separated cases (default: all; see `list`)")
    ap.add_argument("--no-gloo", action="store_true", help="skip torch's gloo backend")
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per size")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="bytes per rank to measure (default: 8 B to --max-bytes)")


def select(ops: str | None) -> list[Case]:
    """The cases named in ``ops`` (comma-separated; None: all), in that order."""
    registered = cases()
    names = list(registered) if ops is None else ops.split(",")
    unknown = [n for n in names if n not in registered]
    if unknown:
        raise SystemExit(f"bench: unknown case(s) {unknown}: expected some of {list(registered)}")
    return [registered[n] for n in names]


def iters_for(nbytes: int, quick: bool) -> int:
    budget = (16 << 20) if quick else (256 << 20)
    return int(max(5, min(2000 if not quick else 200, budget // max(nbytes, 1))))


# torch 2.13 renamed two calls; the old names warn on every call
_TORCH_NAMES = {"reduce_scatter_tensor": "reduce_scatter_single",
                "all_gather_into_tensor": "all_gather_single"}


class TorchDist:
    """torch.distributed with ``group=`` bound, under mpicoll's names for each call."""

    def __init__(self, td: Any, group: Any = None) -> None:
        self._td, self._group = td, group

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._td, _TORCH_NAMES.get(name, name))
        return fn if self._group is None else functools.partial(fn, group=self._group)


def _gloo(comm: Any) -> Any:
    """torch.distributed, initialised on gloo over every rank (None without torch)."""
    try:
        import torch.distributed as td  # lazy: torch loads only for the gloo rows
    except ImportError:
        return None
    port = 0
    if comm.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = comm.bcast(port, root=0)
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                          rank=comm.Get_rank(), world_size=comm.Get_size())
    return td


def memcpy_bandwidth() -> float:
    a = np.ones(64 << 18, np.float32)  # 64 MiB
    b = np.empty_like(a)
    np.copyto(b, a)
    t0 = time.perf_counter()
    for _ in range(10):
        np.copyto(b, a)
    return a.nbytes * 10 / (time.perf_counter() - t0) / 1e9


def _measure(case: Case, n: int, iters: int, rounds: int, frameworks: list[str],
             td: Any, mpg: Any, comm: Any, MPI: Any) -> dict[str, Any]:
    """One row: every variant of ``case`` at ``n`` bytes per rank, checked, then timed."""
    memory: dict[str, np.ndarray] = {}  # one set of buffers for every variant
    variants: dict[str, Any] = {}
    raw = None
    ok = True
    for fw in (f for f in case.frameworks if f in frameworks):
        t = case.build(Ctx(n, fw, mpicoll, comm, MPI, memory))
        raw = raw or t.raw
        ok &= t.check()
        variants[f"mpicoll_{fw}"] = (t.call, iters)
    if raw is not None:
        variants = {"raw_mpi4py": (raw, iters), **variants}
    if case.torch_distributed and td is not None:
        if mpg is not None:
            t = case.build(Ctx(n, "torch", TorchDist(td, mpg), comm, MPI, memory))
            ok &= t.check()
            variants["torch_backend"] = (t.call, iters)
        t = case.build(Ctx(n, "torch", TorchDist(td), comm, MPI, memory))
        try:
            ok &= t.check()
        except RuntimeError as exc:  # an op gloo lacks: raised on every rank
            if comm.Get_rank() == 0:
                print(f"gloo: {case.name}: {exc}".splitlines()[0], flush=True)
        else:
            variants["gloo"] = (t.call, max(3, iters // 10))
    times = interleaved(variants, rounds, comm, MPI)
    row: dict[str, Any] = {"op": case.name, "bytes": n, "ranks": comm.Get_size(),
                           "iters": iters, **{k: float(np.median(v)) for k, v in times.items()}}
    row["verified"] = bool(comm.allreduce(ok, op=MPI.LAND))
    return row


def run(args: argparse.Namespace) -> int:
    """The bandwidth benchmark; exit status 1 when any variant's result was wrong."""
    from .._mpi import MPI  # lazy: MPI starts when the benchmark runs, not at import

    comm = MPI.COMM_WORLD
    p, rank = comm.Get_size(), comm.Get_rank()
    chosen = select(args.ops)
    try:
        # lazy: torch loads only when the benchmark runs
        import torch  # noqa: F401
        frameworks = ["numpy", "torch"]
    except ImportError:
        frameworks = ["numpy"]
    td = None if (args.no_gloo or "torch" not in frameworks) else _gloo(comm)
    mpg = None
    if td is not None:
        # lazy: mpicoll.torch imports torch (and registers the "mpicoll" backend)
        import mpicoll.torch  # noqa: F401

        mpg = td.new_group(list(range(p)), backend="mpicoll")
    sizes = args.sizes or [s for s in SIZES if s <= args.max_bytes]
    if args.quick:
        sizes = sizes[::2]
    rows = []
    for case in chosen:
        for n in sizes:
            row = _measure(case, n, iters_for(n, args.quick), args.rounds, frameworks,
                           td, mpg, comm, MPI)
            rows.append(row)
            if rank == 0:
                print_row(row)
    if rank == 0:
        mem = memcpy_bandwidth()
        print(f"\nmemcpy bandwidth (1 core, 64 MiB): {mem:.1f} GB/s")
        print(table(rows))
        if args.out:
            meta = {"ranks": p, "mpi": MPI.Get_library_version().splitlines()[0].strip(),
                    "memcpy_GBps": mem, "host": socket.gethostname(), "cpus": os.cpu_count()}
            with open(args.out, "w") as f:
                json.dump({"meta": meta, "results": rows}, f, indent=1)
    if td is not None:
        td.destroy_process_group()
    return 1 if any(not r["verified"] for r in rows) else 0
