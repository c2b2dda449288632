"""The flight recorder: a ring of this rank's last operations, dumped when a job ends.

Every operation mpicoll issues (collectives, point-to-point, object collectives, on
every face) is noted here when it is handed to MPI, and again when its wait starts and
when it completes or fails. The ring keeps the last ``MPICOLL_TRACE_ENTRIES`` (2000 by
default, as torch's flight recorder; 0 turns recording off). With
``MPICOLL_TRACE_DIR=<dir>`` each rank writes its ring there when the job ends: at a
normal exit, when the watchdog ends it (timeout, departure, signal), when an uncaught
exception aborts it, and on demand (``mpicoll.dump_trace``, SIGUSR1): :mod:`._record_dump`.
``python -m mpicoll trace DIR`` reads the folder; so does torch's own analyzer.

The hot path takes no lock: a record is a list made and appended to a bounded deque
(atomic under the GIL), and the few fields set later are plain item stores. A record
never holds the caller's buffers: only counts, MPI datatypes and ops, which are small.
"""

from __future__ import annotations

import collections
import itertools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

now = _now = time.time_ns  # wall clock: ranks on several hosts are compared
_getframe = sys._getframe

# a record's fields, in order (a list: the wait and completion fields are set later)
ID, OP, GROUP, SEQ, PEER, META, FILE, LINE, ISSUED, WAIT, DONE, STATE = range(12)
ISSUED_STATE, WAITING, COMPLETED, FAILED = "issued", "waiting", "completed", "failed"

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_BENCH = os.path.join(_HERE, "bench") + os.sep
# frames that are not the user's call site: mpicoll's own, and torch.distributed's (its
# c10d calls the torch backend)
inside = _inside = {}  # (shared with the compiled core)
_SPECS = frozenset({list, tuple})  # a buffer specification's types


def _capacity() -> int:
    raw = os.environ.get("MPICOLL_TRACE_ENTRIES", "")
    if not raw:
        return 2000
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"environment variable MPICOLL_TRACE_ENTRIES={raw!r}: expected a "
                         "number of operations (0 turns recording off)") from None
    return max(n, 0)


capacity = _capacity()
ring: collections.deque[list[Any]] | None = (
    collections.deque(maxlen=capacity) if capacity else None)
# the records' numbers, one order for both rings: the compiled core's own (core.ids)
# replaces it once the core is in use, after the numbers it gave out
ids = _ids = itertools.count()
# what a record keeps of an owner's arguments (:func:`issued`): id -> (owner, kept)
_kept: dict[int, tuple[Any, tuple]] = {}
_KEPT = 256


# other rings of records (the compiled core's: mpicoll/_core_loader.py), registered
rings: list[Callable[[], list[list]]] = []


def records() -> list[list]:
    """Every record, oldest first: this ring's and the compiled core's, in the order they
    were issued, the last :data:`capacity` of them (copies: safe to read at leisure)."""
    if ring is None:
        return []
    for _ in range(100):
        try:
            mine = [list(r) for r in list(ring)]
            break
        except RuntimeError:  # deque mutated during iteration: try again
            continue
    else:
        mine = []
    if not rings:
        return mine
    for more in rings:
        mine += more()
    mine.sort(key=lambda r: r[ID])
    return mine[-capacity:]


# the collectives whose records name a root (the last int after their buffers)
ROOTED = frozenset({"broadcast", "reduce", "gather", "scatter", "gather_single",
                    "gather_into_tensor"})


def ints_of(r: list[Any]) -> tuple[Any, Any, tuple[int, ...]]:
    """A record's (send, recv, ints): its buffers' specifications and the int arguments
    after them (an int where the receive buffer would be, as in ``Ibcast``'s, is the
    first of them)."""
    send, recv, after = r[META] if r[META] is not None else (None, None, ())
    ints = tuple(a for a in after if type(a) is int)
    if type(recv) is int:
        recv, ints = None, (recv, *ints)
    return send, recv, ints


def root_of(r: list[Any]) -> int | None:
    """The group rank that a rooted collective's record names for its root; else None."""
    ints = ints_of(r)[2]
    return ints[-1] if ints and r[PEER] is None and r[OP] in ROOTED else None


def root_in(group: Any, seq: int) -> int | None:
    """The root that this rank's collective #``seq`` on ``group`` takes, as its record
    names it (:func:`root_of`); None where it is not recorded (or names none). Costs a
    copy of the records: for the watchdog, not for a call."""
    for r in reversed(records()):
        if r[GROUP] is group and r[SEQ] == seq and r[PEER] is None:
            return root_of(r)
    return None


def recording() -> bool:
    """Whether operations are recorded (``MPICOLL_TRACE_ENTRIES`` is not 0)."""
    return ring is not None


def _is_inside(filename: str) -> bool:
    """A frame of mpicoll itself (not of its benchmark, which calls it as a user does) or
    of torch.distributed (whose c10d calls the torch backend)."""
    return ((filename.startswith(_HERE) and not filename.startswith(_BENCH))
            or f"{os.sep}torch{os.sep}distributed{os.sep}" in filename)


is_inside = _is_inside  # (what the compiled core calls for a file it has not seen)


def issued(op: str, group: Any, seq: int, args: tuple, peer: int | None = None,
           depth: int = 3, owner: Any = None) -> list | None:
    """Note an operation just handed to MPI (``args``: the MPI call's, buffers dropped);
    returns its record, for :func:`waiting` and :func:`done`, or None when not recording.

    The call site is the first frame outside mpicoll (and torch.distributed), looked for
    from ``depth`` frames up: the shortest way from a user's call to here is the public
    function, the issuing function, then this one (3); a persistent collective's start
    is called by the user itself (2). Frames are made only from there up (each frame
    made costs ~0.1 us).

    ``owner``: a small object made with the arguments' counts and datatypes, never used
    with others, that holds no buffer (a kept entry's statuses): what this function
    keeps of ``args`` is then worked out once per owner (0.1-0.2 us a call), the owner
    held (so that its id is not another's) until 256 are."""
    if ring is None:
        return None
    try:  # (the common case: the frame ``depth`` up is the user's; else walk on up)
        f = _getframe(depth)
        code = f.f_code
        inside = _inside.get(code.co_filename)
        while inside is not False:
            if inside is None:
                inside = _inside[code.co_filename] = _is_inside(code.co_filename)
                continue
            f = f.f_back
            code = f.f_code  # (past the top: AttributeError)
            inside = _inside.get(code.co_filename)
        lasti = f.f_lasti
    except (ValueError, AttributeError):  # (a shallower stack than any face makes)
        code, lasti = None, -1
    meta = kept(args, owner)
    rec = [next(_ids), op, group, seq, peer, meta, code, lasti, _now(), None,
           None, ISSUED_STATE]
    ring.append(rec)
    return rec


def kept(args: tuple, owner: Any = None) -> tuple:
    """What a record keeps of an MPI call's ``args``: a buffer specification (args[0],
    args[1]) by its count and datatype, what follows the buffers (roots, ops, counts) as
    it is. With an ``owner`` (:func:`issued`'s), worked out once per owner."""
    m = _kept.get(id(owner)) if owner is not None else None
    if m is not None and m[0] is owner:
        return m[1]
    if len(args) > 1:
        s, r = args[0], args[1]
    else:  # (Ibarrier's)
        s, r = args[0] if args else None, None
    if type(s) in _SPECS:
        s = s[1:] if len(s) > 2 else (getattr(s[0], "size", None), s[1])
    elif type(s) is not int:
        s = None
    if type(r) in _SPECS:
        r = r[1:] if len(r) > 2 else (getattr(r[0], "size", None), r[1])
    elif type(r) is not int:
        r = None
    meta = (s, r, args[2:])
    if owner is not None:
        if len(_kept) >= _KEPT:  # (the oldest goes: a new owner's stays)
            del _kept[next(iter(_kept))]
        _kept[id(owner)] = (owner, meta)
    return meta


def waiting(rec: list | None) -> None:
    """The operation's wait starts (it was not complete at once)."""
    if rec is not None and rec[WAIT] is None:
        rec[WAIT] = _now()


def done(rec: list | None, ok: bool = True) -> None:
    """The operation completed (``ok``) or failed. (Its state is read off the times and
    this mark: :func:`state`.)"""
    if rec is not None:
        rec[DONE] = _now()
        if not ok:
            rec[STATE] = FAILED


def collective(group: Any, seq: int) -> str | None:
    """The collective this rank issued as #``seq`` on ``group`` (from the ring, newest
    first), or None where it does not know (not recording, or no longer in the ring)."""
    if ring is None:
        return None
    for r in reversed(records()):
        if r[GROUP] is group and r[SEQ] == seq and r[PEER] is None:
            return r[OP]
    return None


def last_completed(n: int) -> list[str] | None:
    """The last ``n`` operations that completed (or failed), in the order they did, each
    described with how long it took: every operation of this rank's, those a quick path
    finished without a wait included (for the watchdog's report); None when not
    recording."""
    if ring is None:
        return None
    ended = sorted((r for r in records() if r[DONE] is not None), key=lambda r: r[DONE])[-n:]
    return [_describe(r) for r in ended]


def _describe(r: list) -> str:
    g = r[GROUP]
    where = (f"group {getattr(g, 'name', '?')!r} (global ranks {getattr(g, 'ranks', '?')})"
             if g is not None else "no group")
    peer = f", peer {r[PEER]}" if r[PEER] is not None else ""
    seq = f" #{r[SEQ]}" if r[SEQ] else ""
    failed = ", failed" if r[STATE] is FAILED else ""
    return f"{r[OP]}{seq} on {where}{peer} ({(r[DONE] - r[ISSUED]) / 1e9:.6f} s{failed})"


def state(rec: list) -> str:
    """A record's state: failed, completed, waiting or issued."""
    if rec[STATE] is FAILED:
        return FAILED
    return COMPLETED if rec[DONE] is not None else WAITING if rec[WAIT] is not None else (
        ISSUED_STATE)


