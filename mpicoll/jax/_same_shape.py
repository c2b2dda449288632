"""mpicoll.jax's collectives whose result has the input's shape: reductions, broadcast, sendrecv."""

from __future__ import annotations

from typing import Any

from .._collectives.reduce_op import ReduceOp
from . import _host
from ._arguments import array as _array
from ._arguments import root as _root
from ._arguments import static_op as _op
from ._ops import collective


def all_reduce(input: Any, op: Any = ReduceOp.SUM, group: Any = None) -> Any:
    """A new array: the reduction of ``input`` over ``group``. Call on every rank.

    Differentiable for SUM, AVG, PREMUL_SUM, MIN and MAX, under the convention of
    ``torch.distributed.nn.functional``: the objective is the sum over ranks of what each
    rank computes. So ``jax.grad`` of a loss of the SUM gives the sum over ranks of the
    loss's gradients: P times the local gradient where every rank's loss is the same (its
    gradient is an all_reduce of the gradients). Divide by the group size, or reduce
    with AVG, for the gradient of one rank's loss. docs/guides/jax-jit.md#gradients has
    every collective's rule.
    """
    x = _array(input, "all_reduce")
    t = _host.twin(group, "all_reduce")
    return collective("all_reduce", (_op(op, x.dtype, "all_reduce"),), t, x)


def broadcast(input: Any, src: int | None = None, group: Any = None,
              group_src: int | None = None) -> Any:
    """A new array holding the source rank's ``input`` (same shape on every rank)."""
    x = _array(input, "broadcast")
    t = _host.twin(group, "broadcast")
    return collective("broadcast", (_root(t, "broadcast", src, group_src, "src"),), t, x)


def reduce(input: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           group_dst: int | None = None) -> Any:
    """A new array: the reduction on the destination, a copy of ``input`` elsewhere."""
    x = _array(input, "reduce")
    t = _host.twin(group, "reduce")
    root = _root(t, "reduce", dst, group_dst, "dst")
    return collective("reduce", (root, _op(op, x.dtype, "reduce")), t, x)


def sendrecv(input: Any, dst: int | None, src: int | None, group: Any = None, tag: int = 0,
             group_dst: int | None = None, group_src: int | None = None) -> Any:
    """Send ``input`` to ``dst`` and return what ``src`` sends here (same shape and dtype).

    ``dst=None`` sends nothing; ``src=None`` receives nothing and returns zeros (as
    ``MPI_PROC_NULL``), for the edges of a non-periodic shift. Ranks are global
    (``group_dst``/``group_src``: ranks in ``group``). The gradient goes back the
    other way: a sendrecv to ``src`` from ``dst``.
    """
    x = _array(input, "sendrecv")
    t = _host.twin(group, "sendrecv")
    to = None if dst is None and group_dst is None else _root(t, "sendrecv", dst, group_dst,
                                                                 "dst")
    frm = None if src is None and group_src is None else _root(t, "sendrecv", src, group_src,
                                                                  "src")
    if (to == t.rank) != (frm == t.rank):
        raise ValueError(f"mpicoll.jax.sendrecv: a rank may send to itself only if it "
                         f"receives from itself: dst is group rank {to}, src is {frm}, "
                         f"this rank is {t.rank}")
    if isinstance(tag, bool) or not isinstance(tag, int) or tag < 0:
        raise ValueError(f"mpicoll.jax.sendrecv: tag must be a non-negative int, got {tag!r}")
    return collective("sendrecv", (to, frm, tag), t, x)
