"""all_gather (list, even and uneven), all_gather_into_tensor (concatenated and stacked)."""

from __future__ import annotations

import numpy as np
import pytest
from _reference import MOVE_DTYPES, assert_equal, block, empty, skip_unsupported, to_np, to_xp

import mpicoll as dist


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("layout", ["concat", "stacked"])
def test_all_gather_into_tensor(xp, dtype, layout, rank, size):
    skip_unsupported(xp, dtype)
    mine = block(rank, 0, 2, 3, dtype)
    exp = np.stack([block(r, 0, 2, 3, dtype) for r in range(size)])
    shape = exp.shape if layout == "stacked" else (size * 2, 3)
    out = empty(xp, shape, dtype)
    dist.all_gather_into_tensor(out, to_xp(mine, dtype, xp))
    assert_equal(out, to_np(to_xp(exp.reshape(shape), dtype, xp)), dtype)


def test_all_gather_single_is_all_gather_into_tensor(xp, rank, size):
    out = empty(xp, (size,), "int64")
    dist.all_gather_single(out, to_xp(np.array([rank * 3]), "int64", xp))
    assert_equal(out, np.arange(size) * 3, "int64")


def test_all_gather_into_tensor_in_place_chunk(rank, size):
    import torch

    out = torch.zeros(size * 3, dtype=torch.float32)
    mine = out[rank * 3:(rank + 1) * 3]  # the FSDP pattern: input is our output chunk
    mine.fill_(rank + 1)
    dist.all_gather_into_tensor(out, mine)
    assert out.tolist() == [float(r + 1) for r in range(size) for _ in range(3)]


def test_all_gather_into_tensor_async_non_contiguous_output(xp, rank, size):
    base = empty(xp, (4, size), "float64")
    out = base.T if xp is np else base.t()  # (size, 4) view, column-major
    work = dist.all_gather_into_tensor(out, to_xp(np.arange(4.0) + rank * 10, "float64", xp),
                                       async_op=True)
    work.wait()
    exp = np.stack([np.arange(4.0) + r * 10 for r in range(size)])
    assert_equal(out, exp, "float64")


@pytest.mark.parametrize("dtype", ["int32", "bfloat16", "complex128", "bool"])
def test_all_gather_list_uneven(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    rows = [r % 3 for r in range(size)]  # zero rows on ranks 0 and 3
    outs = [empty(xp, (rows[r], 2), dtype) for r in range(size)]
    dist.all_gather(outs, to_xp(block(rank, 1, rows[rank], 2, dtype), dtype, xp))
    for r, o in enumerate(outs):
        assert_equal(o, to_np(to_xp(block(r, 1, rows[r], 2, dtype), dtype, xp)), dtype)


def test_all_gather_list_even_into_chunks(rank, size):
    import torch

    out = torch.empty(size * 2, dtype=torch.int64)
    dist.all_gather(list(out.chunk(size)), torch.tensor([rank, rank * 10]))
    assert out.tolist() == [v for r in range(size) for v in (r, r * 10)]


def test_all_gather_list_input_is_own_slot(xp, rank, size):
    outs = [empty(xp, (3,), "float32") for _ in range(size)]
    outs[rank][...] = rank + 0.5 if xp is np else outs[rank].fill_(rank + 0.5)
    dist.all_gather(outs, outs[rank])
    for r, o in enumerate(outs):
        assert_equal(o, np.full(3, r + 0.5, np.float32), "float32")


def test_all_gather_async(xp, rank, size):
    outs = [empty(xp, (2,), "int16") for _ in range(size)]
    work = dist.all_gather(outs, to_xp(np.array([rank, -rank]), "int16", xp), async_op=True)
    work.wait()
    for r, o in enumerate(outs):
        assert_equal(o, np.array([r, -r]), "int16")
