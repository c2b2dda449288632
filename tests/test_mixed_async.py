"""async on some ranks, blocking on others: every collective still matches.

In torch.distributed, ``async_op`` only decides whether the caller blocks, so
rank-dependent code may pass it on some ranks only (gloo gives the right result
for such a mix). mpicoll issues every collective as MPI's nonblocking call, so
the mix matches; these tests run each collective with ``async_op=True`` on even
ranks and False on odd ones, through every face, against numpy references.
"""

from __future__ import annotations

import numpy as np

import mpicoll as dist


def _run(call, rank):
    """Call with async_op on even ranks, blocking on odd ones; wait where async."""
    work = call(rank % 2 == 0)
    if rank % 2 == 0:
        assert work is not None
        work.wait()
    else:
        assert work is None


def test_all_reduce_broadcast_reduce(rank, size):
    x = np.arange(4.0) + rank
    _run(lambda a: dist.all_reduce(x, async_op=a), rank)
    np.testing.assert_array_equal(x, sum(np.arange(4.0) + r for r in range(size)))
    y = np.full(3, float(rank))
    _run(lambda a: dist.broadcast(y, src=size - 1, async_op=a), rank)
    np.testing.assert_array_equal(y, np.full(3, float(size - 1)))
    z = np.arange(2.0) * (rank + 1)
    _run(lambda a: dist.reduce(z, dst=0, op=dist.ReduceOp.MAX, async_op=a), rank)
    if rank == 0:
        np.testing.assert_array_equal(z, np.arange(2.0) * size)


def test_gathers_and_scatters(rank, size):
    inp = np.array([rank, 10 * rank], np.int64)
    outs = [np.zeros(2, np.int64) for _ in range(size)]
    _run(lambda a: dist.all_gather(outs, inp, async_op=a), rank)
    assert [o.tolist() for o in outs] == [[r, 10 * r] for r in range(size)]
    flat = np.zeros(2 * size, np.int64)
    _run(lambda a: dist.all_gather_into_tensor(flat, inp, async_op=a), rank)
    assert flat.tolist() == [v for r in range(size) for v in (r, 10 * r)]
    glist = [np.zeros(2, np.int64) for _ in range(size)] if rank == 0 else None
    _run(lambda a: dist.gather(inp, glist, dst=0, async_op=a), rank)
    if rank == 0:
        assert [g.tolist() for g in glist] == [[r, 10 * r] for r in range(size)]
    got = np.zeros(2, np.int64)
    slist = [np.array([r, -r], np.int64) for r in range(size)] if rank == 0 else None
    _run(lambda a: dist.scatter(got, slist, src=0, async_op=a), rank)
    assert got.tolist() == [rank, -rank]


def test_reduce_scatter_forms(rank, size):
    full = np.arange(2.0 * size) + rank
    ref = sum(np.arange(2.0 * size) + r for r in range(size))[2 * rank:2 * rank + 2]
    out = np.zeros(2)
    _run(lambda a: dist.reduce_scatter_tensor(out, full, async_op=a), rank)
    np.testing.assert_array_equal(out, ref)
    out2 = np.zeros(2)
    _run(lambda a: dist.reduce_scatter(out2, list(np.split(full.copy(), size)), async_op=a),
         rank)
    np.testing.assert_array_equal(out2, ref)


def test_all_to_all_forms(rank, size):
    inp = np.array([100 * rank + j for j in range(size)], np.int64)
    out = np.zeros(size, np.int64)
    _run(lambda a: dist.all_to_all_single(out, inp, async_op=a), rank)
    assert out.tolist() == [100 * j + rank for j in range(size)]
    # uneven: rank r sends j + 1 copies of (10 r + j) to rank j
    send = np.concatenate([np.full(j + 1, 10 * rank + j) for j in range(size)])
    recv = np.zeros((rank + 1) * size, send.dtype)
    _run(lambda a: dist.all_to_all_single(recv, send, [rank + 1] * size,
                                          [j + 1 for j in range(size)], async_op=a), rank)
    assert recv.tolist() == [10 * j + rank for j in range(size) for _ in range(rank + 1)]
    outs = [np.zeros(1, np.int64) for _ in range(size)]
    ins = [np.array([100 * rank + j]) for j in range(size)]
    _run(lambda a: dist.all_to_all(outs, ins, async_op=a), rank)
    assert [o.item() for o in outs] == [100 * j + rank for j in range(size)]


def test_barrier_then_p2p_mix(rank, size):
    _run(lambda a: dist.barrier(async_op=a), rank)
    if size < 2:
        return
    buf = np.zeros(3)
    if rank == 0:
        dist.send(np.arange(3.0), dst=1)  # blocking send, nonblocking receive
        w = dist.isend(np.arange(3.0) + 1, dst=1)
        w.wait()
    elif rank == 1:
        w = dist.irecv(buf, src=0)
        w.wait()
        np.testing.assert_array_equal(buf, np.arange(3.0))
        assert dist.recv(buf, src=0) == 0
        np.testing.assert_array_equal(buf, np.arange(3.0) + 1)


def test_torch_backend_mix(rank, size):
    import torch
    import torch.distributed as tdist

    import mpicoll.torch  # noqa: F401

    if not tdist.is_initialized():  # (mpi://: a fresh store port for each session group)
        tdist.init_process_group("mpicoll", init_method="mpi://")
    t = torch.ones(4) * (rank + 1)
    _torch_run(lambda a: tdist.all_reduce(t, async_op=a), rank)
    assert t.tolist() == [size * (size + 1) / 2] * 4
    inp = torch.arange(size, dtype=torch.float32) + 10 * rank
    out = torch.zeros(size)
    _torch_run(lambda a: tdist.all_to_all_single(out, inp, async_op=a), rank)
    assert out.tolist() == [10.0 * j + rank for j in range(size)]
    tdist.destroy_process_group()


def _torch_run(call, rank):
    work = call(rank % 2 == 0)
    if work is not None:
        work.wait()


def test_paddle_sync_op_mix(rank, size):
    import paddle

    import mpicoll.paddle as pdist

    x = paddle.to_tensor(np.arange(3.0, dtype=np.float32) + rank)
    task = pdist.all_reduce(x, sync_op=rank % 2 == 1)
    task.wait()
    np.testing.assert_array_equal(x.numpy(),
                                  sum(np.arange(3.0, dtype=np.float32) + r for r in range(size)))
