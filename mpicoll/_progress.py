"""A background thread that completes pending Works, so futures finish on their own.

MPI progresses nonblocking operations only inside MPI calls. A caller that
waits on a future (DDP's Reducer does) needs someone to make those calls: this
thread tests the pending requests with a short back-off and runs each Work's
completion callback. ``claim`` hands a Work back to a thread that wants to
block on it, so no request is ever waited on by two threads at once. ``drain``
stops it and completes everything still pending.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from ._pending import pending

Work = Any  # a mpicoll._work.Work (or the torch backend's): duck-typed here


class _Engine:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: dict[Work, Callable[[Work], None]] = {}
        self._thread: threading.Thread | None = None
        self._stopping = False

    def watch(self, work: Work, callback: Callable[[Work], None]) -> None:
        """Run ``callback(work)`` from the progress thread once ``work`` completes."""
        with self._lock:
            self._pending[work] = callback
            if not self._stopping and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._run, name="mpicoll-progress",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()

    def test(self, work: Work) -> bool:
        """``work.is_completed()``, never while the thread tests it."""
        with self._lock:
            return work.is_completed()

    def claim(self, work: Work) -> Callable[[Work], None] | None:
        """Take ``work`` back from the thread; returns its callback if it was pending."""
        with self._lock:
            return self._pending.pop(work, None)

    def stop(self) -> list[tuple[Work, Callable[[Work], None]]]:
        """Stop and join the thread; returns the works still pending, with their callbacks.

        The caller (the main thread, at exit or destroy_process_group) completes them:
        no mpicoll thread may be running framework code when the interpreter finalizes.
        """
        with self._lock:
            self._stopping = True
            thread = self._thread
            self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._lock:
            owed = list(self._pending.items())
            self._pending.clear()
            self._thread = None
            self._stopping = False
        return owed

    def _run(self) -> None:
        delay = 2e-5
        while True:
            finished: list[tuple[Work, Callable[[Work], None]]] = []
            with self._lock:
                while not self._pending and not self._stopping:
                    self._wake.wait()
                    delay = 2e-5
                if self._stopping:
                    return
                for work in list(self._pending):
                    if work.is_completed():
                        finished.append((work, self._pending.pop(work)))
            for work, callback in finished:
                try:
                    callback(work)
                except Exception:
                    traceback.print_exc()
            if finished:
                delay = 2e-5
            else:
                time.sleep(delay)
                delay = min(delay * 2, 5e-4)


engine = _Engine()



def drain() -> None:
    """Stop the progress thread, then complete every pending Work in this thread (their
    future callbacks included): at exit, and before a group's communicator is freed."""
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
