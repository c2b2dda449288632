"""``python -m mpicoll.bench [plot|overhead|nonblocking|list] ...``: the benchmark's command line.

- ``python -m mpicoll.bench [--quick] [--ops ...] --out X.json``: OSU-style timings
  of every case and message size (run under ``mpiexec -n 2`` or more);
- ``python -m mpicoll.bench overhead [--callgrind] --out F.json``: per-call cost
  over raw mpi4py (run at world size 1, or 2 and 4 for the list forms);
- ``python -m mpicoll.bench nonblocking [--out F.json]``: raw nonblocking calls and
  mpicoll's choice of call against the blocking calls (run under ``mpiexec``);
- ``python -m mpicoll.bench plot a.json b.json --out docs/img``: the plots;
- ``python -m mpicoll.bench list``: the registered cases.
"""

from __future__ import annotations

import argparse
import sys

from . import nonblocking, overhead, run
from .plot import plot
from .registry import cases

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = ("plot", "overhead", "nonblocking", "list")
    command = argv[0] if argv[:1] and argv[0] in commands else None
    ap = argparse.ArgumentParser(prog=" ".join(filter(None, ["python -m mpicoll.bench",
                                                             command])))
    if command == "plot":
        ap.add_argument("json", nargs="+")
        ap.add_argument("--out", default="docs/img")
        args = ap.parse_args(argv[1:])
        for path in plot(args.json, args.out):
            print(f"wrote {path}")
        return 0
    if command == "list":
        ap.parse_args(argv[1:])
        for case in cases().values():
            extra = ", torch.distributed" if case.torch_distributed else ""
            print(f"{case.name}  ({', '.join(case.frameworks)}{extra})")
        return 0
    if command == "overhead":
        overhead.add_arguments(ap)
        return overhead.run(ap.parse_args(argv[1:]))
    if command == "nonblocking":
        nonblocking.add_arguments(ap)
        return nonblocking.run(ap.parse_args(argv[1:]))
    run.add_arguments(ap)
    return run.run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
