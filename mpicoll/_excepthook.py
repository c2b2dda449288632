"""With several ranks, an uncaught exception on one rank ends the whole job.

A rank that dies alone leaves its peers blocked in the next collective for ever:
the hook prints the traceback, then calls ``MPI_Abort`` (``MPICOLL_ABORT_ON_EXCEPTION=0``
turns it off). Installed by the lifecycle when MPI starts.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from . import _env, _record_dump
from ._monitor import monitor


def _uncapture(etype: Any, value: Any, tb: Any) -> None:
    """Make what the hooks printed reach the process's stderr before the abort.

    A hook installed after ours may capture ``sys.stderr`` while it calls ours, to
    rewrite the text once we return (torch.distributed's prefixes each line with
    ``[rankN]:``). We never return: write what was captured, or the traceback, to the
    real stderr, and point ``sys.stderr`` there for the message that follows."""
    real = sys.__stderr__
    if real is None or sys.stderr is real:
        return
    captured = getattr(sys.stderr, "getvalue", None)
    text = captured() if captured is not None else ""
    real.write(text or "".join(traceback.format_exception(etype, value, tb)))
    sys.stderr = real


def _dump(rank: int, interrupted: bool) -> None:
    """Write this rank's flight record, and have the others write theirs, where
    MPICOLL_TRACE_DIR asks for them: the abort would end the others first."""
    try:
        path = _record_dump.dump("signal" if interrupted else "exception")
        monitor.dump_others()
    except Exception as e:
        sys.stderr.write(f"mpicoll: rank {rank} could not write its flight record: {e}\n")
    else:
        if path:
            sys.stderr.write(f"mpicoll: rank {rank} flight record written to {path}; the "
                             "other ranks were asked to write theirs\n")


def install(MPI: Any) -> None:
    """Abort the job on an uncaught exception (at several ranks, unless turned off)."""
    if MPI.COMM_WORLD.Get_size() == 1 or not _env.flag("MPICOLL_ABORT_ON_EXCEPTION", True):
        return
    previous = sys.excepthook

    def abort_on_exception(etype: Any, value: Any, tb: Any) -> None:
        # With several ranks, a rank that dies alone leaves its peers blocked in
        # the next collective for ever: print the traceback, then end the job.
        try:
            previous(etype, value, tb)
        except Exception:
            traceback.print_exception(etype, value, tb)
        _uncapture(etype, value, tb)
        rank = MPI.COMM_WORLD.Get_rank()
        # as Python's own exit status for an uncaught KeyboardInterrupt (128 + SIGINT)
        status = 130 if issubclass(etype, KeyboardInterrupt) else getattr(value, "status", 1)
        status = status if isinstance(status, int) and 0 < status < 256 else 1
        sys.stderr.write(f"mpicoll: uncaught exception on rank {rank}; aborting the job "
                         f"with status {status} ({etype.__name__}; set "
                         "MPICOLL_ABORT_ON_EXCEPTION=0 to disable)\n")
        _dump(rank, issubclass(etype, KeyboardInterrupt))
        sys.stderr.flush()
        time.sleep(0.5)  # let the launcher forward the traceback before the job is killed
        MPI.COMM_WORLD.Abort(status)
        # MPI_Abort should not return; where it does (seen: MPICH under srun --mpi=pmi2,
        # after Slurm's SIGTERM), end this process here: never report twice
        os._exit(status)

    sys.excepthook = abort_on_exception
