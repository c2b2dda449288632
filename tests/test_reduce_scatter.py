"""reduce_scatter (list, even and uneven) and reduce_scatter_tensor."""

from __future__ import annotations

import numpy as np
import pytest
from _reference import (
    ALL_DTYPES,
    assert_equal,
    empty,
    reduce_ref,
    skip_unsupported,
    to_np,
    to_xp,
    valid_ops,
    values,
)

import mpicoll as dist

CASES = [(d, op) for d in ALL_DTYPES for op in valid_ops(d)
         if op in ("SUM", "AVG", "MAX", "BXOR", "PRODUCT")]


@pytest.mark.parametrize(("dtype", "op"), CASES)
@pytest.mark.parametrize("layout", ["concat", "stacked"])
def test_reduce_scatter_tensor(xp, dtype, op, layout, rank, size):
    skip_unsupported(xp, dtype)
    shape = (size, 2, 3) if layout == "stacked" else (size * 2, 3)
    inp = to_xp(values(dtype, shape, rank), dtype, xp)
    before = to_np(inp).copy()
    out = empty(xp, (2, 3), dtype)
    dist.reduce_scatter_tensor(out, inp, op=getattr(dist.ReduceOp, op))
    full = reduce_ref([values(dtype, shape, r) for r in range(size)], op, dtype)
    exp = full.reshape(size, 2, 3)[rank]
    assert_equal(out, exp, dtype, approx=op == "AVG" and "float16" not in dtype)
    np.testing.assert_array_equal(to_np(inp), before)  # input never modified


def test_reduce_scatter_single_alias(xp, rank, size):
    out = empty(xp, (1,), "int64")
    dist.reduce_scatter_single(out, to_xp(np.arange(size) + rank, "int64", xp))
    assert_equal(out, np.array([sum(rank_ + r for r in range(size)) for rank_ in [rank]]),
                 "int64")


def test_reduce_scatter_seed_style_scalars(rank, size):
    import torch

    output = torch.tensor(0)
    input_list = [torch.tensor(v) for v in range(size)]
    dist.reduce_scatter(output, input_list, op=dist.ReduceOp.SUM)
    assert output.item() == rank * size


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_reduce_scatter_list_uneven(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    sizes = [(j % 3) + 1 if j != 1 else 0 for j in range(size)]
    op = "SUM" if dtype != "bool" else "BOR"
    ins = [to_xp(values(dtype, (sizes[j],), rank, salt=j), dtype, xp) for j in range(size)]
    out = empty(xp, (sizes[rank],), dtype)
    dist.reduce_scatter(out, ins, op=getattr(dist.ReduceOp, op))
    exp = reduce_ref([values(dtype, (sizes[rank],), r, salt=rank) for r in range(size)], op,
                     dtype)
    assert_equal(out, exp, dtype)


def test_reduce_scatter_list_chunked_async(rank, size):
    import torch

    inp = torch.arange(size * 3, dtype=torch.float64) * (rank + 1)
    out = torch.empty(3, dtype=torch.float64)
    work = dist.reduce_scatter(out, list(inp.chunk(size)), op=dist.ReduceOp.AVG, async_op=True)
    work.wait()
    scale = sum(r + 1 for r in range(size)) / size
    exp = torch.arange(rank * 3, rank * 3 + 3, dtype=torch.float64) * scale
    assert torch.allclose(out, exp)


def test_reduce_scatter_tensor_non_contiguous(xp, rank, size):
    base = to_xp(values("float64", (3, size * 2), rank), "float64", xp)
    inp = base.T if xp is np else base.t()  # (size*2, 3), column-major
    obase = empty(xp, (3, 2), "float64")
    out = obase.T if xp is np else obase.t()
    dist.reduce_scatter_tensor(out, inp)
    full = sum(values("float64", (3, size * 2), r) for r in range(size)).T
    assert_equal(out, full[rank * 2:rank * 2 + 2], "float64")
