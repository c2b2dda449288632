"""[2] send, recv, isend, irecv, P2POp, batch_isend_irecv -> Send / Recv / Isend / Irecv."""

from __future__ import annotations

from typing import Any

from .. import _departed, _tags
from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._describe import mpi_error
from .._mpi import MPI
from .._process_group import ProcessGroup, resolve
from .._recorder import done, issued
from .._work import Work
from ..errors import ArgumentTypeError as _Type
from ..errors import ArgumentValueError as _Value
from . import _validate


def _tag(op: str, tag: Any) -> int:
    if isinstance(tag, bool) or not isinstance(tag, int):
        raise _Type(op, "type", "{arg} must be an int, got {got!r}", {"arg": "tag"}, got=tag)
    ub = _tags.user_limit()  # the tags above: mpicoll's own
    if not 0 <= tag < ub:
        raise _Value(op, "range", "{arg} must be in [0, {expected}), got {got}", {"arg": "tag"},
                     expected=ub, got=tag)
    return tag


def _prepare(op: str, tensor: Any, peer: Any, group: Any, tag: Any, group_peer: Any,
             *, receive: bool) -> tuple[ProcessGroup, int, Any, int] | None:
    """All local checks of one send or receive; None on a non-member rank."""
    pg = resolve(group, op)
    if pg is None:
        return None
    pname, gname = ("src", "group_src") if receive else ("dst", "group_dst")
    if receive and peer is None and group_peer is None:
        rank = MPI.ANY_SOURCE
    else:
        rank = _validate.peer(pg, op, peer, group_peer, pname, gname)
    buf = as_buffer(tensor, writable=receive, op=op, name="tensor")
    return pg, rank, buf, _tag(op, tag)


def _post(op: str, prepared: tuple[ProcessGroup, int, Any, int], receive: bool) -> Any:
    pg, rank, buf, tag = prepared
    arr = buf.array
    try:
        if receive:
            return pg.comm.Irecv([arr, mpi_datatype(arr.dtype)], source=rank, tag=tag)
        return pg.comm.Isend([arr, mpi_datatype(arr.dtype)], dest=rank, tag=tag)
    except MPI.Exception as e:
        raise mpi_error(op, e) from e


def isend(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending ``tensor`` to global rank ``dst`` (or ``group_dst``); returns a Work."""
    prepared = _prepare("isend", tensor, dst, group, tag, group_dst, receive=False)
    return None if prepared is None else _send_work("isend", prepared, tensor)


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into ``tensor`` from ``src`` (None: any source); returns a Work.

    ``work.source_rank()`` gives the sender's global rank after completion.
    """
    prepared = _prepare("irecv", tensor, src, group, tag, group_src, receive=True)
    return None if prepared is None else _recv_work("irecv", prepared, tensor)


def _send_work(op: str, prepared: tuple[ProcessGroup, int, Any, int], tensor: Any) -> Work:
    pg, rank = prepared[0], prepared[1]
    if _departed.left:
        _departed.check_peer(op, pg, rank)
    arr = prepared[2].array
    rec = issued(op, pg, 0, ((None, arr.size, arr.dtype), None), rank)
    try:
        req = _post(op, prepared, False)
    except BaseException:
        done(rec, False)
        raise
    pg.sent[rank] = pg.sent.get(rank, 0) + 1
    return Work(op, [req], keep=prepared[2], outputs=[tensor], group=pg, peer=rank, rec=rec)


def _recv_work(op: str, prepared: tuple[ProcessGroup, int, Any, int], tensor: Any) -> Work:
    pg, rank, buf = prepared[0], prepared[1], prepared[2]
    if _departed.left:
        _departed.check_peer(op, pg, rank)
    arr = buf.array
    rec = issued(op, pg, 0, (None, (None, arr.size, arr.dtype)), rank)
    try:
        req = _post(op, prepared, True)
    except BaseException:
        done(rec, False)
        raise

    def arrived(status: Any) -> int:
        src = status.Get_source()
        pg.received[src] = pg.received.get(src, 0) + 1
        buf.commit()
        return pg.ranks[src]

    return Work(op, [req], keep=buf, outputs=[tensor], group=pg, on_status=arrived, peer=rank,
                rec=rec)


def send(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to global rank ``dst`` (or ``group_dst``); blocks until sent."""
    prepared = _prepare("send", tensor, dst, group, tag, group_dst, receive=False)
    if prepared is not None:
        _send_work("send", prepared, tensor).wait()


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from ``src`` (None: any source).

    Returns:
        The sender's global rank (-1 on a non-member rank).
    """
    prepared = _prepare("recv", tensor, src, group, tag, group_src, receive=True)
    if prepared is None:
        return -1
    return _recv_work("recv", prepared, tensor).source_rank()


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`.

    Args:
        op: :func:`isend` or :func:`irecv` (torch.distributed's work too).
        tensor: the tensor to send or receive into.
        peer: the peer's global rank (or ``group_peer``).
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        tag: message tag.
        group_peer: the peer's rank in ``group``.
    """

    def __init__(self, op: Any, tensor: Any, peer: int | None = None, group: Any = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        kind = getattr(op, "__name__", None)
        if kind not in ("isend", "irecv"):
            raise _Value("P2POp", "type", "{arg} must be isend or irecv, got {got!r}",
                         {"arg": "op"}, got=op)
        if peer is None and group_peer is None:
            raise _Value("P2POp", "missing", "{p} or {g} must be given",
                         {"p": "peer", "g": "group_peer"})
        self.op = isend if kind == "isend" else irecv
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__}, peer={self.peer}, tag={self.tag})"


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Post every send and receive of the list at once; returns their Works."""
    if not isinstance(p2p_op_list, (list, tuple)) or not all(
            isinstance(p, P2POp) for p in p2p_op_list):
        raise _Type("batch_isend_irecv", "type", "{arg} must be a list of P2POp",
                    {"arg": "p2p_op_list"})
    if not p2p_op_list:
        raise _Value("batch_isend_irecv", "length", "{arg} is empty", {"arg": "p2p_op_list"})
    name = "batch_isend_irecv"
    # Check every operation before posting any, so bad input sends nothing.
    prepared = [(p, _prepare(name, p.tensor, p.peer, p.group, p.tag, p.group_peer,
                             receive=p.op is irecv)) for p in p2p_op_list]
    return [(_recv_work if p.op is irecv else _send_work)(
        "irecv" if p.op is irecv else "isend", prep, p.tensor)
        for p, prep in prepared if prep is not None]
