"""Watchdog: a collective stuck past its timeout is reported, then the job ends.

Blocking MPI calls cannot be interrupted, so a daemon thread watches the
operations in flight (their start times are recorded by ``issue`` and
``Work.wait``). When one exceeds its group's timeout (``timeout=`` of
init_process_group/new_group, else ``MPICOLL_TIMEOUT`` seconds), the thread
prints which operation this rank is stuck in (name, group, sizes, sequence
number) and the last operations it completed, then calls ``MPI_Abort``.
"""

from __future__ import annotations

import collections
import faulthandler
import itertools
import sys
import threading
import time
from typing import Any

import numpy as np

from . import _env

_HISTORY = 8


class _Op:
    __slots__ = ("args", "deadline", "group", "name", "seq", "start")

    def __init__(self, name: str, group: Any, seq: int, args: Any, timeout: float) -> None:
        self.name, self.group, self.seq, self.args = name, group, seq, args
        self.start = time.monotonic()
        self.deadline = self.start + timeout

    def describe(self) -> str:
        g = self.group
        where = f"group {g.name!r} (global ranks {g.ranks})" if g is not None else "no group"
        return f"{self.name} #{self.seq} on {where}, {_summarise(self.args)}"


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

    def begin(self, name: str, group: Any, seq: int, args: Any, timeout: float) -> int:
        # no lock on the hot path: dict stores, next() on a count and deque appends are
        # atomic under the GIL; the watchdog thread only takes snapshots
        token = next(self._tokens)
        self._active[token] = _Op(name, group, seq, args, timeout)
        if self._thread is None:
            self._start()
        return token

    def end(self, token: int) -> None:
        op = self._active.pop(token, None)
        if op is not None:
            self._done.append((op, time.monotonic()))

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mpicoll-watchdog",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(0.05)
            now = time.monotonic()
            late = [op for op in list(self._active.values()) if now > op.deadline]
            if late:
                history = [f"{op.describe()} ({end - op.start:.3f} s)"
                           for op, end in list(self._done)]
                self._report(late[0], now, history)

    def _report(self, op: _Op, now: float, history: list[str]) -> None:
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        lines = [f"mpicoll watchdog: rank {rank} stuck for {now - op.start:.1f} s "
                 f"(timeout {op.deadline - op.start:g} s) in {op.describe()}",
                 f"mpicoll watchdog: rank {rank} last completed operations (oldest first):"]
        lines += [f"  {h}" for h in history] or ["  (none)"]
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.write(f"mpicoll watchdog: rank {rank} Python stacks:\n")
        sys.stderr.flush()
        faulthandler.dump_traceback(all_threads=True)
        sys.stderr.write(f"mpicoll watchdog: rank {rank} aborting the job\n")
        sys.stderr.flush()
        time.sleep(0.5)  # let the launcher forward the report before the job is killed
        MPI.COMM_WORLD.Abort(3)


watchdog = _Watchdog()


def timeout_for(group: Any) -> float | None:
    """The timeout that applies to ``group``: its own, else MPICOLL_TIMEOUT, else None."""
    t = getattr(group, "timeout", None)
    return t if t else _env.settings().timeout
