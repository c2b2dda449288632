"""broadcast, gather, scatter (even and uneven), with src/dst and group_src/group_dst."""

from __future__ import annotations

import numpy as np
import pytest
from _reference import MOVE_DTYPES, assert_equal, block, empty, skip_unsupported, to_np, to_xp

import mpicoll as dist


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
def test_broadcast(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    root = size - 1
    t = to_xp(block(rank, 0, 3, 2, dtype), dtype, xp)
    dist.broadcast(t, src=root)
    assert_equal(t, to_np(to_xp(block(root, 0, 3, 2, dtype), dtype, xp)), dtype)


def test_broadcast_group_src_async_non_contiguous(xp, rank, size):
    base = to_xp(np.full((3, 4), rank, np.int32), "int32", xp)
    t = base[:, ::2]
    work = dist.broadcast(t, group_src=0, async_op=True)
    work.wait()
    assert_equal(t, np.zeros((3, 2), np.int32), "int32")
    assert_equal(base[:, 1::2], np.full((3, 2), rank, np.int32), "int32")  # untouched


def test_broadcast_readonly_source_is_fine(rank, size):
    a = np.arange(4.0) if rank == 0 else np.zeros(4)
    if rank == 0:
        a.flags.writeable = False
    dist.broadcast(a, src=0)
    np.testing.assert_array_equal(a, np.arange(4.0))


@pytest.mark.parametrize("dtype", ["int64", "bfloat16", "complex64"])
def test_gather_uneven(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    root = 0
    rows = [(r + 1) % 3 for r in range(size)]
    mine = to_xp(block(rank, 5, rows[rank], 2, dtype), dtype, xp)
    if rank == root:
        outs = [empty(xp, (rows[r], 2), dtype) for r in range(size)]
        dist.gather(mine, outs, dst=root)
        for r, o in enumerate(outs):
            assert_equal(o, to_np(to_xp(block(r, 5, rows[r], 2, dtype), dtype, xp)), dtype)
    else:
        assert dist.gather(mine, dst=root) is None


def test_gather_default_dst_is_rank0_async(xp, rank, size):
    outs = [empty(xp, (2,), "float32") for _ in range(size)] if rank == 0 else None
    work = dist.gather(to_xp(np.full(2, rank, np.float32), "float32", xp), outs, async_op=True)
    work.wait()
    if rank == 0:
        for r, o in enumerate(outs):
            assert_equal(o, np.full(2, r, np.float32), "float32")


@pytest.mark.parametrize("dtype", ["uint8", "float16", "bool"])
def test_scatter_uneven(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    root = size - 1
    rows = [r % 3 for r in range(size)]
    out = empty(xp, (rows[rank], 2), dtype)
    if rank == root:
        ins = [to_xp(block(root, r, rows[r], 2, dtype), dtype, xp) for r in range(size)]
        dist.scatter(out, ins, src=root)
    else:
        dist.scatter(out, None, src=root)
    assert_equal(out, to_np(to_xp(block(root, rank, rows[rank], 2, dtype), dtype, xp)), dtype)


def test_scatter_chunked_async(rank, size):
    import torch

    out = torch.empty(2, dtype=torch.int64)
    src = list(torch.arange(size * 2).chunk(size)) if rank == 0 else []
    work = dist.scatter(out, src, src=0, async_op=True)
    work.wait()
    assert out.tolist() == [rank * 2, rank * 2 + 1]
