"""[2] reduce_scatter and reduce_scatter_tensor as direct messages (:mod:`._direct`): each
rank sends its chunk for rank j to rank j, receives every peer's chunk for it into a
scratch array, and reduces them into its output locally with the MPI op itself
(``MPI_Reduce_local``: MPI's own reduction, user-defined ops included), as MPI's
pairwise reduce_scatter does. Each receive's tag tells what its peer sent, so a chunk
whose size disagrees raises on the rank it was for (:class:`~mpicoll.errors.SizeMismatch`)
with no message beside the data."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._adapter.dtypes import mpi_datatype
from .._adapter.views import PLAIN
from .._mpi import MPI
from .._work import Work
from . import _direct, _pack, _reduce
from ._own_block import then
from ._sizes import scattered
from .reduce_op import ReduceOp, op_name

_buffer = MPI.buffer


def combine(mpi_op: Any, dt: Any, n: int, me: int, own: Any, recv: Any,
            scratch: Any) -> None:
    """This rank's own chunk ``own`` reduced with each peer's in ``scratch`` (block j at
    j times its size) into ``recv``, in rank order."""
    out = recv.reshape(-1)
    c = out.size
    if not c:
        return
    np.copyto(out, own.reshape(-1))
    for j in range(n):
        if j != me:
            mpi_op.Reduce_local([scratch[j * c:(j + 1) * c], dt], [out, dt])


def quick_ok(op: Any, dtype: str, p: Any) -> bool:
    """Whether a call's entry can be repeated by the quick path: a ReduceOp, a plain
    dtype, no step after MPI's (widening, AVG, a factor)."""
    return type(op) is ReduceOp and dtype in PLAIN and \
        not (p.widen or p.average or p.factor is not None)


def general(name: str, pg: Any, op: Any, p: Any, dst: Any, send: Any, counts: list[int],
            what: str, outputs: list[Any], keep: Any, async_op: bool,
            store: tuple[dict, tuple] | None) -> Work | None:
    """The call from ``send`` (contiguous, this rank's chunks for each rank in rank order,
    ``counts`` their sizes; widened or pre-scaled as the plan says) into ``dst`` (the
    adapter's buffer), its quick entry stored in ``store`` = (table, key) where given."""
    me, n = pg._rank, pg._size
    recv = _reduce.recv_side(p, dst.array, dst.dtype)
    c, dt = recv.size, mpi_datatype(recv.dtype)
    d = _direct.plan(pg, counts, [c] * n, scattered(name, pg, counts, c, what))
    sd, rd = _pack.displs(counts), [j * c for j in range(n)]
    if store is not None:
        store[0][store[1]] = ("reduced", (sd, rd), None, dt, p.mpi_op, None, d)
    scratch = np.empty(n * c, recv.dtype)
    fin = then(partial(combine, p.mpi_op, dt, n, me, send.reshape(-1)[sd[me]:sd[me] + c],
                       recv, scratch),
               _reduce.finisher(p, recv, dst, n))
    return _direct.issue(name, pg, d, ([send, (d.counts[0], sd), dt],
                                       [scratch, (d.counts[1], rd), dt], p.mpi_op),
                         (send, sd, scratch, rd, dt), None, fin, async_op, outputs, keep,
                         lambda: {"dtype": dst.dtype, "counts": counts,
                                  "reduce_op": op_name(op)}, depth=4)


def exchanged(op: str, group: Any, hit: tuple, s: Any, r: Any, keep: Any = None,
              depth: int = 7, sd: list[int] | None = None, own: Any = None,
              key: tuple | None = None) -> None:
    """A blocking call of a quick entry ``hit`` (:func:`general`'s) from ``s`` (the chunks:
    an array, or a list's area with displacements ``sd`` and this rank's chunk ``own``)
    into the array ``r``, its messages kept by the group (:func:`._direct.started`) by
    ``key`` (default: the entry and ``s``'s address), the peers' chunks received into
    the entry's own scratch array."""
    _, (hsd, rd), _, dt, mpi_op, _, d = hit
    me, n, c = group._rank, group._size, r.size
    if sd is None:
        sd, own = hsd, s.reshape(-1)[hsd[me]:hsd[me] + c]
    _direct.started(op, group, d, ((s, (d.counts[0], sd), dt), (None, (d.counts[1], rd), dt),
                                   mpi_op), (s, sd, None, rd, dt), None, keep, depth,
                    hit=hit, key=(id(hit), _buffer(s).address) if key is None else key,
                    scratch=(n * c, r.dtype),
                    then=lambda scratch: combine(mpi_op, dt, n, me, own, r, scratch))
