"""barrier (blocking, async, with a timeout, on a group) and monitored_barrier hold every
rank until the last one has entered: rank 0 enters last on purpose (tests/_sync.py)."""

from __future__ import annotations

from _sync import check_async_barrier, check_blocking_barrier

import mpicoll as dist


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
