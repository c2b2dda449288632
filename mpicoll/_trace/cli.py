"""``python -m mpicoll trace DIR``: what a job's flight-recorder dumps say.

Prints which ranks dumped and why, the first collective where ranks diverge (or that
none did), a table per operation, and the straggler report; ``--chrome`` and ``--plot``
write the timeline too. Reads pickles only: starts no MPI, imports no numpy, so it runs
on a login node or a laptop.

Exit status: 0 when no divergence was found, 3 when one was (scripts can tell a desync
from a slow job), 2 on a usage error or a folder without a readable dump, 1 when an
output asked for (``--chrome``, ``--plot``) could not be written.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys

from .analyze import divergence
from .chrome import chrome
from .load import PREFIX, load
from .plot import plot
from .records import Dump
from .timing import stragglers, stragglers_text, summary, summary_text

OK, FAILED_OUTPUT, USAGE, DIVERGED = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mpicoll trace",
        description="Analyze the flight-recorder dumps of a job (MPICOLL_TRACE_DIR).",
        epilog="exit status: 0 no divergence, 3 a divergence found, 2 usage error or no "
               "readable dump, 1 an output could not be written")
    p.add_argument("folder", help=f"the dump folder, holding {PREFIX}<rank> files")
    p.add_argument("--chrome", metavar="OUT.json",
                   help="write a Chrome/Perfetto trace (ui.perfetto.dev, chrome://tracing)")
    p.add_argument("--plot", metavar="OUT.png",
                   help="write the straggler report and a timeline as a PNG (matplotlib)")
    return p


def _header(folder: str, dumps: dict[int, Dump], problems: list[str]) -> str:
    world = max([d.get("world_size", 0) for d in dumps.values()] + [0])
    lines = [f"dumps in {folder}: ranks {', '.join(map(str, sorted(dumps)))} "
             f"({len(dumps)} of {world})"]
    for rank, d in sorted(dumps.items()):
        when = datetime.datetime.fromtimestamp((d.get("time_ns") or 0) / 1e9)
        lines.append(f"  rank {rank} ({d.get('host', '?')}, pid {d.get('pid', '?')}): dumped "
                     f"on {d.get('reason', '?')} at {when.isoformat(timespec='milliseconds')}"
                     f"; {len(d['records'])} records (ring of {d.get('capacity', '?')}, "
                     f"{d.get('dropped', 0)} evicted)")
    lines += [f"  problem: {p}" for p in problems]
    return "\n".join(lines)


def _write(what: str, path: str, dumps: dict[int, Dump]) -> bool:
    """Write one of the outputs; False (and why, on stderr) when it could not be."""
    try:
        if what == "chrome":
            with open(path, "w", encoding="utf-8") as f:
                json.dump(chrome(dumps), f)
        else:
            plot(dumps, path)
    except (OSError, ImportError) as e:
        print(f"trace: --{what} {path}: {e}", file=sys.stderr)
        return False
    print(f"wrote {path}")
    return True


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m mpicoll trace``; returns the exit status (module docstring)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2): a status, not an exit
        return int(e.code or 0) if not isinstance(e.code, str) else USAGE
    problems: list[str] = []
    try:
        dumps = load(args.folder, problems)
    except OSError as e:
        print(f"trace: {args.folder}: {e.strerror or e}", file=sys.stderr)
        return USAGE
    if not dumps:
        for p in problems:
            print(f"trace: {p}", file=sys.stderr)
        print(f"trace: no readable {PREFIX}<rank> file in {args.folder}", file=sys.stderr)
        return USAGE
    print(_header(args.folder, dumps, problems))
    found, text = divergence(dumps)
    print(f"\n{text}\n\n{summary_text(summary(dumps))}\n\n"
          f"{stragglers_text(stragglers(dumps))}")
    written = [_write(what, path, dumps) for what, path in
               (("chrome", args.chrome), ("plot", args.plot)) if path]
    if not all(written):
        return FAILED_OUTPUT
    return DIVERGED if found is not None else OK
