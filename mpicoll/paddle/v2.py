"""paddle.distributed's API with Paddle 2.x's order of alltoall's tensors.

``import mpicoll.paddle.v2 as dist`` is :mod:`mpicoll.paddle` except for two
functions, which take the input first, as Paddle 2.x did::

    alltoall_single(in_tensor, out_tensor, in_split_sizes=None, out_split_sizes=None,
                    group=None, sync_op=True)
    alltoall(in_tensor_list, out_tensor_list, group=None, sync_op=True)

Use it for code written against Paddle 2.x (such as the documentation example
of ``alltoall_single`` with ``dist.alltoall_single(data, output)``); use
:mod:`mpicoll.paddle` for Paddle 3.x code (``out_tensor, in_tensor``).
Keyword arguments mean what their names say in both modules. When split sizes
contradict the shapes, the error says that the tensors may be in 3.x order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# the 3.x API, then the two functions whose positional order differs are redefined
from . import *  # noqa: F403
from . import __all__ as __all__  # the same names
from ._alltoall import _alltoall, _alltoall_single
from ._face import HINT_2X

if TYPE_CHECKING:
    from .._work import Work


def alltoall(in_tensor_list: list[Any], out_tensor_list: list[Any], group: Any = None,
             sync_op: bool = True) -> Work | None:
    """Send ``in_tensor_list[j]`` to rank j; receive rank j's into ``out_tensor_list[j]``.

    Paddle 2.x order (input first); :func:`mpicoll.paddle.alltoall` takes the
    3.x order. Calls :func:`mpicoll.all_to_all` (sizes may differ per peer).

    Args:
        in_tensor_list: one tensor per rank.
        out_tensor_list: one tensor per rank, written in place; an empty list is
            filled with new tensors shaped like ``in_tensor_list``'s, as Paddle does.
        group: a :class:`~mpicoll.paddle.Group` (or mpicoll ProcessGroup), None
            for the global group.
        sync_op: False returns a pending task.

    Returns:
        A task (completed when ``sync_op``); None on ranks outside ``group``.
    """
    return _alltoall(out_tensor_list, in_tensor_list, group, sync_op, HINT_2X)


def alltoall_single(in_tensor: Any, out_tensor: Any, in_split_sizes: list[int] | None = None,
                    out_split_sizes: list[int] | None = None, group: Any = None,
                    sync_op: bool = True) -> Work | None:
    """Split ``in_tensor`` along dim 0, send part j to rank j, gather into ``out_tensor``.

    Paddle 2.x order (input first); :func:`mpicoll.paddle.alltoall_single`
    takes the 3.x order. Calls :func:`mpicoll.all_to_all_single`.

    Args:
        in_tensor: the tensor to scatter.
        out_tensor: receives, in rank order, the parts every rank sent here.
        in_split_sizes: rows of ``in_tensor`` sent to each rank (None: equal).
        out_split_sizes: rows of ``out_tensor`` received from each rank (None: equal).
        group: a :class:`~mpicoll.paddle.Group` (or mpicoll ProcessGroup), None
            for the global group.
        sync_op: False returns a pending task.

    Returns:
        A task (completed when ``sync_op``); None on ranks outside ``group``.

    Raises:
        ValueError: split sizes contradict the shapes; the message adds that the
            tensors may be in Paddle 3.x order.
    """
    return _alltoall_single(out_tensor, in_tensor, in_split_sizes, out_split_sizes, group,
                            sync_op, HINT_2X)
