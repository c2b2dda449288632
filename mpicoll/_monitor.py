"""The monitor: one daemon thread that ends a job which cannot finish.

Blocking MPI calls cannot be interrupted, and a thread blocked inside MPI never
runs Python's signal handlers. So every wait registers its operation
(``_watched``), and one daemon thread, woken by a signal's byte
(``signal.set_wakeup_fd``) or every 50 ms, ends the job when an operation cannot
finish. Its own check is the timeout (the group's ``timeout=``, else
``MPICOLL_TIMEOUT``, else 30 minutes, as torch's gloo backend); the other reasons
plug in as sources that it calls each tick, registered by the layers above:

- a rank that left the job (``_departures``);
- SIGINT or SIGTERM while the main thread is stuck in MPI (``_signals``).

Each time it prints which operation this rank is in and for how long, the last
completed operations and the Python stacks, then calls ``MPI_Abort``.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
import traceback
from collections.abc import Callable

from . import _env, _record_dump, _recorder
from ._start import mpi
from ._watched import HISTORY, Op, watched

_TICK = 0.05


class Monitor:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._wake_r: int | None = None  # read end of the signal wake-up pipe
        self._on_wake: Callable[[int], None] = lambda signum: None
        # callables run each tick: (now) -> None; each may end the job with abort()
        self.sources: list[Callable[[float], None]] = []
        # at a timeout of a collective: who had not arrived (a sentence, or '')
        self.laggards: Callable[..., str] = lambda group, seq, name, **kw: ""
        # before this rank ends the job: have the others write their flight records
        self.dump_others: Callable[[], None] = lambda: None
        self._noticed: dict[tuple[int, float], float] = {}  # a wait -> its next notice

    def start(self, wake_fd: int | None = None,
              on_wake: Callable[[int], None] | None = None) -> None:
        """Start the thread (once); ``wake_fd`` is the read end of the signal pipe, and
        ``on_wake(signum)`` is called for each signal read from it."""
        with self._lock:
            if wake_fd is not None:
                self._wake_r = wake_fd
            if on_wake is not None:
                self._on_wake = on_wake
            if self._thread is None and not self._stop:
                self._thread = threading.Thread(target=self._run, name="mpicoll-monitor",
                                                daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread (at exit, before MPI finalizes)."""
        with self._lock:
            self._stop = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while not self._stop:
            if self._wake_r is not None:
                ready, _, _ = select.select([self._wake_r], [], [], _TICK)
                if ready:
                    try:
                        data = os.read(self._wake_r, 64)
                    except BlockingIOError:
                        data = b""
                    for signum in data:
                        self._on_wake(signum)
            else:
                time.sleep(_TICK)
            if self._stop:
                return
            now = time.monotonic()
            active = watched.active()
            late = [op for op in active if now > op.deadline]
            if late:
                self._timed_out(late[0], now)
            self._notices(active, now)
            # (the waits hold their calls' arguments, the caller's tensors: not kept
            # while this thread sleeps, up to a tick after the waits ended)
            del active, late
            for source in self.sources:
                source(now)

    def _notices(self, active: list[Op], now: float) -> None:
        """Say that a wait goes on long before its timeout ends the job: after
        ``MPICOLL_NOTICE`` seconds (60 by default), then every four times as long."""
        every = _env.settings().notice
        if not every:
            return
        due = self._noticed
        live = set()
        for op in active:
            key = (op.thread, op.start)
            live.add(key)
            waited = now - op.start
            if waited < due.get(key, every) or op.deadline - now < 1:
                continue
            due[key] = waited + 4 * every
            who = ""
            if op.peer is None:
                try:
                    who = self.laggards(op.group, op.seq, op.name, root=op.root(), patience=1.0,
                                        ending=False)
                except Exception:  # (a notice is no reason to fail)
                    who = ""
            left = "" if op.deadline == float("inf") else \
                f"; the job ends at its timeout in {op.deadline - now:.0f} s"
            sys.stderr.write(f"mpicoll: rank {mpi().COMM_WORLD.Get_rank()} still waiting in "
                             f"{op.describe()} for {waited:.0f} s{left}"
                             + (f"; ranks of the group: {who}" if who else "") +
                             " (MPICOLL_NOTICE sets when this is said)\n")
            sys.stderr.flush()
        for key in [k for k in due if k not in live]:
            del due[key]

    def _timed_out(self, op: Op, now: float) -> None:
        if op.peer is None:
            who = self.laggards(op.group, op.seq, op.name, root=op.root())
        else:  # a message: the other ranks are asked only to write their flight records
            try:
                self.dump_others()
            except Exception:  # (a peer gone: the report and the abort come first)
                pass
            who = ""
        self.abort(f"stuck for {now - op.start:.1f} s (timeout {op.deadline - op.start:g} s) "
                   f"in {op.describe()}"
                   + (f"\nmpicoll watchdog: ranks of the group: {who}" if who else ""), 3,
                   reason="timeout")

    def abort(self, what: str, status: int, stacks: bool = True,
              reason: str = "abort") -> None:
        """Report ``what`` this rank is doing, the last operations and stacks; write the
        flight record (``reason``: why, in the dump); end the job."""
        MPI = mpi()
        rank = MPI.COMM_WORLD.Get_rank()
        lines = [f"mpicoll watchdog: rank {rank} {what}",
                 f"mpicoll watchdog: rank {rank} last completed operations (oldest first):"]
        # from the flight recorder, which notes every operation; the waits' own history
        # (those that blocked) where recording is off
        done = _recorder.last_completed(HISTORY)
        lines += [f"  {h}" for h in (done if done is not None else watched.history())] or \
            ["  (none)"]
        lines += _dumped(rank, reason)
        sys.stderr.write("\n".join(lines) + "\n")
        if stacks:
            lines = [f"mpicoll watchdog: rank {rank} Python stacks:"]
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != threading.get_ident():
                    lines.append(f"  thread {names.get(ident, ident)} (most recent call last):")
                    lines += [f"  {line.rstrip()}" for line in traceback.format_stack(frame)]
            sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.write(f"mpicoll watchdog: rank {rank} aborting the job (exit status "
                         f"{status})\n")
        sys.stderr.flush()
        time.sleep(0.5)  # let the launcher forward the report before the job is killed
        MPI.COMM_WORLD.Abort(status)
        # MPI_Abort should not return; where it does (seen: MPICH under srun --mpi=pmi2,
        # after Slurm's SIGTERM), end this process here: never report twice
        os._exit(status)


def _dumped(rank: int, reason: str) -> list[str]:
    """Write the flight record, where MPICOLL_TRACE_DIR asks for it: the report's lines."""
    try:
        path = _record_dump.dump(reason)
    except Exception as e:  # the report and the abort come first
        return [f"mpicoll watchdog: rank {rank} could not write its flight record: {e}"]
    if path is None:
        return [] if _recorder.ring is None else [
            f"mpicoll watchdog: set MPICOLL_TRACE_DIR=<dir> to keep each rank's last "
            f"{_recorder.capacity} operations for `python -m mpicoll trace <dir>`"]
    return [f"mpicoll watchdog: rank {rank} flight record written to {path}; read every "
            f"rank's with: python -m mpicoll trace {os.path.dirname(path)}"]


monitor = Monitor()
watched.on_first = monitor.start  # the thread starts at the first watched wait
