"""The built-in cases: every collective with a message size, on float32 buffers.

Each case makes its numpy memory once per size (``ctx.array``, shared by every
variant), views it as the framework's tensors (``ctx.tensor``), and returns the
call to time, the raw mpi4py call on the same memory, and a check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .registry import Ctx, Timed, register

F32 = np.float32


Expect = Callable[[], "np.ndarray | None"]


def _timed(ctx: Ctx, call: Callable[[], Any], out: np.ndarray, expect: Expect,
           raw: Callable[[], Any], *, fill: float = -1.0, list_len: int | None = None) -> Timed:
    return Timed(call, lambda: ctx.check_output(call, out, expect, fill), raw, list_len)


def _exchange(ctx: Ctx) -> tuple[np.ndarray, np.ndarray, int, Expect]:
    """all_to_all's buffers: send, recv, block size, and this rank's expected recv."""
    p, rank = ctx.ranks, ctx.rank
    n = ctx.elems(p)
    blk = n // p
    send = ctx.array("send", lambda: np.arange(n, dtype=F32) + rank * n)
    recv = ctx.array("recv", lambda: np.empty(n, F32))
    expect = lambda: ctx.array("expect", lambda: np.concatenate(  # noqa: E731
        [np.arange(rank * blk, (rank + 1) * blk, dtype=F32) + j * n for j in range(p)]))
    return send, recv, blk, expect


def _alltoall_raw(ctx: Ctx, send: np.ndarray, recv: np.ndarray, blk: int) -> Callable[[], Any]:
    comm, f = ctx.comm, ctx.MPI.FLOAT
    sspec, rspec = [send, blk, f], [recv, blk, f]
    return lambda: comm.Alltoall(sspec, rspec)


@register("all_to_all_single")
def all_to_all_single(ctx: Ctx) -> Timed:
    send, recv, blk, expect = _exchange(ctx)
    s, r, op = ctx.tensor(send), ctx.tensor(recv), ctx.dist.all_to_all_single
    return _timed(ctx, lambda: op(r, s), recv, expect, _alltoall_raw(ctx, send, recv, blk))


@register("all_to_all_single(split sizes)")
def all_to_all_single_splits(ctx: Ctx) -> Timed:
    # equal split sizes given explicitly (MoE-style code always passes them); raw is the
    # Alltoall that equal blocks allow: what one rank cannot prove (that every peer's
    # splits are equal too) mpicoll must not assume, so it calls Alltoallv
    send, recv, blk, expect = _exchange(ctx)
    s, r, op = ctx.tensor(send), ctx.tensor(recv), ctx.dist.all_to_all_single
    rows = [blk] * ctx.ranks
    return _timed(ctx, lambda: op(r, s, rows, rows), recv, expect,
                  _alltoall_raw(ctx, send, recv, blk))


@register("all_to_all_single(uneven split sizes)")
def all_to_all_single_uneven(ctx: Ctx) -> Timed:
    # rank i sends rank j c[i][j] elements: 1..p blocks' worth, a different mix per
    # rank, the same total everywhere; raw is Alltoallv with the same counts
    p, rank = ctx.ranks, ctx.rank
    blk = ctx.elems(p) // p
    c = [[max(1, 2 * blk * (1 + (i + j) % p) // (p + 1)) for j in range(p)] for i in range(p)]
    total = sum(c[0])
    scounts, rcounts = c[rank], [c[j][rank] for j in range(p)]
    send = ctx.array("send", lambda: np.arange(total, dtype=F32) + rank * total)
    recv = ctx.array("recv", lambda: np.empty(total, F32))
    expect = lambda: ctx.array("expect", lambda: np.concatenate([  # noqa: E731
        np.arange(total, dtype=F32)[sum(c[j][:rank]):][:c[j][rank]] + j * total
        for j in range(p)]))
    comm, f = ctx.comm, ctx.MPI.FLOAT
    sspec = [send, (scounts, np.cumsum([0, *scounts[:-1]]).tolist()), f]
    rspec = [recv, (rcounts, np.cumsum([0, *rcounts[:-1]]).tolist()), f]
    s, r, op = ctx.tensor(send), ctx.tensor(recv), ctx.dist.all_to_all_single
    return _timed(ctx, lambda: op(r, s, rcounts, scounts), recv, expect,
                  lambda: comm.Alltoallv(sspec, rspec))


@register("all_to_all(list of chunks)")
def all_to_all_list(ctx: Ctx) -> Timed:
    # the seeds' pattern: lists of .chunk() views of one buffer, made once (as a training
    # loop holds them); the call is timed, not the chunking
    send, recv, blk, expect = _exchange(ctx)
    sl, rl = ctx.chunks(ctx.tensor(send)), ctx.chunks(ctx.tensor(recv))
    op = ctx.dist.all_to_all
    return _timed(ctx, lambda: op(rl, sl), recv, expect, _alltoall_raw(ctx, send, recv, blk),
                  list_len=ctx.ranks)


def _reduce_scatter(ctx: Ctx) -> tuple[np.ndarray, np.ndarray, Expect, Callable[[], Any]]:
    p, rank = ctx.ranks, ctx.rank
    n = ctx.elems(p)
    blk = n // p
    send = ctx.array("send", lambda: np.arange(n, dtype=F32) % 97)
    recv = ctx.array("recv", lambda: np.empty(blk, F32))
    expect = lambda: ctx.array("expect", lambda: send[rank * blk:(rank + 1) * blk] * p)  # noqa: E731
    comm, f, mpi_sum = ctx.comm, ctx.MPI.FLOAT, ctx.MPI.SUM
    sspec, rspec = [send, blk, f], [recv, blk, f]
    return send, recv, expect, lambda: comm.Reduce_scatter_block(sspec, rspec, mpi_sum)


@register("reduce_scatter_tensor")
def reduce_scatter_tensor(ctx: Ctx) -> Timed:
    send, recv, expect, raw = _reduce_scatter(ctx)
    s, r, op = ctx.tensor(send), ctx.tensor(recv), ctx.dist.reduce_scatter_tensor
    return _timed(ctx, lambda: op(r, s), recv, expect, raw)


@register("reduce_scatter(list of chunks)")
def reduce_scatter_list(ctx: Ctx) -> Timed:
    send, recv, expect, raw = _reduce_scatter(ctx)
    sl, r, op = ctx.chunks(ctx.tensor(send)), ctx.tensor(recv), ctx.dist.reduce_scatter
    return _timed(ctx, lambda: op(r, sl), recv, expect, raw, list_len=ctx.ranks)


def _gathered(ctx: Ctx) -> tuple[np.ndarray, np.ndarray, int, Expect]:
    """all_gather's buffers: rank j sends j's; everyone (or the root) gets them in order."""
    p, rank = ctx.ranks, ctx.rank
    n = ctx.elems(p)
    blk = n // p
    send = ctx.array("send", lambda: np.full(blk, rank, F32))
    recv = ctx.array("recv", lambda: np.empty(n, F32))
    expect = lambda: ctx.array("expect", lambda: np.repeat(np.arange(p, dtype=F32), blk))  # noqa: E731
    return send, recv, blk, expect


@register("all_gather_into_tensor")
def all_gather_into_tensor(ctx: Ctx) -> Timed:
    send, recv, blk, expect = _gathered(ctx)
    s, r, op = ctx.tensor(send), ctx.tensor(recv), ctx.dist.all_gather_into_tensor
    comm, sspec, rspec = ctx.comm, [send, blk, ctx.MPI.FLOAT], [recv, blk, ctx.MPI.FLOAT]
    return _timed(ctx, lambda: op(r, s), recv, expect, lambda: comm.Allgather(sspec, rspec))


@register("all_gather(list of chunks)")
def all_gather_list(ctx: Ctx) -> Timed:
    send, recv, blk, expect = _gathered(ctx)
    s, rl, op = ctx.tensor(send), ctx.chunks(ctx.tensor(recv)), ctx.dist.all_gather
    comm, sspec, rspec = ctx.comm, [send, blk, ctx.MPI.FLOAT], [recv, blk, ctx.MPI.FLOAT]
    return _timed(ctx, lambda: op(rl, s), recv, expect, lambda: comm.Allgather(sspec, rspec),
                  list_len=ctx.ranks)


@register("all_reduce")
def all_reduce(ctx: Ctx) -> Timed:
    # in place on both sides: values grow by p each call while timing; the check starts
    # from freshly filled memory
    n, MPI = ctx.elems(), ctx.MPI
    buf = ctx.array("buf", lambda: np.ones(n, F32))
    x, op, comm, spec = ctx.tensor(buf), ctx.dist.all_reduce, ctx.comm, [buf, MPI.FLOAT]
    want = np.full(n, ctx.ranks, F32)
    return _timed(ctx, lambda: op(x), buf, lambda: want,
                  lambda: comm.Allreduce(MPI.IN_PLACE, spec, MPI.SUM), fill=1.0)


@register("broadcast")
def broadcast(ctx: Ctx) -> Timed:
    # the root holds 7s; the check resets the others to 0 first
    n, MPI = ctx.elems(), ctx.MPI
    buf = ctx.array("buf", lambda: np.full(n, 7.0, F32))
    x, op, comm, spec = ctx.tensor(buf), ctx.dist.broadcast, ctx.comm, [buf, MPI.FLOAT]
    want = np.full(n, 7.0, F32)
    return _timed(ctx, lambda: op(x, src=0), buf, lambda: want,
                  lambda: comm.Bcast(spec, root=0), fill=7.0 if ctx.rank == 0 else 0.0)


@register("reduce")
def reduce(ctx: Ctx) -> Timed:
    # in place on the root, as torch's reduce is; values grow on the root while timing.
    # Only the root's result is checked: torch leaves the others' unspecified (gloo uses
    # them as scratch)
    n, MPI, root = ctx.elems(), ctx.MPI, ctx.rank == 0
    buf = ctx.array("buf", lambda: np.ones(n, F32))
    x, op, comm, spec = ctx.tensor(buf), ctx.dist.reduce, ctx.comm, [buf, MPI.FLOAT]
    want = np.full(n, ctx.ranks, F32) if root else None
    send = MPI.IN_PLACE if root else spec
    recv = spec if root else None
    return _timed(ctx, lambda: op(x, dst=0), buf, lambda: want,
                  lambda: comm.Reduce(send, recv, MPI.SUM, root=0), fill=1.0)


@register("gather")
def gather(ctx: Ctx) -> Timed:
    send, recv, blk, expect = _gathered(ctx)
    root = ctx.rank == 0
    s, op = ctx.tensor(send), ctx.dist.gather
    rl = ctx.chunks(ctx.tensor(recv)) if root else None
    comm, sspec = ctx.comm, [send, blk, ctx.MPI.FLOAT]
    rspec = [recv, blk, ctx.MPI.FLOAT] if root else None
    return _timed(ctx, lambda: op(s, rl, dst=0), recv, expect if root else lambda: None,
                  lambda: comm.Gather(sspec, rspec, root=0))


@register("scatter")
def scatter(ctx: Ctx) -> Timed:
    p, rank, root = ctx.ranks, ctx.rank, ctx.rank == 0
    blk = ctx.elems(p) // p
    # the root's send holds block j for rank j
    send = ctx.array("send", lambda: np.repeat(np.arange(p, dtype=F32), blk))
    recv = ctx.array("recv", lambda: np.empty(blk, F32))
    r, op = ctx.tensor(recv), ctx.dist.scatter
    sl = ctx.chunks(ctx.tensor(send)) if root else None
    comm, rspec = ctx.comm, [recv, blk, ctx.MPI.FLOAT]
    sspec = [send, blk, ctx.MPI.FLOAT] if root else None
    want = np.full(blk, rank, F32)
    return _timed(ctx, lambda: op(r, sl, src=0), recv, lambda: want,
                  lambda: comm.Scatter(sspec, rspec, root=0))
