"""Paddle's point-to-point calls: send, recv, isend, irecv, P2POp, batch_isend_irecv."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mpicoll as _m

from ._face import task
from ._groups import member, pg_of

if TYPE_CHECKING:
    from .._work import Work


def send(tensor: Any, dst: int = 0, group: Any = None, sync_op: bool = True) -> Work | None:
    """Send ``tensor`` to global rank ``dst`` (:func:`mpicoll.send` / :func:`mpicoll.isend`)."""
    pg = pg_of(group)
    if not member(pg):
        return None
    if not sync_op:
        return _m.isend(tensor, dst=dst, group=pg)
    _m.send(tensor, dst=dst, group=pg)
    return task(None, "send", True, [tensor])


def recv(tensor: Any, src: int = 0, group: Any = None, sync_op: bool = True) -> Work | None:
    """Receive into ``tensor`` from global rank ``src`` (None: any source).

    Calls :func:`mpicoll.recv` / :func:`mpicoll.irecv`; the task's
    ``source_rank()`` gives the sender's global rank.
    """
    pg = pg_of(group)
    if not member(pg):
        return None
    if not sync_op:
        return _m.irecv(tensor, src=src, group=pg)
    source = _m.recv(tensor, src=src, group=pg)
    return task(None, "recv", True, [tensor], source)


def isend(tensor: Any, dst: int, group: Any = None) -> Work | None:
    """Start sending ``tensor`` to global rank ``dst``; returns a task (:func:`mpicoll.isend`)."""
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor: Any, src: int | None = None, group: Any = None) -> Work | None:
    """Start receiving into ``tensor`` from global rank ``src`` (None: any source)."""
    return recv(tensor, src, group, sync_op=False)


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`.

    Args:
        op: :func:`isend` or :func:`irecv` (of this module, mpicoll or Paddle).
        tensor: the tensor to send, or to receive into.
        peer: the peer's global rank.
        group: a :class:`Group` (or mpicoll ProcessGroup), None for the global group.
    """

    def __init__(self, op: Any, tensor: Any, peer: int, group: Any = None) -> None:
        kind = getattr(op, "__name__", None)
        if kind not in ("isend", "irecv"):
            raise ValueError(f"P2POp: op must be isend or irecv: expected "
                             f"paddle.distributed.isend or irecv, got {op!r}")
        self.op = isend if kind == "isend" else irecv
        self.tensor = tensor
        self.peer = peer
        self.group = group

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__}, peer={self.peer})"


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work] | None:
    """Post every send and receive of the list at once; returns their tasks.

    Calls :func:`mpicoll.batch_isend_irecv`. None on ranks outside the first
    operation's group, as in Paddle.
    """
    name = "batch_isend_irecv"
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise TypeError(f"{name}: p2p_op_list must be a list of P2POp: expected "
                        f"list[P2POp], got {p2p_op_list!r}")
    if p2p_op_list and not member(pg_of(p2p_op_list[0].group)):
        return None
    ops = [_m.P2POp(_m.isend if p.op is isend else _m.irecv, p.tensor, p.peer,
                    pg_of(p.group)) for p in p2p_op_list]
    return _m.batch_isend_irecv(ops)
