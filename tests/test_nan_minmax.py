"""MIN and MAX keep NaN as np.minimum/np.maximum (and torch, and gloo) do, on every
floating dtype and every call that takes a ReduceOp; the same result on every rank."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import mpicoll as dist

OPS = {"MIN": np.minimum, "MAX": np.maximum}


def _inputs(size: int, n: int, dtype) -> list[np.ndarray]:
    """Rank r's input: distinct finite values, NaN at position r (and at n-1 on rank 0)."""
    xs = []
    for r in range(size):
        x = ((np.arange(n) * 7 + 3 * r) % 11 - 5).astype(np.float64)
        x[r % n] = np.nan
        if r == 0:
            x[n - 1] = np.nan
        xs.append(x.astype(dtype))
    return xs


def _reference(xs: list[np.ndarray], op: str) -> np.ndarray:
    return OPS[op].reduce(np.stack(xs), axis=0)


def _as(xp, x, dtype_name):
    if xp is np:
        return x.copy()
    import torch

    return torch.from_numpy(x.astype(np.float32)).to(getattr(torch, dtype_name))


def _back(t) -> np.ndarray:
    return t.copy() if isinstance(t, np.ndarray) else t.float().numpy()


# every floating dtype of each framework (numpy has no bfloat16)
CASES = [(fw, d) for fw in ("numpy", "torch") for d in ("float16", "bfloat16", "float32",
                                                        "float64")
         if (fw, d) != ("numpy", "bfloat16")]


@pytest.fixture(params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def case(request):
    """(the framework module, the dtype's name, the numpy dtype holding its values)."""
    fw, dtype = request.param
    xp = np if fw == "numpy" else importlib.import_module("torch")
    return xp, dtype, np.float32 if dtype == "bfloat16" else np.dtype(dtype)


@pytest.mark.parametrize("op", list(OPS))
def test_all_reduce_keeps_nan(case, op, rank, size):
    xp, dtype, np_dtype = case
    xs = _inputs(size, 8, np_dtype)
    t = _as(xp, xs[rank], dtype)
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    ref = _reference(xs, op)
    assert np.isnan(ref).sum() >= 1
    np.testing.assert_array_equal(_back(t), ref.astype(np.float32 if xp is not np else ref.dtype))


@pytest.mark.parametrize("op", list(OPS))
def test_reduce_scatter_and_reduce_keep_nan(case, op, rank, size):
    xp, dtype, np_dtype = case
    rop = getattr(dist.ReduceOp, op)
    xs = _inputs(size, 2 * size, np_dtype)
    ref = _reference(xs, op)
    out = _as(xp, np.zeros(2, np_dtype), dtype)
    dist.reduce_scatter_tensor(out, _as(xp, xs[rank], dtype), op=rop)
    np.testing.assert_array_equal(_back(out), ref[2 * rank:2 * rank + 2].astype(np.float32)
                                  if xp is not np else ref[2 * rank:2 * rank + 2])
    outs = _as(xp, np.zeros(2, np_dtype), dtype)
    chunks = [_as(xp, c, dtype) for c in np.split(xs[rank], size)]
    dist.reduce_scatter(outs, chunks, op=rop)
    np.testing.assert_array_equal(_back(outs), _back(out))
    t = _as(xp, xs[rank], dtype)
    dist.reduce(t, dst=size - 1, op=rop)
    if rank == size - 1:
        np.testing.assert_array_equal(_back(t), ref.astype(np.float32) if xp is not np else ref)


def test_async_and_paddle_keep_nan(rank, size):
    xs = _inputs(size, 4, np.float32)
    x = xs[rank].copy()
    dist.all_reduce(x, op=dist.ReduceOp.MAX, async_op=True).wait()
    np.testing.assert_array_equal(x, _reference(xs, "MAX"))
    import paddle

    import mpicoll.paddle as pdist

    p = paddle.to_tensor(xs[rank])
    pdist.all_reduce(p, op=pdist.ReduceOp.MIN)
    np.testing.assert_array_equal(p.numpy(), _reference(xs, "MIN"))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_integer_and_bool_min_max_unchanged(dtype, rank, size):
    xs = [((np.arange(6) * 5 + 3 * r) % 7).astype(dtype) for r in range(size)]
    for op in OPS:
        x = xs[rank].copy()
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
        np.testing.assert_array_equal(x, _reference(xs, op))
