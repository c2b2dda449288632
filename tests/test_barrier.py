"""barrier (blocking, async, with a timeout, on a group) and monitored_barrier hold every
rank until the last one has entered: rank 0 enters last on purpose (tests/_sync.py)."""

from __future__ import annotations

import time

import pytest
from _sync import check_async_barrier, check_blocking_barrier
from mpi4py import MPI

import mpicoll as dist
from mpicoll.errors import CollectiveTimeout


def test_barrier_blocking():
    returned = []
    check_blocking_barrier(lambda: returned.append(dist.barrier()))
    assert returned == [None]


def test_barrier_async():
    check_async_barrier(lambda: dist.barrier(async_op=True))


def test_barrier_with_timeout():
    # a generous timeout: this path waits on an Ibarrier until it completes
    check_blocking_barrier(lambda: dist.barrier(timeout=300))


def test_barrier_on_a_group(size):
    group = dist.new_group(list(range(size)))
    check_blocking_barrier(lambda: dist.barrier(group=group))


def test_monitored_barrier():
    check_blocking_barrier(lambda: dist.monitored_barrier(timeout=300))


@pytest.mark.mpi(min_size=3)
def test_monitored_barrier_names_a_late_rank_then_holds_the_next_call(rank, size):
    # rank 1 comes 1.5 s late to a monitored_barrier of 0.5 s: rank 0 names it, every
    # rank raises. Its late message, and the receives the others had posted, must not
    # count for the next call: there rank 1 comes 1 s late again, within the timeout,
    # and no rank may leave before it entered (rank 0 receives its entry time after)
    group = dist.new_group(list(range(size)))
    MPI.COMM_WORLD.Barrier()
    if rank == 1:
        time.sleep(1.5)
    with pytest.raises(CollectiveTimeout) as e:
        dist.monitored_barrier(group, timeout=0.5)
    if rank == 0:
        assert "rank(s) [1] (global) did not reach the barrier within 0.5 s" in str(e.value)
    else:
        assert "did not release the barrier" in str(e.value)
    MPI.COMM_WORLD.Barrier()
    if rank == 1:
        time.sleep(1.0)
    entered = time.time()
    dist.monitored_barrier(group, timeout=60)
    left = time.time()
    entries = MPI.COMM_WORLD.allgather(entered)
    assert left >= max(entries), (f"rank {rank} left at {left:.3f}, before rank 1 entered "
                                  f"at {entries[1]:.3f}")
    dist.destroy_process_group(group)
