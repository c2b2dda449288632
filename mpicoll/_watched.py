"""The operations being waited for, as the monitor sees them: the wait's side of it.

Every wait of mpicoll's registers its operation here (name, group, sequence
number, buffers, deadline, thread) for as long as it blocks; the monitor thread
(``_monitor``) reads the registry and ends a job whose wait cannot finish. The hot
path takes no lock: dict stores, ``next()`` on a count and deque appends are atomic
under the GIL, and readers take snapshots.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from . import _recorder
from ._describe import summarise

HISTORY = 8  # completed operations kept for a report
_now = time.monotonic
_ident = threading.get_ident
_INF = float("inf")
# a completed operation's arguments in the history: not kept (they hold the caller's
# buffers, which must be freed when the caller drops them)
DROPPED = object()


class Op(NamedTuple):
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
        args = "" if self.args is DROPPED else f", {summarise(self.args)}"
        return f"{self.name}{seq} on {where}{args}"

    def root(self) -> int | None:
        """The group rank a rooted collective takes for its root: from the MPI call's
        arguments it waits in (their last: ``Bcast``'s, ``Reduce``'s, ``Gatherv``'s,
        ``Scatterv``'s), else from its flight record (a call the compiled core runs
        registers the caller's tensors; an async Work, the arguments with them); None for
        any other collective, or where neither says. For the monitor, not for a call."""
        if self.name not in _recorder.ROOTED or self.peer is not None:
            return None
        a = self.args
        if type(a) is tuple and a and type(a[-1]) is int:
            return a[-1]
        return _recorder.root_in(self.group, self.seq)


class Watched:
    """The registry: what is being waited for now, and the last completed operations."""

    def __init__(self) -> None:
        self._active: dict[int, tuple[Any, ...]] = {}
        self.done: collections.deque[tuple[tuple[Any, ...], float]] = collections.deque(
            maxlen=HISTORY)
        self._tokens = itertools.count(1)
        # called at the first wait (the monitor starts its thread there), then dropped
        self.on_first: Callable[[], None] | None = None

    def begin(self, name: str, group: Any, seq: int, args: Any, timeout: float | None,
              peer: int | None = None) -> int:
        token = next(self._tokens)
        start = _now()
        # (the entry beside its arguments: it moves to the history as it is, without them)
        self._active[token] = ((name, group, seq, start, start + timeout if timeout else _INF,
                                _ident(), peer), args)
        if self.on_first is not None:
            first, self.on_first = self.on_first, None
            first()
        return token

    def end(self, token: int) -> None:
        op = self._active.pop(token, None)
        if op is not None:
            self.done.append((op[0], _now()))

    def active(self) -> list[Op]:
        """The operations waiting now, oldest first."""
        return sorted((_op(*t) for t in list(self._active.values())),
                      key=lambda op: op.start)

    def history(self) -> list[str]:
        """The last completed operations, oldest first, each with how long it took."""
        return [f"{_op(op, DROPPED).describe()} ({end - op[3]:.3f} s)"
                for op, end in list(self.done)]


def _op(t: tuple[Any, ...], args: Any) -> Op:
    """An :class:`Op` of a stored entry (name, group, seq, start, deadline, thread, peer)."""
    return Op(t[0], t[1], t[2], args, *t[3:])


watched = Watched()
