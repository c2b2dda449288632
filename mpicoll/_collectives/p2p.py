"""[2] send, recv, isend, irecv, P2POp, batch_isend_irecv -> Send / Recv / Isend / Irecv."""

from __future__ import annotations

import time
from typing import Any

from mpi4py import MPI

from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._group import ProcessGroup, resolve
from .._watchdog import timeout_for, watchdog
from .._work import Work
from ..errors import CollectiveTimeout, MPIError
from ._validate import root as _root


def _peer(pg: ProcessGroup, op: str, peer: Any, group_peer: Any, pname: str,
          gname: str) -> int:
    r = _root(pg, op, peer, group_peer, pname, gname)
    if r == pg._rank:
        raise ValueError(f"{op}: {pname} must differ from this rank ({pg.ranks[r]}): "
                         "sending to oneself would deadlock")
    return r


def _tag(op: str, tag: Any) -> int:
    if isinstance(tag, bool) or not isinstance(tag, int):
        raise TypeError(f"{op}: tag must be an int, got {tag!r}")
    ub = int(MPI.COMM_WORLD.Get_attr(MPI.TAG_UB)) - 1  # top two tags: mpicoll's own
    if not 0 <= tag < ub:
        raise ValueError(f"{op}: tag must be in [0, {ub}), got {tag}")
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
        rank = _peer(pg, op, peer, group_peer, pname, gname)
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
        raise MPIError(op, str(e)) from e


def _post_send(op: str, tensor: Any, dst: Any, group: Any, tag: int,
               group_dst: Any) -> tuple[Any, Any] | None:
    prepared = _prepare(op, tensor, dst, group, tag, group_dst, receive=False)
    if prepared is None:
        return None
    return _post(op, prepared, False), prepared[2]


def _post_recv(op: str, tensor: Any, src: Any, group: Any, tag: int,
               group_src: Any) -> tuple[Any, Any, ProcessGroup] | None:
    prepared = _prepare(op, tensor, src, group, tag, group_src, receive=True)
    if prepared is None:
        return None
    return _post(op, prepared, True), prepared[2], prepared[0]


def isend(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending ``tensor`` to global rank ``dst`` (or ``group_dst``); returns a Work."""
    posted = _post_send("isend", tensor, dst, group, tag, group_dst)
    if posted is None:
        return None
    work = Work("isend", [posted[0]], None, keep=posted[1], outputs=[tensor])
    work.group = resolve(group, "isend")
    return work


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into ``tensor`` from ``src`` (None: any source); returns a Work.

    ``work.source_rank()`` gives the sender's global rank after completion.
    """
    posted = _post_recv("irecv", tensor, src, group, tag, group_src)
    if posted is None:
        return None
    return _recv(posted, tensor, "irecv")


def _recv(posted: tuple[Any, Any, ProcessGroup], tensor: Any, op: str) -> Work:
    req, buf, pg = posted
    work = _StatusWork(op, [req], None, keep=buf, outputs=[tensor])
    work._buf, work._pg = buf, pg
    return work


def _deadline(timeout: Any) -> float:
    secs = getattr(timeout, "total_seconds", lambda: timeout)()
    return time.monotonic() + float(secs)


class _StatusWork(Work):
    """A receive's Work: completion commits the buffer and records the source."""

    __slots__ = ("_buf", "_pg")

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            status = MPI.Status()
            try:
                if timeout is None:
                    limit = timeout_for(self._pg)
                    token = watchdog.begin(self.op, self._pg, 0, self._keep, limit) if limit \
                        else None
                    try:
                        self._reqs[0].Wait(status)
                    finally:
                        if token is not None:
                            watchdog.end(token)
                else:
                    deadline = _deadline(timeout)
                    while not self._reqs[0].Test(status):
                        if time.monotonic() > deadline:
                            raise CollectiveTimeout(f"{self.op}: not completed within "
                                                    f"{timeout} s")
                        time.sleep(1e-4)
            except MPI.Exception as e:
                self._fail(e)
            else:
                self._finish(status)
        if self._exc is not None:
            raise self._exc
        return True

    def is_completed(self) -> bool:
        if not self._done:
            status = MPI.Status()
            if not self._reqs[0].Test(status):
                return False
            self._finish(status)
        return True

    def _finish(self, status: Any) -> None:
        self._done = True
        self._source = self._pg.ranks[status.Get_source()]
        try:
            self._buf.commit()
        except BaseException as e:
            self._exc = e
        self._keep = None


def send(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to global rank ``dst`` (or ``group_dst``); blocks until sent."""
    posted = _post_send("send", tensor, dst, group, tag, group_dst)
    if posted is not None:
        work = Work("send", [posted[0]], keep=posted[1])
        work.group = resolve(group, "send")
        work.wait()


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from ``src`` (None: any source).

    Returns:
        The sender's global rank (-1 on a non-member rank).
    """
    posted = _post_recv("recv", tensor, src, group, tag, group_src)
    if posted is None:
        return -1
    work = _recv(posted, tensor, "recv")
    work.wait()
    return work._source


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
            raise ValueError(f"P2POp: op must be isend or irecv, got {op!r}")
        if peer is None and group_peer is None:
            raise ValueError("P2POp: peer or group_peer must be given")
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
        raise TypeError("batch_isend_irecv: p2p_op_list must be a list of P2POp")
    if not p2p_op_list:
        raise ValueError("batch_isend_irecv: p2p_op_list is empty")
    name = "batch_isend_irecv"
    # Check every operation before posting any, so bad input sends nothing.
    prepared = [(p, _prepare(name, p.tensor, p.peer, p.group, p.tag, p.group_peer,
                             receive=p.op is irecv)) for p in p2p_op_list]
    works: list[Work] = []
    for p, prep in prepared:
        if prep is None:
            continue
        receive = p.op is irecv
        req = _post(name, prep, receive)
        if receive:
            w = _StatusWork("irecv", [req], None, keep=prep[2], outputs=[p.tensor])
            w._buf, w._pg = prep[2], prep[0]
            works.append(w)
        else:
            works.append(Work("isend", [req], None, keep=prep[2], outputs=[p.tensor]))
    return works
