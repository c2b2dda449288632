"""Work: handles over MPI requests; results are written when they complete.

Every wait of mpicoll's goes through :func:`wait_requests`, so the monitor
(``_watchdog``) sees it. Every collective is issued as MPI's nonblocking
variant, blocking calls included: a blocking MPI collective never matches a
nonblocking one, and torch code may pass ``async_op=True`` on some ranks only.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ._env import as_seconds
from ._mpi import MPI
from ._watchdog import _summarise, timeout_for, watchdog
from .errors import CollectiveTimeout, MPIError, torch_flavoured

# Works whose requests are still in flight, alive until they complete: MPI writes into
# their buffers, so dropping the handle must not free them; completed at exit
pending: dict[int, Work] = {}


def wait_pending(group: Any, tensor: Any = None) -> None:
    """Wait for the pending Works on ``group`` (on any group if None) that write ``tensor``
    (any, if None), in the order they were issued."""
    for w in list(pending.values()):  # in the order they were issued
        if (group is None or w.group is group) and (
                tensor is None or any(o is tensor for o in w._outputs)):
            w.wait()


def ordered(view: Any, writes: bool) -> None:
    """Complete, in the order they were issued, the pending Works that use the host memory
    ``view`` (a numpy array) overlaps: those that write it and, when the caller is about
    to write it (``writes``), those that read it too.

    Called for every tensor of a call (``as_buffer``) while any Work is pending, before the
    call reads or stages its tensors: a call on memory that an unfinished
    ``async_op=True`` call still uses then sees that call finished first, the order NCCL's
    stream and Paddle give, instead of racing MPI for the memory (MPI forbids touching a
    pending operation's buffers; the result would be neither order's). Works on other
    memory, and reads of what a pending call only reads, are left to run. The pending
    Works' memory is kept as address ranges sorted by start, so a call among many pending
    ones (a thousand posted isends) costs a search, not a comparison with each.
    """
    if _local.searching:  # viewing a Work's outputs for the search: not again
        return
    span = _span(view)
    if span is None:
        return
    _local.searching = True
    try:
        found = _MEMORY.overlapping(span, writes)
    finally:
        _local.searching = False
    for w in found:  # (callbacks run here may issue calls: ordered again)
        _complete_first(w)


class _Local(threading.local):
    searching = False


_local = _Local()
_SENDS = frozenset({"isend", "send"})


def _span(a: Any) -> tuple[int, int] | None:
    """[first byte, last byte + 1) of numpy array ``a``'s memory (None if empty): what
    ``np.may_share_memory`` compares."""
    if not a.size:
        return None
    if a.flags.c_contiguous:  # MPI's buffer view of it: its address at a fifth of the cost
        lo = MPI.buffer(a).address
        return lo, lo + a.nbytes
    lo = hi = a.__array_interface__["data"][0]
    for n, st in zip(a.shape, a.strides, strict=True):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


class _Memory:
    """The pending Works' memory as (start, end, writes, work) ranges sorted by start.
    A Work is added at the first search after it was issued (its arrays found then, once)
    and dropped once done; the list is rebuilt when mostly done Works."""

    def __init__(self) -> None:
        self.fresh: list[Work] = []  # issued since the last search
        self.starts: list[int] = []
        self.items: list[tuple[int, int, bool, Work]] = []
        self.longest = 0
        self.searches = 0
        # Works are issued in the caller's thread and may complete in the torch progress
        # thread (which clears): a Work issued meanwhile must not be lost from ``fresh``
        self.lock = threading.Lock()

    def issued(self, w: Work) -> None:
        with self.lock:
            self.fresh.append(w)
            if len(self.fresh) > 256:  # no search for a while (device tensors, barriers)
                self.fresh = [f for f in self.fresh if not f._done]

    def clear(self) -> None:
        """Nothing is pending: forget every range (and hold no Work alive)."""
        with self.lock:
            if pending:  # one was issued since the caller looked
                return
            self.fresh = [w for w in self.fresh if not w._done]
            self.starts, self.items, self.longest = [], [], 0

    def _add(self, w: Work) -> None:
        if w._done:  # (completed since the caller looked)
            return
        reads, written = w._memory()
        seen: set[int] = set()
        for arrays, writes in ((written, True), (reads, False)):
            for a in arrays:
                if id(a) in seen:  # (a Buffer's view and array are one when zero-copy)
                    continue
                seen.add(id(a))
                span = _span(a)
                if span is not None:
                    k = bisect.bisect(self.starts, span[0])
                    self.starts.insert(k, span[0])
                    self.items.insert(k, (span[0], span[1], writes, w))
                    self.longest = max(self.longest, span[1] - span[0])

    def overlapping(self, span: tuple[int, int], writes: bool) -> list[Work]:
        """The pending Works whose memory meets ``span`` in a way that orders a call that
        reads it (writes it, if ``writes``) after them, in the order they were issued."""
        with self.lock:
            fresh, self.fresh = self.fresh, []
        fresh = [w for w in fresh if not w._done]
        for w in fresh:
            w._memory()  # (outside the lock: it views the outputs through as_buffer)
        lo, hi = span
        found: dict[int, Work] = {}
        with self.lock:  # the ranges change only under it (clear() comes from any thread)
            for w in fresh:
                self._add(w)
            self.searches += 1
            if len(self.items) > 64 and not self.searches % 64:  # drop the done Works'
                live = [it for it in self.items if not it[3]._done]
                self.starts = [it[0] for it in live]
                self.items = live
                self.longest = max((it[1] - it[0] for it in live), default=0)
            starts, items, longest = self.starts, self.items, self.longest
            k = bisect.bisect_left(starts, hi)  # ranges that start before this one ends
            while k > 0:
                k -= 1
                start, end, w_writes, w = items[k]
                if start + longest <= lo:  # no earlier range reaches this one
                    break
                if end > lo and (w_writes or writes) and not w._done:
                    found[w._n] = w
        return [found[n] for n in sorted(found)]


_MEMORY = _Memory()
_issued = itertools.count()


def _complete_first(w: Work) -> None:
    """Wait for ``w`` ahead of a call on its memory; its error, if any, stays with it
    (its own wait raises it), the call goes on."""
    from ._progress import engine  # a torch future's thread may be testing it: take it

    callback = engine.claim(w)
    try:
        w.wait()
    except Exception:
        pass
    except BaseException:  # interrupted: still pending, its future still the engine's
        if callback is not None and not w._done:
            engine.watch(w, callback)
        raise
    if callback is not None:
        callback(w)


def _arrays(x: Any, into: list[Any], depth: int = 4) -> None:
    """The numpy arrays in ``x`` (a Work's kept MPI arguments: message specs, tuples,
    lists, Buffers) into ``into``."""
    import numpy as np

    if isinstance(x, np.ndarray):
        into.append(x)
    elif isinstance(x, (list, tuple)) and depth:
        for y in x:
            _arrays(y, into, depth - 1)
    elif hasattr(x, "array") and hasattr(x, "view") and isinstance(x.view, np.ndarray):
        into.append(x.view)  # a Buffer: the caller's memory, and the array MPI uses
        into.append(x.array)


def memory_of(kept: Any, tensors: Any) -> list[Any]:
    """The host memory, as numpy arrays, of MPI arguments ``kept`` (arrays, message specs,
    Buffers) and of ``tensors`` (any framework's)."""
    found: list[Any] = []
    _arrays(kept, found)
    found += [v for v in map(_host_view, tensors) if v is not None]
    return found


def _host_view(x: Any) -> Any:
    """The host memory of tensor ``x`` as a numpy view, or None (device memory, or not a
    tensor)."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__cuda_array_interface__"):  # device memory (CuPy, CUDA torch): its
        return None                              # order is not kept here; no copy made
    device = getattr(x, "device", None)
    if getattr(device, "type", "cpu") != "cpu":  # (torch's other devices)
        return None
    place = getattr(x, "place", None)  # Paddle
    if place is not None and hasattr(place, "is_cpu_place") and not place.is_cpu_place():
        return None
    from ._adapter.buffer import as_buffer

    try:
        b = as_buffer(x)
    except Exception:  # not a tensor mpicoll reads (the call itself refused it)
        return None
    return b.view if b.device == "cpu" else None


def describe(e: Any) -> str:
    """An MPI error's own message."""
    try:
        return e.Get_error_string().strip()
    except Exception:
        return str(e)


def mpi_error(op: str, e: Any, args: Any = None, hint: str = "") -> MPIError:
    """The MPIError for MPI's exception ``e`` in ``op``: MPI's message, then the buffers
    and counts MPI was given (the one place MPI's errors become mpicoll's)."""
    where = f" [{_summarise(args)}]" if args is not None else ""
    return torch_flavoured(MPIError)(op, f"{describe(e)}{where}{hint}")


def test_until(test: Callable[[], bool], deadline: float) -> bool:
    """Poll ``test`` until it is true (True) or ``deadline`` passes (False)."""
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(1e-4)
    return True


# Tests of one request before its watched wait: at most ~50-100 us of polling, which
# MPI's own Wait would spend polling too; a job that hangs is still caught by the monitor
# once the wait is registered. No Test when ranks outnumber their cores (tune_polling):
# MPI's Wait then gives the core to a peer sooner than a Python loop of Tests does (4 ranks
# on 2 cores: 64-byte all_reduce 35 us with MPI's Wait alone, 70 us after 200 Tests)
POLLS = 200
_SPIN = range(POLLS)


def tune_polling(world: Any) -> str:
    """Choose how many Tests come before a watched wait (collective over ``world``, at
    the default group's birth): ``MPICOLL_POLLS`` if set, else 0 when this node's ranks
    outnumber the cores they may run on, else :data:`POLLS`. Returns why, for ``info``."""
    global _SPIN
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        cores = set().union(*local.allgather(_cores()))
        ranks = local.Get_size()
    finally:
        local.Free()
    raw = os.environ.get("MPICOLL_POLLS", "")
    if raw:
        try:
            n, why = int(raw), "MPICOLL_POLLS"
        except ValueError:
            raise ValueError(f"environment variable MPICOLL_POLLS={raw!r}: expected a "
                             "number of Tests") from None
    elif ranks > len(cores):
        n, why = 0, _crowd(ranks, len(cores))
    else:
        n, why = POLLS, _crowd(ranks, len(cores))
    _SPIN = range(max(n, 0))
    return f"{max(n, 0)} Tests before a monitored wait ({why})"


def _crowd(ranks: int, cores: int) -> str:
    return f"{ranks} rank{'s' * (ranks != 1)} on {cores} core{'s' * (cores != 1)} of this node"


def _cores() -> list[int]:
    """The cores this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def wait_requests(reqs: list[Any], op: str, group: Any, seq: int, args: Any,
                  timeout: Any = None, status: Any = None, peer: int | None = None) -> None:
    """Wait for ``reqs``: the one way mpicoll waits.

    With ``timeout`` (a caller's ``wait(timeout=...)``) it polls and raises
    :class:`CollectiveTimeout` on expiry, the operation left pending. Without,
    it blocks in MPI under the monitor's eye (group timeout, departed peers,
    signals). ``status`` receives a single request's status.
    """
    if timeout is not None:
        secs = as_seconds(timeout)
        # one request: Test, never Testall, which MPICH 5.0 fails (MPI_ERR_IN_STATUS with
        # every status MPI_SUCCESS) on a persistent collective's request
        test = (lambda: reqs[0].Test(status)) if status is not None or len(reqs) == 1 else (
            lambda: MPI.Request.Testall(reqs))
        if not test_until(test, time.monotonic() + secs):
            raise torch_flavoured(CollectiveTimeout)(f"{op}: not completed within {secs:g} s")
        return
    if len(reqs) == 1:
        # a few Tests before the watched wait: a small message's peers are usually a few
        # microseconds away, and MPI's Wait (MPICH's measured ~1.5 us slower than a Test
        # loop at 2 ranks) and registering with the monitor cost more than that
        test = reqs[0].Test
        for _ in _SPIN:
            if test(status):
                return
    token = watchdog.begin(op, group, seq, args, timeout_for(group), peer)
    try:
        if status is not None:
            reqs[0].Wait(status)
        elif len(reqs) == 1:
            reqs[0].Wait()
        else:
            MPI.Request.Waitall(reqs)
    finally:
        watchdog.end(token)


class Work:
    """The handle that ``async_op=True`` returns.

    Outputs hold the result only after ``wait()`` returns (or
    ``is_completed()`` returns True): staged outputs are copied back and
    post-steps (AVG's divide, low-precision rounding) run at completion.
    """

    __slots__ = ("_done", "_exc", "_finalize", "_keep", "_mem", "_n", "_on_status",
                 "_outputs", "_reqs", "_source", "group", "op", "peer", "seq")

    def __init__(self, op: str, reqs: list[Any], finalize: Callable[[], Any] | None = None,
                 keep: Any = None, outputs: list[Any] | None = None, group: Any = None,
                 seq: int = 0, on_status: Callable[[Any], int] | None = None,
                 peer: int | None = None) -> None:
        self.op = op
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
        self._n = next(_issued)
        if reqs:
            pending[id(self)] = self
            _MEMORY.issued(self)

    def _memory(self) -> tuple[list[Any], list[Any]]:
        """(what MPI may read: the arrays of the kept arguments; what the Work writes: its
        outputs' memory) as numpy arrays, for :func:`ordered` (made on first need)."""
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
        self._done = True
        self._mem = None
        if not pending:
            _MEMORY.clear()
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
        self._done = True
        self._mem = None
        if not pending:
            _MEMORY.clear()
        if isinstance(e, MPI.Exception):
            e = mpi_error(self.op, e, self._keep)
        self._exc = e
        self._finalize = self._keep = None

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
            try:
                wait_requests(self._reqs, self.op, self.group, self.seq, self._keep, timeout,
                              status, self.peer)
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
                done = (self._reqs[0].Test(status) if status is not None or len(self._reqs) == 1
                        else MPI.Request.Testall(self._reqs))
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
