"""all_to_all_single (even, uneven, zero splits) and all_to_all (lists).

Every test runs on every framework of the registry (tests/_frameworks.py); the ones that
only read their inputs from a framework run on JAX too (``xin``).
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import MOVE_DTYPES, assert_equal, block, split
from mpi4py import MPI

import mpicoll as dist
from mpicoll._collectives import _direct, all_to_all
from mpicoll._collectives._table import Table

COLS = 3


def _input(rank, size, dtype, salt=0):
    return np.concatenate([block(rank, j, split(rank, j, salt), COLS, dtype)
                           for j in range(size)]).reshape(-1, COLS)


def _expected(rank, size, dtype, salt=0):
    return np.concatenate([block(j, rank, split(j, rank, salt), COLS, dtype)
                           for j in range(size)]).reshape(-1, COLS)


@pytest.mark.parametrize(("xin", "dtype"), frameworks.cross(MOVE_DTYPES, inputs=True))
def test_all_to_all_single_uneven(xin, dtype, rank, size, group):
    xo = xin.output(dtype)
    inp = xin.tensor(_input(rank, size, dtype), dtype)
    exp = _expected(rank, size, dtype)
    out = xo.empty(exp.shape, dtype)
    dist.all_to_all_single(out, inp, [split(j, rank) for j in range(size)],
                           [split(rank, j) for j in range(size)], group=group)
    assert_equal(out, xo.to_numpy(xo.tensor(exp, dtype)), dtype)
    assert_equal(inp, xin.to_numpy(xin.tensor(_input(rank, size, dtype), dtype)), dtype)


@pytest.mark.parametrize(("xp", "dtype"), frameworks.cross(MOVE_DTYPES))
def test_all_to_all_single_even(xp, dtype, rank, size, group):
    inp = np.concatenate([block(rank, j, 2, COLS, dtype) for j in range(size)])
    exp = np.concatenate([block(j, rank, 2, COLS, dtype) for j in range(size)])
    out = xp.empty(exp.shape, dtype)
    dist.all_to_all_single(out, xp.tensor(inp, dtype), group=group)
    assert_equal(out, xp.to_numpy(xp.tensor(exp, dtype)), dtype)


# 16 values that float8_e4m3fn and float8_e5m2 both hold exactly
_FLOAT8_EXACT = np.array([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14],
                         np.float32)


@pytest.mark.parametrize(("xin", "dtype"), frameworks.cross(frameworks.FLOAT8, inputs=True))
def test_all_to_all_single_float8(xin, dtype, rank, size, group):
    # a 1-byte float, moved as opaque bytes
    xo = xin.output(dtype)

    def sent(r):  # rank r's input: element k goes to rank k // 4
        return _FLOAT8_EXACT[(5 * r + np.arange(size * 4)) % 16]

    inp = xin.tensor(sent(rank), dtype)
    out = xo.empty((size * 4,), dtype)
    dist.all_to_all_single(out, inp, group=group)
    exp = np.concatenate([sent(j)[rank * 4:rank * 4 + 4] for j in range(size)])
    assert_equal(out, exp, dtype)
    assert_equal(inp, sent(rank), dtype)


def test_all_to_all_single_only_input_splits_given(xin, rank, size):
    # on WORLD (group=None); output split omitted: dim 0 of output is divided evenly
    xo = xin.output("int32")
    inp = np.concatenate([block(rank, j, 2, COLS, "int32") for j in range(size)])
    out = xo.empty((2 * size, COLS), "int32")
    dist.all_to_all_single(out, xin.tensor(inp, "int32"), None, [2] * size)
    exp = np.concatenate([block(j, rank, 2, COLS, "int32") for j in range(size)])
    assert_equal(out, exp, "int32")


def test_all_to_all_single_non_contiguous(xp, rank, size, group):
    inp = _input(rank, size, "float64", salt=1)
    exp = _expected(rank, size, "float64", salt=1)
    # a transposed input and a transposed output (column-major memory)
    src_base = xp.tensor(inp.T, "float64")
    out_base = xp.empty((COLS, exp.shape[0]), "float64")
    src = xp.transpose(src_base)
    out = xp.transpose(out_base)
    dist.all_to_all_single(out, src, [split(j, rank, 1) for j in range(size)],
                           [split(rank, j, 1) for j in range(size)], group=group)
    assert_equal(out, exp, "float64")
    assert_equal(out_base, exp.T, "float64")
    assert_equal(src, inp, "float64")  # input untouched


def test_all_to_all_single_async(xp, rank, size, group):
    inp = xp.tensor(_input(rank, size, "int64"), "int64")
    exp = _expected(rank, size, "int64")
    out = xp.empty(exp.shape, "int64")
    work = dist.all_to_all_single(out, inp, [split(j, rank) for j in range(size)],
                                  [split(rank, j) for j in range(size)], group=group,
                                  async_op=True)
    work.wait()
    assert work.is_completed()
    assert_equal(out, exp, "int64")


def test_all_to_all_single_aliased(xp, rank, size, group):
    # output and input are the same tensor
    t = xp.tensor(np.concatenate([block(rank, j, 1, COLS, "int64") for j in range(size)]),
                  "int64")
    dist.all_to_all_single(t, t, group=group)
    assert_equal(t, np.concatenate([block(j, rank, 1, COLS, "int64") for j in range(size)]),
                 "int64")


@pytest.mark.parametrize(("xin", "dtype"),
                         frameworks.cross(["int64", "bfloat16", "complex64", "bool"],
                                          inputs=True))
def test_all_to_all_list_uneven(xin, dtype, rank, size, group):
    xo = xin.output(dtype)
    ins = [xin.tensor(block(rank, j, split(rank, j), COLS, dtype), dtype) for j in range(size)]
    exps = [block(j, rank, split(j, rank), COLS, dtype) for j in range(size)]
    outs = [xo.empty(e.shape, dtype) for e in exps]
    dist.all_to_all(outs, ins, group=group)
    for o, e in zip(outs, exps, strict=True):
        assert_equal(o, xo.to_numpy(xo.tensor(e, dtype)), dtype)


@pytest.mark.mpi(min_size=2)
def test_all_to_all_frameworks_differ_per_rank(rank, size, group):
    """Each rank holds its tensors in another framework (JAX inputs where it has one)."""
    fws = frameworks.installed()
    xin = fws[rank % len(fws)]
    xo = xin.output("float32")
    ins = [xin.tensor(block(rank, j, split(rank, j), COLS, "float32"), "float32")
           for j in range(size)]
    outs = [xo.empty((split(j, rank), COLS), "float32") for j in range(size)]
    dist.all_to_all(outs, ins, group=group)
    for j, o in enumerate(outs):
        assert xo.is_tensor(o)
        assert_equal(o, block(j, rank, split(j, rank), COLS, "float32"), "float32")


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


def _memory(buf):
    """(address, bytes) of a buffer spec's memory."""
    return _address(buf), buf.nbytes


@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_list_chunked_views_zero_copy(monkeypatch, xp, rank, size, group,
                                                 async_op):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory goes to MPI directly or staged (test_device)")
    # the communicator the exchange goes on: the group's own for direct exchanges
    # (_collectives/_direct; made by the group's first one), else the group's
    where = "direct" if _direct.chosen(group) else "comm"
    if getattr(group, where) is None:
        dist.all_to_all_single(np.empty(size), np.zeros(size), group=group)
    recorder = _RecordingComm(getattr(group, where))
    monkeypatch.setattr(group, where, recorder)  # this module's group, restored after
    # (no persistent messages kept from an earlier call at the same addresses: they would
    # be restarted, not made)
    monkeypatch.setattr(group, "kept", type(group.kept)())  # (a dict, or the core's PlanCache)
    # (no quick entry either: the compiled core would make MPI's call itself, past the
    # recording communicator; the general path makes it here)
    monkeypatch.setattr(all_to_all, "_QUICK_LISTS", Table())
    big_in = xp.tensor(np.arange(size * 2) + rank * 100, "int64")
    big_out = xp.full((size * 2,), -1, "int64")
    work = dist.all_to_all(xp.pieces(big_out, [2] * size), xp.pieces(big_in, [2] * size),
                           group=group, async_op=async_op)
    if async_op:
        work.wait()
    exp = np.concatenate([np.arange(rank * 2, rank * 2 + 2) + j * 100 for j in range(size)])
    assert_equal(big_out, exp, "int64")
    # reading the input's own memory and writing the output's own memory: one MPI call,
    # or one message to and from each peer
    if where == "comm":
        (send, recv), = [args for method, args in recorder.calls
                         if method in ("Alltoallv", "Ialltoallv")]
        sends, recvs = [send], [recv]
    else:
        # (a repeated blocking call's as persistent messages)
        sends = [args[0] for method, args in recorder.calls
                 if method in ("Isend", "Send_init")]
        recvs = [args[0] for method, args in recorder.calls
                 if method in ("Irecv", "Recv_init")]
        assert len(sends) == len(recvs) == size - 1
    assert all(_memory(send[0]) == xp.memory(big_in) for send in sends)
    assert all(_memory(recv[0]) == xp.memory(big_out) for recv in recvs)


def test_all_to_all_list_non_contiguous_outputs(xp, rank, size, group):
    base = xp.empty((2, size * 2), "float32")
    outs = [base[:, 2 * j:2 * j + 2] for j in range(size)]  # strided column blocks
    ins = [xp.full((2, 2), rank * 10 + j, "float32") for j in range(size)]
    dist.all_to_all(outs, ins, group=group)
    for j, o in enumerate(outs):
        assert_equal(o, np.full((2, 2), j * 10 + rank, np.float32), "float32")
    assert_equal(base, np.repeat(np.arange(size) * 10.0 + rank, 2)[None].repeat(2, 0),
                 "float32")


# Blocks of several KiB: on MPICH a rank's own block is copied locally rather than sent
# through Alltoallv (mpicoll's speed-up); these check that path against numpy.
def _big(i, j):
    return 200 + 37 * i + 11 * j  # rows rank i sends rank j (x COLS float64: > 4 KiB)


def _big_exchange(rank, size):
    ins = [block(rank, j, _big(rank, j), COLS, "float64") for j in range(size)]
    exps = [block(j, rank, _big(j, rank), COLS, "float64") for j in range(size)]
    return ins, exps


@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_single_large_blocks(xin, rank, size, group, async_op):
    dtype = "float64" if xin.holds("float64") else "float32"  # JAX without x64
    xo = xin.output(dtype)
    ins, exps = _big_exchange(rank, size)
    inp = xin.tensor(np.concatenate(ins), dtype)
    out = xo.empty((sum(e.shape[0] for e in exps), COLS), dtype)
    work = dist.all_to_all_single(out, inp, [_big(j, rank) for j in range(size)],
                                  [_big(rank, j) for j in range(size)], group=group,
                                  async_op=async_op)
    if async_op:
        work.wait()
    assert_equal(out, np.concatenate(exps), dtype)
    assert_equal(inp, np.concatenate(ins), dtype)  # input untouched


def test_all_to_all_single_large_blocks_transposed_output(xp, rank, size, group):
    ins, exps = _big_exchange(rank, size)
    exp = np.concatenate(exps)
    out_base = xp.empty((COLS, exp.shape[0]), "float64")
    out = xp.transpose(out_base)
    dist.all_to_all_single(out, xp.tensor(np.concatenate(ins), "float64"),
                           [_big(j, rank) for j in range(size)],
                           [_big(rank, j) for j in range(size)], group=group)
    assert_equal(out_base, exp.T, "float64")


@pytest.mark.parametrize("adjacent", [True, False])
def test_all_to_all_list_large_blocks(xp, rank, size, group, adjacent):
    ins, exps = _big_exchange(rank, size)
    if adjacent:  # views of one buffer, as x.split(sizes) gives
        flat_in = xp.tensor(np.concatenate(ins), "float64")
        flat_out = xp.empty((sum(e.shape[0] for e in exps), COLS), "float64")
        tin = xp.pieces(flat_in, [len(a) for a in ins])
        touts = xp.pieces(flat_out, [len(e) for e in exps])
    else:
        tin = [xp.tensor(a, "float64") for a in ins]
        touts = [xp.empty(e.shape, "float64") for e in exps]
    dist.all_to_all(touts, tin, group=group)
    for o, e in zip(touts, exps, strict=True):
        assert_equal(o, e, "float64")
    if adjacent:
        assert_equal(flat_out, np.concatenate(exps), "float64")


def test_all_to_all_self_block_mismatch(xp, rank, size, group):
    sends = [1] * size
    sends[rank] = 2  # to itself: 2 rows, but it expects 1 row from itself
    inp = xp.tensor(np.zeros((size + 1, COLS)), "float64")
    out = xp.empty((size, COLS), "float64")
    with pytest.raises(ValueError, match=rf"sends itself 2 and receives from itself 1: "
                                         rf"input_split_sizes\[{rank}\] and "
                                         rf"output_split_sizes\[{rank}\] must match"):
        dist.all_to_all_single(out, inp, [1] * size, sends, group=group)
    assert_equal(out, np.full((size, COLS), 99.0), "float64")  # untouched
