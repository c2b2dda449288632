"""Calls of MPI's own all_reduce, broadcast and reduce that differ across ranks, on the
default path (no MPICOLL_CHECK): from ``_sizes.SIGNED`` elements each such call posts
its signature (collective, dtype, reduce op, root, count) beside its data, as an
Iallreduce(MAX) of (them, -them), so every rank raises SignatureMismatch where any rank's
call differs (issue 52: before, a float32 all_reduce against a float64 one returned
garbage on every rank, SUM against MAX each rank's own op's, a reduce of int32 into a
float32 root a wrong result on the root, all with exit status 0).

Rank 0 makes the other call. Each mistake is made twice: the second call takes the quick
path (on the compiled core where it is in use, which hands these calls back to Python).
On Open MPI, dtypes of different sizes are not tried: its single-copy path (CMA) can
write a longer message past the receive buffer before any check runs (docs/errors.md)."""

from __future__ import annotations

import numpy as np
import pytest

import mpicoll as dist
from mpicoll import _core_loader
from mpicoll._collectives import _sizes
from mpicoll._start import is_open_mpi
from mpicoll.errors import SignatureMismatch

N = _sizes.SIGNED


@pytest.fixture(autouse=True)
def _ranks(size):
    if size == 1:
        pytest.skip("one rank makes no call that could differ")


def _waited(work):
    if work is not None:
        work.wait()


def _every_rank_raises(call, *match):
    for _ in range(2):
        with pytest.raises(SignatureMismatch) as e:
            call()
        for m in match:
            assert m in str(e.value), str(e.value)
    dist.barrier()


def _wider_dtypes_ok():
    if is_open_mpi():
        pytest.skip("Open MPI's CMA may write a longer message past the receive buffer")


@pytest.mark.parametrize("async_op", [False, True])
def test_all_reduce_of_another_dtype(rank, size, group, async_op):
    _wider_dtypes_ok()
    dt = np.float32 if rank == 0 else np.float64  # torch's default against numpy's
    x = np.ones(N, dt)
    other = ("'float64' there, 'float32' here" if rank == 0 else
             "'float32' there, 'float64' here")
    _every_rank_raises(lambda: _waited(dist.all_reduce(x, group=group, async_op=async_op)),
                       "all_reduce #", "dtype: " + other, f"the output of rank {rank}")


def test_all_reduce_of_another_dtype_of_the_same_size_async_on_one_rank(rank, size, group):
    dt = np.int32 if rank == 0 else np.float32  # (bits reinterpreted, before)
    x = np.ones(N, dt)
    _every_rank_raises(lambda: _waited(dist.all_reduce(x, group=group, async_op=rank == 1)),
                       "all_reduce #", "dtype")


@pytest.mark.parametrize("op", ["MAX", "AVG"])
def test_all_reduce_with_another_reduce_op(rank, size, group, op):
    other = getattr(dist.ReduceOp, op) if rank == 0 else dist.ReduceOp.SUM
    x = np.ones(N, np.float32)
    mine = op if rank == 0 else "SUM"
    _every_rank_raises(lambda: dist.all_reduce(x, op=other, group=group), "all_reduce #",
                       "reduce op", f"'{mine}' here")


def test_all_reduce_of_another_size(rank, size, group):
    # (before: left to MPI, which cut the longer message short or left the tail as it was)
    x = np.ones(N + (rank == 0), np.float32)
    _every_rank_raises(lambda: dist.all_reduce(x, group=group), "all_reduce #",
                       f"size: from {N} to {N + 1} elements across the ranks")


@pytest.mark.parametrize("async_op", [False, True])
def test_broadcast_of_another_dtype_raises_on_every_rank(rank, size, group, async_op):
    dt = np.int32 if rank == 0 else np.float32
    x = np.arange(N, dtype=dt)
    _every_rank_raises(lambda: _waited(dist.broadcast(x, group=group, group_src=0,
                                                      async_op=async_op)),
                       "broadcast #", "dtype", "no tensor but the root's can be trusted")
    if rank == 0:  # (the root's tensor is only read)
        np.testing.assert_array_equal(x, np.arange(N, dtype=dt))


def test_broadcast_from_roots_that_differ_raises_on_every_rank(rank, size, group):
    # (before: the watchdog ended the job, or ranks past two returned another root's data)
    x = np.full(N, rank, np.float32)
    root = 0 if rank == 0 else 1
    _every_rank_raises(lambda: dist.broadcast(x, group=group, group_src=root),
                       "broadcast #", "root: group rank")


@pytest.mark.parametrize("async_op", [False, True])
@pytest.mark.parametrize("mistake", ["dtype", "reduce op"])
def test_a_reduce_that_differs_raises_on_every_rank(rank, size, group, async_op, mistake):
    dt = np.int32 if rank == 1 and mistake == "dtype" else np.float32
    op = dist.ReduceOp.MAX if rank == 1 and mistake == "reduce op" else dist.ReduceOp.SUM
    x = np.full(N, rank + 1, dt)
    _every_rank_raises(lambda: _waited(dist.reduce(x, group=group, group_dst=0, op=op,
                                                   async_op=async_op)),
                       "reduce #", mistake, "the root's output cannot be trusted")


def test_the_same_calls_agree_and_are_right(rank, size, group):
    rng = np.random.default_rng(3)
    blocks = rng.integers(-50, 50, (size, N)).astype(np.float64)
    for _ in range(2):  # the general path, then the quick one
        x = blocks[rank].copy()
        dist.all_reduce(x, group=group)
        np.testing.assert_array_equal(x, blocks.sum(axis=0))
        x = blocks[rank].astype(np.float32)
        dist.all_reduce(x, op=dist.ReduceOp.MAX, group=group)
        np.testing.assert_array_equal(x, blocks.max(axis=0).astype(np.float32))
        x = blocks[rank].copy()
        dist.broadcast(x, group=group, group_src=size - 1)
        np.testing.assert_array_equal(x, blocks[size - 1])
        x = blocks[rank].copy()
        dist.reduce(x, group=group, group_dst=1)
        np.testing.assert_array_equal(x, blocks.sum(axis=0) if rank == 1 else blocks[rank])
        w = dist.all_reduce(x := blocks[rank].copy(), group=group, async_op=True)
        w.wait()
        np.testing.assert_array_equal(x, blocks.sum(axis=0))


def test_smaller_calls_and_checks_off_carry_no_signature(group, monkeypatch):
    assert _sizes.signed("all_reduce", group, np.float32, "SUM", -1, N - 1) is None
    signs = _sizes.signed("all_reduce", group, np.float32, "SUM", -1, N)
    assert isinstance(signs, _sizes.Signed) and signs.relayed
    monkeypatch.setattr(_sizes, "sizes_on", lambda: False)
    assert _sizes.signed("all_reduce", group, np.float32, "SUM", -1, N) is None


def test_the_core_hands_these_calls_back_at_the_same_count():
    core = _core_loader.module or _core_loader.load()
    if core is None:
        pytest.skip("the compiled core is not in use")
    assert core.SIGNED == _sizes.SIGNED
