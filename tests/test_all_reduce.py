"""all_reduce, reduce: every dtype x every valid ReduceOp against a numpy reference,
on every framework of the registry (tests/_frameworks.py)."""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import ALL_DTYPES, assert_equal, reduce_ref, to_np, valid_ops, values

import mpicoll as dist
from mpicoll.errors import ArgumentValueError

CASES = [(d, op) for d in ALL_DTYPES for op in valid_ops(d)]


@pytest.mark.parametrize(("xp", "dtype", "op"), frameworks.cross(CASES))
def test_all_reduce(xp, dtype, op, rank, size, group):
    shape = (3, 5)
    t = xp.tensor(values(dtype, shape, rank), dtype)
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=group)
    expected = reduce_ref([values(dtype, shape, r) for r in range(size)], op, dtype)
    assert_equal(t, expected, dtype, approx=op == "AVG" and "float16" not in dtype)


@pytest.mark.parametrize(("xp", "dtype"),
                         frameworks.cross(["float32", "float64", "float16", "bfloat16",
                                           "complex64"]))
def test_all_reduce_premul_sum(xp, dtype, rank, size, group):
    x = values(dtype, (7,), rank)
    out = xp.tensor(x, dtype)
    dist.all_reduce(out, op=dist.ReduceOp.premul_sum(2.5), group=group)
    ref = sum(np.asarray(values(dtype, (7,), r), np.complex128 if "complex" in dtype
                         else np.float64) * 2.5 for r in range(size))
    tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(to_np(out), ref, rtol=tol)


@pytest.mark.parametrize(("xp", "dtype"),
                         frameworks.cross(["float32", "float64", "float16", "bfloat16"]))
def test_reduce_premul_sum(xp, dtype, rank, size, group):
    # a few elements: as direct messages on 2 to 8 ranks (the pre-scaled copy sent, and
    # reduced on the root where its result goes), MPI's Reduce elsewhere
    root = size - 1
    t = xp.tensor(values(dtype, (7,), rank), dtype)
    before = xp.to_numpy(t).copy()
    dist.reduce(t, dst=root, op=dist.ReduceOp.premul_sum(2.5), group=group)
    if rank == root:
        ref = sum(np.asarray(values(dtype, (7,), r), np.float64) * 2.5 for r in range(size))
        tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
        np.testing.assert_allclose(to_np(t), ref, rtol=tol)
    else:
        np.testing.assert_array_equal(xp.to_numpy(t), before)  # only read


def test_premul_sum_never_modifies_input_of_reduce_scatter(xin, rank, size, group):
    xo = xin.output("float32")
    x = values("float32", (size * 2,), rank)
    inp = xin.tensor(x, "float32")
    out = xo.tensor(np.zeros(2, np.float32), "float32")
    dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.premul_sum(3.0), group=group)
    np.testing.assert_array_equal(to_np(inp), x)
    ref = sum(values("float32", (size * 2,), r) for r in range(size)) * 3.0
    np.testing.assert_allclose(to_np(out), ref[rank * 2:rank * 2 + 2], rtol=1e-6)


def test_torch_reduce_op_objects_accepted(xp, rank, size, group):
    # torch's own ReduceOp objects, whatever framework holds the tensor
    import torch.distributed as tdist

    t = xp.full((3,), rank + 1, "float32")
    dist.all_reduce(t, op=tdist.ReduceOp.MAX, group=group)
    assert_equal(t, np.full(3, size, np.float32), "float32")
    t = xp.full((3,), 1, "float32")
    premul = tdist._make_nccl_premul_sum(2.0)
    if not hasattr(premul, "factor"):  # torch 2.11 keeps the factor from Python
        with pytest.raises(ArgumentValueError, match="op PREMUL_SUM needs a factor"):
            dist.all_reduce(t, op=premul, group=group)
        assert_equal(t, np.full(3, 1, np.float32), "float32")
        return
    dist.all_reduce(t, op=premul, group=group)
    assert_equal(t, np.full(3, 2.0 * size, np.float32), "float32")


@pytest.mark.parametrize(("xp", "dtype", "op"),
                         frameworks.cross([("float32", "SUM"), ("int64", "MAX"),
                                           ("bfloat16", "SUM"), ("float16", "AVG"),
                                           ("bool", "BAND")]))
def test_reduce(xp, dtype, op, rank, size):
    # on WORLD (group=None): the default group's path
    root = size - 1
    x = values(dtype, (4, 2), rank)
    t = xp.tensor(x, dtype)
    dist.reduce(t, dst=root, op=getattr(dist.ReduceOp, op))
    if rank == root:
        expected = reduce_ref([values(dtype, (4, 2), r) for r in range(size)], op, dtype)
        assert_equal(t, expected, dtype, approx=op == "AVG" and dtype != "float16")
    else:
        assert_equal(t, xp.to_numpy(xp.tensor(x, dtype)), dtype)  # unchanged


# 128 KiB of float32: past MPI's small-message algorithms
@pytest.mark.parametrize(("xp", "dtype", "op"),
                         frameworks.cross([("float32", "SUM"), ("bfloat16", "SUM"),
                                           ("float16", "AVG"), ("int64", "MAX"),
                                           ("bool", "BAND")]))
@pytest.mark.parametrize("async_op", [False, True])
def test_reduce_large(xp, dtype, op, async_op, rank, size, group):
    root = size - 1
    shape = (512, 64)
    x = values(dtype, shape, rank)
    t = xp.tensor(x, dtype)
    work = dist.reduce(t, dst=root, op=getattr(dist.ReduceOp, op), group=group,
                       async_op=async_op)
    if async_op:
        work.wait()
    if rank == root:
        expected = reduce_ref([values(dtype, shape, r) for r in range(size)], op, dtype)
        assert_equal(t, expected, dtype, approx=op == "AVG" and dtype != "float16")
    else:
        assert_equal(t, xp.to_numpy(xp.tensor(x, dtype)), dtype)  # unchanged


def test_reduce_large_premul_sum_into_transposed_view(xp, rank, size, group):
    base = xp.tensor(values("float64", (64, 256), rank), "float64")
    t = xp.transpose(base)
    dist.reduce(t, dst=0, op=dist.ReduceOp.premul_sum(0.5), group=group)
    if rank == 0:
        ref = 0.5 * sum(values("float64", (64, 256), r) for r in range(size))
        assert_equal(base, ref, "float64")
    else:
        assert_equal(base, values("float64", (64, 256), rank), "float64")


def test_all_reduce_non_contiguous(xp, rank, size, group):
    base = xp.tensor(values("float64", (4, 6), rank), "float64")
    t = xp.transpose(base)
    dist.all_reduce(t, group=group)
    ref = sum(values("float64", (4, 6), r) for r in range(size)).T
    assert_equal(t, ref, "float64")
    # the transposed view wrote through to its base
    assert_equal(base, ref.T, "float64")


def test_all_reduce_async(xp, rank, size, group):
    t = xp.tensor(values("int32", (10,), rank), "int32")
    work = dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group, async_op=True)
    assert work is not None
    assert work.wait() is True
    assert work.is_completed() and work.is_success() and work.exception() is None
    assert_equal(t, reduce_ref([values("int32", (10,), r) for r in range(size)], "SUM",
                               "int32"), "int32")
    # at world size 1 a SUM leaves t as it was: a scaled sum shows that the Work wrote
    f = xp.tensor(values("float64", (10,), rank), "float64")
    work = dist.all_reduce(f, op=dist.ReduceOp.premul_sum(2.0), group=group, async_op=True)
    assert work.wait() is True
    assert_equal(f, 2.0 * sum(np.asarray(values("float64", (10,), r)) for r in range(size)),
                 "float64")


@pytest.mark.parametrize("xp", [fw for fw in frameworks.writable() if fw.holds("bfloat16")],
                         ids=lambda fw: fw.name)
def test_all_reduce_async_avg_bf16_written_at_completion(xp, rank, size, group):
    x = values("bfloat16", (6,), rank)
    t = xp.tensor(x, "bfloat16")
    before = xp.to_numpy(t)
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group, async_op=True)
    # results appear only once the Work completes: the post-step has not run yet
    np.testing.assert_array_equal(xp.to_numpy(t), before)
    work.wait()
    expected = reduce_ref([values("bfloat16", (6,), r) for r in range(size)], "AVG",
                          "bfloat16")
    np.testing.assert_allclose(xp.to_numpy(t), expected, rtol=2**-7)


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8"])
def test_integer_sum_wraps_like_numpy(xp, dtype, rank, size, group):
    # long enough for vectorised reduction kernels (Open MPI's AVX ones saturated)
    info = np.iinfo(dtype)
    x = np.full(1024, info.max - 3, dtype)
    t = xp.tensor(x, dtype)
    dist.all_reduce(t, group=group)
    expected = np.full(1024, info.max - 3, dtype)
    for _ in range(size - 1):
        expected = expected + x  # numpy wraps modulo 2**bits
    assert_equal(t, expected, dtype)
