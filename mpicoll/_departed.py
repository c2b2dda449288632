"""Ranks known to have left the job, and the operations they make impossible.

``left`` is filled by the departure channel (``_departures``), which takes in each
leaving rank's notice: for each group, how many collectives it issued and how many
messages it sent to and received from each peer. From it:

- a collective numbered ``k`` on a group whose departed member issued fewer than
  ``k`` cannot complete; nor a receive from a rank that sent nothing more, nor a
  send to a rank that received less than was sent;
- an operation about to start raises :class:`~mpicoll.errors.PeerExited` at once
  (:func:`check`, :func:`check_peer`: one truthiness test of ``left`` per call);
- one already waiting is reported by the monitor (:func:`blocked`).
"""

from __future__ import annotations

from typing import Any

from ._start import mpi
from .errors import PeerExited, torch_flavoured

# global rank -> its notice: {"status": int | None, "groups": {key: (seq, sent, received)}}
left: dict[int, dict[str, Any]] = {}


def status() -> int:
    """The exit status to end the job with: the first a departed rank announced, else 1."""
    codes = [n["status"] for n in left.values() if n.get("status")]
    return codes[0] if codes else 1


def _gone(g: int) -> str:
    status = left[g].get("status")
    return f"global rank {g} left the job" + (f" (exit status {status})" if status else "")


def blocked(op: str, pg: Any, seq: int, peer: int | None) -> str:
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
    peers = [p for p in range(len(pg.ranks)) if p != pg.my_rank] if peer == mpi().ANY_SOURCE \
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
    why = blocked(op, pg, seq, None)
    if why:
        raise torch_flavoured(PeerExited)(
            f"{op}: cannot run on group {pg.name!r} (global ranks {pg.ranks}): {why}", status())


def check_peer(op: str, pg: Any, peer: int) -> None:
    """Before posting a send or receive: raise if the peer has left for good."""
    if peer != mpi().ANY_SOURCE and pg.ranks[peer] in left:
        if "recv" in op:
            # whatever it sent before leaving may still be received
            why = blocked(op, pg, 0, peer)
        else:
            why = _gone(pg.ranks[peer])
        if why:
            raise torch_flavoured(PeerExited)(f"{op}: {why}", status())
