"""Work: handles over MPI requests; results are written when they complete.

A Work is registered as pending (``_pending``) and its memory as in use
(``_ordering``) from issue to completion; its wait is :func:`_wait.wait_requests`,
the one way mpicoll waits.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from ._abandoned import ABANDONED, running
from ._describe import mpi_error
from ._env import as_seconds
from ._mpi import MPI
from ._ordering import MEMORY, memory_of
from ._pending import pending
from ._recorder import done as _recorded
from ._recorder import waiting as _waiting
from ._wait import wait_requests

_issued = itertools.count()
_SENDS = frozenset({"isend", "send"})


class Work:
    """The handle that ``async_op=True`` returns.

    Outputs hold the result only after ``wait()`` returns (or
    ``is_completed()`` returns True): staged outputs are copied back and
    post-steps (AVG's divide, low-precision rounding) run at completion.
    """

    __slots__ = ("_agree", "_done", "_exc", "_explain", "_finalize", "_keep", "_mem", "_n",
                 "_on_status", "_outputs", "_rec", "_reqs", "_source", "_statuses", "group",
                 "op", "peer", "seq")

    def __init__(self, op: str, reqs: list[Any], finalize: Callable[[], Any] | None = None,
                 keep: Any = None, outputs: list[Any] | None = None, group: Any = None,
                 seq: int = 0, on_status: Callable[[Any], int] | None = None,
                 peer: int | None = None, explain: Callable[[], Any] | None = None,
                 rec: list | None = None, statuses: list[Any] | None = None,
                 agree: Callable[[], bool] | None = None) -> None:
        self.op = op
        # data beside its counts (reqs: [data, counts]; _collectives/_sizes): whether the
        # counts received agree, once they have; where they do not, the data is not waited
        # for (:meth:`_given_up`)
        self._agree = agree
        # one per request, filled at completion (point-to-point requests: _collectives/
        # _direct reads the counts its receives got), or None
        self._statuses = statuses
        # on an MPI error, called first: what it raises replaces MPI's error (the counts
        # that explain a truncated message: _collectives/_sizes)
        self._explain = explain
        self._reqs = reqs
        self._finalize = finalize
        self._keep = keep  # buffers MPI still uses: alive until completion
        self._outputs = outputs or []
        self._on_status = on_status  # a receive's: the status -> the sender's global rank
        self._done = not reqs
        self._exc: BaseException | None = None
        self._source = -1
        self.group = group
        self.seq = seq
        self.peer = peer
        self._mem: tuple[list[Any], list[Any]] | None = None
        self._rec = rec  # the flight recorder's record (_recorder), or None
        self._n = next(_issued)
        if reqs:
            pending[id(self)] = self
            MEMORY.issued(self)

    def _memory(self) -> tuple[list[Any], list[Any]]:
        """(what MPI may read: the arrays of the kept arguments; what the Work writes: its
        outputs' memory) as numpy arrays, for :func:`mpicoll._ordering.ordered` (made on first need)."""
        m = self._mem
        if m is None:
            # a send's "output" is the tensor it sends: read, not written
            m = self._mem = (memory_of(self._keep, ()),
                             [] if self.op in _SENDS else memory_of((), self._outputs))
        return m

    @classmethod
    def completed(cls, op: str, outputs: list[Any] | None = None, source: int = -1) -> Work:
        """A Work with nothing left to do: an async call with nothing to communicate, or
        a blocking call done already (``source``: a receive's sender, global rank)."""
        w = cls(op, [], outputs=outputs)
        w._source = source
        return w

    def _complete(self, status: Any = None) -> None:
        pending.pop(id(self), None)
        _recorded(self._rec)
        self._done = True
        self._mem = None
        if not pending:
            MEMORY.clear()
        fin, self._finalize, self._keep = self._finalize, None, None
        try:
            if self._on_status is not None:
                self._source = self._on_status(status)
            if fin is not None:
                fin()
        except BaseException as e:
            self._exc = e

    def _fail(self, e: BaseException) -> None:
        pending.pop(id(self), None)
        _recorded(self._rec, False)
        self._done = True
        self._mem = None
        if not pending:
            MEMORY.clear()
        if isinstance(e, MPI.Exception):
            e = mpi_error(self.op, e, self._keep)
            if self._explain is not None:
                try:
                    self._explain()
                except BaseException as better:
                    better.__cause__ = e
                    e = better
            left = running(self._reqs)  # (what MPI may still write: its memory kept)
            if left:
                ABANDONED.append((left, self._keep))
        self._exc = e
        self._finalize = self._keep = None

    def _given_up(self) -> bool:
        """Whether the counts beside the data have arrived and disagree while the data has
        not: then the data is left to MPI, which may never complete it (Open MPI ends a
        collective's schedule on a rank whose receive was cut short; its peers wait for
        ever), its buffers kept alive (:data:`ABANDONED`), and the Work completes, its
        finalize raising the counts' error."""
        if self._agree is None or not self._reqs[1].Test() or self._reqs[0].Test() or \
                self._agree():
            return False
        ABANDONED.append((self._reqs[0], self._keep))
        return True

    def _status(self) -> Any:
        return MPI.Status() if self._on_status is not None else None

    def wait(self, timeout: Any = None) -> bool:
        """Block until the operation completes; re-raise its error if it failed.

        Args:
            timeout: seconds or ``datetime.timedelta``; on expiry
                :class:`~mpicoll.errors.CollectiveTimeout` is raised and the
                operation stays pending.
        """
        if not self._done:
            status = self._status()
            _waiting(self._rec)
            try:
                if self._agree is not None:  # the counts first (_given_up), then the data,
                    # within one timeout for both
                    end = None if timeout is None else time.monotonic() + as_seconds(timeout)
                    wait_requests(self._reqs[1:], self.op, self.group, self.seq, self._keep,
                                  timeout)
                    if end is not None:
                        timeout = max(end - time.monotonic(), 0.0)
                if not self._given_up():
                    wait_requests(self._reqs, self.op, self.group, self.seq, self._keep,
                                  timeout, status, self.peer, self._statuses)
            except MPI.Exception as e:
                self._fail(e)
            else:
                self._complete(status)
        if self._exc is not None:
            raise self._exc
        return True

    def is_completed(self) -> bool:
        """Test for completion without blocking (completing the work if done)."""
        if not self._done:
            status = self._status()
            try:
                # each Test, never Testall, which MPICH 5.0 fails on a persistent
                # collective's request (the counts of _collectives/_sizes)
                done = (MPI.Request.Testall(self._reqs, self._statuses)
                        if self._statuses is not None else
                        self._reqs[0].Test(status) if status is not None or len(self._reqs) == 1
                        else all([r.Test() for r in self._reqs])) or self._given_up()
            except MPI.Exception as e:
                self._fail(e)
                return True
            if not done:
                return False
            self._complete(status)
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
