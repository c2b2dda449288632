"""paddle.distributed.stream: the collectives with ``use_calc_stream``.

``import mpicoll.paddle.stream as stream`` gives the names, parameters and
defaults of Paddle 3.x's ``paddle.distributed.stream``. MPI has no CUDA
streams to choose between, so ``use_calc_stream`` changes nothing but what
Paddle checks: it may be True only with ``sync_op=True`` (RuntimeError
otherwise, as in Paddle). Each call is the one of :mod:`mpicoll.paddle` with
the same name; ``tensor_or_tensor_list`` takes a list or one tensor (split or
concatenated along axis 0), as Paddle does.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import mpicoll as _m

from . import _alltoall, _p2p
from . import _collectives as _c
from ._face import ReduceOp

if TYPE_CHECKING:
    from .._work import Work

__all__ = ["all_gather", "all_reduce", "alltoall", "alltoall_single", "broadcast", "gather",
           "recv", "reduce", "reduce_scatter", "scatter", "send"]


def _check(name: str, sync_op: bool, use_calc_stream: bool) -> None:
    if use_calc_stream and not sync_op:
        raise RuntimeError(f"{name}: use_calc_stream can only be true in sync op behavior: "
                           "expected sync_op=True with use_calc_stream=True, got sync_op=False")


def all_gather(tensor_or_tensor_list: Any, tensor: Any, group: Any = None,
               sync_op: bool = True, use_calc_stream: bool = False) -> Work | None:
    """Gather every rank's ``tensor`` into a list or one tensor (concatenated on axis 0)."""
    _check("all_gather", sync_op, use_calc_stream)
    return _c.all_gather(tensor_or_tensor_list, tensor, group, sync_op)


def all_reduce(tensor: Any, op: int = ReduceOp.SUM, group: Any = None, sync_op: bool = True,
               use_calc_stream: bool = False) -> Work | None:
    """Reduce ``tensor`` across ``group``, in place on every rank."""
    _check("all_reduce", sync_op, use_calc_stream)
    return _c.all_reduce(tensor, op, group, sync_op)


def alltoall(out_tensor_or_tensor_list: Any, in_tensor_or_tensor_list: Any, group: Any = None,
             sync_op: bool = True, use_calc_stream: bool = False) -> Work | None:
    """All-to-all of two lists (one tensor per rank) or two tensors (split on axis 0)."""
    _check("alltoall", sync_op, use_calc_stream)
    return _alltoall.alltoall(out_tensor_or_tensor_list, in_tensor_or_tensor_list, group, sync_op)


def alltoall_single(out_tensor: Any, in_tensor: Any, out_split_sizes: list[int] | None = None,
                    in_split_sizes: list[int] | None = None, group: Any = None,
                    sync_op: bool = True, use_calc_stream: bool = False) -> Work | None:
    """All-to-all of rows; note the stream form's order: ``out_split_sizes`` first."""
    _check("alltoall_single", sync_op, use_calc_stream)
    return _alltoall.alltoall_single(out_tensor, in_tensor, in_split_sizes, out_split_sizes, group,
                              sync_op)


def broadcast(tensor: Any, src: int, group: Any = None, sync_op: bool = True,
              use_calc_stream: bool = False) -> Work | None:
    """Copy ``tensor`` from global rank ``src`` to every rank."""
    _check("broadcast", sync_op, use_calc_stream)
    return _c.broadcast(tensor, src, group, sync_op)


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int = 0, group: Any = None,
           sync_op: bool = True, use_calc_stream: bool = False) -> Work | None:
    """Gather every rank's ``tensor`` into ``gather_list`` on global rank ``dst``."""
    _check("gather", sync_op, use_calc_stream)
    return _c.gather(tensor, gather_list, dst, group, sync_op)


def reduce(tensor: Any, dst: int = 0, op: int = ReduceOp.SUM, group: Any = None,
           sync_op: bool = True, use_calc_stream: bool = False) -> Work | None:
    """Reduce ``tensor`` across ``group`` into global rank ``dst``'s."""
    _check("reduce", sync_op, use_calc_stream)
    return _c.reduce(tensor, dst, op, group, sync_op)


def reduce_scatter(tensor: Any, tensor_or_tensor_list: Any, op: int = ReduceOp.SUM,
                   group: Any = None, sync_op: bool = True,
                   use_calc_stream: bool = False) -> Work | None:
    """Reduce a list (one tensor per rank) or one tensor (split on axis 0) into ``tensor``."""
    _check("reduce_scatter", sync_op, use_calc_stream)
    return _c.reduce_scatter(tensor, tensor_or_tensor_list, op, group, sync_op)


def scatter(tensor: Any, tensor_or_tensor_list: Any = None, src: int = 0, group: Any = None,
            sync_op: bool = True, use_calc_stream: bool = False) -> Work | None:
    """Send part j of global rank ``src``'s list or tensor (split on axis 0) to rank j.

    Read on ``src`` only; elsewhere ignored (with a warning), whatever its type."""
    _check("scatter", sync_op, use_calc_stream)
    if src != _m.get_rank():
        if tensor_or_tensor_list is not None:  # Paddle warns, and ignores it
            warnings.warn("scatter: tensor_or_tensor_list is meaningless on a rank that is "
                          "not src and is ignored", stacklevel=2)
        tensor_or_tensor_list = None
    return _c.scatter(tensor, tensor_or_tensor_list, src, group, sync_op)


def send(tensor: Any, dst: int = 0, group: Any = None, sync_op: bool = True,
         use_calc_stream: bool = False) -> Work | None:
    """Send ``tensor`` to global rank ``dst``."""
    _check("send", sync_op, use_calc_stream)
    return _p2p.send(tensor, dst, group, sync_op)


def recv(tensor: Any, src: int = 0, group: Any = None, sync_op: bool = True,
         use_calc_stream: bool = False) -> Work | None:
    """Receive into ``tensor`` from global rank ``src``."""
    _check("recv", sync_op, use_calc_stream)
    return _p2p.recv(tensor, src, group, sync_op)
