"""The monitor: one daemon thread that ends a job which cannot finish.

Blocking MPI calls cannot be interrupted, and a thread blocked inside MPI never
runs Python's signal handlers. So every wait of mpicoll's registers the
operation here (name, group, sequence number, buffers, deadline, thread), and
one daemon thread, woken by a signal's byte (``signal.set_wakeup_fd``) or every
50 ms, ends the job when an operation cannot finish:

- past its timeout (the group's ``timeout=``, else ``MPICOLL_TIMEOUT``, else 30
  minutes, as torch's gloo backend);
- waiting on a rank that has left the job (``_departures``);
- after SIGINT or SIGTERM while the main thread is stuck in MPI (``_signals``).

Each time it prints which operation this rank is in and for how long, and the
Python stacks, then calls ``MPI_Abort``.
"""

from __future__ import annotations

import collections
import itertools
import os
import select
import sys
import threading
import time
import traceback
from typing import Any, NamedTuple

import numpy as np

from . import _env

_HISTORY = 8
_TICK = 0.05
_now = time.monotonic
_ident = threading.get_ident


class _Op(NamedTuple):
    """An operation being waited for (stored as a plain tuple on the hot path)."""

    name: str
    group: Any
    seq: int
    args: Any
    start: float
    deadline: float
    thread: int
    peer: int | None

    def describe(self) -> str:
        g = self.group
        where = f"group {g.name!r} (global ranks {g.ranks})" if g is not None else "no group"
        seq = f" #{self.seq}" if self.seq else ""
        args = "" if self.args is _DROPPED else f", {_summarise(self.args)}"
        return f"{self.name}{seq} on {where}{args}"


# a completed operation's arguments in the history: not kept (they hold the caller's
# buffers, which must be freed when the caller drops them)
_DROPPED = object()


_INF = float("inf")


def _summarise(args: Any) -> str:
    """Shapes, dtypes and counts of an MPI call's arguments, for the report."""
    parts: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, np.ndarray):
            parts.append(f"{x.dtype}{list(x.shape)}")
        elif isinstance(x, (list, tuple)):
            if x and all(isinstance(v, int) for v in x):
                parts.append(f"counts {list(x)}" if len(x) < 17 else f"{len(x)} counts")
            else:
                for v in x:
                    walk(v)
        elif isinstance(x, int):
            parts.append(str(x))

    walk(args)
    return "args: " + ", ".join(parts) if parts else "no buffers"


class _Watchdog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, _Op] = {}
        self._done: collections.deque[tuple[_Op, float]] = collections.deque(maxlen=_HISTORY)
        self._thread: threading.Thread | None = None
        self._tokens = itertools.count(1)
        self._stop = False
        self._wake_r: int | None = None  # read end of the signal wake-up pipe
        self.checks: list[Any] = []  # callables run each tick: (now) -> None

    # -- the hot path: no lock; dict stores, next() on a count and deque appends are
    #    atomic under the GIL, and the thread only takes snapshots

    def begin(self, name: str, group: Any, seq: int, args: Any, timeout: float | None,
              peer: int | None = None) -> int:
        token = next(self._tokens)
        start = _now()
        self._active[token] = (name, group, seq, args, start,
                               start + timeout if timeout else _INF, _ident(), peer)
        if self._thread is None:
            self.start()
        return token

    def end(self, token: int) -> None:
        op = self._active.pop(token, None)
        if op is not None:
            self._done.append(((*op[:3], _DROPPED, *op[4:]), _now()))

    def active(self) -> list[_Op]:
        """The operations waiting now, oldest first."""
        return sorted((_Op._make(t) for t in list(self._active.values())),
                      key=lambda op: op.start)

    # -- the thread

    def start(self, wake_fd: int | None = None) -> None:
        """Start the thread (once); ``wake_fd`` is the read end of the signal pipe."""
        with self._lock:
            if wake_fd is not None:
                self._wake_r = wake_fd
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
        from . import _signals

        while not self._stop:
            if self._wake_r is not None:
                ready, _, _ = select.select([self._wake_r], [], [], _TICK)
                if ready:
                    try:
                        data = os.read(self._wake_r, 64)
                    except BlockingIOError:
                        data = b""
                    for signum in data:
                        _signals.arrived(signum)
            else:
                time.sleep(_TICK)
            if self._stop:
                return
            now = time.monotonic()
            late = [op for op in self.active() if now > op.deadline]
            if late:
                from . import _departures

                op = late[0]
                who = _departures.laggards(op.group, op.seq) if op.peer is None else ""
                self.abort(f"stuck for {now - op.start:.1f} s (timeout "
                           f"{op.deadline - op.start:g} s) in {op.describe()}"
                           + (f"\nmpicoll watchdog: ranks of the group: {who}" if who else ""),
                           3)
            for check in self.checks:
                check(now)

    def abort(self, what: str, status: int, stacks: bool = True) -> None:
        """Report ``what`` this rank is doing, the last operations and stacks; end the job."""
        from ._mpi import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        history = [f"{_Op._make(op).describe()} ({end - op[4]:.3f} s)"
                   for op, end in list(self._done)]
        lines = [f"mpicoll watchdog: rank {rank} {what}",
                 f"mpicoll watchdog: rank {rank} last completed operations (oldest first):"]
        lines += [f"  {h}" for h in history] or ["  (none)"]
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


watchdog = _Watchdog()


def timeout_for(group: Any) -> float | None:
    """The timeout that applies to ``group``: its own, else MPICOLL_TIMEOUT (default 30
    minutes; 0 means none)."""
    t = getattr(group, "timeout", None)
    return t if t else _env.settings().timeout
