"""The rest of paddle.distributed's communication layer in mpicoll.paddle, with Paddle tensors.

wait, destroy_process_group, get_group, get_backend, is_available, send_object_list,
recv_object_list, ParallelEnv, gloo_*, scatter of one tensor, and the stream namespace.
Every result is checked against a numpy reference each rank computes locally.

The test that destroys every group (WORLD included) comes last and initialises
again, so the tests after it (in this file or the next) find a working world.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _reference import split, values
from _sync import check_blocking_barrier

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Paddle warns on import that ccache is missing
    import paddle  # installed wherever the suite runs (make venv): a failure, never a skip
    import paddle.distributed as paddle_dist

import mpicoll.paddle as dist
from mpicoll.paddle import stream

COLS = 3
ROWS = 2  # rows per rank where the split is even


def pt(a: np.ndarray):
    return paddle.to_tensor(np.ascontiguousarray(a))


def sentinel(shape, dtype="float32"):
    """An output filled with 99, so parts left unwritten show."""
    return paddle.full(shape, 99, dtype=dtype)


def rows_of(r: int, dtype="float32", n: int = ROWS, salt: int = 0) -> np.ndarray:
    """What rank ``r`` contributes: ``n`` rows every rank can recompute."""
    return values(dtype, (n, COLS), r, salt)


def expect(t, ref: np.ndarray) -> None:
    np.testing.assert_array_equal(t.numpy(), np.asarray(ref).astype(t.numpy().dtype))


def finish(task, sync_op: bool) -> None:
    """A sync call returns a completed task; an async one completes on wait()."""
    assert task is not None
    if sync_op:
        assert task.is_completed()
    else:
        task.wait()
        assert task.is_completed()


SYNC = pytest.mark.parametrize("sync_op", [True, False], ids=["sync", "async"])


# -- wait -------------------------------------------------------------------------------


def test_wait_after_async_all_reduce_gives_the_result(rank, size):
    t = pt(rows_of(rank))
    task = dist.all_reduce(t, sync_op=False)
    assert dist.wait(t) is None
    expect(t, sum(rows_of(r) for r in range(size)))
    assert task.is_completed()


def test_wait_after_async_alltoall_single_and_several_pending(rank, size):
    src = pt(np.concatenate([rows_of(rank, "int64", salt=j) for j in range(size)]))
    out = sentinel([ROWS * size, COLS], "int64")
    other = pt(rows_of(rank, salt=9))
    t1 = dist.alltoall_single(out, src, sync_op=False)
    t2 = dist.all_reduce(other, op=dist.ReduceOp.MAX, sync_op=False)
    dist.wait(out, use_calc_stream=False)  # accepted either way
    expect(out, np.concatenate([rows_of(j, "int64", salt=rank) for j in range(size)]))
    assert t1.is_completed()
    dist.wait(other)
    expect(other, np.max([rows_of(r, salt=9) for r in range(size)], axis=0))
    assert t2.is_completed()


def test_wait_on_a_group(rank, size):
    members = list(range(1, size)) or [0]
    g = dist.new_group(members)
    t = pt(rows_of(rank))
    if rank not in members:
        assert dist.wait(t, group=g) is None  # not a member: returns at once, as Paddle
        expect(t, rows_of(rank))
    else:
        task = dist.all_reduce(t, group=g, sync_op=False)
        dist.wait(t, group=g)
        expect(t, sum(rows_of(r) for r in members))
        assert task.is_completed()
    dist.barrier()


def test_an_empty_output_list_stays_empty_when_the_call_is_refused(rank, size):
    # Paddle fills an empty output list; a refused call must leave it as it was, and a
    # non-tensor input gets the error that names it (not the list's AttributeError)
    outs = []
    with pytest.raises(TypeError, match=r"^alltoall: in_tensor_list\[0\] of type list"):
        dist.alltoall(outs, [[1.0, 2.0]] * size)
    with pytest.raises(ValueError, match=r"^alltoall: in_tensor_list must have one tensor"):
        dist.alltoall(outs, [pt(rows_of(rank))] * (size + 1))
    if size > 1:
        with pytest.raises(ValueError, match=r"^alltoall: in_tensor_list must have one dtype"):
            dist.alltoall(outs, [pt(rows_of(rank))] + [pt(rows_of(rank, "int64"))] * (size - 1))
    with pytest.raises(TypeError, match=r"^all_gather: tensor of type list"):
        dist.all_gather(outs, [1.0, 2.0])
    with pytest.raises(TypeError, match=r"^all_gather: tensor has dtype object"):
        dist.all_gather(outs, np.array([1, None], dtype=object))
    with pytest.raises(TypeError, match=r"^gather: tensor of type list"):
        dist.gather([1.0, 2.0], outs, dst=rank)  # (refused on every rank, each its own root)
    assert outs == []
    dist.all_gather(outs, pt(rows_of(rank)))  # a good call fills it
    assert len(outs) == size
    for r, o in enumerate(outs):
        expect(o, rows_of(r))


def test_wait_without_a_group_waits_for_every_group(rank, size):
    # Paddle's wait syncs the calculation stream (use_calc_stream=True, the default), which
    # every earlier operation precedes, whatever its group
    members = list(range(size))[::-1]
    g = dist.new_group(members)
    t = pt(rows_of(rank))
    task = dist.all_reduce(t, group=g, sync_op=False)
    assert not task.is_sync()
    dist.wait(t)
    expect(t, sum(rows_of(r) for r in members))
    assert task.is_completed()
    assert dist.all_reduce(pt(rows_of(rank))).is_sync()


# -- groups: get_group, get_backend, is_available, destroy_process_group ------------------


def test_get_group(rank, size):
    world = dist.init_parallel_env()
    assert dist.get_group() is world and dist.get_group(0) is world
    assert (world.id, world.ranks, world.rank) == (0, list(range(size)), rank)
    g = dist.new_group(list(range(size))[::-1])
    assert g.id > 0 and dist.get_group(g.id) is g
    solo = dist.new_group([size - 1])
    assert dist.get_group(solo.id) is solo  # non-members find it too
    assert solo.rank == (0 if rank == size - 1 else -1)
    unknown = solo.id + 1000
    with pytest.warns(UserWarning, match=f"Group {unknown} is not initialized"):
        assert dist.get_group(unknown) is None


def test_get_backend_and_is_available(rank, size):
    assert dist.is_available() is True
    assert dist.get_backend() == "mpi"
    g = dist.new_group(list(range(size)))
    assert dist.get_backend(g) == "mpi" == g.backend


@pytest.mark.mpi(min_size=2)
def test_get_backend_of_a_group_without_this_rank_raises(rank, size):
    g = dist.new_group([0])
    if rank == 0:
        assert dist.get_backend(g) == "mpi"
    else:
        with pytest.raises(RuntimeError, match="get_backend"):
            dist.get_backend(g)


def test_destroy_a_group_makes_it_unusable(rank, size):
    g = dist.new_group(list(range(size)))
    t = pt(rows_of(rank))
    dist.all_reduce(t, group=g)
    expect(t, sum(rows_of(r) for r in range(size)))
    gid = g.id
    dist.destroy_process_group(g)
    assert dist.is_initialized()  # the global group lives on, as in Paddle
    before = t.numpy().copy()
    with pytest.raises(ValueError, match="destroyed"):
        dist.all_reduce(t, group=g)
    np.testing.assert_array_equal(t.numpy(), before)
    with pytest.warns(UserWarning, match=f"Group {gid} is not initialized"):
        assert dist.get_group(gid) is None
    w = pt(rows_of(rank))
    dist.all_reduce(w)
    expect(w, sum(rows_of(r) for r in range(size)))


@pytest.mark.mpi(min_size=2)
def test_destroy_a_group_without_this_rank(rank, size):
    g = dist.new_group([0])
    dist.destroy_process_group(g)  # on every rank; a no-op off the group
    assert dist.get_rank(g) == (0 if rank == 0 else -1)
    w = pt(rows_of(rank))
    dist.all_reduce(w)
    expect(w, sum(rows_of(r) for r in range(size)))


# -- object messages ----------------------------------------------------------------------


@pytest.mark.mpi(min_size=2)
def test_send_recv_object_list(rank, size):
    data = ["hello", {"key": 100}, [1, 2, 3], np.arange(3)]  # Paddle's example, and an array
    if rank == 0:
        assert dist.send_object_list(data, dst=1) is None
    elif rank == 1:
        got = [None] * 4
        assert dist.recv_object_list(got, src=0) == 0  # the sender's rank
        assert got[:3] == data[:3]
        np.testing.assert_array_equal(got[3], data[3])
    # Paddle's default dst and src are rank 0
    if rank == 1:
        dist.send_object_list([{"from": 1}])
    elif rank == 0:
        got = [None]
        dist.recv_object_list(got, src=1)
        assert got == [{"from": 1}]
    dist.barrier()


@pytest.mark.mpi(min_size=2)
def test_object_list_by_group_rank(rank, size):
    members = [size - 2, size - 1]  # at 4 ranks group ranks differ from global ranks
    g = dist.new_group(members)
    if rank == members[0]:
        dist.send_object_list([("to", 1), rank], group=g, dst_in_group=1)
        got = [None]
        assert dist.recv_object_list(got, group=g, src_in_group=1) == members[1]
        assert got == [members[1] * 10]
    elif rank == members[1]:
        got = [None, None]
        assert dist.recv_object_list(got, group=g, src_in_group=0) == members[0]
        assert got == [("to", 1), members[0]]
        dist.send_object_list([rank * 10], dst=members[0], group=g)  # a global dst
    else:  # not a member: nothing to do, as in Paddle
        assert dist.send_object_list([1], group=g, dst_in_group=1) is None
        assert dist.recv_object_list([None], group=g, src_in_group=0) is None
    dist.barrier()


def test_object_list_errors_are_raised_before_communicating(rank, size):
    for fn in (dist.send_object_list, dist.recv_object_list):
        with pytest.raises(ValueError, match="object_list cannot be None or empty"):
            fn([], (rank + 1) % size)  # as Paddle, before anything else
    with pytest.raises(ValueError, match="dst_in_group"):
        dist.send_object_list([1], dst=0, dst_in_group=0)
    with pytest.raises(ValueError, match="src_in_group"):
        dist.recv_object_list([None], src=0, src_in_group=0)
    dist.barrier()  # nothing was sent: the next test's messages meet no stray one


# -- ParallelEnv and gloo_* ---------------------------------------------------------------


def test_parallel_env_rank_and_size_come_from_mpi(rank, size):
    env = dist.ParallelEnv()
    assert (env.rank, env.world_size, env.local_rank, env.nranks) == (rank, size, rank, size)


def test_parallel_env_reads_paddles_variables_as_paddle(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.2:6170")
    monkeypatch.setenv("PADDLE_CURRENT_ENDPOINT", "10.0.0.2:6170")
    monkeypatch.setenv("FLAGS_nccl_nrings", "2")
    monkeypatch.setenv("PADDLE_PG_TIMEOUT", "12345")
    monkeypatch.setenv("FLAGS_selected_gpus", "3,1")
    ours, theirs = dist.ParallelEnv(), paddle_dist.ParallelEnv()
    for name in ("trainer_endpoints", "current_endpoint", "nrings", "pg_timeout",
                 "device_type"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.trainer_endpoints == ["10.0.0.1:6170", "10.0.0.2:6170"]
    # Paddle's CUDA build takes FLAGS_selected_gpus' first entry (its CPU build has none)
    assert ours.device_id == ours.dev_id == 3


def test_gloo_init_barrier_release(rank, size):
    assert dist.gloo_init_parallel_env(rank, size, "127.0.0.1:6170") is None
    assert dist.gloo_init_parallel_env(rank, size, "127.0.0.1:6170") is None  # again: fine
    assert dist.is_initialized()
    with pytest.raises(ValueError, match="rank_num must match MPI's: expected"):
        dist.gloo_init_parallel_env(rank, size + 1, "127.0.0.1:6170")
    with pytest.raises(ValueError, match="rank_id must match MPI's: expected"):
        dist.gloo_init_parallel_env((rank + 1) % size + size, size, "127.0.0.1:6170")
    returned = []
    check_blocking_barrier(lambda: returned.append(dist.gloo_barrier()))
    assert returned == [None]
    assert dist.gloo_release() is None
    t = pt(rows_of(rank))
    dist.all_reduce(t)  # MPI lives on after gloo_release
    expect(t, sum(rows_of(r) for r in range(size)))


# -- scatter of one tensor ----------------------------------------------------------------


def _garbage(kind: str):
    return {"tensor": paddle.ones([5]), "string": "garbage", "list": [1, "x", None]}[kind]


@SYNC
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("elsewhere", ["none", "tensor", "string", "list"])
def test_scatter_of_one_tensor(sync_op, where, elsewhere, rank, size):
    src = 0 if where == "first" else size - 1
    out = sentinel([ROWS, COLS], "int64")
    whole = np.concatenate([rows_of(j, "int64") for j in range(size)])
    if rank == src:
        tensor_list = pt(whole)
        task = dist.scatter(out, tensor_list, src=src, sync_op=sync_op)
        expect(tensor_list, whole)  # the input is not modified
    elif elsewhere == "none":
        task = dist.scatter(out, src=src, sync_op=sync_op)
    else:  # ignored off src, whatever it is: a warning, never an error
        with pytest.warns(UserWarning, match="tensor_list"):
            task = dist.scatter(out, _garbage(elsewhere), src=src, sync_op=sync_op)
    if sync_op:
        assert task.is_completed()
    else:
        dist.wait(out)
        assert task.is_completed()
    expect(out, rows_of(rank, "int64"))


@pytest.mark.mpi(min_size=2)
def test_scatter_of_a_tensor_not_divisible_raises_on_src(rank, size):
    out = sentinel([ROWS, COLS])
    bad = pt(np.zeros((ROWS * size + 1, COLS), np.float32))
    with pytest.raises(ValueError, match="tensor_list"):
        dist.scatter(out, bad, src=rank)  # every rank its own src: raised before any MPI
    expect(out, np.full((ROWS, COLS), 99))


# -- paddle.distributed.stream ------------------------------------------------------------


@SYNC
def test_stream_all_gather(sync_op, rank, size):
    listed = []
    finish(stream.all_gather(listed, pt(rows_of(rank)), sync_op=sync_op), sync_op)
    assert len(listed) == size
    for j in range(size):
        expect(listed[j], rows_of(j))
    whole = sentinel([ROWS * size, COLS])
    finish(stream.all_gather(whole, pt(rows_of(rank)), sync_op=sync_op), sync_op)
    expect(whole, np.concatenate([rows_of(j) for j in range(size)]))


@SYNC
def test_stream_all_reduce(sync_op, rank, size):
    t = pt(rows_of(rank, "int64"))
    finish(stream.all_reduce(t, dist.ReduceOp.PROD, sync_op=sync_op), sync_op)
    expect(t, np.prod([rows_of(r, "int64") for r in range(size)], axis=0))
    t = pt(rows_of(rank))
    finish(stream.all_reduce(t, sync_op=True, use_calc_stream=True), True)  # allowed
    expect(t, sum(rows_of(r) for r in range(size)))


@SYNC
def test_stream_alltoall(sync_op, rank, size):
    ins = [pt(rows_of(rank, salt=j)) for j in range(size)]
    outs = [sentinel([ROWS, COLS]) for _ in range(size)]
    finish(stream.alltoall(outs, ins, sync_op=sync_op), sync_op)
    for j in range(size):
        expect(outs[j], rows_of(j, salt=rank))
    whole_in = pt(np.concatenate([rows_of(rank, salt=j) for j in range(size)]))
    whole_out = sentinel([ROWS * size, COLS])
    finish(stream.alltoall(whole_out, whole_in, sync_op=sync_op), sync_op)
    expect(whole_out, np.concatenate([rows_of(j, salt=rank) for j in range(size)]))


@SYNC
def test_stream_alltoall_single_takes_out_split_sizes_first(sync_op, rank, size):
    in_splits = [split(rank, j) for j in range(size)]
    out_splits = [split(j, rank) for j in range(size)]
    src = pt(np.concatenate([rows_of(rank, n=in_splits[j], salt=j) for j in range(size)]))
    out = sentinel([sum(out_splits), COLS])
    # positionally, as Paddle's stream form orders them: out_split_sizes, in_split_sizes
    finish(stream.alltoall_single(out, src, out_splits, in_splits, None, sync_op), sync_op)
    expect(out, np.concatenate([rows_of(j, n=out_splits[j], salt=rank) for j in range(size)]))


@SYNC
def test_stream_broadcast(sync_op, rank, size):
    t = pt(rows_of(rank))
    finish(stream.broadcast(t, src=size - 1, sync_op=sync_op), sync_op)
    expect(t, rows_of(size - 1))


@SYNC
def test_stream_gather(sync_op, rank, size):
    dst = size - 1
    gather_list = [] if rank == dst else None
    task = stream.gather(pt(rows_of(rank)), gather_list, dst=dst, sync_op=sync_op)
    finish(task, sync_op)
    if rank == dst:
        assert len(gather_list) == size
        for j in range(size):
            expect(gather_list[j], rows_of(j))


@SYNC
def test_stream_reduce(sync_op, rank, size):
    t = pt(rows_of(rank))
    finish(stream.reduce(t, dst=size - 1, op=dist.ReduceOp.MIN, sync_op=sync_op), sync_op)
    if rank == size - 1:
        expect(t, np.min([rows_of(r) for r in range(size)], axis=0))


@SYNC
def test_stream_reduce_scatter(sync_op, rank, size):
    out = sentinel([ROWS, COLS])
    ins = [pt(rows_of(rank, salt=j)) for j in range(size)]
    finish(stream.reduce_scatter(out, ins, sync_op=sync_op), sync_op)
    expect(out, sum(rows_of(r, salt=rank) for r in range(size)))
    out = sentinel([ROWS, COLS])
    whole = pt(np.concatenate([rows_of(rank, salt=j) for j in range(size)]))
    finish(stream.reduce_scatter(out, whole, dist.ReduceOp.MAX, sync_op=sync_op), sync_op)
    expect(out, np.max([rows_of(r, salt=rank) for r in range(size)], axis=0))


@SYNC
def test_stream_scatter(sync_op, rank, size):
    src = size - 1
    out = sentinel([ROWS, COLS])
    parts = [pt(rows_of(j)) for j in range(size)]
    if rank == src:
        finish(stream.scatter(out, parts, src=src, sync_op=sync_op), sync_op)
    else:  # ignored off src, with a warning, as in Paddle
        with pytest.warns(UserWarning, match="tensor_or_tensor_list is meaningless"):
            finish(stream.scatter(out, "garbage", src=src, sync_op=sync_op), sync_op)
    expect(out, rows_of(rank))
    out = sentinel([ROWS, COLS])
    whole = pt(np.concatenate([rows_of(j, salt=1) for j in range(size)])) if rank == src else None
    finish(stream.scatter(out, whole, src=src, sync_op=sync_op), sync_op)
    expect(out, rows_of(rank, salt=1))


@SYNC
@pytest.mark.mpi(min_size=2)
def test_stream_send_recv(sync_op, rank, size):
    if rank == 0:
        finish(stream.send(pt(rows_of(0, "int32")), dst=1, sync_op=sync_op), sync_op)
    elif rank == 1:
        t = sentinel([ROWS, COLS], "int32")
        finish(stream.recv(t, src=0, sync_op=sync_op), sync_op)
        expect(t, rows_of(0, "int32"))
    dist.barrier()


def _misuse_calls(rank, size):
    """Every stream call, each with sync_op=False and use_calc_stream=True."""
    out, t = sentinel([ROWS, COLS]), sentinel([ROWS, COLS])
    whole = sentinel([ROWS * size, COLS])
    kw = {"sync_op": False, "use_calc_stream": True}
    calls = {
        "all_gather": lambda: stream.all_gather(whole, t, **kw),
        "all_reduce": lambda: stream.all_reduce(t, **kw),
        "alltoall": lambda: stream.alltoall(whole, pt(rows_of(rank, n=ROWS * size)), **kw),
        "alltoall_single": lambda: stream.alltoall_single(whole, pt(rows_of(rank, n=ROWS * size)),
                                                          **kw),
        "broadcast": lambda: stream.broadcast(t, src=0, **kw),
        "gather": lambda: stream.gather(t, [] if rank == 0 else None, dst=0, **kw),
        "reduce": lambda: stream.reduce(t, dst=0, **kw),
        "reduce_scatter": lambda: stream.reduce_scatter(out, pt(rows_of(rank, n=ROWS * size)),
                                                        **kw),
        "scatter": lambda: stream.scatter(out, pt(rows_of(rank, n=ROWS * size)), src=0, **kw),
        "send": lambda: stream.send(t, dst=(rank + 1) % size, **kw),
        "recv": lambda: stream.recv(t, src=(rank - 1) % size, **kw),
    }
    return calls, (out, t, whole)


def test_stream_use_calc_stream_without_sync_op_raises_before_communicating(rank, size):
    calls, outputs = _misuse_calls(rank, size)
    assert sorted(calls) == sorted(stream.__all__)  # every stream call is tried
    for call in calls.values():
        with pytest.raises(RuntimeError, match="use_calc_stream"):
            call()
    for o in outputs:
        expect(o, np.full(o.shape, 99))  # nothing was written
    # no collective was started: the next one pairs up on every rank
    t = pt(rows_of(rank))
    dist.all_reduce(t)
    expect(t, sum(rows_of(r) for r in range(size)))


# -- destroying everything (last: the world is initialised again at the end) --------------


def test_destroying_the_global_group_object_destroys_everything(rank, size):
    g = dist.new_group(list(range(size)))
    try:
        dist.destroy_process_group(dist.get_group(0))  # as destroy_process_group(), in Paddle
        assert not dist.is_initialized()
        with pytest.warns(UserWarning, match=f"Group {g.id} is not initialized"):
            assert dist.get_group(g.id) is None
    finally:
        dist.init_parallel_env()
    t = pt(rows_of(rank))
    dist.all_reduce(t)
    expect(t, sum(rows_of(r) for r in range(size)))


def test_destroy_everything_then_init_again(rank, size):
    g = dist.new_group(list(range(size)))
    t = pt(rows_of(rank))
    try:
        assert dist.destroy_process_group() is None
        assert not dist.is_initialized()
        with pytest.warns(UserWarning, match="Group 0 is not initialized"):
            assert dist.get_group(0) is None
        with pytest.raises(ValueError, match="destroyed"):
            dist.all_reduce(t, group=g)
        expect(t, rows_of(rank))
    finally:
        world = dist.init_parallel_env()  # the tests after this one need a world
    assert dist.is_initialized() and dist.get_group(0) is world
    assert (world.rank, world.ranks) == (rank, list(range(size)))
    dist.all_reduce(t)
    expect(t, sum(rows_of(r) for r in range(size)))
    h = dist.new_group(list(range(size)))
    assert h.id > g.id and dist.get_group(h.id) is h
    u = pt(rows_of(rank, salt=1))
    dist.all_reduce(u, group=h)
    expect(u, sum(rows_of(r, salt=1) for r in range(size)))
