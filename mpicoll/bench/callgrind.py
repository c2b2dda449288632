"""``overhead --callgrind``: instructions per call, counted by valgrind's callgrind.

The parent starts one child process under callgrind (MPI at world size 1, its
own singleton). The child makes every variant's call N times, then 2N times,
calling a marker between the runs; callgrind writes its counts at each marker
(``--dump-before``), so (count of 2N calls - count of N calls) / N is the
instructions of one call, with the loop and the marker's own cost cancelled.
Instrumentation starts after the imports when ``callgrind_control`` is there
(imports under instrumentation take minutes with torch).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .variants import build

_MARKER = "getsid"  # the C function behind os.getsid(0): nothing else calls it meanwhile
_LAUNCHER_ENV = ("PMI_", "PMIX_", "HYDRA_", "OMPI_COMM", "OMPI_MCA_orte", "MPI_LOCAL")


def available() -> bool:
    return shutil.which("valgrind") is not None


def _mark() -> None:
    os.getsid(0)


def child(args: argparse.Namespace, chosen: list[Any], fws: list[str]) -> int:
    """Runs under callgrind: N then 2N calls of each variant, a marker after each run."""
    from .._mpi import MPI  # lazy: MPI starts in the child under callgrind, not at import

    comm, n = MPI.COMM_WORLD, args.callgrind_calls
    variants = []
    for case in chosen:
        calls, ok, _ = build(case, args.bytes, fws, comm, MPI)
        if not ok:
            raise SystemExit(f"callgrind: {case.name}: wrong result")
        variants += [(case.name, name, fn) for name, fn in calls.items()]
    for _, _, fn in variants:  # warm: lazy imports and caches are not counted
        for _ in range(10):
            fn()
    Path(args.callgrind_child, "labels.json").write_text(
        json.dumps([[op, name] for op, name, _ in variants]))
    gc.disable()
    if args.callgrind_toggle:
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True,
                       capture_output=True)
    _mark()
    for _, _, fn in variants:
        for _ in range(n):
            fn()
        _mark()
        for _ in range(2 * n):
            fn()
        _mark()
    return 0


def measure(args: argparse.Namespace, fws: list[str], timeout: float = 1800
            ) -> dict[tuple[str, str], float]:
    """(case name, "raw" or framework) -> instructions per call."""
    toggle = shutil.which("callgrind_control") is not None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--dump-before={_MARKER}",
               f"--callgrind-out-file={out}", *(["--instr-atstart=no"] if toggle else []),
               sys.executable, "-m", "mpicoll.bench", "overhead", "--callgrind-child", tmp,
               "--ops", args.ops, "--frameworks", ",".join(fws), "--bytes", str(args.bytes),
               "--callgrind-calls", str(args.callgrind_calls),
               *(["--callgrind-toggle"] if toggle else [])]
        # a fresh singleton MPI: none of this job's launcher variables
        env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_ENV)}
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                           check=False)
        if p.returncode != 0:
            raise RuntimeError(f"callgrind: the child failed ({p.returncode}):\n"
                               f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
        labels = json.loads(Path(tmp, "labels.json").read_text())
        counts = {}
        for path in Path(tmp).glob("cg.out.*"):
            text = path.read_text()
            m = re.search(r"^summary:\s*(\d+)", text, re.M) or re.search(
                r"^totals:\s*(\d+)", text, re.M)
            counts[int(path.name.rsplit(".", 1)[1])] = int(m.group(1)) if m else 0
    # dump 1 ends before the first run; then variant i: N calls in 2 + 2i, 2N in 3 + 2i
    if len(counts) != 1 + 2 * len(labels):
        raise RuntimeError(f"callgrind: expected {1 + 2 * len(labels)} dumps, got "
                           f"{len(counts)}: did something else call {_MARKER}()?")
    n = args.callgrind_calls
    return {(op, name): (counts[3 + 2 * i] - counts[2 + 2 * i]) / n
            for i, (op, name) in enumerate(labels)}


def annotate(rows: list[dict[str, Any]], args: argparse.Namespace, fws: list[str],
             ranks: int) -> None:
    """Add instructions per call (``raw_ir``, ``<fw>_ir``, ``<fw>_over_ir``) to ``rows``."""
    if ranks != 1:
        print("callgrind: counts are made at world size 1 only: skipped", flush=True)
        return
    if not available():
        print("callgrind: valgrind is not installed: skipped", flush=True)
        return
    print("callgrind: counting instructions (a child under valgrind) ...", flush=True)
    ir = measure(args, fws)
    for row in rows:
        raw = ir[(row["op"], "raw")]
        row["raw_ir"] = raw
        for fw in (f for f in fws if (row["op"], f) in ir):
            row[f"{fw}_ir"] = ir[(row["op"], fw)]
            row[f"{fw}_over_ir"] = ir[(row["op"], fw)] - raw
            if row.get("list_len"):
                row[f"{fw}_over_ir_per_tensor"] = row[f"{fw}_over_ir"] / row["list_len"]
