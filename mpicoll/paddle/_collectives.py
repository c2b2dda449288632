"""Paddle's tensor collectives over mpicoll's (torch.distributed-style) ones; the
all-to-alls, whose argument order changed between Paddle 2.x and 3.x, are in _alltoall."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import mpicoll as _m

from .._pending import wait_pending
from ._face import ReduceOp, call, task
from ._face import op as _op
from ._groups import member, not_member_error, pg_of

if TYPE_CHECKING:
    from .._work import Work


def _like(x: Any) -> Any:
    """A new uninitialised tensor of ``x``'s framework, dtype and shape."""
    from .._adapter.alloc import empty  # lazy: the adapter imports numpy and starts MPI

    return empty(x, tuple(x.shape))[0]


def _likes(op: str, xs: list[Any], names: list[str]) -> list[Any]:
    """New tensors like ``xs`` for an empty output list, which Paddle fills: made apart
    from the caller's list, which gets them only once the call has been made (a refused
    call leaves it empty). What is not a tensor gets the core's error, under its name."""
    from .._adapter.buffer import as_buffer  # lazy: imports numpy and starts MPI

    out = []
    for x, name in zip(xs, names, strict=True):
        try:
            out.append(_like(x))
        except Exception:
            as_buffer(x, op=op, name=name)  # raises the clear error where there is one
            raise
    return out


def _is_list(x: Any) -> bool:
    return isinstance(x, (list, tuple))


def reduce_scatter(tensor: Any, tensor_list: list[Any], op: int = ReduceOp.SUM,
                   group: Any = None, sync_op: bool = True) -> Work | None:
    """Reduce ``tensor_list[j]`` across ranks into rank j's ``tensor``.

    Calls :func:`mpicoll.reduce_scatter` (or :func:`mpicoll.reduce_scatter_tensor`
    when ``tensor_list`` is one tensor, as Paddle allows).
    """
    pg = pg_of(group)
    if not member(pg):
        return None
    name = "reduce_scatter"
    fn = _m.reduce_scatter if _is_list(tensor_list) else _m.reduce_scatter_tensor
    work = call(name, fn, tensor, tensor_list, _op(op, name), group=pg, async_op=not sync_op)
    return task(work, name, sync_op, [tensor])



def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None,
               sync_op: bool = True) -> Work | None:
    """Gather every rank's ``tensor`` into ``tensor_list``.

    An empty ``tensor_list`` is filled with one new tensor per rank, shaped
    like ``tensor``, as Paddle does. Calls :func:`mpicoll.all_gather` (or
    :func:`mpicoll.all_gather_into_tensor` when ``tensor_list`` is a tensor).

    Raises:
        RuntimeError: this rank is not a member of ``group`` (as in Paddle).
    """
    pg = pg_of(group)
    name = "all_gather"
    if not member(pg):
        raise not_member_error(name)
    if _is_list(tensor_list):
        fresh = None
        if len(tensor_list) == 0 and isinstance(tensor_list, list):
            n = _m.get_world_size(pg)
            fresh = _likes(name, [tensor] * n, ["tensor"] * n)
        work = call(name, _m.all_gather, tensor_list if fresh is None else fresh, tensor,
                    group=pg, async_op=not sync_op)
        if fresh is not None:
            tensor_list.extend(fresh)
        return task(work, name, sync_op, list(tensor_list))
    work = call(name, _m.all_gather_into_tensor, tensor_list, tensor, group=pg,
                async_op=not sync_op)
    return task(work, name, sync_op, [tensor_list])


def all_reduce(tensor: Any, op: int = ReduceOp.SUM, group: Any = None,
               sync_op: bool = True) -> Work | None:
    """Reduce ``tensor`` across ``group``, in place on every rank (:func:`mpicoll.all_reduce`)."""
    pg = pg_of(group)
    if not member(pg):
        return None
    work = _m.all_reduce(tensor, _op(op, "all_reduce"), group=pg, async_op=not sync_op)
    return task(work, "all_reduce", sync_op, [tensor])


def broadcast(tensor: Any, src: int, group: Any = None, sync_op: bool = True) -> Work | None:
    """Copy ``tensor`` from global rank ``src`` to every rank (:func:`mpicoll.broadcast`)."""
    pg = pg_of(group)
    if not member(pg):
        return None
    work = _m.broadcast(tensor, src=src, group=pg, async_op=not sync_op)
    return task(work, "broadcast", sync_op, [tensor])


def reduce(tensor: Any, dst: int, op: int = ReduceOp.SUM, group: Any = None,
           sync_op: bool = True) -> Work | None:
    """Reduce ``tensor`` across ``group`` into global rank ``dst``'s (:func:`mpicoll.reduce`)."""
    pg = pg_of(group)
    if not member(pg):
        return None
    work = _m.reduce(tensor, dst=dst, op=_op(op, "reduce"), group=pg, async_op=not sync_op)
    return task(work, "reduce", sync_op, [tensor])


def _chunks(x: Any, n: int) -> list[Any]:
    """``x`` split along axis 0 into ``n`` equal parts (views where the framework can)."""
    rows = int(x.shape[0]) if len(x.shape) else 0
    if n <= 0 or rows % n:
        raise ValueError(f"scatter: dim 0 of tensor_list (a tensor) must be divisible by the "
                         f"group size {n}, got shape {tuple(x.shape)}")
    k = rows // n
    return [x[i * k:(i + 1) * k] for i in range(n)]


def scatter(tensor: Any, tensor_list: list[Any] | None = None, src: int = 0,
            group: Any = None, sync_op: bool = True) -> Work | None:
    """Send ``tensor_list[j]`` from global rank ``src`` into rank j's ``tensor``.

    ``tensor_list`` is read on ``src`` only; elsewhere it is ignored (with a
    warning), whatever its type, as in Paddle. On ``src`` it may also be one
    tensor, split along axis 0 into group-size parts (Paddle's stream form).
    Calls :func:`mpicoll.scatter`.
    """
    pg = pg_of(group)
    if not member(pg):
        return None
    name = "scatter"
    if src != _m.get_rank():
        if tensor_list is not None:
            warnings.warn(f"{name}: tensor_list is meaningless on a rank that is not src "
                          "and is ignored", stacklevel=2)
        tensor_list = None
    elif tensor_list is not None and not _is_list(tensor_list) and hasattr(tensor_list, "shape"):
        tensor_list = _chunks(tensor_list, _m.get_world_size(pg))
    work = call(name, _m.scatter, tensor, tensor_list, src=src, group=pg, async_op=not sync_op)
    return task(work, name, sync_op, [tensor])


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int = 0,
           group: Any = None, sync_op: bool = True) -> Work | None:
    """Gather every rank's ``tensor`` into ``gather_list`` on global rank ``dst``.

    ``gather_list`` is read on ``dst`` only (elsewhere ignored with a warning,
    whatever its type); an empty list there is filled with one new tensor per
    rank, shaped like ``tensor``, as Paddle does. Calls :func:`mpicoll.gather`.
    """
    pg = pg_of(group)
    if not member(pg):
        return None
    name = "gather"
    if dst != _m.get_rank():
        if gather_list is not None:
            warnings.warn(f"{name}: gather_list is meaningless on a rank that is not dst "
                          "and is ignored", stacklevel=2)
        gather_list = None
    fresh = None
    if dst == _m.get_rank() and isinstance(gather_list, list) and len(gather_list) == 0:
        n = _m.get_world_size(pg)
        fresh = _likes(name, [tensor] * n, ["tensor"] * n)
    work = call(name, _m.gather, tensor, gather_list if fresh is None else fresh, dst=dst,
                group=pg, async_op=not sync_op)
    if fresh is not None:
        gather_list.extend(fresh)
    return task(work, name, sync_op, gather_list)


def barrier(group: Any = None) -> None:
    """Block until every rank of ``group`` has entered (:func:`mpicoll.barrier`)."""
    pg = pg_of(group)
    if not member(pg):
        return
    _m.barrier(group=pg)


def wait(tensor: Any, group: Any = None, use_calc_stream: bool = True) -> None:
    """Wait for the pending operations that write ``tensor``: after it, ``tensor`` holds
    their results.

    Paddle synchronises a CUDA stream here: with ``use_calc_stream`` (the default) the
    calculation stream, which every earlier operation precedes, so the operations of
    every group are waited for; without, ``group``'s own (the global group's if None).
    """
    pg = pg_of(group)
    if not member(pg):
        return
    wait_pending(None if use_calc_stream else _m.group.WORLD if pg is None else pg, tensor)
