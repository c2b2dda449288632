"""mpicoll.functional: new arrays of the input's framework; negotiated sizes; JAX."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from _reference import to_np

import mpicoll as dist
import mpicoll.functional as F

FRAMEWORKS = ["numpy", "torch", "jax", "paddle"]


@pytest.fixture(params=FRAMEWORKS)
def fx(request):
    name = request.param
    if name == "numpy":
        return "numpy", lambda a: np.asarray(a)
    mod = importlib.import_module(name)  # all four are installed: a failure, never a skip
    if name == "torch":
        return name, lambda a: mod.from_numpy(np.ascontiguousarray(a))
    if name == "jax":
        import jax.numpy as jnp

        return name, lambda a: jnp.asarray(a)
    return name, lambda a: mod.to_tensor(np.ascontiguousarray(a))


def _np(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray)
                      else x)


def _same_framework(x, name):
    assert type(x).__module__.split(".")[0] in {"numpy": ("numpy",), "torch": ("torch",),
                                               "jax": ("jax", "jaxlib"),
                                               "paddle": ("paddle",)}[name]


def test_all_reduce_returns_new_array(fx, rank, size):
    name, make = fx
    x = make(np.arange(4, dtype=np.float32) + rank)
    y = F.all_reduce(x)
    _same_framework(y, name)
    np.testing.assert_array_equal(_np(y), sum(np.arange(4.0) + r for r in range(size)))
    np.testing.assert_array_equal(_np(x), np.arange(4.0) + rank)  # input untouched


def test_all_to_all_single_negotiates_receive_sizes(fx, rank, size):
    name, make = fx
    send = [(rank + j) % 3 for j in range(size)]  # rows rank sends to j
    inp = np.concatenate([np.full((send[j], 2), 10 * rank + j, np.int64) for j in range(size)])
    out, recv = F.all_to_all_single(make(inp), input_split_sizes=send)
    _same_framework(out, name)
    assert recv == [(i + rank) % 3 for i in range(size)]
    exp = np.concatenate([np.full(((i + rank) % 3, 2), 10 * i + rank, np.int64)
                          for i in range(size)]).reshape(-1, 2)
    np.testing.assert_array_equal(_np(out), exp)


def test_all_to_all_single_even(fx, rank, size):
    name, make = fx
    out = F.all_to_all_single(make(np.arange(size, dtype=np.float64) + 100 * rank))
    np.testing.assert_array_equal(_np(out), [100.0 * i + rank for i in range(size)])


def test_all_gather_uneven_negotiated(fx, rank, size):
    name, make = fx
    outs = F.all_gather(make(np.full((rank + 1, 3), rank, np.int32)))
    assert len(outs) == size
    for r, o in enumerate(outs):
        _same_framework(o, name)
        np.testing.assert_array_equal(_np(o), np.full((r + 1, 3), r, np.int32))


def test_all_gather_into_tensor_and_reduce_scatter(fx, rank, size):
    name, make = fx
    g = F.all_gather_into_tensor(make(np.array([rank, -rank], np.float32)))
    np.testing.assert_array_equal(_np(g), np.array([[r, -r] for r in range(size)]).ravel())
    st = F.all_gather_into_tensor(make(np.array([rank, -rank], np.float32)), stacked=True)
    _same_framework(st, name)
    np.testing.assert_array_equal(_np(st), np.array([[r, -r] for r in range(size)]))
    rs = F.reduce_scatter_tensor(make(np.arange(size * 2, dtype=np.float32)))
    np.testing.assert_array_equal(_np(rs), size * np.arange(rank * 2, rank * 2 + 2))


def test_all_to_all_list_negotiated_shapes(fx, rank, size):
    name, make = fx
    ins = [make(np.full((j + 1,), rank * 10 + j, np.int64)) for j in range(size)]
    outs = F.all_to_all(ins)
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(_np(o), np.full((rank + 1,), i * 10 + rank))


def test_broadcast_and_reduce(fx, rank, size):
    name, make = fx
    b = F.broadcast(make(np.full(3, float(rank))), src=0)
    np.testing.assert_array_equal(_np(b), np.zeros(3))
    r = F.reduce(make(np.full(2, rank + 1.0)), dst=0, op=dist.ReduceOp.MAX)
    if rank == 0:
        np.testing.assert_array_equal(_np(r), np.full(2, float(size)))


def test_jax_in_place_output_refused_with_the_fix(rank, size):
    import jax.numpy as jnp
    x = jnp.ones(4)
    with pytest.raises(BufferError, match=r"all_reduce: tensor is a JAX array, which is "
                                          r"immutable.*mpicoll.functional.all_reduce"):
        dist.all_reduce(x)
    # as an input it is fine everywhere
    out = np.zeros(4 * size, np.float32)
    dist.all_gather_into_tensor(out, jnp.arange(4, dtype=jnp.float32) + rank)
    np.testing.assert_array_equal(out, np.concatenate([np.arange(4.0) + r
                                                       for r in range(size)]))


def test_jax_bfloat16_functional(rank, size):
    import jax.numpy as jnp
    y = F.all_reduce(jnp.full((3,), 1.5, dtype=jnp.bfloat16))
    assert y.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(y, dtype=np.float32), np.full(3, 1.5 * size))


def test_mixed_frameworks_in_one_job(rank, size):
    import torch

    # even ranks use torch, odd ranks numpy: the bytes on the wire are the same
    x = np.arange(3, dtype=np.float64) * (rank + 1)
    t = torch.from_numpy(x.copy()) if rank % 2 == 0 else x.copy()
    dist.all_reduce(t)
    np.testing.assert_array_equal(to_np(t) if rank % 2 == 0 else t,
                                  np.arange(3.0) * sum(r + 1 for r in range(size)))

