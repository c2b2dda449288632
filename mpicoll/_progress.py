"""Background threads that complete pending Works, so futures finish on their own.

MPI progresses nonblocking operations only inside MPI calls. A caller that
waits on a future (DDP's Reducer does) needs someone to make those calls: a
progress thread tests the pending requests with a short back-off and runs each
Work's completion callback.

A callback may itself wait for another Work's future: torch runs a future's
``.then()`` callbacks inside ``set_result``, and PowerSGD's hook waits there on a
second all-reduce. So the threads follow the leader/followers pattern: one
thread, the leader, tests; before it runs callbacks while other Works are still
pending, it hands the lead to another thread (an idle one, else a new one), so a
callback that blocks never stops the progress of the Works it waits for. Once
its callbacks return, a thread leads again if no one does, else waits idle (one
idle thread is kept; more end).

Every pending Work is registered with the monitor (``_watched``) under its
group's timeout, as a blocking wait is: a future that can never complete ends
the job with the watchdog's report, never in silence.

``claim`` hands a Work back to a thread that wants to block on it, so no
request is ever waited on by two threads at once. ``drain`` stops the threads
and completes everything still pending.

The threads call MPI beside the caller's own calls, which MPI allows only at
``MPI_THREAD_MULTIPLE`` (mpi4py's default). Where MPI gave a lower level (a user
who set ``mpi4py.rc.thread_level``), no thread is started: a watched Work keeps
its callback until a wait claims it or ``drain`` runs it (:func:`threads_may_test`;
the torch backend's futures then complete when they are made).
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from ._env import timeout_for
from ._pending import pending
from ._start import mpi
from ._watched import watched

Work = Any  # a mpicoll._work.Work (or the torch backend's): duck-typed here
Callback = Callable[[Work], None]

_IDLE_KEPT = 1  # idle threads kept for the next hand-off; more end

_multiple: bool | None = None  # whether MPI gave MPI_THREAD_MULTIPLE (asked once)


def threads_may_test() -> bool:
    """Whether a progress thread may call MPI beside the caller's thread: MPI gave
    ``MPI_THREAD_MULTIPLE``. (MPI is up: a Work exists.)"""
    global _multiple
    if _multiple is None:
        MPI = mpi()
        _multiple = MPI.Query_thread() == MPI.THREAD_MULTIPLE
    return _multiple


class _Engine:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        # work -> (its callback, its token with the monitor)
        self._pending: dict[Work, tuple[Callback, int]] = {}
        self._leader: threading.Thread | None = None
        self._threads: set[threading.Thread] = set()
        self._in_callbacks: set[threading.Thread] = set()
        self._idle = 0
        self._stopping = False

    def watch(self, work: Work, callback: Callback) -> None:
        """Run ``callback(work)`` from a progress thread once ``work`` completes."""
        token = watched.begin(work.op, work.group, work.seq, getattr(work, "_keep", None),
                              timeout_for(work.group), getattr(work, "peer", None))
        with self._lock:
            self._pending[work] = (callback, token)
            if not threads_may_test():
                return  # kept for claim() (a wait) or drain(), in the caller's thread
            if self._leader is None or self._leader in self._in_callbacks:
                # no one tests, or the leader is inside callbacks that may be waiting
                # for this very work (a .then() that issued it): another thread leads
                self._hand_over()
            self._wake.notify_all()

    def test(self, work: Work) -> bool:
        """``work.is_completed()``, never while a progress thread tests it."""
        with self._lock:
            return work.is_completed()

    def claim(self, work: Work) -> Callback | None:
        """Take ``work`` back from the threads; returns its callback if it was pending."""
        with self._lock:
            entry = self._pending.pop(work, None)
        if entry is None:
            return None
        watched.end(entry[1])
        return entry[0]

    def stop(self) -> list[tuple[Work, Callback]]:
        """Stop the threads; returns the works still pending, with their callbacks.

        The caller (the main thread, at exit or destroy_process_group) completes them:
        no mpicoll thread may be running framework code when the interpreter finalizes.
        Threads inside a callback are joined after those are completed (:func:`drain`):
        the callback may be waiting for one of them.
        """
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
            idle = [t for t in self._threads if t not in self._in_callbacks]
        me = threading.current_thread()
        for t in idle:
            if t is not me:
                t.join()
        with self._lock:
            owed = list(self._pending.items())
            self._pending.clear()
        for _, (_, token) in owed:
            watched.end(token)
        return [(work, callback) for work, (callback, _) in owed]

    def join(self) -> None:
        """After :meth:`stop` and the owed callbacks: join the threads that were inside
        callbacks, then allow new threads again."""
        with self._lock:
            busy = list(self._threads)
        me = threading.current_thread()
        for t in busy:
            if t is not me:
                t.join()
        with self._lock:
            self._stopping = False

    def _hand_over(self) -> None:
        """Pass the lead on (the lock held): to an idle thread, else to a new one."""
        if self._stopping:
            return
        self._leader = None
        if self._idle:
            self._wake.notify_all()
        else:
            t = threading.Thread(target=self._run, name="mpicoll-progress", daemon=True)
            self._threads.add(t)
            t.start()

    def _lead(self, me: threading.Thread) -> bool:
        """Wait (the lock held) until this thread leads and there is work; False when
        the engine stops or this thread is an idle one too many."""
        while True:
            if self._stopping:
                return False
            if self._leader is None:
                self._leader = me
            if self._leader is me and self._pending:
                return True
            if self._leader is not me:
                if self._idle >= _IDLE_KEPT:
                    return False
                self._idle += 1
                try:
                    self._wake.wait()
                finally:
                    self._idle -= 1
            else:
                self._wake.wait()

    def _run(self) -> None:
        me = threading.current_thread()
        delay = 2e-5
        try:
            while True:
                finished: list[tuple[Work, Callback, int]] = []
                with self._lock:
                    if not self._lead(me):
                        return
                    for work in list(self._pending):
                        if work.is_completed():
                            callback, token = self._pending.pop(work)
                            finished.append((work, callback, token))
                    if finished:
                        self._in_callbacks.add(me)
                        if self._pending:
                            # the callbacks may block (a future's .then() waiting for
                            # another Work): what is left to test needs another leader
                            self._hand_over()
                for work, callback, token in finished:
                    watched.end(token)
                    try:
                        callback(work)
                    except Exception:
                        traceback.print_exc()
                if finished:
                    with self._lock:
                        self._in_callbacks.discard(me)
                    delay = 2e-5
                else:
                    time.sleep(delay)
                    delay = min(delay * 2, 5e-4)
        finally:
            with self._lock:
                self._threads.discard(me)
                self._in_callbacks.discard(me)
                if self._leader is me:
                    self._leader = None
                    if self._pending:
                        self._hand_over()


engine = _Engine()


def drain() -> None:
    """Stop the progress threads, then complete every pending Work in this thread (their
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
    engine.join()
    for work in list(pending.values()):
        try:
            work.wait()
        except Exception as e:
            sys.stderr.write(f"mpicoll: {work.op}, never waited for, failed: {e}\n")
