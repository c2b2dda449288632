"""The lifecycle: what happens when MPI starts, when WORLD is born, and when a rank ends.

The top layer of the runtime. ``import mpicoll`` imports it (without starting MPI),
and it registers itself with the layers below, which never import it:

- when MPI starts (``_start.on_start``): the abort-on-uncaught-exception hook, the
  exit sequence, and, at several ranks, the signal handling;
- when the first world group is born (``_process_group.at_birth``, collective): the
  departure channel, and how blocking calls wait;
- when the process ends: :func:`at_exit`, the one exit sequence, below.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from . import (
    _core_loader,
    _departures,
    _excepthook,
    _polling,
    _process_group,
    _record_dump,
    _signals,
)
from ._monitor import monitor
from ._process_group import at_birth
from ._progress import drain
from ._start import mpi, on_start

_exit_status: list[Any] = []  # what sys.exit was last called with
_pid = os.getpid()  # a forked child inherits the hook, but it is not an MPI rank


def at_exit() -> None:
    """The exit sequence, run first thing in interpreter shutdown (every thread can still
    run), before MPI finalizes:

    1. pending Works are completed in this thread (their future callbacks included),
       after the progress thread has been stopped and joined: no mpicoll thread runs
       framework code while the interpreter finalizes, and no request is pending when
       MPI finalizes;
    2. every peer is told that this rank leaves, with the status it exits with where
       known (``sys.exit(n)``): a peer that waits for it ends the job with that status
       and a message naming this rank (``_departures``);
    3. the monitor thread is stopped and joined.

    Unlike ``python -m mpi4py``, a rank that exits with a non-zero status does not kill
    peers that do not need it: they end when they next need it, or finish.
    """
    if os.getpid() != _pid or mpi().Is_finalized():
        return
    drain()
    _dump("exit")
    _departures.announce(_known_status())
    monitor.stop()


def _dump(reason: str) -> None:
    """Write the flight record where MPICOLL_TRACE_DIR asks for it; never fail the exit."""
    try:
        _record_dump.dump(reason)
    except Exception as e:
        sys.stderr.write(f"mpicoll: rank {mpi().COMM_WORLD.Get_rank()} could not write its "
                         f"flight record: {e}\n")


def _known_status() -> int:
    if not _exit_status:
        return 0
    status = _exit_status[0]
    if status is None:
        return 0
    return status if isinstance(status, int) else 1


def _register_exit() -> None:
    """Run :func:`at_exit` at interpreter shutdown, and note ``sys.exit``'s status."""
    try:
        threading._register_atexit(at_exit)  # type: ignore[attr-defined]
    except RuntimeError:  # interpreter already shutting down
        return
    real_exit = sys.exit

    def exit(status: Any = None) -> None:
        _exit_status[:] = [status]
        real_exit(status)

    exit.__doc__ = real_exit.__doc__
    sys.exit = exit


def _started(MPI: Any) -> None:
    """MPI has started (once)."""
    _excepthook.install(MPI)
    _register_exit()
    _signals.install_dump()  # at any size: the progress thread runs at size 1 too
    if MPI.COMM_WORLD.Get_size() > 1:
        _signals.install()


def _born(world: Any) -> None:
    """The first world group is being made (collective over COMM_WORLD)."""
    _departures.setup(world)
    _polling.tune(world)
    core = _core_loader.load()  # (decided once: every group keeps its plans in its cache)
    if core is not None:
        _process_group.new_kept = core.PlanCache


on_start(_started)
at_birth(_born)
