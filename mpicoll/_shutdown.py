"""Leaving cleanly: what runs when a process ends, before MPI finalizes.

Registered with ``threading._register_atexit`` when MPI starts, so it runs
first thing in interpreter shutdown, while every thread can still run:

1. pending Works are completed in the main thread (their future
   callbacks included), after the progress thread has been stopped and joined:
   no mpicoll thread runs framework code while the interpreter finalizes, and
   no request is pending when MPI finalizes;
2. every peer is told that this rank leaves, with the status it exits with
   where known (``sys.exit(n)``): a peer that waits for it ends the job with
   that status and a message naming this rank (``_departures``);
3. the monitor thread is stopped and joined.

Unlike ``python -m mpi4py``, a rank that exits with a non-zero status does not
kill peers that do not need it: they end when they next need it, or finish.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any

_exit_status: list[Any] = []  # what sys.exit was last called with
_registered = False
_pid = os.getpid()  # a forked child inherits the hook, but it is not an MPI rank


def register() -> None:
    """Install the exit sequence and the ``sys.exit`` wrapper (once, when MPI starts)."""
    global _registered
    if _registered:
        return
    _registered = True
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


def _known_status() -> int:
    if not _exit_status:
        return 0
    status = _exit_status[0]
    if status is None:
        return 0
    return status if isinstance(status, int) else 1


def drain() -> None:
    """Stop the progress thread, then complete every pending Work in this thread."""
    from ._progress import engine
    from ._work import pending

    owed = engine.stop()
    for work, callback in owed:
        try:
            work.wait()
        except Exception:
            pass  # the callback sees the error through the work
        try:
            callback(work)
        except Exception:
            traceback.print_exc()
    for work in list(pending.values()):
        try:
            work.wait()
        except Exception as e:
            sys.stderr.write(f"mpicoll: {work.op}, never waited for, failed: {e}\n")


def at_exit() -> None:
    from . import _departures
    from ._mpi import MPI
    from ._watchdog import watchdog

    if os.getpid() != _pid or MPI.Is_finalized():
        return
    drain()
    _departures.announce(_known_status())
    watchdog.stop()
