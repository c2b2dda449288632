"""Paddle's all-to-alls: the calls whose tensor order changed between Paddle 2.x and 3.x.

The private forms take the hint to add when the tensors look swapped, so the 3.x
face (here) and the 2.x face (:mod:`mpicoll.paddle.v2`) share them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mpicoll as _m

from ._collectives import _is_list, _likes
from ._face import HINT_3X, call, task
from ._groups import member, pg_of

if TYPE_CHECKING:
    from .._work import Work


def _alltoall_single(out_tensor: Any, in_tensor: Any, in_split_sizes: Any,
                     out_split_sizes: Any, group: Any, sync_op: bool, hint: str) -> Work | None:
    """alltoall_single for both conventions; ``hint`` names the other one."""
    pg = pg_of(group)
    if not member(pg):
        return None
    name = "alltoall_single"
    work = call(name, _m.all_to_all_single, out_tensor, in_tensor, out_split_sizes,
                in_split_sizes, group=pg, async_op=not sync_op, hint=hint)
    return task(work, name, sync_op, [out_tensor])


def _alltoall(out_tensor_list: Any, in_tensor_list: Any, group: Any, sync_op: bool,
              hint: str) -> Work | None:
    """alltoall for both conventions; ``hint`` names the other one."""
    pg = pg_of(group)
    if not member(pg):
        return None
    name = "alltoall"
    lists = _is_list(out_tensor_list), _is_list(in_tensor_list)
    if lists == (False, False):  # Paddle 3.x takes two tensors too: all_to_all_single
        return _alltoall_single(out_tensor_list, in_tensor_list, None, None, group, sync_op,
                                hint)
    if lists != (True, True):
        raise TypeError(f"{name}: out_tensor_list and in_tensor_list must be of one kind: "
                        "expected two lists of tensors (or two tensors), got "
                        f"{type(out_tensor_list).__name__} and {type(in_tensor_list).__name__}")
    if len(in_tensor_list) == 0:
        raise ValueError(f"{name}: in_tensor_list must not be empty: expected one tensor per "
                         f"rank ({_m.get_world_size(pg)}), got 0" + hint)
    fresh = None
    if len(out_tensor_list) == 0 and isinstance(out_tensor_list, list):
        fresh = _likes(name, list(in_tensor_list),
                       [f"in_tensor_list[{j}]" for j in range(len(in_tensor_list))])
    work = call(name, _m.all_to_all, out_tensor_list if fresh is None else fresh,
                in_tensor_list, group=pg, async_op=not sync_op, hint=hint)
    if fresh is not None:
        out_tensor_list.extend(fresh)
    return task(work, name, sync_op, list(out_tensor_list))


def alltoall(out_tensor_list: list[Any], in_tensor_list: list[Any], group: Any = None,
             sync_op: bool = True) -> Work | None:
    """Send ``in_tensor_list[j]`` to rank j; receive rank j's into ``out_tensor_list[j]``.

    Paddle 3.x order (output first); :func:`mpicoll.paddle.v2.alltoall` takes
    the 2.x order. Calls :func:`mpicoll.all_to_all` (sizes may differ per peer).

    Args:
        out_tensor_list: one tensor per rank, written in place; an empty list is
            filled with new tensors shaped like ``in_tensor_list``'s, as Paddle does.
        in_tensor_list: one tensor per rank.
        group: a :class:`Group` (or mpicoll ProcessGroup), None for the global group.
        sync_op: False returns a pending task.

    Returns:
        A task (completed when ``sync_op``); None on ranks outside ``group``.
    """
    return _alltoall(out_tensor_list, in_tensor_list, group, sync_op, HINT_3X)


def alltoall_single(out_tensor: Any, in_tensor: Any, in_split_sizes: list[int] | None = None,
                    out_split_sizes: list[int] | None = None, group: Any = None,
                    sync_op: bool = True) -> Work | None:
    """Split ``in_tensor`` along dim 0, send part j to rank j, gather into ``out_tensor``.

    Paddle 3.x order (output first); :func:`mpicoll.paddle.v2.alltoall_single`
    takes the 2.x order. Calls :func:`mpicoll.all_to_all_single`.

    Args:
        out_tensor: receives, in rank order, the parts every rank sent here.
        in_tensor: the tensor to scatter.
        in_split_sizes: rows of ``in_tensor`` sent to each rank (None: equal).
        out_split_sizes: rows of ``out_tensor`` received from each rank (None: equal).
        group: a :class:`Group` (or mpicoll ProcessGroup), None for the global group.
        sync_op: False returns a pending task.

    Returns:
        A task (completed when ``sync_op``); None on ranks outside ``group``.

    Raises:
        ValueError: split sizes contradict the shapes; the message adds that the
            tensors may be in Paddle 2.x order.
    """
    return _alltoall_single(out_tensor, in_tensor, in_split_sizes, out_split_sizes, group,
                            sync_op, HINT_3X)
