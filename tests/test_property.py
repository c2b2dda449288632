"""Seeded random scenarios against a pure-numpy model of each collective.

Every rank draws the same scenario from the same seed (split sizes of the whole
world, zeros included; row shapes; dtypes; the framework of the inputs and the one of
the outputs, from the registry in tests/_frameworks.py), runs the collective on its own
part, and checks its output against the model computed locally.
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import reduce_ref, to_np

import mpicoll as dist

SEEDS = range(20)
DTYPES = ["int8", "uint16", "int64", "float32", "float64", "complex64", "bool", "float16"]


def _frameworks(rng, dtype, inputs=True):
    """The scenario's framework of the inputs (JAX too, if ``inputs``) and of the outputs:
    drawn among those that hold ``dtype``; an input-only one sends to a writable one."""
    pool = [fw for fw in (frameworks.installed() if inputs else frameworks.writable())
            if fw.holds(dtype)]
    xin = pool[rng.integers(len(pool))]
    outs = [fw for fw in frameworks.writable() if fw.holds(dtype)]
    xo = xin if xin.writable and rng.random() < 0.5 else outs[rng.integers(len(outs))]
    return xin, xo


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


def _zeros(xo, shape, dtype):
    return xo.tensor(np.zeros(shape, dtype), dtype)


@pytest.mark.parametrize("seed", SEEDS)
def test_all_to_all_single_random(seed, rank, size, group):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xin, xo = _frameworks(rng, dtype)
    inp = np.concatenate([_data(seed, rank, j, S[rank, j], row_shape, dtype)
                          for j in range(size)])
    exp = np.concatenate([_data(seed, i, rank, S[i, rank], row_shape, dtype)
                          for i in range(size)])
    out = _zeros(xo, exp.shape, dtype)
    dist.all_to_all_single(out, xin.tensor(inp, dtype), [int(S[i, rank]) for i in range(size)],
                           [int(S[rank, j]) for j in range(size)], group=group)
    np.testing.assert_array_equal(to_np(out), exp.astype(to_np(out).dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_all_to_all_list_random(seed, rank, size, group):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xin, xo = _frameworks(rng, dtype)
    ins = [xin.tensor(_data(seed, rank, j, S[rank, j], row_shape, dtype), dtype)
           for j in range(size)]
    exps = [_data(seed, i, rank, S[i, rank], row_shape, dtype) for i in range(size)]
    if rng.random() < 0.5:  # outputs as adjacent views of one buffer
        flat = _zeros(xo, (sum(e.size for e in exps),), dtype)
        outs = [p.reshape(e.shape) for p, e in zip(xo.pieces(flat, [e.size for e in exps]),
                                                   exps)]
    else:
        outs = [_zeros(xo, e.shape, dtype) for e in exps]
    dist.all_to_all(outs, ins, group=group)
    for o, e in zip(outs, exps):
        np.testing.assert_array_equal(to_np(o), e.astype(to_np(o).dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_reduce_scatter_list_random(seed, rank, size, group):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xin, xo = _frameworks(rng, dtype)
    counts = S[0]  # rows of block j: the same on every rank
    op = "MAX" if dtype != "complex64" else "SUM"
    ins = [xin.tensor(_data(seed, rank, j, counts[j], row_shape, dtype), dtype)
           for j in range(size)]
    out = _zeros(xo, (counts[rank], *row_shape), dtype)
    dist.reduce_scatter(out, ins, op=getattr(dist.ReduceOp, op), group=group)
    exp = reduce_ref([_data(seed, i, rank, counts[rank], row_shape, dtype)
                      for i in range(size)], op, dtype)
    np.testing.assert_array_equal(to_np(out), np.asarray(exp).astype(to_np(out).dtype))


@pytest.mark.parametrize("seed", SEEDS)
def test_all_gather_list_random(seed, rank, size, group):
    rng, dtype, row_shape, S = _scenario(seed, size)
    xin, xo = _frameworks(rng, dtype)
    rows = S[:, 0]  # rank i contributes rows[i] rows
    outs = [_zeros(xo, (rows[i], *row_shape), dtype) for i in range(size)]
    dist.all_gather(outs, xin.tensor(_data(seed, rank, 0, rows[rank], row_shape, dtype), dtype),
                    group=group)
    for i, o in enumerate(outs):
        e = _data(seed, i, 0, rows[i], row_shape, dtype)
        np.testing.assert_array_equal(to_np(o), e.astype(to_np(o).dtype))


def test_every_framework_is_drawn():
    """The scenarios above cover every installed framework, as input and as output."""
    ins, outs = set(), set()
    for size in (1, 2, 4):
        for seed in SEEDS:
            rng, dtype, _, _ = _scenario(seed, size)
            xin, xo = _frameworks(rng, dtype)
            ins.add(xin.name)
            outs.add(xo.name)
    assert ins == {fw.name for fw in frameworks.installed()}
    assert outs == {fw.name for fw in frameworks.writable()}
