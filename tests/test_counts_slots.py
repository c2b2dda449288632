"""The counts that travel beside a v-collective's data, on persistent requests where the
MPI has them (_collectives/_counts_ring): many calls of one form in flight at once, more
than the ring's slots, waited in any order, blocking calls among them, exchanges, gathers
to several roots and all_gathers; a mismatch among them still reported by the call that
made it, with its own counts; no finished call held by the ring. Each output is checked
against a numpy reference; every rank makes the same calls in the same order.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import mpicoll as dist
from mpicoll._collectives import _counts_ring, _direct, _sizes
from mpicoll.errors import SizeMismatch

MULTI = pytest.mark.mpi(min_size=2)
SLOTS = _counts_ring.SLOTS
CALLS = 3 * SLOTS + 1  # the ring goes round three times


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


@pytest.fixture(autouse=True)
def exchanges_through_alltoallv(monkeypatch):
    """all_to_all_single as Alltoallv with its counts beside it, as on groups too large
    to exchange directly (_collectives/_direct: test_direct.py has the direct form).

    What the general path stores for the quick path depends on that choice, which the
    library makes by a group's size alone: emptied before and after, so that no call of
    another module's group of this size takes a form its peers do not (3 ranks hung)."""
    _forget_quick_paths()
    monkeypatch.setattr(_direct, "chosen", lambda pg: False)
    yield
    monkeypatch.undo()
    _forget_quick_paths()


def _forget_quick_paths():
    """Empty every quick-path table of the collectives (``QUICK``, ``BROADCASTS``,
    ``_QUICK*``; not the adapter's QUICKERS, which some of them import)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("mpicoll._collectives"):
            for attr, table in vars(module).items():
                if (attr in ("QUICK", "BROADCASTS") or attr.startswith("_QUICK")) and \
                        isinstance(table, dict):
                    table.clear()


@pytest.fixture
def fresh(size):
    """A group of every rank, its own for one test (its rings start empty)."""
    g = dist.new_group(list(range(size)))
    yield g
    dist.destroy_process_group(g)


def _rings(g):
    """The group's rings, and that none holds a finished call (none where the MPI has
    no persistent collectives: the group's ``counts`` is then None)."""
    rings = g.counts or {}
    for ring in rings.values():
        assert all(o is None or not o._done for o in ring.owners)
    return rings


@MULTI
@pytest.mark.parametrize("order", ["issued", "reversed"])
def test_more_calls_in_flight_than_slots(rank, size, fresh, order):
    calls = [_call(rank, size, fresh, k, async_op=k % 4 != 3) for k in range(CALLS)]
    if _sizes._persistent():
        (ring,) = _rings(fresh).values()  # one form: Ialltoall of size counts
        assert ring.at == CALLS % SLOTS
    for w, y, want in (calls if order == "issued" else calls[::-1]):
        if w is not None:
            w.wait()
        np.testing.assert_array_equal(y, want)
    assert all(o is None for ring in _rings(fresh).values() for o in ring.owners)


@MULTI
def test_gathers_to_every_root_and_all_gathers_in_flight(rank, size, fresh):
    works = []
    for k in range(CALLS):
        root = k % size
        mine = np.full(k % 3 + 1, 100.0 * rank + k)
        slots = [np.full(k % 3 + 1, -1.0) for _ in range(size)] if rank == root else None
        works.append((dist.gather(mine, slots, dst=root, group=fresh, async_op=True), slots,
                      [np.full(k % 3 + 1, 100.0 * j + k) for j in range(size)]))
        outs = [np.full(k % 2 + 1, -1.0) for _ in range(size)]
        works.append((dist.all_gather(outs, np.full(k % 2 + 1, 10.0 * rank + k),
                                      group=fresh, async_op=True), outs,
                      [np.full(k % 2 + 1, 10.0 * j + k) for j in range(size)]))
    if _sizes._persistent():  # Igather per root, Iallreduce of the all_gather's sizes
        assert len(_rings(fresh)) == size + 1
    for w, got, want in works[::-1]:
        w.wait()
        if got is not None:
            for g, x in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, x)


@MULTI
def test_a_mismatch_among_calls_in_flight_is_reported_by_its_own_call(rank, size, group):
    bad = SLOTS + 2  # its counts' slot is taken again before it is waited
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
        rings = list((g.counts or {}).values())
        dist.destroy_process_group(g)
        assert not g.counts
        assert all(not req for ring in rings for req in ring.reqs)


@MULTI
def test_forms_past_the_rings_cap_take_a_nonblocking_collective(rank, size, fresh,
                                                                monkeypatch):
    monkeypatch.setattr(_sizes, "RINGS", 1)  # (alike on every rank)
    works = []
    for k in range(2 * SLOTS + 1):
        root = k % 2  # the second root's form is past the cap
        mine = np.full(2, 10.0 * rank + k)
        slots = [np.full(2, -1.0) for _ in range(size)] if rank == root else None
        works.append((dist.gather(mine, slots, dst=root, group=fresh, async_op=True), slots,
                      k))
    if _sizes._persistent():
        assert len(fresh.counts) == 1
    for w, slots, k in works:
        w.wait()
        if slots is not None:
            for j, got in enumerate(slots):
                np.testing.assert_array_equal(got, np.full(2, 10.0 * j + k))
