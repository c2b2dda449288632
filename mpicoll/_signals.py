"""One Ctrl-C (or SIGTERM) stops a job whose main thread is stuck inside MPI.

Python runs signal handlers in the main thread, between bytecodes: a main
thread blocked in an MPI wait never runs them, so ``mpiexec``'s forwarded
SIGINT does nothing. ``signal.set_wakeup_fd`` makes the C-level handler also
write the signal's number to a pipe, which the monitor thread watches. When
the main thread does not handle the signal itself within a moment (it is in
an mpicoll wait, or stuck elsewhere in C), the monitor reports where this rank
is and ends the job with status 128 + the signal's number.

SIGUSR1 writes this rank's flight record (``_recorder``) where the program has not
claimed SIGUSR1: from the monitor thread when the wake-up pipe is ours (so a main
thread stuck in MPI still answers), else from the main thread's handler.

Installed only from the main thread, and only over Python's defaults: SIGINT's
``default_int_handler`` (still raising KeyboardInterrupt) and SIGTERM's
``SIG_DFL`` (still ending the process by SIGTERM, after a message). A program
or library that installs its own handlers or wake-up fd keeps them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

from . import _record_dump, _recorder
from ._monitor import monitor
from ._start import mpi
from ._watched import watched

GRACE = 2.0  # seconds the main thread has to handle a signal itself

_arrived: dict[int, float] = {}  # signal number -> when it reached the monitor
_handled: dict[int, float] = {}  # signal number -> when the main thread's handler ran
_main = threading.main_thread().ident
_installed = False
_piped = False  # the wake-up pipe is ours: the monitor thread sees each signal
_pid = os.getpid()


def install() -> None:
    """Route SIGINT and SIGTERM through the monitor (from the main thread, once)."""
    global _installed, _piped
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:
        os.close(r)
        os.close(w)
        return
    if old != -1:  # someone else's (an event loop): leave it theirs
        signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return
    _piped = True
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
    # a forked child (a DataLoader worker) is not this rank: its signals must not reach
    # this rank's monitor through the inherited pipe, nor print as this rank
    os.register_at_fork(after_in_child=_forget_in_child)
    monitor.sources.append(_tick)
    monitor.start(wake_fd=r, on_wake=arrived)


def install_dump() -> None:
    """SIGUSR1 dumps the flight record, where SIGUSR1 is still the default (which would
    end the process); from the main thread, at any world size."""
    usr1 = getattr(signal, "SIGUSR1", None)
    if (usr1 is None or _recorder.ring is None
            or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(usr1) != signal.SIG_DFL):
        return
    signal.signal(usr1, _on_sigusr1)


def _on_sigusr1(signum: int, frame: Any) -> None:
    # a forked child (a DataLoader worker: Slurm's --signal reaches every process) is not
    # this rank: it ignores the signal; with no wake-up pipe of ours, the monitor does
    # not see it, so the handler writes the record
    if os.getpid() == _pid and not _piped:
        _dump_now()


def _dump_now() -> None:
    try:
        path = _record_dump.dump("request")
    except Exception as e:
        _say(f"could not write its flight record on SIGUSR1: {e}")
        return
    _say(f"wrote its flight record to {path}" if path else
         "received SIGUSR1 but MPICOLL_TRACE_DIR is not set: no flight record written")


def _forget_in_child() -> None:
    """After fork, in the child: Python's own signal handling back, no wake-up pipe."""
    try:
        signal.set_wakeup_fd(-1)
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # forked from a thread other than the main one
        pass


def _on_sigint(signum: int, frame: Any) -> None:
    _handled[signum] = time.monotonic()
    # Python's own KeyboardInterrupt, raised here as its default handler would: the
    # traceback's last frame is this handler, so the message says where the rank was
    raise KeyboardInterrupt(f"Ctrl-C (SIGINT) while this rank was at {_where(frame)}; "
                            "mpicoll's handler only passes it on")


def _on_sigterm(signum: int, frame: Any) -> None:
    _handled[signum] = time.monotonic()
    _say(f"received SIGTERM; ending (at {_where(frame)})")
    try:  # where MPICOLL_TRACE_DIR asks for it (SIGTERM comes to every rank: each writes)
        _record_dump.dump("signal")
    except Exception as e:
        _say(f"could not write its flight record: {e}")
    _die_by(signum)


def _where(frame: Any) -> str:
    if frame is None:
        return "an unknown place"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _say(text: str) -> None:
    sys.stderr.write(f"mpicoll: rank {mpi().COMM_WORLD.Get_rank()} {text}\n")
    sys.stderr.flush()


def _die_by(signum: int) -> None:
    """End this process by ``signum`` with the default action, as if never caught."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def arrived(signum: int) -> None:
    """The monitor read ``signum`` from the wake-up pipe."""
    if signum in (signal.SIGINT, signal.SIGTERM):
        _arrived[signum] = time.monotonic()
    elif signum == getattr(signal, "SIGUSR1", None) and signal.getsignal(signum) is _on_sigusr1:
        _dump_now()


def _tick(now: float) -> None:
    """Monitor tick: end the job if a signal is stuck behind a blocked main thread."""
    for signum, t in list(_arrived.items()):
        if _handled.get(signum, 0.0) >= t:
            del _arrived[signum]
            continue
        mine = [op for op in watched.active() if op.thread == _main]
        ours = signal.getsignal(signum) in (_on_sigint, _on_sigterm)
        if not mine and not (ours and now - t > GRACE):
            continue
        name = signal.Signals(signum).name
        where = (f"while waiting {now - mine[0].start:.1f} s in {mine[0].describe()}" if mine
                 else "while the main thread was stuck outside Python")
        monitor.abort(f"received {name} {where}", 128 + signum, reason="signal")
