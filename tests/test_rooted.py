"""broadcast, gather, scatter (even and uneven), with src/dst and group_src/group_dst.

Every test runs on every framework of the registry (tests/_frameworks.py); the ones that
only read their inputs from a framework run on JAX too (``xin``).
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import MOVE_DTYPES, assert_equal, block, to_np

import mpicoll as dist


@pytest.mark.parametrize(("xp", "dtype"), frameworks.cross(MOVE_DTYPES))
def test_broadcast(xp, dtype, rank, size, group):
    root = size - 1
    t = xp.tensor(block(rank, 0, 3, 2, dtype), dtype)
    dist.broadcast(t, src=root, group=group)
    assert_equal(t, xp.to_numpy(xp.tensor(block(root, 0, 3, 2, dtype), dtype)), dtype)


def test_broadcast_group_src_async_non_contiguous(xp, rank, size, group):
    base = xp.full((3, 4), rank, "int32")
    t = base[:, ::2]
    work = dist.broadcast(t, group_src=0, group=group, async_op=True)
    work.wait()
    assert_equal(t, np.zeros((3, 2), np.int32), "int32")
    assert_equal(base[:, 1::2], np.full((3, 2), rank, np.int32), "int32")  # untouched


def test_broadcast_readonly_source_is_fine(xin, rank, size):
    # on WORLD (group=None); the source only reads: a read-only numpy view or a JAX array
    # may be the source, while the other ranks receive into writable tensors
    if rank == 0:
        a = xin.tensor(np.arange(4.0), "float32")
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
    else:
        a = xin.output().full((4,), 0, "float32")
    dist.broadcast(a, src=0)
    np.testing.assert_array_equal(to_np(a), np.arange(4.0))


@pytest.mark.parametrize(("xin", "dtype"),
                         frameworks.cross(["int64", "bfloat16", "complex64"], inputs=True))
def test_gather_uneven(xin, dtype, rank, size, group):
    xo = xin.output(dtype)
    root = 0
    rows = [(r + 1) % 3 for r in range(size)]
    mine = xin.tensor(block(rank, 5, rows[rank], 2, dtype), dtype)
    if rank == root:
        outs = [xo.empty((rows[r], 2), dtype) for r in range(size)]
        dist.gather(mine, outs, dst=root, group=group)
        for r, o in enumerate(outs):
            assert_equal(o, xo.to_numpy(xo.tensor(block(r, 5, rows[r], 2, dtype), dtype)),
                         dtype)
    else:
        assert dist.gather(mine, dst=root, group=group) is None


def test_gather_default_dst_is_rank0_async(xin, rank, size, group):
    xo = xin.output("float32")
    outs = [xo.empty((2,), "float32") for _ in range(size)] if rank == 0 else None
    work = dist.gather(xin.full((2,), rank, "float32"), outs, group=group, async_op=True)
    work.wait()
    if rank == 0:
        for r, o in enumerate(outs):
            assert_equal(o, np.full(2, r, np.float32), "float32")


@pytest.mark.parametrize(("xin", "dtype"),
                         frameworks.cross(["uint8", "float16", "bool"], inputs=True))
def test_scatter_uneven(xin, dtype, rank, size, group):
    xo = xin.output(dtype)
    root = size - 1
    rows = [r % 3 for r in range(size)]
    out = xo.empty((rows[rank], 2), dtype)
    if rank == root:
        ins = [xin.tensor(block(root, r, rows[r], 2, dtype), dtype) for r in range(size)]
        dist.scatter(out, ins, src=root, group=group)
    else:
        dist.scatter(out, None, src=root, group=group)
    assert_equal(out, xo.to_numpy(xo.tensor(block(root, rank, rows[rank], 2, dtype), dtype)),
                 dtype)


def test_scatter_chunked_async(xp, rank, size, group):
    out = xp.empty((2,), "int64")
    src = xp.pieces(xp.tensor(np.arange(size * 2), "int64"), [2] * size) if rank == 0 else []
    work = dist.scatter(out, src, src=0, group=group, async_op=True)
    work.wait()
    assert_equal(out, np.array([rank * 2, rank * 2 + 1]), "int64")
