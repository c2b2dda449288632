"""AVG of integer tensors, as NCCL's: the sum in the integer type (wrapping), divided by
the group size and rounded toward zero, on every call that takes a ReduceOp, against a
numpy reference computed here with Python's integers (docs/dtypes.md)."""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import assert_equal

import mpicoll as dist
import mpicoll.functional as F

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
CASES = frameworks.cross(INTEGERS)


def _inputs(dtype: str, rank: int, n: int) -> np.ndarray:
    """Rank ``rank``'s values: negative ones for signed types, and values near the
    type's limits whose sum wraps."""
    info = np.iinfo(dtype)
    i = np.arange(n - 3, dtype=np.int64)
    small = ((i * 5 + rank * 3) % 17 - (8 if info.min < 0 else 0)).astype(dtype)
    big = np.array([int(info.max) - rank, int(info.min) + rank, int(info.max) // 2 + rank],
                   dtype=dtype)
    return np.concatenate([small, big])


def _expected(dtype: str, size: int, n: int) -> np.ndarray:
    width = np.iinfo(dtype).bits
    signed = np.iinfo(dtype).min < 0
    out = []
    for k in range(n):
        total = sum(int(_inputs(dtype, r, n)[k]) for r in range(size)) % (1 << width)
        if signed and total >= 1 << (width - 1):
            total -= 1 << width  # the sum wrapped in the dtype
        out.append(total // size if total >= 0 else -(-total // size))  # toward zero
    return np.array(out, dtype=dtype)


@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_all_reduce_and_reduce(xp, dtype, rank, size, group):
    n = 12
    want = _expected(dtype, size, n)
    t = xp.tensor(_inputs(dtype, rank, n), dtype)
    dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group)
    assert_equal(t, want, dtype)
    t = xp.tensor(_inputs(dtype, rank, n), dtype)
    dist.reduce(t, dst=dist.get_global_rank(group, 0), op=dist.ReduceOp.AVG, group=group)
    if rank == 0:
        assert_equal(t, want, dtype)


@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_reduce_scatter_forms(xp, dtype, rank, size, group):
    n = 4 * size
    want = _expected(dtype, size, n)[rank * 4:(rank + 1) * 4]
    out = xp.empty((4,), dtype)
    dist.reduce_scatter_tensor(out, xp.tensor(_inputs(dtype, rank, n), dtype),
                               op=dist.ReduceOp.AVG, group=group)
    assert_equal(out, want, dtype)
    mine = _inputs(dtype, rank, n)
    chunks = [xp.tensor(mine[j * 4:(j + 1) * 4], dtype) for j in range(size)]
    out = xp.empty((4,), dtype)
    dist.reduce_scatter(out, chunks, op=dist.ReduceOp.AVG, group=group)
    assert_equal(out, want, dtype)


def test_functional_and_async(rank, size, group):
    x = _inputs("int64", rank, 9)
    assert_equal(F.all_reduce(x, op=dist.ReduceOp.AVG, group=group), _expected("int64", size, 9),
                 "int64")
    t = x.copy()
    dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group, async_op=True).wait()
    assert_equal(t, _expected("int64", size, 9), "int64")


def test_bool_avg_is_refused(group):
    t = np.array([True, False])
    with pytest.raises(ValueError, match="op AVG needs a numeric dtype, got bool"):
        dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group)
    assert t.tolist() == [True, False]
