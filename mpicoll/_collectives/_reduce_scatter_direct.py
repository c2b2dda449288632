"""[2] reduce_scatter and reduce_scatter_tensor as direct messages (:mod:`._direct`): each
rank sends its chunk for rank j to rank j, receives every peer's chunk for it into a
scratch array, and reduces them into its output locally, in rank order, as MPI's
pairwise reduce_scatter does: with the op's numpy ufunc (one pass a peer, no copy;
:func:`ufunc_of`), else with the MPI op itself (``MPI_Reduce_local``). Each receive's
tag tells what its peer sent, so a chunk whose size disagrees raises on the rank it was
for (:class:`~mpicoll.errors.SizeMismatch`) with no message beside the data."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .. import _core_loader, _departed
from .._adapter.dtypes import mpi_datatype
from .._mpi import MPI
from .._work import Work
from . import _direct, _pack, _reduce
from ._entries import Reduced
from ._layout import Layout, area, displs
from ._messages import Kept, issue, issue_plan
from ._own_block import then
from ._signature import signature
from ._sizes import scattered
from .reduce_op import nan_op, op_name

_buffer = MPI.buffer
_fromaddress = MPI.buffer.fromaddress
_Status = MPI.Status


def combine(how: Any, dt: Any, n: int, me: int, own: Any, recv: Any, scratch: Any) -> None:
    """This rank's own chunk ``own`` reduced with each peer's in ``scratch`` (block j at
    j times its size) into ``recv``, in rank order, by ``how``: a numpy ufunc (one pass
    a peer, no copy) or an MPI op (``Reduce_local``, after a copy of ``own``)."""
    out = recv.reshape(-1)
    c = out.size
    if not c:
        return
    src = own.reshape(-1)
    if type(how) is _ufunc:
        for j in range(n):
            if j != me:
                how(src, scratch[j * c:(j + 1) * c], out=out)
                src = out
        return
    np.copyto(out, src)
    for j in range(n):
        if j != me:
            how.Reduce_local([scratch[j * c:(j + 1) * c], dt], [out, dt])


_ufunc = np.ufunc


def ufunc_of(mpi_op: Any) -> Any:
    """The numpy ufunc that reduces as ``mpi_op`` does on the dtypes it is planned for
    (:func:`.reduce_op.plan`: numpy wraps integer sums as MPICH does; MIN and MAX of
    floats keep NaN, as :func:`.reduce_op.nan_op`), else ``mpi_op`` itself."""
    for op, f in ((MPI.SUM, np.add), (MPI.PROD, np.multiply), (MPI.MIN, np.minimum),
                  (MPI.MAX, np.maximum), (MPI.BAND, np.bitwise_and),
                  (MPI.BOR, np.bitwise_or), (MPI.BXOR, np.bitwise_xor),
                  (nan_op(True), np.maximum), (nan_op(False), np.minimum)):
        if mpi_op == op:
            return f
    return mpi_op


def general(name: str, pg: Any, op: Any, p: Any, dst: Any, send: Any, counts: list[int],
            what: str, outputs: list[Any], keep: Any, async_op: bool,
            store: tuple[dict, tuple] | None) -> Work | None:
    """The call from ``send`` (contiguous, this rank's chunks for each rank in rank order,
    ``counts`` their sizes; widened or pre-scaled as the plan says) into ``dst`` (the
    adapter's buffer), its quick entry stored in ``store`` = (table, key) where given."""
    me, n = pg._rank, pg._size
    recv = _reduce.recv_side(p, dst.array, dst.dtype)
    c, dt = recv.size, mpi_datatype(recv.dtype)
    d = _direct.plan(pg, counts, [c] * n, scattered(name, pg, counts, c, what),
                     signature(name, recv.dtype, op_name(op)))
    sd, rd = _pack.displs(counts), [j * c for j in range(n)]
    how = ufunc_of(p.mpi_op)
    if store is not None:
        store[0][store[1]] = Reduced("reduced", (sd, rd), p.mpi_op, dt, how, d)
    scratch = np.empty(n * c, recv.dtype)
    fin = then(partial(combine, how, dt, n, me, send.reshape(-1)[sd[me]:sd[me] + c],
                       recv, scratch),
               _reduce.finisher(p, recv, dst, n))
    return _direct.issue(name, pg, d, ([send, (d.counts[0], sd), dt],
                                       [scratch, (d.counts[1], rd), dt], p.mpi_op),
                         (send, sd, scratch, rd, dt), None, fin, async_op, outputs, keep,
                         lambda: {"dtype": dst.dtype, "counts": counts,
                                  "reduce_op": op_name(op)}, depth=4)


def exchanged(op: str, group: Any, hit: Reduced, s: Any, r: Any, keep: Any = None,
              depth: int = 6, lay: Layout | None = None) -> None:
    """A blocking call of a quick entry ``hit`` (:func:`general`'s) from ``s`` (the chunks'
    array; or None, and ``lay``, the layout of a list of them) into the array ``r``, its
    messages kept by the group (:func:`._direct.take`) by the entry and where ``s`` (each
    tensor of a list, or the list's adjacent views) and ``r`` lie. The entry owns the
    scratch array the peers' chunks arrive in, and holds the reduction made once for
    them and the call's arguments, over the memory's address ranges (owning none:
    whatever array lies there now, the key fixes its size and layout)."""
    _, (sd, rd), mpi_op, dt, how, d = hit
    core = _core_loader.module
    first = s if lay is None else _direct.where(lay)
    if core is not None and not _departed.left and _direct.run_kept(
            core, op, group, hit, first, r, keep):
        return
    ra = _buffer(r).address
    key = _direct.plan_key(hit, first, ra)
    entry = _direct.take(group, key, hit)
    if entry is None:
        me, n, c = group._rank, group._size, r.size
        if lay is not None:
            s, sd = area(lay), sd if lay.end_to_end else displs(lay)
        sbuf, rbuf = _direct.span(s, True), _fromaddress(ra, r.nbytes)
        scratch = np.empty(n * c, r.dtype)
        own = np.frombuffer(sbuf, r.dtype)[sd[me]:sd[me] + c]
        out = np.frombuffer(rbuf, r.dtype)
        if not c:
            reduced = None
        elif n == 2 and type(how) is _ufunc:  # (one peer: one ufunc call)
            reduced = partial(how, own, scratch[(1 - me) * c:(2 - me) * c], out=out)
        else:
            reduced = partial(combine, how, dt, n, me, own, out, scratch)
        args = ((sbuf, (d.counts[0], sd), dt), (rbuf, (d.counts[1], rd), dt), mpi_op)
        if not _direct.keeps(group):  # (posted, as async calls are)
            issue(op, group, d, args, (sbuf, sd, scratch, rd, dt), None, reduced, keep=keep,
                  depth=depth)
            return
        reqs, posts = d.prepare(group.direct, (sbuf, sd, scratch, rd, dt))
        sts = [_Status() for _ in reqs]
        if core is None:
            core = _core_loader.load()  # (where not loaded yet: decided once)
        if core is not None:  # (its next calls run there: run_kept)
            fold = None if not c else (mpi_op, me, out, scratch, own)
            entry = _direct.new_plan(core, hit, reqs, sts, d, dt, None, args, fold,
                                     posts)
            issue(op, group, d, args, (None, sd, None, rd, dt), None, reduced, keep=keep,
                  depth=depth, started=entry, fold=fold)
            _direct.put_back(group.kept, key, entry)
            return
        entry = Kept(hit, reqs, sts, args, (None, sd, None, rd, dt), finalize=reduced,
                     owns=scratch)
    if type(entry) is Kept:
        issue(op, group, d, entry.args, entry.bufs, None, entry.finalize, keep=keep, depth=depth,
              started=entry)
    else:  # (the core's Plan, where run_kept did not run it: a rank has left)
        issue_plan(op, group, entry, keep, depth)
    _direct.put_back(group.kept, key, entry)
