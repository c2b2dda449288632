"""torch 2.15's new calls on mpicoll's face: gather_single (alias gather_into_tensor),
set_timeout and shrink_group, against numpy references; through the torch backend they
run in the newest-torch lane (tests/test_torch_newest.py)."""

from __future__ import annotations

from datetime import timedelta

import _frameworks as frameworks
import numpy as np
import pytest
from _launch import run
from _reference import assert_equal, values

import mpicoll as dist
from mpicoll.errors import ArgumentValueError

CASES = frameworks.cross(["float32", "int64"])


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_gather_single(xp, dtype, stacked, rank, size, group):
    for root in {0, size - 1}:
        want = np.stack([values(dtype, (3,), r, root) for r in range(size)])
        shape = (size, 3) if stacked else (size * 3,)
        out = xp.empty(shape, dtype) if rank == root else None
        work = dist.gather_single(xp.tensor(values(dtype, (3,), rank, root), dtype), out,
                                  group_dst=root, group=group, async_op=rank % 2 == 1)
        if work is not None:
            work.wait()
        if rank == root:
            assert_equal(out, want.reshape(shape), dtype)


def test_gather_into_tensor_is_gather_single():
    assert dist.gather_into_tensor is dist.gather_single


def test_gather_single_output_of_the_wrong_size_is_refused_before_sending(rank, size, group):
    if rank == 0:
        out = np.full(size * 3 + 1, -1.0)
        with pytest.raises(ArgumentValueError, match=r"gather_tensor must hold .* expected"):
            dist.gather_single(np.ones(3), out, group_dst=0, group=group)
        assert (out == -1).all()
    dist.barrier(group=group)  # nobody else sent: the root raised before the call


def test_set_timeout(group):
    before = group.timeout
    try:
        dist.set_timeout(timedelta(seconds=42), group)
        assert group.timeout == 42.0
        dist.set_timeout(7, group)
        assert group.timeout == 7.0
        for bad in (0, -1, "soon", None):
            with pytest.raises(ArgumentValueError, match="timeout must be a positive"):
                dist.set_timeout(bad, group)
        assert group.timeout == 7.0
    finally:
        group.timeout = before


def test_shrink_group_arguments(rank, size, group):
    with pytest.raises(ArgumentValueError, match="non-empty"):
        dist.shrink_group([], group)
    with pytest.raises(ArgumentValueError, match=rf"ranks_to_exclude must be in \[0, {size}\)"):
        dist.shrink_group([size], group)
    with pytest.raises(ArgumentValueError, match="leave a rank"):
        dist.shrink_group(list(range(size)), group)
    with pytest.raises(ArgumentValueError, match="SHRINK_ABORT"):
        dist.shrink_group([0], group, shrink_flags=dist.SHRINK_ABORT)
    if size > 1:  # (at one rank, excluding itself leaves nobody: the error above)
        with pytest.raises(RuntimeError, match="is excluded"):
            dist.shrink_group([rank], group)


@pytest.mark.mpi(min_size=2)
def test_shrink_group_leaves_the_last_rank_out(rank, size, group):
    if rank == size - 1:
        return  # the excluded rank takes no part
    small = dist.shrink_group([size - 1], group)
    assert dist.get_process_group_ranks(small) == list(range(size - 1))
    assert small.rank() == rank and small.size() == size - 1
    t = np.array([rank + 1.0])
    dist.all_reduce(t, group=small)
    assert t[0] == sum(range(1, size))
    dist.destroy_process_group(small)


@pytest.mark.spawn
def test_shrink_the_default_group():
    res = run(3, ["tests/scripts/shrink_default.py"], timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    for line in ("rank 2: left out", "rank 0: shrunk, sum 3.0", "rank 1: shrunk, sum 3.0"):
        assert line in res.stdout, res.stdout



def test_weights_only_is_refused_before_communicating(rank, size, group):
    got = [None] * size
    for call in (lambda: dist.all_gather_object(got, rank, group=group, weights_only=True),
                 lambda: dist.broadcast_object_list([1], group_src=0, group=group,
                                                    weights_only=True),
                 lambda: dist.gather_object(rank, got if rank == 0 else None, group_dst=0,
                                            group=group, weights_only=True)):
        with pytest.raises(ArgumentValueError, match="weights_only=True is not supported"):
            call()
    assert got == [None] * size
    dist.all_gather_object(got, rank, group=group, weights_only=False)
    assert got == list(range(size))
