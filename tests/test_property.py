"""Seeded random scenarios against a pure-numpy model of each collective.

Every rank draws the same scenario from the same seed (split sizes of the whole
world, zeros included; row shapes; dtypes; framework), runs the collective on
its own part, and checks its output against the model computed locally.
"""

from __future__ import annotations

import numpy as np
import pytest
from _reference import reduce_ref, to_np, to_xp

import mpicoll as dist

SEEDS = range(20)
DTYPES = ["int8", "uint16", "int64", "float32", "float64", "complex64", "bool", "float16"]


def _framework(rng):
    if rng.random() < 0.5:
        return np
    import torch

    return torch


def _data(seed, i, j, rows, row_shape, dtype):
    """What rank i sends rank j in scenario ``seed``: a function of (seed, i, j)."""
    n = rows * int(np.prod(row_shape, dtype=np.int64))
    v = (np.arange(n) * 7 + i * 31 + j * 17 + seed) % 97
    if dtype == "bool":
        v = v % 2
    return v.astype(dtype).reshape((rows, *row_shape))


def _scenario(seed, size):
    rng = np.random.default_rng(10_000 + seed * 16 + size)
    dtype = DTYPES[rng.integers(len(DTYPES))]
    row_shape = tuple(int(d) for d in rng.integers(0, 4, size=rng.integers(0, 3)))
    splits = rng.integers(0, 5, size=(size, size))  # splits[i][j]: rows i sends j
    splits[rng.random((size, size)) < 0.25] = 0
    return rng, dtype, row_shape, splits


@pytest.mark.parametrize("seed", SEEDS)
def test_all_to_all_single_random(seed, rank, size):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xp = _framework(rng)
    inp = np.concatenate([_data(seed, rank, j, S[rank, j], row_shape, dtype)
                          for j in range(size)])
    exp = np.concatenate([_data(seed, i, rank, S[i, rank], row_shape, dtype)
                          for i in range(size)])
    out = to_xp(np.zeros(exp.shape, dtype), dtype, xp)
    dist.all_to_all_single(out, to_xp(inp, dtype, xp), [int(S[i, rank]) for i in range(size)],
                           [int(S[rank, j]) for j in range(size)])
    np.testing.assert_array_equal(to_np(out), exp.astype(to_np(out).dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_all_to_all_list_random(seed, rank, size):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xp = _framework(rng)
    ins = [to_xp(_data(seed, rank, j, S[rank, j], row_shape, dtype), dtype, xp)
           for j in range(size)]
    exps = [_data(seed, i, rank, S[i, rank], row_shape, dtype) for i in range(size)]
    if rng.random() < 0.5:  # outputs as adjacent views of one buffer
        flat = to_xp(np.zeros(sum(e.size for e in exps), dtype), dtype, xp)
        outs, off = [], 0
        for e in exps:
            outs.append(flat[off:off + e.size].reshape(e.shape))
            off += e.size
    else:
        outs = [to_xp(np.zeros(e.shape, dtype), dtype, xp) for e in exps]
    dist.all_to_all(outs, ins)
    for o, e in zip(outs, exps):
        np.testing.assert_array_equal(to_np(o), e.astype(to_np(o).dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_reduce_scatter_list_random(seed, rank, size):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xp = _framework(rng)
    counts = S[0]  # rows of block j: the same on every rank
    op = "MAX" if dtype != "complex64" else "SUM"
    ins = [to_xp(_data(seed, rank, j, counts[j], row_shape, dtype), dtype, xp)
           for j in range(size)]
    out = to_xp(np.zeros((counts[rank], *row_shape), dtype), dtype, xp)
    dist.reduce_scatter(out, ins, op=getattr(dist.ReduceOp, op))
    exp = reduce_ref([_data(seed, i, rank, counts[rank], row_shape, dtype)
                      for i in range(size)], op, dtype)
    np.testing.assert_array_equal(to_np(out), np.asarray(exp).astype(to_np(out).dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_all_gather_list_random(seed, rank, size):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xp = _framework(rng)
    rows = S[:, 0]  # rank i contributes rows[i] rows
    outs = [to_xp(np.zeros((rows[i], *row_shape), dtype), dtype, xp) for i in range(size)]
    dist.all_gather(outs, to_xp(_data(seed, rank, 0, rows[rank], row_shape, dtype), dtype, xp))
    for i, o in enumerate(outs):
        e = _data(seed, i, 0, rows[i], row_shape, dtype)
        np.testing.assert_array_equal(to_np(o), e.astype(to_np(o).dtype))
