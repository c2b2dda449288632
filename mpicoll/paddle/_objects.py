"""Paddle's object collectives and object messages (pickled Python objects)."""

from __future__ import annotations

from typing import Any

import mpicoll as _m

from ._face import call
from ._groups import member, not_member_error, pg_of


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Append every rank's picklable ``obj`` to ``object_list``, in rank order (as Paddle).

    Raises:
        RuntimeError: this rank is not a member of ``group`` (as in Paddle).
    """
    pg = pg_of(group)
    name = "all_gather_object"
    if not member(pg):
        raise not_member_error(name)
    if not isinstance(object_list, list):
        raise TypeError(f"{name}: object_list must be a list: expected list, got "
                        f"{type(object_list).__name__}")
    gathered: list[Any] = [None] * _m.get_world_size(pg)
    _m.all_gather_object(gathered, obj, group=pg)
    object_list.extend(gathered)


def broadcast_object_list(object_list: list[Any], src: int, group: Any = None) -> None:
    """Replace ``object_list``'s entries with global rank ``src``'s, in place."""
    pg = pg_of(group)
    if not member(pg):
        return
    _m.broadcast_object_list(object_list, src=src, group=pg)


def scatter_object_list(out_object_list: list[Any], in_object_list: list[Any] | None = None,
                        src: int = 0, group: Any = None) -> None:
    """Give rank j ``in_object_list[j]`` of global rank ``src``.

    ``out_object_list`` is cleared and receives that one object, as in Paddle;
    ``in_object_list`` is read on ``src`` only.
    """
    pg = pg_of(group)
    if not member(pg):
        return
    name = "scatter_object_list"
    if not isinstance(out_object_list, list):
        raise TypeError(f"{name}: out_object_list must be a list: expected list, got "
                        f"{type(out_object_list).__name__}")
    box: list[Any] = [None]
    payload = in_object_list if src == _m.get_rank() else None
    call(name, _m.scatter_object_list, box, payload, src=src, group=pg)
    out_object_list.clear()
    out_object_list.append(box[0])


def _not_empty(name: str, object_list: Any) -> None:
    """Paddle refuses an empty (or None) object_list before anything else."""
    if object_list is None or len(object_list) == 0:
        raise ValueError(f"{name}: object_list cannot be None or empty: expected a list of "
                         f"one or more objects, got {object_list!r}")


def send_object_list(object_list: list[Any], dst: int | None = None, group: Any = None,
                     dst_in_group: int | None = None) -> None:
    """Send the picklable objects of ``object_list`` to global rank ``dst`` (or group
    rank ``dst_in_group``; neither: global rank 0, as in Paddle); the receiver's list
    must have the same length (:func:`mpicoll.send_object_list`)."""
    _not_empty("send_object_list", object_list)
    pg = pg_of(group)
    if not member(pg):
        return
    if dst is None and dst_in_group is None:
        dst = 0
    call("send_object_list", _m.send_object_list, object_list, dst, group=pg,
         group_dst=dst_in_group)


def recv_object_list(object_list: list[Any], src: int | None = None, group: Any = None,
                     src_in_group: int | None = None) -> int | None:
    """Receive objects from global rank ``src`` (or group rank ``src_in_group``; with
    neither, global rank 0, as in Paddle) into ``object_list``, in place; returns the
    sender's global rank (:func:`mpicoll.recv_object_list`)."""
    _not_empty("recv_object_list", object_list)
    pg = pg_of(group)
    if not member(pg):
        return None
    if src is None and src_in_group is None:
        src = 0
    return call("recv_object_list", _m.recv_object_list, object_list, src, group=pg,
                group_src=src_in_group)
