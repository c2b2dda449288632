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

import re

import numpy as np
import pytest
from _launch import run

import mpicoll as dist
from mpicoll import _core_loader
from mpicoll._collectives import _sizes
from mpicoll._start import is_open_mpi
from mpicoll.errors import SignatureMismatch

N = _sizes.SIGNED


@pytest.fixture(autouse=True)
def _ranks(size, request):
    if size == 1 and request.node.get_closest_marker("spawn") is None:
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


# Where a group's calls are MPI's collectives (more than 8 ranks; here MPICOLL_DIRECT=0),
# the counts beside the data carry the call's signature: rank 0 makes each call with
# another dtype of the same size (int32 against float32: the same counts, the same
# bytes, each rank's bits reinterpreted before) or another reduce op, twice (the second
# call: the quick path), and prints what it got
_THROUGH_MPI = """
import numpy as np, mpicoll as dist
from mpicoll.errors import SignatureMismatch
rank, size = dist.get_rank(), dist.get_world_size()
dt = np.int32 if rank == 0 else np.float32
calls = {
    "all_to_all_single": lambda: dist.all_to_all_single(np.zeros(2 * size, dt),
                                                        np.ones(2 * size, dt)),
    "all_to_all_single uneven": lambda: dist.all_to_all_single(  # (j + 1 to rank j)
        np.zeros(size * (rank + 1), dt), np.ones(size * (size + 1) // 2, dt),
        [rank + 1] * size, [j + 1 for j in range(size)]),
    "all_to_all": lambda: dist.all_to_all([np.zeros(2, dt) for _ in range(size)],
                                          [np.ones(2, dt) for _ in range(size)]),
    "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(np.zeros(2 * size, dt),
                                                                  np.ones(2, dt)),
    "all_gather": lambda: dist.all_gather([np.zeros(2, dt) for _ in range(size)],
                                          np.ones(2, dt)),
    "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(
        np.zeros(2), np.ones(2 * size),
        op=dist.ReduceOp.AVG if rank == 0 else dist.ReduceOp.SUM),
    "reduce_scatter": lambda: dist.reduce_scatter(
        np.zeros(2), [np.ones(2) for _ in range(size)],
        op=dist.ReduceOp.MAX if rank == 0 else dist.ReduceOp.SUM),
    "gather": lambda: dist.gather(np.ones(2, dt), [np.zeros(2, dt) for _ in range(size)]
                                  if rank == 1 else None, dst=1),
    "scatter": lambda: dist.scatter(np.zeros(2, dt), [np.ones(2, dt) for _ in range(size)]
                                    if rank == 1 else None, src=1),
}
for name, call in calls.items():
    for _ in range(2):
        try:
            call()
            print(f"rank {rank}: {name}: returned", flush=True)
        except SignatureMismatch as e:
            print(f"rank {rank}: {name}: {e}", flush=True)
    dist.barrier()
out = np.zeros(2 * size, np.float32)  # what follows is right again
dist.all_gather_into_tensor(out, np.full(2, rank, np.float32))
print(f"rank {rank}: after: {out.tolist()}", flush=True)
"""


@pytest.mark.spawn
@pytest.mark.parametrize("ranks", [2, 3])
def test_the_counts_beside_mpi_s_collectives_carry_the_signature(ranks):
    res = run(ranks, ["-c", _THROUGH_MPI], timeout=90, MPICOLL_DIRECT="0")
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    # (each rank's lines; two ranks' may come joined on one line)
    lines = [t.strip() for t in re.split(r"(?=rank \d+: )", out) if t.strip()]
    for r in range(ranks):
        here = "'int32' here" if r == 0 else "'float32' here"
        # every rank that receives from rank 0 (all of them, in an exchange; every rank
        # where MPI relays the data)
        for name in ("all_to_all_single", "all_to_all_single uneven", "all_to_all",
                     "all_gather_into_tensor", "all_gather"):
            said = [line for line in lines if line.startswith(f"rank {r}: {name}: ")]
            assert len(said) == 2 and all("dtype: " in s and here in s for s in said), (
                name, out)
        for name, other in (("reduce_scatter_tensor", "AVG"), ("reduce_scatter", "MAX")):
            said = [line for line in lines if line.startswith(f"rank {r}: {name}: ")]
            assert len(said) == 2 and all(f"reduce op: '{other}'" in s or
                                          f"'{other}' here" in s for s in said), (name, out)
        # gather: the root (rank 1) raises, the others only send; scatter: each rank the
        # root sends to, whose dtype is another than the root's (rank 0)
        gather = r"gather: gather #\d+: rank 0 made another call" if r == 1 else \
            "gather: returned"
        scatter = r"scatter: scatter #\d+: rank 1 made another call" if r == 0 else \
            "scatter: returned"
        for want in (gather, scatter):
            assert sum(bool(re.match(f"rank {r}: {want}", line)) for line in lines) == 2, (
                want, out)
        assert f"rank {r}: after: {[float(j) for j in range(ranks) for _ in range(2)]}" \
            in out, out


def test_the_counts_go_in_pairs_wherever_a_signature_is_given(group):
    # every rank of a call gives one or none, whatever its value: a signature of 0 (a
    # collective and a dtype that have no code) still goes beside its count, so that the
    # ranks post counts of one shape
    s = _sizes.rooted("gather_single", group, 0, True, 3, None, "no such dtype")
    assert s.sig == 0 and s.send.tolist() == [3, 0]
    assert _sizes.rooted("gather_single", group, 0, True, 3, None).send.tolist() == [3]


def test_numpy_s_names_of_the_extended_precisions_have_their_codes():
    from mpicoll._collectives._signature import code
    assert code("all_reduce", np.dtype(np.longdouble)) == code("all_reduce", "longdouble")
    assert code("all_reduce", np.dtype(np.clongdouble)) == code("all_reduce", "clongdouble")
    assert code("all_reduce", "longdouble") != code("all_reduce", "no such dtype")
