"""``python -m mpicoll info``: versions, MPI standard, thread level, GPU-awareness, frameworks.

``python -m mpicoll trace DIR``: the flight-recorder dumps of a job (mpicoll/_trace/cli.py).
Nothing here starts MPI at import: ``trace`` runs where no MPI job can start.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as md
import sys
import warnings
from typing import Any

import mpi4py

from . import __version__
from ._trace import cli as trace_cli

_FRAMEWORKS = [("numpy", "numpy"), ("torch", "torch"), ("paddle", "paddlepaddle"),
               ("cupy", "cupy"), ("jax", "jax")]
_THREADS = {0: "MPI_THREAD_SINGLE", 1: "MPI_THREAD_FUNNELED", 2: "MPI_THREAD_SERIALIZED",
            3: "MPI_THREAD_MULTIPLE"}


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _provider_version(module: str) -> str | None:
    """The version of whichever distribution provides ``module`` (CuPy comes as
    cupy-cuda12x, cupy-cuda13x, cupy-rocm-..., paddle as paddlepaddle-gpu)."""
    for dist in md.packages_distributions().get(module, ()):
        version = _version(dist)
        if version is not None:
            return version
    return None


def _recording() -> str:
    """What the flight recorder keeps and where it writes (docs/debugging.md)."""
    from . import _record_dump, _recorder  # lazy: with info's other imports

    if _recorder.ring is None:
        return "off (MPICOLL_TRACE_ENTRIES=0)"
    where = _record_dump.folder()
    return (f"the last {_recorder.capacity} operations per rank; " +
            (f"written to {where} (MPICOLL_TRACE_DIR)" if where else
             "not written (set MPICOLL_TRACE_DIR=<dir>)"))


def _checks() -> str:
    """Which mistakes the calls catch by default (docs/errors.md): what travels with them."""
    # lazy: with info's other imports (these start MPI's settings)
    from . import _env
    from ._collectives import _signature
    from ._collectives._all_reduce_direct import MAX_COUNT
    from ._collectives._direct import MAX_RANKS
    from ._collectives._messages import FRESH, SEQ_BITS
    from ._collectives._sizes import SIGNED

    s = _env.settings()
    if s.check:
        return ("checked mode (MPICOLL_CHECK=1): every call's signature (collective, dtype, "
                "op, root, sizes) compared across its group before it runs")
    if not s.sizes:
        return ("off (MPICOLL_CHECK=0): sizes and signatures that disagree across ranks "
                "may pass unnoticed (docs/errors.md)")
    big = f"2**{SIGNED.bit_length() - 1}"
    carried, missed = [], []
    if MAX_RANKS >= 2:
        tags = f"in the messages' tags on groups of 2 to {MAX_RANKS} ranks"
        if not _signature.bits():
            carried.append(f"the counts {tags}")
        elif FRESH:
            carried.append(f"the counts, the signature (collective, dtype, op) and the call's "
                           f"number (modulo {1 << SEQ_BITS}: a message left from an earlier "
                           f"call is refused) {tags} (a broadcast's and a scatter's root in "
                           f"their acknowledgements)")
        else:
            carried.append(f"the counts and the signature (collective, dtype, op) {tags} (a "
                           f"broadcast's and a scatter's root in their acknowledgements)")
        where = f"above {MAX_COUNT} elements, or on more than {MAX_RANKS} ranks"
    else:
        where = f"every group, with MPICOLL_DIRECT={MAX_RANKS}"
    carried.append("the counts and the signature beside MPI's collectives that send counts")
    carried.append(f"the signature and root beside all_reduce, broadcast and reduce from {big} "
                   "elements")
    carried.append("a persistent collective's set-up (collective, dtype, op, root, size; "
                   "all_to_all_single's split sizes paired), once")
    missed.append(f"those three below {big} elements where MPI's own collective makes them "
                  f"({where})")
    if MAX_RANKS >= 2:
        rooted = "reduce and gather" if _signature.bits() else "broadcast, reduce, gather and scatter"
        missed.append(f"the roots of {rooted} on groups that send messages")
    return (f"a mismatch raises on every rank where the call carries what to compare: "
            f"{'; '.join(carried)}. Not compared: {'; '.join(missed)}. MPICOLL_CHECK=1 "
            f"compares every call")


def _watchdog() -> str:
    """When a wait that does not end is reported, and when it ends the job."""
    from . import _env  # lazy: with info's other imports

    s = _env.settings()
    ends = (f"a collective that waits {_seconds(s.timeout)} ends the job on every rank "
            f"(MPICOLL_TIMEOUT)" if s.timeout else "no timeout (MPICOLL_TIMEOUT=0): a wait "
            "that never ends is reported only")
    ends += " (a group made with its own timeout= keeps it)"
    notice = (f"'still waiting' after {_seconds(s.notice)}, then every 4 times as long "
              f"(MPICOLL_NOTICE)" if s.notice else "no 'still waiting' notices "
              "(MPICOLL_NOTICE=0)")
    return f"{ends}; {notice}"


def _seconds(t: float) -> str:
    if t >= 60 and t % 60 == 0:
        return f"{t / 60:g} min"
    return f"{t:g} s"


def _library(MPI: Any) -> str:
    """The MPI library's name and version: "MPICH 5.0.2", "Open MPI v5.0.11"."""
    first = MPI.Get_library_version().splitlines()[0]
    return " ".join(first.split(",")[0].replace("Version:", "").split())


def info(verbose: bool = False) -> list[tuple[str, str]]:
    """The facts ``info`` prints, as (label, value) pairs; ``verbose`` adds how mpicoll
    chose among equivalent MPI calls, and imports each framework to check that it can."""
    # lazy: these start MPI or import numpy, which `--help`, `trace` and a wrong command must not
    from ._adapter.device import gpu_aware
    from ._mpi import MPI, NETMOD_CHOICE

    level = _THREADS.get(MPI.Query_thread(), str(MPI.Query_thread()))
    # below multiple no mpicoll thread calls MPI (docs/sharp-bits.md): say what that costs
    lower = "" if MPI.Query_thread() == MPI.THREAD_MULTIPLE else (
        " (below multiple: no departure notices, a peer that left ends at the timeout; "
        "the torch backend's futures complete when made)")
    rows = [("mpicoll", __version__), ("mpi4py", mpi4py.__version__),
            ("MPI", f"{_library(MPI)}, MPI {'{}.{}'.format(*MPI.Get_version())}, thread "
                    f"level {level.removeprefix('MPI_THREAD_').lower()}{lower}"),
            ("world size", str(MPI.COMM_WORLD.Get_size()))]
    if NETMOD_CHOICE is not None:
        rows.append(("MPICH netmod", NETMOD_CHOICE))
    from . import _core_loader  # lazy: with info's other imports

    _core_loader.load()
    rows.append(("compiled core", _core_loader.why))
    rows.append(("jax handler", _core_loader.jax_handler()[1]))
    aware, why = gpu_aware()
    rows.append(("GPU-aware MPI", f"{'yes' if aware else 'no'} ({why})"))
    large = MPI.Get_version() >= (4, 0)
    rows.append(("large messages", "yes (MPI-4 calls with large counts)" if large else
                 "no (this MPI limits a message to 2**31-1 elements)"))
    rows.append(("checks", _checks()))
    rows.append(("watchdog", _watchdog()))
    rows.append(("flight record", _recording()))
    for module, dist in _FRAMEWORKS:
        version = _version(dist) or _provider_version(module)
        rows.append((module, version if version is not None else "not installed"))
        if verbose and version is not None:
            try:
                with warnings.catch_warnings():  # (Paddle warns at import: not ours to say)
                    warnings.simplefilter("ignore")
                    importlib.import_module(module)
            except Exception as e:
                rows[-1] = (module, f"{version} (import failed: {type(e).__name__}: {e})")
    if verbose:
        rows += _internals(MPI)
    return rows


def _internals(MPI: Any) -> list[tuple[str, str]]:
    """How mpicoll runs the collectives here (``info --verbose``)."""
    # lazy: with info's other imports
    from . import _polling
    from ._collectives import _choices, _direct, _sizes
    from ._collectives._persistent import available
    from ._process_group import default_group

    persistent, how = available()
    default_group()  # (collective: every rank of a launched `info` runs it)
    return [("persistent", f"{'yes' if persistent else 'no'} ({how})"),
            ("blocking wait", _polling.chosen),
            ("call choices", "; ".join(_choices.describe())),
            ("sizes check", _sizes.describe()),
            ("exchanges", _direct.describe())]


def _table(rows: list[tuple[str, str]]) -> list[str]:
    """Rank 0's table: the rows of every rank gathered (one collective), each printed
    once, with the ranks whose value differs beneath it."""
    from ._mpi import MPI  # lazy: started by info() already

    comm = MPI.COMM_WORLD
    every = comm.gather(rows, root=0)
    if comm.Get_rank() != 0:
        return []
    width = max(len(k) for k, _ in rows)
    lines = []
    for key, value in rows:
        lines.append(f"{key:<{width}}  {value}")
        for r, theirs in enumerate(every[1:], 1):
            other = dict(theirs).get(key)
            if other != value:
                lines.append(f"{'':<{width}}  rank {r}: {other}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mpicoll",
        description="info: this installation (under mpiexec, rank 0 prints one table, with "
                    "any rank whose values differ); trace DIR: a job's flight-recorder dumps")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{info,trace}")
    p_info = sub.add_parser("info", help="versions, MPI, GPU-awareness, frameworks")
    p_info.add_argument("--verbose", "-v", action="store_true",
                        help="also how mpicoll chose among equivalent MPI calls, and import "
                             "each framework to check that it can")
    p_trace = sub.add_parser("trace", help="a job's flight-recorder dumps (trace --help)",
                             add_help=False)
    del p_trace  # (listed for --help; its own parser reads its arguments)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["trace"]:
        return trace_cli.main(argv[1:])
    ns = parser.parse_args(argv)
    for line in _table(info(ns.verbose)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
