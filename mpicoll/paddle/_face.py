"""How the Paddle face translates: ReduceOp values, tasks, and errors in Paddle's words.

The core raises :class:`~mpicoll.errors.ArgumentError` with its fields (the
operation, the arguments it names, a reason key); this module renames those
fields into Paddle's vocabulary and adds the argument-order hint when the reason
is one that tensors passed in the other order produce. It never reads a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mpicoll as _m

from ..errors import ArgumentError

if TYPE_CHECKING:
    from .._work import Work


class ReduceOp:
    """paddle.distributed.ReduceOp: plain integers, with Paddle's values.

    Functions of this module map them onto :class:`mpicoll.ReduceOp`; an
    :class:`mpicoll.ReduceOp` member (e.g. ``BXOR``, or
    ``mpicoll.ReduceOp.premul_sum(f)``) is accepted as well and used as is.
    """

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


_OPS: dict[int, Any] = {}  # Paddle's value -> mpicoll.ReduceOp, filled on first use


def op(value: Any, name: str) -> Any:
    """A Paddle ReduceOp value as the mpicoll ReduceOp it means."""
    if not _OPS:
        MOp = _m.ReduceOp
        _OPS.update({ReduceOp.SUM: MOp.SUM, ReduceOp.MAX: MOp.MAX, ReduceOp.MIN: MOp.MIN,
                     ReduceOp.PROD: MOp.PRODUCT, ReduceOp.AVG: MOp.AVG})
    if type(value) is _m.ReduceOp:  # an int too (IntEnum), with torch's values
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        mop = _OPS.get(value)
        if mop is None:
            raise ValueError(f"{name}: op must be a paddle ReduceOp: expected one of SUM=0, "
                             f"MAX=1, MIN=2, PROD=3, AVG=4, got {value!r}")
        return mop
    return value  # mpicoll checks anything else (a torch ReduceOp works too)


def task(work: Work | None, name: str, sync_op: bool, outputs: Any = None,
         source: int = -1) -> Work | None:
    """Paddle returns a task either way: completed when ``sync_op``, pending otherwise
    (a :class:`mpicoll.Work` with Paddle's ``is_sync``)."""
    sync, pending = _TASKS or _task_types()
    if sync_op:
        return sync.completed(name, outputs, source)
    if work is not None:
        work.__class__ = pending  # the same object: the core's pending list holds it
    return work


def _task_types() -> tuple[type, type]:
    """(sync, async) task classes, made on first use (mpicoll.paddle imports no numpy and no
    MPI until a call is made)."""
    global _TASKS
    if _TASKS is None:
        from .._work import Work  # lazy: importing mpicoll._work starts MPI

        class Task(Work):
            """Paddle's task: mpicoll's Work (``wait``, ``is_completed``, ``synchronize``,
            ...) and ``is_sync``, whether the call was made with ``sync_op=True``."""

            __slots__ = ()
            _sync = False

            def is_sync(self) -> bool:
                return self._sync

        class SyncTask(Task):
            __slots__ = ()
            _sync = True

        Task.__qualname__, SyncTask.__qualname__ = "Task", "SyncTask"
        _TASKS = (SyncTask, Task)
    return _TASKS


_TASKS: tuple[type, type] | None = None


# Paddle's names for the arguments that the core names by torch's names, per Paddle call.
RENAMES: dict[str, dict[str, str]] = {
    "alltoall_single": {"input_split_sizes": "in_split_sizes",
                        "output_split_sizes": "out_split_sizes",
                        "input": "in_tensor", "output": "out_tensor"},
    "alltoall": {"input_tensor_list": "in_tensor_list", "output_tensor_list": "out_tensor_list"},
    "reduce_scatter": {"input_list": "tensor_list", "input": "tensor_list", "output": "tensor"},
    "all_gather": {"output_tensor": "tensor_list", "input_tensor": "tensor"},
    "scatter": {"scatter_list": "tensor_list"},
    "scatter_object_list": {"scatter_object_output_list": "out_object_list",
                            "scatter_object_input_list": "in_object_list"},
    "send_object_list": {"group_dst": "dst_in_group"},
    "recv_object_list": {"group_src": "src_in_group"},
}

_SWAP_HINT = ("; the tensors may have been passed in Paddle {given} order ({order}): "
              "{module} follows Paddle {follows}; for the {given} order use {other}")
HINT_3X = _SWAP_HINT.format(given="2.x", order="in_tensor, out_tensor",
                            module="mpicoll.paddle", follows="3.x (out_tensor, in_tensor)",
                            other="mpicoll.paddle.v2")
HINT_2X = _SWAP_HINT.format(given="3.x", order="out_tensor, in_tensor",
                            module="mpicoll.paddle.v2", follows="2.x (in_tensor, out_tensor)",
                            other="mpicoll.paddle")


def swapped(e: ArgumentError) -> bool:
    """Whether ``e`` is what tensors in the other order produce: split sizes that
    contradict dim 0, or a read-only tensor (an input) in an output's place."""
    return e.reason == "split_sum" or (e.reason == "read_only" and e.arg.startswith("output"))


def call(name: str, fn: Callable[..., Any], *args: Any, hint: str = "", **kw: Any) -> Any:
    """``fn(*args, **kw)``; an ArgumentError comes back in Paddle's words, under
    Paddle's name ``name``, with ``hint`` added when the tensors look swapped."""
    try:
        return fn(*args, **kw)
    except ArgumentError as e:
        raise e.renamed(name, RENAMES.get(name), hint if hint and swapped(e) else "") from e
