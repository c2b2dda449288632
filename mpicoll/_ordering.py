"""Ordering against unfinished async calls: a call on memory that a pending Work still
uses completes that Work first, in issue order.

The pending Works' memory is kept as address ranges sorted by start. How a tensor's
host memory is viewed is the adapter's business: it registers :data:`host_view` here
(``mpicoll._adapter.buffer``), so this layer never imports the one above it.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._mpi import MPI
from ._pending import pending
from ._progress import engine

Work = Any  # a mpicoll._work.Work: duck-typed here

# tensor -> its host memory as a numpy view, its device memory as an address range
# (first byte, last byte + 1), or None (not a tensor); set by the adapter when it is
# imported, which is before any Work can exist
host_view: Callable[[Any], Any] = lambda x: None  # noqa: E731

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
    ordered_span(_span(view), writes)


def ordered_span(span: tuple[int, int] | None, writes: bool) -> None:
    """:func:`ordered` for a range of addresses: device memory (a CUDA tensor, ordered
    before it is staged through the host) is kept by its device addresses, which CUDA's
    unified addressing keeps apart from host memory."""
    if _local.searching or span is None:  # viewing a Work's outputs for the search: not again
        return
    _local.searching = True
    try:
        found = MEMORY.overlapping(span, writes)
    finally:
        _local.searching = False
    for w in found:  # (callbacks run here may issue calls: ordered again)
        _complete_first(w)


class _Local(threading.local):
    searching = False


_local = _Local()


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
                span = a if type(a) is tuple else _span(a)
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


MEMORY = _Memory()


def _complete_first(w: Work) -> None:
    """Wait for ``w`` ahead of a call on its memory; its error, if any, stays with it
    (its own wait raises it), the call goes on."""
    callback = engine.claim(w)  # a torch future's thread may be testing it: take it
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
    if isinstance(x, np.ndarray):
        into.append(x)
    elif isinstance(x, (list, tuple)) and depth:
        for y in x:
            _arrays(y, into, depth - 1)
    elif hasattr(x, "array") and hasattr(x, "view"):  # a Buffer
        if isinstance(x.view, np.ndarray):  # the caller's memory, and the array MPI uses
            into.append(x.view)
            into.append(x.array)
        else:  # device memory handed to a GPU-aware MPI: its address range
            span = host_view(x.view)
            if span is not None:
                into.append(span)


def memory_of(kept: Any, tensors: Any) -> list[Any]:
    """The memory of MPI arguments ``kept`` (arrays, message specs, Buffers) and of
    ``tensors`` (any framework's): numpy arrays over host memory, address ranges of
    device memory."""
    found: list[Any] = []
    _arrays(kept, found)
    found += [v for v in map(host_view, tensors) if v is not None]
    return found


