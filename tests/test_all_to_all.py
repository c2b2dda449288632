"""all_to_all_single (even, uneven, zero splits) and all_to_all (lists)."""

from __future__ import annotations

import numpy as np
import pytest
from _reference import (
    MOVE_DTYPES,
    assert_equal,
    block,
    empty,
    skip_unsupported,
    split,
    to_np,
    to_xp,
)
from mpi4py import MPI

import mpicoll as dist

COLS = 3


def _input(rank, size, dtype, salt=0):
    return np.concatenate([block(rank, j, split(rank, j, salt), COLS, dtype)
                           for j in range(size)]).reshape(-1, COLS)


def _expected(rank, size, dtype, salt=0):
    return np.concatenate([block(j, rank, split(j, rank, salt), COLS, dtype)
                           for j in range(size)]).reshape(-1, COLS)


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
def test_all_to_all_single_uneven(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    inp = to_xp(_input(rank, size, dtype), dtype, xp)
    exp = _expected(rank, size, dtype)
    out = empty(xp, exp.shape, dtype)
    dist.all_to_all_single(out, inp, [split(j, rank) for j in range(size)],
                           [split(rank, j) for j in range(size)])
    assert_equal(out, to_np(to_xp(exp, dtype, xp)), dtype)


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
def test_all_to_all_single_even(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    inp = np.concatenate([block(rank, j, 2, COLS, dtype) for j in range(size)])
    exp = np.concatenate([block(j, rank, 2, COLS, dtype) for j in range(size)])
    out = empty(xp, exp.shape, dtype)
    dist.all_to_all_single(out, to_xp(inp, dtype, xp))
    assert_equal(out, to_np(to_xp(exp, dtype, xp)), dtype)


def test_all_to_all_single_float8(rank, size):
    import torch

    inp = (torch.arange(size * 4, dtype=torch.float32) + rank * 100).to(torch.float8_e4m3fn)
    out = torch.empty(size * 4, dtype=torch.float8_e4m3fn)
    dist.all_to_all_single(out, inp)
    exp = torch.cat([(torch.arange(rank * 4, rank * 4 + 4, dtype=torch.float32) + j * 100)
                     .to(torch.float8_e4m3fn) for j in range(size)])
    assert torch.equal(out.view(torch.uint8), exp.view(torch.uint8))


def test_all_to_all_single_only_input_splits_given(xp, rank, size):
    # output split omitted: dim 0 of output is divided evenly
    inp = np.concatenate([block(rank, j, 2, COLS, "int32") for j in range(size)])
    out = empty(xp, (2 * size, COLS), "int32")
    dist.all_to_all_single(out, to_xp(inp, "int32", xp), None, [2] * size)
    exp = np.concatenate([block(j, rank, 2, COLS, "int32") for j in range(size)])
    assert_equal(out, exp, "int32")


def test_all_to_all_single_non_contiguous(xp, rank, size):
    inp = _input(rank, size, "float64", salt=1)
    exp = _expected(rank, size, "float64", salt=1)
    # a transposed input and a transposed output (column-major memory)
    src_base = to_xp(np.ascontiguousarray(inp.T), "float64", xp)
    out_base = empty(xp, (COLS, exp.shape[0]), "float64")
    src = src_base.T if xp is np else src_base.t()
    out = out_base.T if xp is np else out_base.t()
    dist.all_to_all_single(out, src, [split(j, rank, 1) for j in range(size)],
                           [split(rank, j, 1) for j in range(size)])
    assert_equal(out, exp, "float64")
    assert_equal(out_base, exp.T, "float64")
    assert_equal(src, inp, "float64")  # input untouched


def test_all_to_all_single_async(xp, rank, size):
    inp = to_xp(_input(rank, size, "int64"), "int64", xp)
    exp = _expected(rank, size, "int64")
    out = empty(xp, exp.shape, "int64")
    work = dist.all_to_all_single(out, inp, [split(j, rank) for j in range(size)],
                                  [split(rank, j) for j in range(size)], async_op=True)
    work.wait()
    assert work.is_completed()
    assert_equal(out, exp, "int64")


def test_all_to_all_single_aliased(xp, rank, size):
    # output and input are the same tensor
    t = to_xp(np.concatenate([block(rank, j, 1, COLS, "int64") for j in range(size)]),
              "int64", xp)
    dist.all_to_all_single(t, t)
    assert_equal(t, np.concatenate([block(j, rank, 1, COLS, "int64") for j in range(size)]),
                 "int64")


@pytest.mark.parametrize("dtype", ["int64", "bfloat16", "complex64", "bool"])
def test_all_to_all_list_uneven(xp, dtype, rank, size):
    skip_unsupported(xp, dtype)
    ins = [to_xp(block(rank, j, split(rank, j), COLS, dtype), dtype, xp) for j in range(size)]
    exps = [block(j, rank, split(j, rank), COLS, dtype) for j in range(size)]
    outs = [empty(xp, e.shape, dtype) for e in exps]
    dist.all_to_all(outs, ins)
    for o, e in zip(outs, exps):
        assert_equal(o, to_np(to_xp(e, dtype, xp)), dtype)


class _RecordingComm:
    """Stands in for a group's mpi4py communicator: records each call, then makes it."""

    def __init__(self, comm):
        self._comm = comm
        self.calls = []

    def __getattr__(self, name):
        attr = getattr(self._comm, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls.append((name, args))
            return attr(*args, **kwargs)
        return call


def _address(a):
    return MPI.buffer(a).address


@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_list_chunked_views_zero_copy(monkeypatch, rank, size, async_op):
    import torch

    group = dist.new_group(list(range(size)))
    recorder = _RecordingComm(group.comm)
    monkeypatch.setattr(group, "comm", recorder)
    big_in = torch.arange(size * 2) + rank * 100
    big_out = torch.full((size * 2,), -1, dtype=torch.int64)
    work = dist.all_to_all(list(big_out.chunk(size)), list(big_in.chunk(size)), group=group,
                           async_op=async_op)
    if async_op:
        work.wait()
    exp = torch.cat([torch.arange(rank * 2, rank * 2 + 2) + j * 100 for j in range(size)])
    assert torch.equal(big_out, exp)
    # one MPI call, reading the input's own memory and writing the output's own memory
    (send, recv), = [args for method, args in recorder.calls
                     if method in ("Alltoallv", "Ialltoallv")]
    assert (_address(send[0]), send[0].nbytes) == (big_in.data_ptr(), big_in.nbytes)
    assert (_address(recv[0]), recv[0].nbytes) == (big_out.data_ptr(), big_out.nbytes)


def test_all_to_all_list_non_contiguous_outputs(xp, rank, size):
    base = empty(xp, (2, size * 2), "float32")
    outs = [base[:, 2 * j:2 * j + 2] for j in range(size)]  # strided column blocks
    ins = [to_xp(np.full((2, 2), rank * 10 + j, np.float32), "float32", xp)
           for j in range(size)]
    dist.all_to_all(outs, ins)
    for j, o in enumerate(outs):
        assert_equal(o, np.full((2, 2), j * 10 + rank, np.float32), "float32")


# Blocks of several KiB: on MPICH a rank's own block is copied locally rather than sent
# through Alltoallv (mpicoll's speed-up); these check that path against numpy.
def _big(i, j):
    return 200 + 37 * i + 11 * j  # rows rank i sends rank j (x COLS float64: > 4 KiB)


def _big_exchange(rank, size):
    ins = [block(rank, j, _big(rank, j), COLS, "float64") for j in range(size)]
    exps = [block(j, rank, _big(j, rank), COLS, "float64") for j in range(size)]
    return ins, exps


@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_single_large_blocks(xp, rank, size, async_op):
    ins, exps = _big_exchange(rank, size)
    inp = to_xp(np.concatenate(ins), "float64", xp)
    out = empty(xp, (sum(e.shape[0] for e in exps), COLS), "float64")
    work = dist.all_to_all_single(out, inp, [_big(j, rank) for j in range(size)],
                                  [_big(rank, j) for j in range(size)], async_op=async_op)
    if async_op:
        work.wait()
    assert_equal(out, np.concatenate(exps), "float64")
    assert_equal(inp, np.concatenate(ins), "float64")  # input untouched


def test_all_to_all_single_large_blocks_transposed_output(xp, rank, size):
    ins, exps = _big_exchange(rank, size)
    exp = np.concatenate(exps)
    out_base = empty(xp, (COLS, exp.shape[0]), "float64")
    out = out_base.T if xp is np else out_base.t()
    dist.all_to_all_single(out, to_xp(np.concatenate(ins), "float64", xp),
                           [_big(j, rank) for j in range(size)],
                           [_big(rank, j) for j in range(size)])
    assert_equal(out_base, exp.T, "float64")


@pytest.mark.parametrize("adjacent", [True, False])
def test_all_to_all_list_large_blocks(xp, rank, size, adjacent):
    ins, exps = _big_exchange(rank, size)
    if adjacent:  # views of one buffer, as x.split(sizes) gives
        flat_in = to_xp(np.concatenate(ins), "float64", xp)
        flat_out = empty(xp, (sum(e.shape[0] for e in exps), COLS), "float64")
        cut_in, cut_out = np.cumsum([len(a) for a in ins])[:-1], np.cumsum([len(e) for e in exps])[:-1]
        if xp is np:
            tin, touts = np.split(flat_in, cut_in), np.split(flat_out, cut_out)
        else:
            tin = list(flat_in.split([len(a) for a in ins]))
            touts = list(flat_out.split([len(e) for e in exps]))
    else:
        tin = [to_xp(a, "float64", xp) for a in ins]
        touts = [empty(xp, e.shape, "float64") for e in exps]
    dist.all_to_all(touts, tin)
    for o, e in zip(touts, exps):
        assert_equal(o, e, "float64")
    if adjacent:
        assert_equal(flat_out, np.concatenate(exps), "float64")


def test_all_to_all_self_block_mismatch(xp, rank, size):
    sends = [1] * size
    sends[rank] = 2  # to itself: 2 rows, but it expects 1 row from itself
    inp = to_xp(np.zeros((size + 1, COLS)), "float64", xp)
    out = empty(xp, (size, COLS), "float64")
    with pytest.raises(ValueError, match=rf"sends itself 2 and receives from itself 1: "
                                         rf"input_split_sizes\[{rank}\] and "
                                         rf"output_split_sizes\[{rank}\] must match"):
        dist.all_to_all_single(out, inp, [1] * size, sends)
    assert_equal(out, np.full((size, COLS), 99.0), "float64")  # untouched
