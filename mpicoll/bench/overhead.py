"""``python -m mpicoll.bench overhead``: mpicoll's cost per call over raw mpi4py's.

Run at world size 1 there is no peer to wait for, so what remains is the cost
of the call itself. For each case: raw mpi4py (the blocking call on the same
numpy memory) and mpicoll on numpy and torch tensors over that memory are timed
in batches, interleaved over rounds; the medians, and the median of each
round's difference from raw, are reported per call and, for list forms, per
tensor of the list. ``--callgrind`` adds instructions per call.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
from typing import Any

import mpi4py
import numpy as np

from . import callgrind
from .run import select
from .timing import interleaved
from .variants import build

DEFAULT_OPS = ("all_reduce", "broadcast", "all_to_all_single",
               "all_to_all_single(uneven split sizes)", "all_gather_into_tensor",
               "reduce_scatter_tensor", "all_to_all(list of chunks)",
               "all_gather(list of chunks)", "reduce_scatter(list of chunks)")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", help="write results as JSON here (rank 0)")
    ap.add_argument("--quick", action="store_true", help="a few short rounds (a smoke test)")
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS), help="comma-separated cases")
    ap.add_argument("--frameworks", default="numpy,torch",
                    help="mpicoll variants (torch is left out where it is not installed)")
    ap.add_argument("--bytes", type=int, default=64, help="message bytes per rank")
    ap.add_argument("--iters", type=int, help="calls per timed batch (2000; --quick: 50)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (21; --quick: 3)")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count instructions per call under valgrind (world size 1)")
    ap.add_argument("--callgrind-calls", type=int, metavar="N",
                    help="N and 2N calls are counted; the difference / N is per call "
                         "(200; --quick: 20)")
    ap.add_argument("--callgrind-child", help=argparse.SUPPRESS)
    ap.add_argument("--callgrind-toggle", action="store_true", help=argparse.SUPPRESS)


def frameworks(names: str) -> list[str]:
    chosen = [f for f in names.split(",") if f]
    if "torch" in chosen:
        try:
            # lazy: torch loads only when its columns are asked for
            import torch  # noqa: F401
        except ImportError:
            print("overhead: torch is not installed: its columns are left out", flush=True)
            chosen.remove("torch")
    return chosen


def _row(case: Any, args: argparse.Namespace, fws: list[str], comm: Any,
         MPI: Any) -> dict[str, Any]:
    calls, ok, list_len = build(case, args.bytes, fws, comm, MPI)
    samples = interleaved({k: (fn, args.iters) for k, fn in calls.items()}, args.rounds,
                          comm, MPI, warmup_each=False, no_gc=True)
    raw = np.array(samples["raw"]) * 1e6
    row: dict[str, Any] = {"op": case.name, "ranks": comm.Get_size(), "bytes": args.bytes,
                           "iters": args.iters, "rounds": args.rounds, "list_len": list_len,
                           "raw_us": float(np.median(raw))}
    for fw in (f for f in fws if f in calls):
        us = np.array(samples[fw]) * 1e6
        row[f"{fw}_us"] = float(np.median(us))
        row[f"{fw}_over_us"] = float(np.median(us - raw))  # paired: the same round's raw
        if list_len:
            row[f"{fw}_over_per_tensor_us"] = row[f"{fw}_over_us"] / list_len
    row["verified"] = bool(comm.allreduce(ok, op=MPI.LAND))
    return row


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def meta(args: argparse.Namespace, fws: list[str], MPI: Any) -> dict[str, Any]:
    versions = {"python": platform.python_version(), "mpi4py": mpi4py.__version__,
                "numpy": np.__version__}
    if "torch" in fws:
        import torch  # lazy: torch loads only when its columns are asked for

        versions["torch"] = torch.__version__
    return {"mode": "overhead", "date": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%d %H:%M UTC"), "ranks": MPI.COMM_WORLD.Get_size(),
            "mpi": MPI.Get_library_version().splitlines()[0].strip(), "host": socket.gethostname(),
            "cpu": _cpu(), "cpus": os.cpu_count(), "bytes": args.bytes, "iters": args.iters,
            "rounds": args.rounds, "versions": versions}


def _cell(row: dict[str, Any], key: str, fmt: str = "{:+.2f}") -> str:
    return fmt.format(row[key]) if row.get(key) is not None else "-"


def table(rows: list[dict[str, Any]], fws: list[str]) -> str:
    """Markdown: per call, microseconds (medians) and, if counted, instructions."""
    head = ["op", "ranks", "raw us"]
    for fw in fws:
        head += [f"{fw} us", f"{fw} over raw us", f"{fw} over raw us / tensor"]
    counted = any("raw_ir" in r for r in rows)
    if counted:
        head += ["raw instr"] + [f"{fw} over raw instr" for fw in fws]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [r["op"] + ("" if r["verified"] else " UNVERIFIED"), str(r["ranks"]),
                 _cell(r, "raw_us", "{:.2f}")]
        for fw in fws:
            cells += [_cell(r, f"{fw}_us", "{:.2f}"), _cell(r, f"{fw}_over_us"),
                      _cell(r, f"{fw}_over_per_tensor_us")]
        if counted:
            cells += [_cell(r, "raw_ir", "{:.0f}")]
            cells += [_cell(r, f"{fw}_over_ir", "{:+.0f}") for fw in fws]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The overhead benchmark; exit status 1 when any result was wrong."""
    quick = args.quick
    args.iters = args.iters or (50 if quick else 2000)
    args.rounds = args.rounds or (3 if quick else 21)
    args.callgrind_calls = args.callgrind_calls or (20 if quick else 200)
    fws = frameworks(args.frameworks)
    chosen = select(args.ops)
    if args.callgrind_child:
        return callgrind.child(args, chosen, fws)
    from .._mpi import MPI  # lazy: MPI starts when the benchmark runs, not at import

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    rows = []
    for case in chosen:
        rows.append(_row(case, args, fws, comm, MPI))
        if rank == 0:
            r = rows[-1]
            print(f"{r['op']:>38}  raw {r['raw_us']:.2f} us  " + "  ".join(
                f"{fw} {_cell(r, f'{fw}_over_us')} us" for fw in fws if f"{fw}_us" in r)
                + ("" if r["verified"] else "  UNVERIFIED"), flush=True)
    if args.callgrind and rank == 0:
        callgrind.annotate(rows, args, fws, comm.Get_size())
    if rank == 0:
        print(table(rows, fws))
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"meta": meta(args, fws, MPI), "results": rows}, f, indent=1)
    return 1 if any(not r["verified"] for r in rows) else 0
