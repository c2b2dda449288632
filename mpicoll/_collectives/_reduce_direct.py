"""[2] reduce on a few ranks as direct messages (:mod:`._direct`): each rank but the root
sends its tensor to the root, which receives each peer's into a scratch array and reduces
the blocks in rank order, as an all_reduce's messages are reduced
(:mod:`._all_reduce_direct`).

Why: at the sizes where a reduce costs its latency (:data:`MAX_COUNT` elements and below),
one message from each rank to the root is as fast as MPI's algorithms and, restarted as
persistent requests, skips what MPI's nonblocking reduce costs (MPICH: 2.6-3.2x its
blocking Reduce at 8 B, 2 ranks). And each message's tag carries the count and the call's
signature (:mod:`._signature`: the collective, dtype and reduce op): the root, the rank
whose result the messages make, raises where a rank's dtype, reduce op, count or
collective differs (SignatureMismatch, SizeMismatch), where MPI's Reduce returned a wrong
result silently. The other ranks' tensors are only read.

The root reduces x0 op x1 op ... op x(n-1) in rank order with the MPI op itself
(``MPI_Reduce_local``), the sequence an all_reduce's messages use, so a reduce and an
all_reduce of the same tensors give the same bits. Whether a call goes this way depends
only on what every rank's call agrees on (the group and the number of elements), so every
rank takes the same way. A root that differs across
ranks: a rank that takes itself for the root waits for messages that no rank sends it
(the watchdog ends the job); messages sent to a rank that does not take itself for the
root meet its next call, which raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._adapter.dtypes import mpi_datatype
from .._mpi import MPI
from .._work import Work
from . import _direct
from ._all_reduce_direct import MAX_COUNT
from ._entries import RootedReduction
from ._messages import Direct, Fold, issue
from ._signature import signature
from ._sizes import _kept
from ._sizes import rooted as rooted_sizes
from ._table import Table

# (numpy dtype, (ReduceOp, group rank of the root)) -> its RootedReduction: the
# reductions a general call validated that go as messages (plain dtypes, nothing after
# MPI's: _reduce.repeatable), for the quick path (the compiled core's reduce() reads it
# as all_reduce's table; an entry of three never makes its Iallreduce); each entry's
# identity keys the messages its group keeps (:func:`._direct.plan_key`)
QUICK: dict[tuple, RootedReduction] = Table()


def chosen(pg: Any, count: int) -> bool:
    """Whether a reduce of ``count`` elements on ``pg`` goes direct: where the group
    sends messages, of 1 to :data:`MAX_COUNT` elements, whatever its reduce op (a
    ``premul_sum`` sends its pre-scaled copy, and its root reduces into the place of its
    result: so a ``premul_sum`` met by a ``SUM`` is told by its signature)."""
    return pg.direct is not None and 0 < count <= MAX_COUNT


def _plan(name: str, pg: Any, root: int, count: int, dtype: Any, reduce_op: str) -> Direct:
    me, n = pg._rank, pg._size
    sizes = rooted_sizes(name, pg, root, True, count, [count] * n if me == root else None)
    sig = signature(name, dtype, reduce_op)
    if me == root:
        others = [j for j in range(n) if j != root]
        return _kept(("reduce", me, root, count, n, sizes, sig), lambda: Direct(
            [(j, count, j) for j in others], [], [count] * n, sizes, n, sig=sig))
    return _kept(("reduce", me, root, count, sizes, sig), lambda: Direct(
        [], [(root, count)], [], sizes, n, sig=sig))


def general(name: str, pg: Any, root: int, arr: Any, dtype: Any, mpi_op: Any,
            reduce_op: str, finalize: Callable[[], Any] | None, async_op: bool,
            outputs: list[Any], sig: Callable[[], dict[str, Any]]) -> Work | None:
    """The general path's reduce as messages (:func:`chosen`): ``arr`` this rank's
    contiguous array (the root's: the reduction's, in place; else what it sends),
    ``dtype`` the caller's (for the signature); then ``finalize`` (AVG's divide, rounding
    back, write-back)."""
    me, n, c = pg._rank, pg._size, arr.size
    d = _plan(name, pg, root, c, dtype, reduce_op)
    dt = mpi_datatype(arr.dtype)
    if me != root:
        return issue(name, pg, d, ([arr, dt], None, mpi_op, root),
                     (arr, d.zeros, None, None, dt), None, finalize, async_op, outputs,
                     sig=sig, depth=4)
    scratch = np.empty(n * c, arr.dtype)
    fold = Fold(mpi_op, dt, me, arr, scratch)

    def done() -> None:
        fold()
        if finalize is not None:
            finalize()
    return issue(name, pg, d, (MPI.IN_PLACE, [arr, dt], mpi_op, root),
                 (None, None, scratch, [j * c for j in range(n)], dt), None, done, async_op,
                 outputs, sig=sig, depth=4)


def quick(name: str, pg: Any, root: int, a: Any, hit: RootedReduction, reduce_op: str,
          keep: Any = None, depth: int = 5) -> None:
    """A blocking reduce of the plain array ``a`` to group rank ``root``, the reduction a
    general call validated (``hit``: :data:`QUICK`'s entry), its messages kept by the
    group by the entry and where ``a`` lies, with the scratch array the peers' blocks
    arrive in on the root (:func:`._direct.kept_call`: where the compiled core is in
    use, a ``Plan`` that it runs and reduces)."""
    def make(span: Any) -> tuple[Direct, tuple, tuple, Fold | None]:
        me, n, c = pg._rank, pg._size, a.size
        dt, mpi_op = hit.datatype, hit.op
        d = _plan(name, pg, root, c, a.dtype, reduce_op)
        buf = np.frombuffer(span, a.dtype)
        if me != root:
            return (d, (span, d.zeros, None, None, dt), ([buf, dt], None, mpi_op, root),
                    None)
        scratch = np.empty(n * c, a.dtype)
        return (d, (None, None, scratch, [j * c for j in range(n)], dt),
                (MPI.IN_PLACE, [buf, dt], mpi_op, root), Fold(mpi_op, dt, me, buf, scratch))
    _direct.kept_call(name, pg, hit, a, keep, make, depth)  # (depth: frames to the user's)
