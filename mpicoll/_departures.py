"""The departure channel: a rank that leaves tells the others, so no peer waits for ever.

A rank whose process ends tells every other rank, on a private duplicate of
COMM_WORLD, how far it got: for each group, how many collectives it issued and
how many messages it sent to and received from that peer. Each peer records the
notice in ``_departed.left``, from which it knows exactly which operations can no
longer complete. As a source of the monitor (``_monitor``), this module takes in
notices every tick and ends the job when this rank waits on a rank that left; at a
timeout it asks the group's members how far they got (:func:`laggards`).

Every notice is acknowledged (by the peer's monitor thread, or by its own exit
sequence when it leaves too), and a leaving rank finalizes MPI only once every peer
it told has answered (at most ``LINGER`` seconds). A message that nobody receives
must not be left behind: over TCP (MPICH's OFI ``tcp`` provider, the netmod used
under ``srun --mpi=pmi2``) a process that closes its connection with unread data
resets it, and its peer, still finalizing, fails in ``MPI_Finalize`` with "OFI
poll failed (Input/output error)". Because a peer's notice to this rank is always
sent before its acknowledgement, and the exit loop receives with ``MPI_ANY_TAG``
(messages from one sender are matched in the order they were sent), once every
acknowledgement is in, nothing more is on its way to this rank.

Costs nothing per call; at exit, one small message to each peer and its answer.
Needs MPI_THREAD_MULTIPLE (mpi4py's default): the monitor thread receives the notices.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from . import _departed, _record_dump, _recorder
from ._departed import left
from ._monitor import monitor
from ._process_group import all_groups
from ._start import mpi
from ._watched import watched

TAG = 1  # an exit notice
QUERY, REPLY = 2, 3  # at a timeout: "how far are you on this group?" and the answer
ACK = 4  # "your exit notice arrived"
LINGER = 10.0  # seconds a leaving rank waits for its notices' acknowledgements
_ctrl: Any = None  # the private communicator, None when notices are off
_MPI: Any = None  # mpi4py.MPI, once the channel is set up
_announced = False
_set_up = False
# held while a thread takes in notices or sends this rank's own: a notice is recorded
# in ``left`` before it is acknowledged, so this rank never notifies a peer that it
# has acknowledged as gone (whose connection may be closed by then)
_lock = threading.Lock()


def setup(world: Any) -> None:
    """Create the channel and plug it into the monitor (collective over ``world``,
    COMM_WORLD, at the birth of the first world group)."""
    global _ctrl, _MPI, _set_up
    if _set_up:
        return
    _set_up = True
    MPI = mpi()
    if world.Get_size() == 1 or MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        return
    _MPI = MPI
    _ctrl = world.Dup()
    monitor.sources.append(poll)
    monitor.laggards = laggards
    monitor.dump_others = ask_to_dump
    monitor.start()


def _progress(pg: Any, group_rank: int) -> tuple[int, int, int]:
    return (pg.seq, pg.sent.get(group_rank, 0), pg.received.get(group_rank, 0))


def announce(status: int | None) -> None:
    """Tell every peer still here that this rank leaves (once, at exit), and wait
    until each has acknowledged it (at most ``LINGER`` seconds)."""
    global _announced
    if _ctrl is None or _announced:
        return
    MPI = _MPI
    me = _ctrl.Get_rank()
    with _lock:
        _announced = True  # from now on only this thread takes in messages
        _take_in_notices()
        groups = all_groups()
        reqs, owed = [], set()
        for peer in range(_ctrl.Get_size()):
            if peer == me or peer in left:
                continue
            mine = {}
            for pg in groups:
                idx = pg._index.get(peer)
                if idx is not None:
                    mine[pg.key] = _progress(pg, idx)
            try:
                reqs.append(_ctrl.isend({"status": status, "groups": mine}, dest=peer,
                                        tag=TAG))
                owed.add(peer)
            except MPI.Exception:
                pass
    status_ = MPI.Status()
    deadline = time.monotonic() + LINGER
    try:
        while owed and time.monotonic() < deadline:
            msg = _ctrl.improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status_)
            if msg is None:
                time.sleep(0.001)
                continue
            src, tag = status_.Get_source(), status_.Get_tag()
            body = msg.recv()
            if tag == ACK:
                owed.discard(src)
            elif tag == TAG:
                _record(src, body)
            elif tag == QUERY:
                _reply(body, src)
            # REPLY: the answer to a query of this rank's, too late to matter
        MPI.Request.Waitall(reqs)
    except MPI.Exception:
        return
    if owed:
        sys.stderr.write(f"mpicoll: rank {me}: no acknowledgement of this rank's exit from "
                         f"global rank(s) {sorted(owed)} within {LINGER:.0f} s; finalizing "
                         f"MPI without it\n")


def _take_in_notices() -> None:
    """Record the notices that have arrived and acknowledge each (caller holds _lock)."""
    status = _MPI.Status()
    while True:
        msg = _ctrl.improbe(_MPI.ANY_SOURCE, TAG, status)
        if msg is None:
            return
        _record(status.Get_source(), msg.recv())


def _record(src: int, notice: dict[str, Any]) -> None:
    """Note that ``src`` left, then acknowledge its notice (in this order: see _lock)."""
    left[src] = notice
    try:
        _ctrl.send(None, dest=src, tag=ACK)
    except _MPI.Exception:
        pass  # it is gone already


def poll(now: float) -> None:
    """Monitor tick: take in notices, then end the job if this rank waits on a leaver."""
    if _MPI.Is_finalized():  # the program finalized MPI itself
        return
    with _lock:
        if _announced:  # this rank is leaving: its exit sequence takes the messages
            return
        _answer_queries()
        _take_in_notices()
    if not left:
        return
    for op in watched.active():
        why = _departed.blocked(op.name, op.group, op.seq, op.peer)
        if why:
            monitor.abort(f"cannot finish {op.describe()} (waiting {now - op.start:.1f} s): "
                          f"{why}", _departed.status(), stacks=False, reason="departure")


def _answer_queries() -> None:
    """Tell peers whose operation timed out how many collectives this rank issued on
    the group they ask about (None if it has no such group)."""
    status = _MPI.Status()
    while True:
        msg = _ctrl.improbe(_MPI.ANY_SOURCE, QUERY, status)
        if msg is None:
            return
        _reply(msg.recv(), status.Get_source())


def _reply(asked: Any, src: int) -> None:
    """Answer a query: ``asked`` is None (a peer ends the job) or (a group's key, the
    sequence number the peer waits in, whether it is ending the job). The answer: None
    (no such group here), or (how many collectives this rank issued on the group, which
    collective it issued as that number or None where it does not know, the root it
    takes there where it waits in a rooted one now, else None)."""
    key, seq, ending = asked if asked is not None else (None, 0, True)
    pg = next((g for g in all_groups() if g.key == key), None) if key is not None else None
    # a peer timed out (asking about a group) or is ending the job (asking nothing):
    # this rank's flight record is written first (where MPICOLL_TRACE_DIR asks for it),
    # so that every rank's is there to read, not only those of the ranks that ended it
    if ending:
        try:
            _record_dump.dump("peer-timeout" if key is not None else "peer-abort")
        except Exception as e:
            sys.stderr.write(f"mpicoll: could not write the flight record: {e}\n")
    _ctrl.send(None if pg is None else (_issued(pg), _recorder.collective(pg, seq),
                                        _root_in(pg, seq)), dest=src, tag=REPLY)


def _issued(pg: Any) -> int:
    """How many collectives this rank has issued on ``pg``, counting the one it waits in
    now: a run of kept messages numbers the group once it has finished (the group's
    count is one behind while it waits)."""
    waits = [op.seq for op in watched.active() if op.group is pg and op.peer is None]
    return max([pg.seq, *waits])


def _root_in(pg: Any, seq: int) -> int | None:
    """The root this rank's collective #``seq`` on ``pg`` takes, where it waits in it
    now and knows it (:meth:`._watched.Op.root`); else None."""
    for op in watched.active():
        if op.group is pg and op.seq == seq and op.peer is None:
            return op.root()
    return None


def _ask(peers: list[int], key: Any, patience: float) -> dict[int, Any]:
    """Send QUERY ``key`` (None, or a group's key with a sequence number and whether the
    job ends: :func:`_reply`) to ``peers`` (global ranks); their answers, as many as
    arrive within ``patience`` seconds. A peer writes its flight record before it
    answers where the job ends."""
    for g in peers:
        _ctrl.send(key, dest=g, tag=QUERY)
    answers: dict[int, Any] = {}
    status = _MPI.Status()
    deadline = time.monotonic() + patience
    while len(answers) < len(peers) and time.monotonic() < deadline:
        _answer_queries()  # peers that time out too ask this rank at the same moment
        msg = _ctrl.improbe(_MPI.ANY_SOURCE, REPLY, status)
        if msg is None:
            time.sleep(0.01)
            continue
        answers[status.Get_source()] = msg.recv()
    return answers


def ask_to_dump(patience: float = 2.0) -> None:
    """Before this rank ends the job (a timeout of a message, an uncaught exception):
    where MPICOLL_TRACE_DIR asks for flight records, have every other rank write its own
    (their monitor threads answer even while their main threads are blocked in MPI), for
    at most ``patience`` seconds. MPI_Abort would end them before their exit dump."""
    if _ctrl is None or _record_dump.folder() is None:
        return
    me = _ctrl.Get_rank()
    _ask([g for g in range(_ctrl.Get_size()) if g != me and g not in left], None, patience)


def laggards(pg: Any, seq: int, name: str = "", patience: float = 2.0,
             ending: bool = True, root: int | None = None) -> str:
    """At a timeout of collective #``seq`` (``name``) on ``pg``: where each member is.

    Asks every other member's monitor thread (they answer even while their main thread
    is blocked in MPI) how many collectives it issued on ``pg``, and which one it issued
    as #``seq`` (from its flight recorder); waits ``patience`` seconds for the answers.
    Returns a sentence for the report, or '' when off. ``ending``: the job ends (each
    member writes its flight record first); False for a notice while the job goes on.
    ``root``: the group rank this rank's call takes for its root (a rooted collective),
    compared with the members' that wait in the same call: ranks that disagree on the
    root wait for each other's messages until the timeout, all of them "arrived".
    """
    if _ctrl is None or pg is None:
        return ""
    peers = [g for g in pg.ranks if g != _ctrl.Get_rank() and g not in left]
    answers = {g: a for g, a in _ask(peers, (pg.key, seq, ending), patience).items()
               if a is not None}
    behind = {g: n for g, (n, _, _) in answers.items() if n < seq}
    parts = []
    if behind:
        parts.append("not arrived: " + ", ".join(
            f"global rank {g} (issued {n} collective(s) on this group)"
            for g, n in sorted(behind.items())))
    # a member that issued #seq as another collective is in that one, not in this one
    elsewhere = {g: other for g, (n, other, _) in answers.items()
                 if n >= seq and other is not None and name and other != name}
    if elsewhere:
        parts.append("in another collective: " + ", ".join(
            f"global rank {g} issued {other} as #{seq}" for g, other in
            sorted(elsewhere.items())) + f" (this rank: {name} #{seq})")
    arrived = sorted(g for g, (n, _, _) in answers.items() if n >= seq and g not in elsewhere)
    # (a member that waits in the same call with another root)
    rooted = {g: theirs for g, (_, _, theirs) in answers.items() if g in arrived and
              root is not None and theirs is not None and theirs != root}
    if rooted:
        parts.append("arrived with another root: " + ", ".join(
            f"global rank {g} takes group rank {r}" for g, r in sorted(rooted.items())) +
            f" (this rank takes group rank {root}: every rank must pass the same root)")
        arrived = [g for g in arrived if g not in rooted]
    if arrived:
        parts.append(f"arrived: global ranks {arrived}")
    silent = sorted(set(peers) - set(answers))
    if silent:
        parts.append(f"no answer from global ranks {silent}")
    gone = sorted(g for g in pg.ranks if g in left)
    if gone:
        parts.append(f"left the job: global ranks {gone}")
    return "; ".join(parts)
