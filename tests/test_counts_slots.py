"""The counts that travel beside a v-collective's data, on persistent requests where the
MPI has them (_collectives/_sizes.Ring): many calls of one form in flight at once, more
than the ring's slots, waited in any order, blocking calls among them, and a mismatch
among them still reported by the call that made it, with its own counts. Each output is
checked against a numpy reference; every rank makes the same calls in the same order.
"""

from __future__ import annotations

import numpy as np
import pytest

import mpicoll as dist
from mpicoll._collectives import _sizes
from mpicoll.errors import SizeMismatch

MULTI = pytest.mark.mpi(min_size=2)
CALLS = 3 * _sizes._SLOTS + 1  # the ring goes round three times


def _splits(src, dst, k):
    """Rows rank ``src`` sends rank ``dst`` in call ``k``."""
    return (src + 2 * dst + k) % 3 + 1


def _values(src, dst, k, rows):
    return np.arange(rows, dtype=np.float64) + 1000 * src + 100 * dst + 10000 * k


def _call(rank, size, group, k, async_op, wrong=False):
    send = [_splits(rank, j, k) for j in range(size)]
    recv = [_splits(j, rank, k) for j in range(size)]
    if wrong:  # rank 1 says it sends rank 0 one row more than rank 0 expects
        send[0] += 1
    x = np.concatenate([_values(rank, j, k, send[j]) for j in range(size)])
    y = np.full(sum(recv), -1.0)
    w = dist.all_to_all_single(y, x, recv, send, group=group, async_op=async_op)
    want = np.concatenate([_values(j, rank, k, recv[j]) for j in range(size)])
    return w, y, want


@MULTI
@pytest.mark.parametrize("order", ["issued", "reversed"])
def test_more_calls_in_flight_than_slots(rank, size, group, order):
    calls = [_call(rank, size, group, k, async_op=k % 4 != 3) for k in range(CALLS)]
    if _sizes._persistent():
        assert group.counts, "the counts did not take the persistent ring"
    for w, y, want in (calls if order == "issued" else calls[::-1]):
        if w is not None:
            w.wait()
        np.testing.assert_array_equal(y, want)


@MULTI
def test_a_mismatch_among_calls_in_flight_is_reported_by_its_own_call(rank, size, group):
    bad = _sizes._SLOTS + 2  # its counts' slot is taken again before it is waited
    calls = [_call(rank, size, group, k, async_op=True, wrong=(k == bad and rank == 1))
             for k in range(CALLS)]
    for k, (w, y, want) in enumerate(calls):
        if k == bad and rank == 0:
            with pytest.raises(SizeMismatch, match=r"rank 1 sends \d+ elements to rank 0"):
                w.wait()
            continue
        w.wait()
        if k != bad:
            np.testing.assert_array_equal(y, want)


@MULTI
def test_a_destroyed_group_frees_its_counts_and_a_new_one_works(rank, size):
    for _ in range(2):
        g = dist.new_group(list(range(size)))
        for k in range(3):
            _, y, want = _call(rank, size, g, k, async_op=False)
            np.testing.assert_array_equal(y, want)
        rings = list(g.counts.values())
        dist.destroy_process_group(g)
        assert not g.counts
        assert all(not req for ring in rings for req in ring.reqs)
