"""reduce_scatter (list, even and uneven) and reduce_scatter_tensor.

Every test runs on every framework of the registry (tests/_frameworks.py); the ones that
only read their inputs from a framework run on JAX too (``xin``).
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import ALL_DTYPES, assert_equal, reduce_ref, to_np, valid_ops, values

import mpicoll as dist

CASES = [(d, op) for d in ALL_DTYPES for op in valid_ops(d)
         if op in ("SUM", "AVG", "MAX", "BXOR", "PRODUCT")]


@pytest.mark.parametrize(("xin", "dtype", "op"), frameworks.cross(CASES, inputs=True))
@pytest.mark.parametrize("layout", ["concat", "stacked"])
def test_reduce_scatter_tensor(xin, dtype, op, layout, rank, size, group):
    xo = xin.output(dtype)
    shape = (size, 2, 3) if layout == "stacked" else (size * 2, 3)
    inp = xin.tensor(values(dtype, shape, rank), dtype)
    before = to_np(inp)
    out = xo.empty((2, 3), dtype)
    dist.reduce_scatter_tensor(out, inp, op=getattr(dist.ReduceOp, op), group=group)
    full = reduce_ref([values(dtype, shape, r) for r in range(size)], op, dtype)
    exp = full.reshape(size, 2, 3)[rank]
    assert_equal(out, exp, dtype, approx=op == "AVG" and "float16" not in dtype)
    np.testing.assert_array_equal(to_np(inp), before)  # input never modified


@pytest.mark.parametrize("shape", ["flat", "other"])
def test_reduce_scatter_tensor_any_shape_of_the_count(xin, shape, rank, size, group):
    """As NCCL: only the count is checked; rank r's block is the r-th run of the output's
    count in the input's memory order."""
    xo = xin.output("float32")
    ishape = (size * 6,) if shape == "flat" else (3, 2 * size)
    inp = xin.tensor(values("float32", ishape, rank), "float32")
    out = xo.empty((2, 3) if shape == "flat" else (6,), "float32")
    dist.reduce_scatter_tensor(out, inp, group=group)
    full = reduce_ref([values("float32", ishape, r) for r in range(size)], "SUM", "float32")
    assert_equal(out, full.reshape(-1)[rank * 6:(rank + 1) * 6].reshape(out.shape), "float32")


def test_reduce_scatter_single_alias(xin, rank, size):
    # on WORLD (group=None): the default group's path
    out = xin.output().empty((1,), "int32")
    dist.reduce_scatter_single(out, xin.tensor(np.arange(size) + rank, "int32"))
    assert_equal(out, np.array([sum(rank + r for r in range(size))]), "int32")


def test_reduce_scatter_seed_style_scalars(xin, rank, size, group):
    # 0-d tensors, as in the torch seed
    output = xin.output().tensor(np.array(0), "int32")
    input_list = [xin.tensor(np.array(v), "int32") for v in range(size)]
    dist.reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=group)
    assert to_np(output).shape == ()
    assert to_np(output) == rank * size


@pytest.mark.parametrize(("xin", "dtype"),
                         frameworks.cross(["float32", "bfloat16", "int64", "bool"],
                                          inputs=True))
def test_reduce_scatter_list_uneven(xin, dtype, rank, size, group):
    xo = xin.output(dtype)
    sizes = [(j % 3) + 1 if j != 1 else 0 for j in range(size)]
    op = "SUM" if dtype != "bool" else "BOR"
    ins = [xin.tensor(values(dtype, (sizes[j],), rank, salt=j), dtype) for j in range(size)]
    out = xo.empty((sizes[rank],), dtype)
    dist.reduce_scatter(out, ins, op=getattr(dist.ReduceOp, op), group=group)
    exp = reduce_ref([values(dtype, (sizes[rank],), r, salt=rank) for r in range(size)], op,
                     dtype)
    assert_equal(out, exp, dtype)


def test_reduce_scatter_list_chunked_async(xp, rank, size, group):
    inp = xp.tensor(np.arange(size * 3) * (rank + 1.0), "float64")
    out = xp.empty((3,), "float64")
    work = dist.reduce_scatter(out, xp.pieces(inp, [3] * size), op=dist.ReduceOp.AVG,
                               group=group, async_op=True)
    work.wait()
    scale = sum(r + 1 for r in range(size)) / size
    np.testing.assert_allclose(to_np(out), np.arange(rank * 3, rank * 3 + 3) * scale)
    np.testing.assert_array_equal(to_np(inp), np.arange(size * 3) * (rank + 1.0))


def test_reduce_scatter_tensor_non_contiguous(xp, rank, size, group):
    base = xp.tensor(values("float64", (3, size * 2), rank), "float64")
    inp = xp.transpose(base)  # (size*2, 3), column-major
    obase = xp.empty((3, 2), "float64")
    out = xp.transpose(obase)
    dist.reduce_scatter_tensor(out, inp, group=group)
    full = sum(values("float64", (3, size * 2), r) for r in range(size)).T
    assert_equal(out, full[rank * 2:rank * 2 + 2], "float64")
    assert_equal(obase, full[rank * 2:rank * 2 + 2].T, "float64")  # written through


@pytest.mark.parametrize("nbytes", [64 << 10, 1 << 20, 4 << 20])  # around MPICH's choice
def test_sizes_around_the_call_choice(nbytes, rank, size, group):
    # from 256 KiB to 3 MiB of input MPICH gets Ireduce_scatter with equal counts instead of
    # Ireduce_scatter_block (_collectives/_choices.py): the same results either side, by the
    # general path (first call), the quick path (second) and the list form
    n = nbytes // 4 // size
    inputs = [values("float32", (n * size,), r) for r in range(size)]
    want = reduce_ref(inputs, "SUM", "float32")[rank * n:(rank + 1) * n]
    for _ in range(2):
        out = np.empty(n, np.float32)
        dist.reduce_scatter_tensor(out, inputs[rank].copy(), group=group)
        assert_equal(out, want, "float32")
        out = np.empty(n, np.float32)
        dist.reduce_scatter(out, np.split(inputs[rank].copy(), size), group=group)
        assert_equal(out, want, "float32")
