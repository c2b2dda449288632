"""``python -m mpicoll info``: versions, MPI standard, thread level, GPU-awareness, frameworks.

``python -m mpicoll trace DIR``: the flight-recorder dumps of a job (mpicoll/_trace/cli.py).
Nothing here starts MPI at import: ``trace`` runs where no MPI job can start.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as md
import sys

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


def info() -> list[tuple[str, str]]:
    """The facts ``info`` prints, as (label, value) pairs."""
    # lazy: these start MPI or import numpy, which `--help`, `trace` and a wrong command must not
    from . import _polling
    from ._adapter.device import gpu_aware
    from ._collectives import _choices, _direct, _sizes
    from ._collectives._persistent import available
    from ._mpi import MPI, NETMOD_CHOICE
    from ._process_group import default_group

    rows = [("mpicoll", __version__), ("mpi4py", mpi4py.__version__),
            ("MPI library", MPI.Get_library_version().splitlines()[0].strip()),
            ("MPI standard", "{}.{}".format(*MPI.Get_version())),
            ("thread level", _THREADS.get(MPI.Query_thread(), str(MPI.Query_thread()))),
            ("world size", str(MPI.COMM_WORLD.Get_size()))]
    if NETMOD_CHOICE is not None:
        rows.append(("MPICH netmod", NETMOD_CHOICE))
    aware, why = gpu_aware()
    rows.append(("GPU-aware MPI", f"{'yes' if aware else 'no'} ({why})"))
    large = MPI.Get_version() >= (4, 0)
    rows.append(("large counts", "yes (MPI-4 _c calls)" if large else
                 "no (messages are limited to 2**31-1 elements per call)"))
    persistent, how = available()
    rows.append(("persistent", f"{'yes' if persistent else 'no'} ({how})"))
    default_group()  # (collective: every rank of a launched `info` runs it)
    rows.append(("blocking wait", _polling.chosen))
    rows.append(("call choices", "; ".join(_choices.describe())))
    rows.append(("sizes check", _sizes.describe()))
    rows.append(("exchanges", _direct.describe()))
    rows.append(("flight record", _recording()))
    for module, dist in _FRAMEWORKS:
        version = _version(dist) or _provider_version(module)
        if version is None:
            rows.append((module, "not installed"))
            continue
        try:
            importlib.import_module(module)
            rows.append((module, version))
        except Exception as e:
            rows.append((module, f"{version} (import failed: {type(e).__name__}: {e})"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpicoll")
    parser.add_argument("command", choices=["info", "trace"],
                        help="info: this installation; trace DIR: a job's flight-recorder "
                             "dumps (python -m mpicoll trace --help)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.command == "trace":
        return trace_cli.main(ns.args)
    if ns.args:
        parser.error(f"info takes no arguments, got {' '.join(ns.args)}")
    rows = info()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
