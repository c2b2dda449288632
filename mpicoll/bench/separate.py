"""The list forms on separately allocated tensors (``[torch.empty(n) for _ in range(P)]``,
the pattern of torch's own docs), beside the ``.chunk()`` cases.

Raw is what an mpi4py program does with such a list: pack it into one buffer (made
once), make the one call, unpack; mpicoll is timed on the same tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .registry import Ctx, Timed, register

F32 = np.float32


def _separate(ctx: Ctx, name: str, blk: int, make: Callable[[int], np.ndarray]) -> list[Any]:
    """``ranks`` arrays of ``blk`` elements, each allocated on its own (``make(j)``)."""
    key = f"{name}:separate"
    if key not in ctx.memory:
        ctx.memory[key] = [make(j) for j in range(ctx.ranks)]  # type: ignore[assignment]
    return ctx.memory[key]  # type: ignore[return-value]


def _check(call: Callable[[], Any], outs: list[np.ndarray], want: np.ndarray) -> bool:
    for o in outs:
        o[...] = -1.0
    call()
    return bool(np.array_equal(np.concatenate(outs), want))


def _raw_alltoall(ctx: Ctx, ins: list[np.ndarray], outs: list[np.ndarray],
                  blk: int) -> Callable[[], None]:
    comm, f = ctx.comm, ctx.MPI.FLOAT
    send, recv = np.empty(blk * ctx.ranks, F32), np.empty(blk * ctx.ranks, F32)
    sspec, rspec = [send, blk, f], [recv, blk, f]
    pieces = [recv[j * blk:(j + 1) * blk] for j in range(ctx.ranks)]

    def raw() -> None:
        np.concatenate(ins, out=send)
        comm.Alltoall(sspec, rspec)
        for o, p in zip(outs, pieces, strict=True):
            np.copyto(o, p)
    return raw


@register("all_to_all(list of separate tensors)")
def all_to_all_separate(ctx: Ctx) -> Timed:
    p, rank = ctx.ranks, ctx.rank
    blk = ctx.elems(p) // p
    n = blk * p
    ins = _separate(ctx, "send", blk, lambda j: np.arange(blk, dtype=F32) + rank * n + j * blk)
    outs = _separate(ctx, "recv", blk, lambda j: np.empty(blk, F32))
    want = np.concatenate([np.arange(rank * blk, (rank + 1) * blk, dtype=F32) + j * n
                           for j in range(p)])
    sl, rl, op = [ctx.tensor(a) for a in ins], [ctx.tensor(a) for a in outs], ctx.dist.all_to_all
    call = lambda: op(rl, sl)  # noqa: E731
    return Timed(call, lambda: _check(call, outs, want), _raw_alltoall(ctx, ins, outs, blk), p)


@register("all_gather(list of separate tensors)")
def all_gather_separate(ctx: Ctx) -> Timed:
    p, rank = ctx.ranks, ctx.rank
    blk = ctx.elems(p) // p
    send = ctx.array("send", lambda: np.full(blk, rank, F32))
    outs = _separate(ctx, "recv", blk, lambda j: np.empty(blk, F32))
    want = np.repeat(np.arange(p, dtype=F32), blk)
    s, rl, op = ctx.tensor(send), [ctx.tensor(a) for a in outs], ctx.dist.all_gather
    comm, f = ctx.comm, ctx.MPI.FLOAT
    recv = np.empty(blk * p, F32)
    sspec, rspec = [send, blk, f], [recv, blk, f]
    pieces = [recv[j * blk:(j + 1) * blk] for j in range(p)]

    def raw() -> None:
        comm.Allgather(sspec, rspec)
        for o, q in zip(outs, pieces, strict=True):
            np.copyto(o, q)
    call = lambda: op(rl, s)  # noqa: E731
    return Timed(call, lambda: _check(call, outs, want), raw, p)


@register("reduce_scatter(list of separate tensors)")
def reduce_scatter_separate(ctx: Ctx) -> Timed:
    p, rank = ctx.ranks, ctx.rank
    blk = ctx.elems(p) // p
    ins = _separate(ctx, "send", blk,
                    lambda j: (np.arange(blk, dtype=F32) + j * blk) % 97)
    recv = ctx.array("recv", lambda: np.empty(blk, F32))
    want = ((np.arange(blk, dtype=F32) + rank * blk) % 97) * p
    sl, r, op = [ctx.tensor(a) for a in ins], ctx.tensor(recv), ctx.dist.reduce_scatter
    comm, f, mpi_sum = ctx.comm, ctx.MPI.FLOAT, ctx.MPI.SUM
    send = np.empty(blk * p, F32)
    sspec, rspec = [send, blk, f], [recv, blk, f]

    def raw() -> None:
        np.concatenate(ins, out=send)
        comm.Reduce_scatter_block(sspec, rspec, mpi_sum)
    call = lambda: op(r, sl)  # noqa: E731
    return Timed(call, lambda: _check(call, [recv], want), raw, p)
