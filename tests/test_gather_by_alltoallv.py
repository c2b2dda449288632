"""all_gather from the block size where it is made as Alltoallv (each rank's block sent
to every rank; MPICH's own block copied locally): every form of the call, against a
numpy reference, twice (the second call takes the quick path where there is one), with
blocking and ``async_op`` ranks mixed. At one rank the choice is never made, and the
same calls check the ordinary path.
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import assert_equal, values

import mpicoll as dist
from mpicoll._collectives._choices import gather_by_alltoallv

CASES = frameworks.cross(["float32", "int64"])
N = 16 * 1024 + 8  # elements a rank: 64 KiB and more, over both MPIs' threshold


def _rows(j: int, uneven: bool) -> int:
    return N + (5 * j if uneven else 0)


def _chosen(size: int, dtype: str, uneven: bool) -> None:
    # the sizes below are ones the choice takes, so these tests exercise it
    total = sum(_rows(j, uneven) for j in range(size)) * np.dtype(dtype).itemsize
    assert gather_by_alltoallv(total, size) == (size > 1)


@pytest.mark.parametrize("uneven", [False, True])
@pytest.mark.parametrize("separate", [False, True])
@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_all_gather_lists(xp, dtype, separate, uneven, rank, size, group):
    _chosen(size, dtype, uneven)
    for salt in range(3):
        mine = xp.tensor(values(dtype, (_rows(rank, uneven),), rank, salt), dtype)
        if separate:
            outs = [xp.empty((_rows(j, uneven),), dtype) for j in range(size)]
        else:  # adjacent views of one tensor, as x.split gives
            whole = xp.empty((sum(_rows(j, uneven) for j in range(size)),), dtype)
            outs = xp.pieces(whole, [_rows(j, uneven) for j in range(size)])
        work = dist.all_gather(outs, mine, group=group, async_op=rank % 2 == 1)
        if work is not None:
            work.wait()
        for j, got in enumerate(outs):
            assert_equal(got, values(dtype, (_rows(j, uneven),), j, salt), dtype)


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_all_gather_into_tensor(xp, dtype, stacked, rank, size, group):
    _chosen(size, dtype, False)
    shape = (size, N) if stacked else (size * N,)
    want = np.stack([values(dtype, (N,), j, 1) for j in range(size)]).reshape(shape)
    out = xp.empty(shape, dtype)
    for _ in range(2):
        xp.fill(out, 0)
        work = dist.all_gather_into_tensor(out, xp.tensor(values(dtype, (N,), rank, 1), dtype),
                                           group=group, async_op=rank == 0)
        if work is not None:
            work.wait()
        assert_equal(out, want, dtype)


def test_all_gather_into_tensor_in_place_and_strided(rank, size, group):
    want = np.concatenate([values("float32", (N,), j, 2) for j in range(size)])
    out = np.zeros(size * N, np.float32)
    out[rank * N:(rank + 1) * N] = values("float32", (N,), rank, 2)
    dist.all_gather_into_tensor(out, out[rank * N:(rank + 1) * N], group=group)
    assert_equal(out, want, "float32")
    # a transposed output: staged, then copied back
    t = np.zeros((N, size), np.float32).T
    dist.all_gather_into_tensor(t, values("float32", (N,), rank, 2), group=group)
    assert_equal(t, want.reshape(size, N), "float32")


def test_in_place_on_some_ranks_only(rank, size, group):
    # in place is each rank's own choice: every rank must still make the same MPI call
    want = np.concatenate([values("float32", (N,), j, 3) for j in range(size)])
    out = np.zeros(size * N, np.float32)
    mine = values("float32", (N,), rank, 3)
    if rank % 2 == 0:
        out[rank * N:(rank + 1) * N] = mine
        mine = out[rank * N:(rank + 1) * N]
    dist.all_gather_into_tensor(out, mine, group=group)
    assert_equal(out, want, "float32")
    whole = np.zeros(size * N, np.float32)
    slots = [whole[j * N:(j + 1) * N] for j in range(size)]
    mine = values("float32", (N,), rank, 4)
    if rank % 2 == 1:
        slots[rank][...] = mine
        mine = slots[rank]
    dist.all_gather(slots, mine, group=group)
    assert_equal(whole, np.concatenate([values("float32", (N,), j, 4) for j in range(size)]),
                 "float32")
