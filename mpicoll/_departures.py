"""Ranks that leave: a notice at exit, so no peer waits for ever on a rank that is gone.

A rank whose process ends tells every other rank, on a private duplicate of
COMM_WORLD, how far it got: for each group, how many collectives it issued and
how many messages it sent to and received from that peer. A peer then knows
exactly whether an operation can still complete:

- a collective numbered ``k`` on a group whose departed member issued fewer than
  ``k`` cannot; nor a receive from a rank that sent nothing more, nor a send to a
  rank that received less than was sent;
- an operation about to start raises :class:`~mpicoll.errors.PeerExited` at once;
- one already waiting (inside MPI, where no exception can reach) is reported
  by the monitor thread, which then ends the job.

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

Costs nothing per call (one truthiness test of ``left``); at exit, one small
message to each peer and its answer. Needs MPI_THREAD_MULTIPLE (mpi4py's default):
the monitor thread receives the notices.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from .errors import PeerExited, torch_flavoured

TAG = 1  # an exit notice
QUERY, REPLY = 2, 3  # at a timeout: "how far are you on this group?" and the answer
ACK = 4  # "your exit notice arrived"
LINGER = 10.0  # seconds a leaving rank waits for its notices' acknowledgements
# global rank -> its notice: {"status": int | None, "groups": {key: (seq, sent, received)}}
left: dict[int, dict[str, Any]] = {}
_ctrl: Any = None  # the private communicator, None when notices are off
_announced = False
_set_up = False
# held while a thread takes in notices or sends this rank's own: a notice is recorded
# in ``left`` before it is acknowledged, so this rank never notifies a peer that it
# has acknowledged as gone (whose connection may be closed by then)
_lock = threading.Lock()


def setup(MPI: Any) -> None:
    """Create the notice channel (collective over COMM_WORLD, at the default group's birth)."""
    global _ctrl, _set_up
    if _set_up:
        return
    _set_up = True
    world = MPI.COMM_WORLD
    if world.Get_size() == 1 or MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        return
    _ctrl = world.Dup()
    from ._watchdog import watchdog

    watchdog.checks.append(poll)
    watchdog.start()


def _progress(pg: Any, group_rank: int) -> tuple[int, int, int]:
    return (pg.seq, pg.sent.get(group_rank, 0), pg.received.get(group_rank, 0))


def announce(status: int | None) -> None:
    """Tell every peer still here that this rank leaves (once, at exit), and wait
    until each has acknowledged it (at most ``LINGER`` seconds)."""
    global _announced
    if _ctrl is None or _announced:
        return
    from ._group import all_groups
    from ._mpi import MPI

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
    from ._mpi import MPI

    status = MPI.Status()
    while True:
        msg = _ctrl.improbe(MPI.ANY_SOURCE, TAG, status)
        if msg is None:
            return
        _record(status.Get_source(), msg.recv())


def _record(src: int, notice: dict[str, Any]) -> None:
    """Note that ``src`` left, then acknowledge its notice (in this order: see _lock)."""
    from ._mpi import MPI

    left[src] = notice
    try:
        _ctrl.send(None, dest=src, tag=ACK)
    except MPI.Exception:
        pass  # it is gone already


def poll(now: float) -> None:
    """Monitor tick: take in notices, then end the job if this rank waits on a leaver."""
    from ._mpi import MPI

    if MPI.Is_finalized():  # the program finalized MPI itself
        return
    with _lock:
        if _announced:  # this rank is leaving: its exit sequence takes the messages
            return
        _answer_queries()
        _take_in_notices()
    if not left:
        return
    from ._watchdog import watchdog

    for op in watchdog.active():
        why = _blocked(op.name, op.group, op.seq, op.peer)
        if why:
            watchdog.abort(f"cannot finish {op.describe()} (waiting {now - op.start:.1f} s): "
                           f"{why}", _status(), stacks=False)


def _answer_queries() -> None:
    """Tell peers whose operation timed out how many collectives this rank issued on
    the group they ask about (None if it has no such group)."""
    from ._mpi import MPI

    status = MPI.Status()
    while True:
        msg = _ctrl.improbe(MPI.ANY_SOURCE, QUERY, status)
        if msg is None:
            return
        _reply(msg.recv(), status.Get_source())


def _reply(asked: Any, src: int) -> None:
    from ._group import all_groups

    pg = next((g for g in all_groups() if g.key == asked), None)
    _ctrl.send(None if pg is None else pg.seq, dest=src, tag=REPLY)


def laggards(pg: Any, seq: int, patience: float = 2.0) -> str:
    """At a timeout of collective #``seq`` on ``pg``: which members had not arrived.

    Asks every other member's monitor thread (they answer even while their main thread
    is blocked in MPI) how many collectives it issued on ``pg``; waits ``patience``
    seconds for the answers. Returns a sentence for the report, or '' when off.
    """
    if _ctrl is None or pg is None:
        return ""
    import time

    from ._mpi import MPI

    peers = [g for g in pg.ranks if g != _ctrl.Get_rank() and g not in left]
    for g in peers:
        _ctrl.send(pg.key, dest=g, tag=QUERY)
    answers: dict[int, Any] = {}
    status = MPI.Status()
    deadline = time.monotonic() + patience
    while len(answers) < len(peers) and time.monotonic() < deadline:
        _answer_queries()  # peers that time out too ask this rank at the same moment
        msg = _ctrl.improbe(MPI.ANY_SOURCE, REPLY, status)
        if msg is None:
            time.sleep(0.01)
            continue
        answers[status.Get_source()] = msg.recv()
    behind = {g: n for g, n in answers.items() if n is not None and n < seq}
    parts = []
    if behind:
        parts.append("not arrived: " + ", ".join(
            f"global rank {g} (issued {n} collective(s) on this group)"
            for g, n in sorted(behind.items())))
    arrived = sorted(g for g, n in answers.items() if n is not None and n >= seq)
    if arrived:
        parts.append(f"arrived: global ranks {arrived}")
    silent = sorted(set(peers) - set(answers))
    if silent:
        parts.append(f"no answer from global ranks {silent}")
    gone = sorted(g for g in pg.ranks if g in left)
    if gone:
        parts.append(f"left the job: global ranks {gone}")
    return "; ".join(parts)


def _status() -> int:
    codes = [n["status"] for n in left.values() if n.get("status")]
    return codes[0] if codes else 1


def _gone(g: int) -> str:
    status = left[g].get("status")
    return f"global rank {g} left the job" + (f" (exit status {status})" if status else "")


def _blocked(op: str, pg: Any, seq: int, peer: int | None) -> str:
    """Why ``op`` on ``pg`` cannot complete given the departures, or ''."""
    if pg is None:
        return ""
    k = pg.key
    if peer is None:
        for g in pg.ranks:
            notice = left.get(g)
            if notice is not None:
                done = notice["groups"].get(k, (0, 0, 0))[0]
                if done < seq:
                    return (f"{_gone(g)} after {done} collective(s) on this group; this is "
                            f"collective #{seq}")
        return ""
    from ._mpi import MPI

    peers = [p for p in range(len(pg.ranks)) if p != pg.my_rank] if peer == MPI.ANY_SOURCE \
        else [peer]
    why = []
    for p in peers:
        notice = left.get(pg.ranks[p])
        if notice is None:
            return ""  # a live sender (or receiver) may still come
        _, sent_to_me, received_from_me = notice["groups"].get(k, (0, 0, 0))
        if "recv" in op:
            if pg.received.get(p, 0) < sent_to_me:
                return ""  # its messages are still on their way
            why.append(f"{_gone(pg.ranks[p])} after sending this rank "
                       f"{sent_to_me} message(s), all received")
        else:
            if received_from_me >= pg.sent.get(p, 0):
                return ""
            why.append(f"{_gone(pg.ranks[p])} after receiving "
                       f"{received_from_me} of the {pg.sent.get(p, 0)} message(s) sent to it")
    return "; ".join(why)


def check(op: str, pg: Any, seq: int) -> None:
    """Before issuing collective #``seq`` on ``pg``: raise if a member has left too early."""
    why = _blocked(op, pg, seq, None)
    if why:
        raise torch_flavoured(PeerExited)(
            f"{op}: cannot run on group {pg.name!r} (global ranks {pg.ranks}): {why}", _status())


def check_peer(op: str, pg: Any, peer: int) -> None:
    """Before posting a send or receive: raise if the peer has left for good."""
    from ._mpi import MPI

    if peer != MPI.ANY_SOURCE and pg.ranks[peer] in left:
        if "recv" in op:
            # whatever it sent before leaving may still be received
            why = _blocked(op, pg, 0, peer)
        else:
            why = _gone(pg.ranks[peer])
        if why:
            raise torch_flavoured(PeerExited)(f"{op}: {why}", _status())
