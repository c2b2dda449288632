"""A call on memory that an unfinished async call still uses runs after it.

MPI forbids touching a pending operation's buffers; without ordering, a second
collective on a tensor that an ``async_op=True`` call has not finished with gives
neither order's result (measured: 2 or 3 where 4 is right, and ranks that disagree).
NCCL's stream and Paddle run them in call order; mpicoll completes the earlier call
first. Calls on other memory, and reads of memory a pending call only reads, are not
held back (each test below would deadlock, and fail on its group's timeout, if they
were).
"""

from __future__ import annotations

import numpy as np
import pytest
from _reference import to_np

import mpicoll as dist

TIMEOUT = 20.0  # seconds: a wrongly held-back call fails the test instead of hanging it


@pytest.fixture(scope="module")
def g():
    grp = dist.new_group(list(range(dist.get_world_size())), timeout=TIMEOUT)
    yield grp
    dist.destroy_process_group(grp)


def test_all_reduce_twice_on_one_tensor(xp, rank, size, g):
    for dtype in ("float32", "int64"):
        x = xp.full((64,), rank + 1, dtype)
        w = dist.all_reduce(x, async_op=True, group=g)
        dist.all_reduce(x, group=g)  # runs after the first: the sum of the sums
        w.wait()
        np.testing.assert_array_equal(to_np(x), np.full(64, size * sum(range(1, size + 1))))


def test_a_slice_inside_pending_memory_waits_for_it(rank, size, g):
    # the later call's memory starts inside the pending call's, among other pending calls
    # on other memory (before and after it in the address order)
    others = [np.full(32, 1.0) for _ in range(3)]
    x = np.full(64, float(rank + 1))
    more = [np.full(32, 1.0) for _ in range(3)]
    ws = [dist.all_reduce(o, async_op=True, group=g) for o in others]
    w = dist.all_reduce(x, async_op=True, group=g)
    ws += [dist.all_reduce(o, async_op=True, group=g) for o in more]
    dist.all_reduce(x[40:48], group=g)
    for v in [w, *ws]:
        v.wait()
    s = float(sum(range(1, size + 1)))
    want = np.full(64, s)
    want[40:48] = size * s
    np.testing.assert_array_equal(x, want)
    for o in others + more:
        np.testing.assert_array_equal(o, np.full(32, float(size)))


def test_staged_tensor_is_not_overwritten_by_the_earlier_call(rank, size, g):
    # a bfloat16 torch tensor is staged: the earlier call's write-back, at its completion,
    # must not land on the later call's result
    torch = pytest.importorskip("torch")
    x = torch.full((256,), float(rank + 1), dtype=torch.bfloat16)
    w = dist.all_reduce(x, async_op=True, group=g)
    y = x[::2]  # a strided view of the same memory, staged too
    dist.all_reduce(y, group=g)
    w.wait()
    s = float(sum(range(1, size + 1)))
    assert x[::2].tolist() == [size * s] * 128 and x[1::2].tolist() == [s] * 128


def test_output_of_a_pending_exchange_read_by_the_next_call(xp, rank, size, g):
    inp = xp.tensor(np.arange(size * 4) + 100 * rank, "float64")
    out = xp.full((size * 4,), 0, "float64")
    w = dist.all_to_all_single(out, inp, async_op=True, group=g)
    dist.all_reduce(out, group=g)  # reads and writes out: after the exchange
    w.wait()
    # rank me receives block me of every rank r: r's values 4*me.. + 100*r
    received = [np.concatenate([np.arange(4 * me, 4 * me + 4) + 100 * r for r in range(size)])
                for me in range(size)]
    np.testing.assert_array_equal(to_np(out), np.sum(received, axis=0))


def test_broadcast_then_all_reduce(rank, size, g):
    x = np.full(8, float(rank + 1))
    w = dist.broadcast(x, src=size - 1, async_op=True, group=g)
    dist.all_reduce(x, group=g)
    w.wait()
    np.testing.assert_array_equal(x, np.full(8, float(size * size)))


def test_paddle_face_in_call_order(rank, size):
    paddle = pytest.importorskip("paddle")
    import mpicoll.paddle as pdist

    x = paddle.ones([4], dtype="float32")
    task = pdist.all_reduce(x, sync_op=False)
    pdist.all_reduce(x)
    task.wait()
    np.testing.assert_array_equal(x.numpy(), np.full(4, float(size * size)))


@pytest.mark.mpi(min_size=2)
def test_a_pending_receive_holds_back_no_call_on_other_memory(rank, size, g):
    # rank 0 posts a receive that rank 1 satisfies only after an all_reduce: waiting for the
    # receive first would deadlock
    y = np.zeros(4)
    x = np.full(4, float(rank))
    if rank == 0:
        w = dist.irecv(y, src=1, group=g)
        dist.all_reduce(x, group=g)
        w.wait()
        np.testing.assert_array_equal(y, np.full(4, 7.0))
    else:
        dist.all_reduce(x, group=g)
        if rank == 1:
            dist.send(np.full(4, 7.0), dst=0, group=g)
    np.testing.assert_array_equal(x, np.full(4, float(sum(range(size)))))


@pytest.mark.mpi(min_size=2)
def test_reads_of_what_a_pending_send_reads_are_not_held_back(rank, size, g):
    # a large send (no eager copy: it completes only once rank 1 receives) stays pending
    # while rank 0 all_gathers from the same tensor; rank 1 receives after the all_gather
    n = 1 << 20
    x = np.full(n, float(rank + 1))
    outs = [np.zeros(n) for _ in range(size)]
    if rank == 0:
        w = dist.isend(x, dst=1, group=g)
        dist.all_gather(outs, x, group=g)
        w.wait()
    else:
        dist.all_gather(outs, x, group=g)
        if rank == 1:
            got = np.zeros(n)
            dist.recv(got, src=0, group=g)
            np.testing.assert_array_equal(got, np.full(n, 1.0))
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o, np.full(n, float(r + 1)))



def test_a_persistent_start_runs_after_a_pending_call_on_its_tensor(rank, size, g):
    x = np.full(16, float(rank + 1))
    with dist.all_reduce_init(x, group=g) as coll:
        w = dist.all_reduce(x, async_op=True, group=g)
        coll.start()  # the restart waits for the pending call on x
        w.wait()
    np.testing.assert_array_equal(x, np.full(16, float(size * sum(range(1, size + 1)))))


@pytest.mark.mpi(min_size=2)
def test_a_persistent_start_reading_what_a_pending_send_reads_is_not_held_back(rank, size, g):
    # rank 0's large isend of x completes only once rank 1 receives, which rank 1 does after
    # the persistent all_gather that reads x: waiting for the send first would deadlock
    n = 1 << 20
    x = np.full(n, float(rank + 1))
    out = np.zeros(size * n)
    with dist.all_gather_into_tensor_init(out, x, group=g) as coll:
        if rank == 0:
            w = dist.isend(x, dst=1, group=g)
            coll.start()
            w.wait()
        else:
            coll.start()
            if rank == 1:
                got = np.zeros(n)
                dist.recv(got, src=0, group=g)
                np.testing.assert_array_equal(got, np.full(n, 1.0))
    np.testing.assert_array_equal(out, np.repeat(np.arange(1.0, size + 1), n))


def test_completed_works_keep_no_tensor_alive(rank, size, g):
    import gc
    import weakref

    keep = np.zeros(4)
    pend = dist.all_reduce(keep, async_op=True, group=g)  # something stays pending
    x = np.full(8, 1.0)
    ref = weakref.ref(x)
    w = dist.all_reduce(x, async_op=True, group=g)
    dist.all_reduce(x[:2], group=g)  # ordered: a search that indexes w
    w.wait()
    del w, x
    gc.collect()
    pend.wait()
    assert ref() is None
