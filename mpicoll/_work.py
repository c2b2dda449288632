"""Work: handles over MPI requests; results are written when they complete."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .errors import CollectiveTimeout, MPIError


class Work:
    """The handle that ``async_op=True`` returns.

    Outputs hold the result only after ``wait()`` returns (or
    ``is_completed()`` returns True): staged outputs are copied back and
    post-steps (AVG's divide, low-precision rounding) run at completion.
    """

    __slots__ = ("_done", "_exc", "_finalize", "_keep", "_outputs", "_reqs", "_source", "group",
                 "op", "seq")

    def __init__(self, op: str, reqs: list[Any], finalize: Callable[[], Any] | None = None,
                 keep: Any = None, outputs: list[Any] | None = None) -> None:
        self.op = op
        self._reqs = reqs
        self._finalize = finalize
        self._keep = keep  # buffers MPI still uses: alive until completion
        self._outputs = outputs or []
        self._done = False
        self._exc: BaseException | None = None
        self._source = -1
        self.group: Any = None
        self.seq = 0

    def _complete(self) -> None:
        self._done = True
        fin, self._finalize, self._keep = self._finalize, None, None
        if fin is not None:
            try:
                res = fin()
                if res is not None:
                    self._source = res
            except BaseException as e:
                self._exc = e

    def _fail(self, e: BaseException) -> None:
        self._done = True
        self._finalize = self._keep = None
        self._exc = MPIError(self.op, str(e)) if not isinstance(e, MPIError) else e

    def wait(self, timeout: Any = None) -> bool:
        """Block until the operation completes; re-raise its error if it failed.

        Args:
            timeout: seconds or ``datetime.timedelta``; on expiry
                :class:`~mpicoll.errors.CollectiveTimeout` is raised and the
                operation stays pending.
        """
        if not self._done:
            from mpi4py import MPI

            try:
                if timeout is None:
                    self._wait_watched(MPI)
                else:
                    secs = getattr(timeout, "total_seconds", lambda: timeout)()
                    deadline = time.monotonic() + float(secs)
                    while not MPI.Request.Testall(self._reqs):
                        if time.monotonic() > deadline:
                            raise CollectiveTimeout(
                                f"{self.op}: not completed within {secs} s")
                        time.sleep(1e-4)
            except MPI.Exception as e:
                self._fail(e)
            else:
                self._complete()
        if self._exc is not None:
            raise self._exc
        return True

    def _wait_watched(self, MPI: Any) -> None:
        from ._watchdog import timeout_for, watchdog

        limit = timeout_for(self.group)
        if not limit:
            MPI.Request.Waitall(self._reqs)
            return
        token = watchdog.begin(self.op, self.group, self.seq, self._keep, limit)
        try:
            MPI.Request.Waitall(self._reqs)
        finally:
            watchdog.end(token)

    def is_completed(self) -> bool:
        """Test for completion without blocking (completing the work if done)."""
        if not self._done:
            from mpi4py import MPI

            try:
                if not MPI.Request.Testall(self._reqs):
                    return False
            except MPI.Exception as e:
                self._fail(e)
                return True
            self._complete()
        return True

    def is_success(self) -> bool:
        """True once completed without error."""
        return self.is_completed() and self._exc is None

    def exception(self) -> BaseException | None:
        """The error the operation ended with, if any."""
        return self._exc

    def result(self) -> list[Any]:
        """The output tensors (after waiting)."""
        self.wait()
        return list(self._outputs)

    def source_rank(self) -> int:
        """For a receive: the global rank the message came from."""
        self.wait()
        return self._source

    def synchronize(self) -> None:
        """Same as ``wait()``."""
        self.wait()

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"<mpicoll.Work {self.op} {state}>"
