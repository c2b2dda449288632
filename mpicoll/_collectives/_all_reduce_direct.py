"""[2] all_reduce on a few ranks as direct messages (:mod:`._direct`): each rank sends its
tensor to every peer and receives each peer's into a scratch array, then reduces the
blocks in rank order.

Why: at the sizes where an all_reduce costs its latency (:data:`MAX_COUNT` elements and
below), one message each way between every pair of ranks is as fast as MPI's algorithms,
and, posted by the compiled core from a kept plan, skips what MPI's nonblocking
collective costs (MPICH: ~1.6 us at 8 B, 2 ranks). And each message's tag carries the
count and the call's signature (:mod:`._signature`): a rank whose dtype, reduce op,
count or collective differs is caught by every rank that receives from it
(SignatureMismatch, SizeMismatch), where MPI's Allreduce returned a wrong result
silently.

Every rank reduces the same blocks in the same order, x0 op x1 op ... op x(n-1), with the
MPI op itself (``MPI_Reduce_local``: the op and datatype MPI's Allreduce would use), so
every rank's result is the same, bit for bit, whichever path (Python, compiled core)
each rank took. Whether a call goes this way depends only on what every rank's call
agrees on (the group, the number of elements, the reduce op and dtype's plan), so
every rank takes the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._adapter.dtypes import mpi_datatype
from .._mpi import MPI
from .._work import Work
from . import _direct
from ._messages import Direct, Fold, issue
from ._signature import signature
from ._sizes import exchange

# the largest all_reduce (in elements) made of direct messages: above it, MPI's
# algorithms (which send less than a tensor to every peer) win. Measured (MPICH, float64,
# core in use): at 2 ranks as fast as MPI_Iallreduce up to 4 KiB and 1.7x slower at 8
# KiB; at 4 ranks on 2 cores faster up to 4 KiB. By elements, so that ranks whose
# dtypes differ still take the same way (and are told so)
MAX_COUNT = 512


def chosen(pg: Any, count: int) -> bool:
    """Whether an in-place all_reduce of ``count`` elements on ``pg`` goes direct."""
    return pg.direct is not None and 0 < count <= MAX_COUNT


def _plan(name: str, pg: Any, count: int, dtype: Any, reduce_op: str) -> Direct:
    counts = [count] * pg._size
    return _direct.plan(pg, counts, counts, exchange(name, pg, counts, counts, "tensor"),
                        signature(name, dtype, reduce_op))


def general(name: str, pg: Any, recv: Any, dtype: Any, mpi_op: Any, reduce_op: str,
            finalize: Callable[[], Any] | None, async_op: bool, outputs: list[Any],
            sig: Callable[[], dict[str, Any]]) -> Work | None:
    """all_reduce of the contiguous array ``recv`` in place (``dtype``: the caller's, for
    the signature), then ``finalize`` (AVG's divide, rounding back, write-back)."""
    me, n, c = pg._rank, pg._size, recv.size
    d = _plan(name, pg, c, dtype, reduce_op)
    dt = mpi_datatype(recv.dtype)
    scratch = np.empty(n * c, recv.dtype)
    fold = Fold(mpi_op, dt, me, recv, scratch)
    rd = [j * c for j in range(n)]

    def done() -> None:
        fold()
        if finalize is not None:
            finalize()
    return issue(name, pg, d, (MPI.IN_PLACE, [recv, dt], mpi_op),
                 (recv, d.zeros, scratch, rd, dt), None, done, async_op, outputs,
                 sig=sig, depth=4)


def quick(name: str, pg: Any, a: Any, hit: tuple, op: Any, keep: Any = None) -> None:
    """A blocking all_reduce of the plain array ``a`` in place, the reduction a general
    call validated (``hit``: its MPI datatype and op), its messages kept by the group by
    the entry and where ``a`` lies, with the scratch array the peers' blocks arrive in
    (:func:`._direct.kept_call`: where the compiled core is in use, a ``Plan`` that it
    runs and reduces)."""
    def make(span: Any) -> tuple[Direct, tuple, tuple, Fold]:
        me, n, c = pg._rank, pg._size, a.size
        dt, mpi_op = hit
        buf = np.frombuffer(span, a.dtype)
        scratch = np.empty(n * c, a.dtype)
        d = _plan(name, pg, c, a.dtype, op.name)
        return (d, (span, d.zeros, scratch, [j * c for j in range(n)], dt),
                (MPI.IN_PLACE, [buf, dt], mpi_op), Fold(mpi_op, dt, me, buf, scratch))
    _direct.kept_call(name, pg, hit, a, keep, make)
