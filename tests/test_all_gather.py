"""all_gather (list, even and uneven), all_gather_into_tensor (concatenated and stacked).

Every test runs on every framework of the registry (tests/_frameworks.py); the ones that
only read their inputs from a framework run on JAX too (``xin``).
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import MOVE_DTYPES, assert_equal, block

import mpicoll as dist


@pytest.mark.parametrize(("xin", "dtype"), frameworks.cross(MOVE_DTYPES, inputs=True))
@pytest.mark.parametrize("layout", ["concat", "stacked"])
def test_all_gather_into_tensor(xin, dtype, layout, rank, size, group):
    xo = xin.output(dtype)
    mine = block(rank, 0, 2, 3, dtype)
    exp = np.stack([block(r, 0, 2, 3, dtype) for r in range(size)])
    shape = exp.shape if layout == "stacked" else (size * 2, 3)
    out = xo.empty(shape, dtype)
    inp = xin.tensor(mine, dtype)
    dist.all_gather_into_tensor(out, inp, group=group)
    assert_equal(out, xo.to_numpy(xo.tensor(exp.reshape(shape), dtype)), dtype)
    assert_equal(inp, xin.to_numpy(xin.tensor(mine, dtype)), dtype)  # input untouched


@pytest.mark.parametrize("shape", ["flat", "other"])
def test_all_gather_into_tensor_any_shape_of_the_count(xin, shape, rank, size, group):
    """As NCCL: only the count is checked (accelerate's gather passes a flat output for a
    2-D input); the output holds the ranks' inputs one after another in memory order."""
    xo = xin.output("float32")
    mine = block(rank, 0, 1, 5, "float32")
    exp = np.concatenate([block(r, 0, 1, 5, "float32").reshape(-1) for r in range(size)])
    out = xo.empty((size * 5,) if shape == "flat" else (5, size), "float32")
    dist.all_gather_into_tensor(out, xin.tensor(mine, "float32"), group=group)
    assert_equal(out, exp.reshape(out.shape), "float32")


def test_all_gather_into_tensor_count_that_disagrees(xin, rank, size, group):
    xo = xin.output("float32")
    out = xo.full((size * 5 + 1,), 7, "float32")
    with pytest.raises(ValueError, match=rf"output_tensor must hold group size x input_tensor: "
                                         rf"expected shape \({size}, 5\) or \({size}, 1, 5\) "
                                         rf"\(or any shape of {size * 5} elements\), got "
                                         rf"\({size * 5 + 1},\)"):
        dist.all_gather_into_tensor(out, xin.tensor(np.ones((1, 5)), "float32"), group=group)
    assert_equal(out, np.full(size * 5 + 1, 7, np.float32), "float32")


def test_all_gather_single_is_all_gather_into_tensor(xin, rank, size):
    xo = xin.output("int32")
    out = xo.empty((size,), "int32")
    dist.all_gather_single(out, xin.tensor(np.array([rank * 3]), "int32"))  # WORLD
    assert_equal(out, np.arange(size) * 3, "int32")


def test_all_gather_into_tensor_in_place_chunk(xp, rank, size, group):
    out = xp.full((size * 3,), 0, "float32")
    mine = out[rank * 3:(rank + 1) * 3]  # the FSDP pattern: input is our output chunk
    xp.fill(mine, rank + 1)
    dist.all_gather_into_tensor(out, mine, group=group)
    assert_equal(out, np.repeat(np.arange(size, dtype=np.float32) + 1, 3), "float32")


def test_all_gather_into_tensor_async_non_contiguous_output(xp, rank, size, group):
    base = xp.empty((4, size), "float64")
    out = xp.transpose(base)  # (size, 4) view, column-major
    work = dist.all_gather_into_tensor(out, xp.tensor(np.arange(4.0) + rank * 10, "float64"),
                                       group=group, async_op=True)
    work.wait()
    exp = np.stack([np.arange(4.0) + r * 10 for r in range(size)])
    assert_equal(out, exp, "float64")
    assert_equal(base, exp.T, "float64")  # written through to the base


@pytest.mark.parametrize(("xin", "dtype"),
                         frameworks.cross(["int32", "bfloat16", "complex128", "bool"],
                                          inputs=True))
def test_all_gather_list_uneven(xin, dtype, rank, size, group):
    xo = xin.output(dtype)
    rows = [r % 3 for r in range(size)]  # zero rows on ranks 0 and 3
    outs = [xo.empty((rows[r], 2), dtype) for r in range(size)]
    dist.all_gather(outs, xin.tensor(block(rank, 1, rows[rank], 2, dtype), dtype), group=group)
    for r, o in enumerate(outs):
        assert_equal(o, xo.to_numpy(xo.tensor(block(r, 1, rows[r], 2, dtype), dtype)), dtype)


def test_all_gather_list_even_into_chunks(xp, rank, size, group):
    out = xp.empty((size * 2,), "int64")
    dist.all_gather(xp.pieces(out, [2] * size), xp.tensor(np.array([rank, rank * 10]), "int64"),
                    group=group)
    assert_equal(out, np.array([v for r in range(size) for v in (r, r * 10)]), "int64")


def test_all_gather_list_input_is_own_slot(xp, rank, size, group):
    outs = [xp.empty((3,), "float32") for _ in range(size)]
    xp.fill(outs[rank], rank + 0.5)
    dist.all_gather(outs, outs[rank], group=group)
    for r, o in enumerate(outs):
        assert_equal(o, np.full(3, r + 0.5, np.float32), "float32")


def test_all_gather_async(xp, rank, size, group):
    outs = [xp.empty((2,), "int16") for _ in range(size)]
    work = dist.all_gather(outs, xp.tensor(np.array([rank, -rank]), "int16"), group=group,
                           async_op=True)
    work.wait()
    for r, o in enumerate(outs):
        assert_equal(o, np.array([r, -r]), "int16")
