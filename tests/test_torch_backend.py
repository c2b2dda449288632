"""torch.distributed with the "mpicoll" backend: every call, async futures, DDP."""

from __future__ import annotations

import time

import _ddp
import numpy as np
import pytest
import torch
import torch.distributed as tdist
from _sync import check_async_barrier, check_blocking_barrier

import mpicoll.torch  # (registers the backend)
from mpicoll.errors import ArgumentValueError, SizeMismatch


@pytest.fixture(scope="module", autouse=True)
def pg():
    # mpi://: rank 0 picks a fresh port for the store. The session makes and destroys
    # torch groups in several modules, and a store reopened at once on env://'s one
    # MASTER_PORT reset a peer's connection (4 ranks on 2 cores, once in CI)
    tdist.init_process_group("mpicoll", init_method="mpi://")
    yield tdist.group.WORLD
    tdist.destroy_process_group()


def test_backend_identity(rank, size):
    assert tdist.get_backend() == "mpicoll"
    assert tdist.get_backend(tdist.group.WORLD) == "mpicoll"
    assert tdist.get_rank() == rank and tdist.get_world_size() == size
    # the pip wheel of torch we test with has no MPI backend: "mpicoll" is what gives MPI
    assert tdist.is_mpi_available() is False


@pytest.mark.parametrize("op", ["SUM", "AVG", "PRODUCT", "MIN", "MAX"])
def test_all_reduce_float_ops(op, rank, size):
    t = torch.arange(4, dtype=torch.float64) + rank + 1
    tdist.all_reduce(t, op=getattr(tdist.ReduceOp, op))
    xs = np.stack([np.arange(4.0) + r + 1 for r in range(size)])
    ref = {"SUM": xs.sum(0), "AVG": xs.mean(0), "PRODUCT": xs.prod(0), "MIN": xs.min(0),
           "MAX": xs.max(0)}[op]
    np.testing.assert_allclose(t.numpy(), ref)


@pytest.mark.parametrize("op", ["BAND", "BOR", "BXOR"])
def test_all_reduce_bitwise(op, rank, size):
    t = torch.tensor([rank + 1, 7, 1 << rank], dtype=torch.int32)
    tdist.all_reduce(t, op=getattr(tdist.ReduceOp, op))
    xs = np.array([[r + 1, 7, 1 << r] for r in range(size)], np.int32)
    ref = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[op].reduce(xs)
    np.testing.assert_array_equal(t.numpy(), ref)


def test_all_reduce_premul_sum_and_bf16(rank, size):
    t = torch.full((3,), float(rank + 1))
    tdist.all_reduce(t, op=tdist._make_nccl_premul_sum(0.5))
    assert t.tolist() == [0.5 * size * (size + 1) / 2] * 3
    b = torch.full((5,), 1.5, dtype=torch.bfloat16)
    tdist.all_reduce(b)
    assert b.float().tolist() == [1.5 * size] * 5


def test_async_wait_and_future_then(rank, size):
    t = torch.ones(8) * rank
    work = tdist.all_reduce(t, async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0] * 2)
    assert fut.wait().tolist() == [size * (size - 1)] * 8  # 2 * sum(ranks)
    work.wait()
    assert work.is_completed()
    assert t.tolist() == [size * (size - 1) / 2] * 8


def test_broadcast_reduce(rank, size):
    t = torch.full((2, 2), float(rank))
    tdist.broadcast(t, src=size - 1)
    assert (t == size - 1).all()
    r = torch.tensor([float(rank)])
    tdist.reduce(r, dst=0, op=tdist.ReduceOp.MAX)
    if rank == 0:
        assert r.item() == size - 1


def test_all_gather_even_uneven_and_into_tensor(rank, size):
    outs = [torch.zeros(2) for _ in range(size)]
    tdist.all_gather(outs, torch.tensor([rank, -rank], dtype=torch.float32))
    assert [o.tolist() for o in outs] == [[r, -r] for r in range(size)]
    uneven = [torch.zeros(r + 1, dtype=torch.int64) for r in range(size)]
    tdist.all_gather(uneven, torch.full((rank + 1,), rank))
    assert [u.tolist() for u in uneven] == [[r] * (r + 1) for r in range(size)]
    stacked = torch.empty(size, 2)
    tdist.all_gather_into_tensor(stacked, torch.tensor([rank, 1.0]))
    assert stacked.tolist() == [[r, 1.0] for r in range(size)]


def test_gather_scatter(rank, size):
    gl = [torch.zeros(1) for _ in range(size)] if rank == 0 else None
    tdist.gather(torch.tensor([rank * 3.0]), gl, dst=0)
    if rank == 0:
        assert [g.item() for g in gl] == [r * 3.0 for r in range(size)]
    out = torch.zeros(2)
    sl = [torch.full((2,), float(r)) for r in range(size)] if rank == 0 else None
    tdist.scatter(out, sl, src=0)
    assert out.tolist() == [float(rank)] * 2


def test_reduce_scatter_list_and_tensor(rank, size):
    out = torch.zeros(2)
    tdist.reduce_scatter(out, [torch.full((2,), float(r + rank)) for r in range(size)])
    assert out.tolist() == [float(sum(rank + r for r in range(size)))] * 2
    out2 = torch.zeros(3)
    tdist.reduce_scatter_tensor(out2, torch.arange(size * 3, dtype=torch.float32),
                                op=tdist.ReduceOp.AVG)
    assert out2.tolist() == list(map(float, range(rank * 3, rank * 3 + 3)))


def test_all_to_all_single_uneven_and_list(rank, size):
    # rank i sends j+1 rows to rank j (the seed's uneven exchange, generalised)
    inp = torch.cat([torch.full((j + 1,), 100 * rank + j) for j in range(size)])
    out = torch.empty((rank + 1) * size, dtype=inp.dtype)
    tdist.all_to_all_single(out, inp, [rank + 1] * size, [j + 1 for j in range(size)])
    assert out.tolist() == [100 * i + rank for i in range(size) for _ in range(rank + 1)]
    outs = [torch.empty(1, dtype=torch.int64) for _ in range(size)]
    tdist.all_to_all(outs, [torch.tensor([10 * rank + j]) for j in range(size)])
    assert [o.item() for o in outs] == [10 * i + rank for i in range(size)]
    # the same exchange again, async, into an output reset to a sentinel
    out.fill_(-1)
    w = tdist.all_to_all_single(out, inp, [rank + 1] * size, [j + 1 for j in range(size)],
                                async_op=True)
    w.wait()
    exp = np.concatenate([np.full(rank + 1, 100 * i + rank) for i in range(size)])
    np.testing.assert_array_equal(out.numpy(), exp)


def test_lists_of_unequal_length_raise_before_communicating(rank, size):
    # direct ProcessGroup calls with more outputs than inputs (or fewer): gloo raises
    # ("requires input/output tensor lists to have the same length"); nothing may be
    # dropped silently
    pg = tdist.group.WORLD
    x = torch.full((2,), float(rank + 1))
    spare = [torch.full((2,), -1.0) for _ in range(size)]
    cases = [
        ("allgather", "output_tensors", lambda: pg.allgather([list(spare), list(spare)], [x])),
        ("allgather_into_tensor_coalesced", "outputs",
         lambda: pg.allgather_into_tensor_coalesced([torch.full((2 * size,), -1.0)] * 2, [x])),
        ("reduce_scatter", "output_tensors",
         lambda: pg.reduce_scatter([spare[0], spare[1 % size]], [list(spare)])),
        ("reduce_scatter_tensor_coalesced", "outputs",
         lambda: pg.reduce_scatter_tensor_coalesced([spare[0]] * 2, [torch.ones(2 * size)])),
        ("allgather_coalesced", r"output_lists\[0\]",  # one output per rank and input
         lambda: pg.allgather_coalesced([[spare[0], spare[0], spare[0]]] * size, [x, x])),
        ("gather", "output_tensors",  # the root's output lists against one input
         lambda: pg.gather([list(spare), list(spare)] if rank == 0 else [], [x],
                           tdist.GatherOptions())),
        ("scatter", "output_tensors",  # one output against the root's two input lists
         lambda: pg.scatter([spare[0]], [list(spare), list(spare)] if rank == 0 else [],
                            tdist.ScatterOptions())),
    ]
    for op, arg, call in cases:
        if op in ("gather", "scatter") and rank != 0:
            continue  # only the root holds the lists; the others' calls are well formed
        with pytest.raises(ArgumentValueError, match=f"^{op}: {arg} must hold one entry") as e:
            call()
        assert e.value.arg == arg.replace("\\", "")
    assert all(t.tolist() == [-1.0, -1.0] for t in spare)  # untouched


def test_one_tensor_calls_refuse_several(rank, size):
    # gloo's older multi-tensor form (the list combined, rootTensor picking the root's) is
    # refused with a message, never run per tensor (other values than gloo's)
    pg = tdist.group.WORLD
    a, b = torch.full((2,), rank + 1.0), torch.full((2,), rank + 2.0)
    with pytest.raises(ArgumentValueError, match=r"^allreduce: tensors must hold one tensor"):
        pg.allreduce([a, b])
    with pytest.raises(ArgumentValueError, match=r"^broadcast: rootTensor must index"):
        pg.broadcast([a], _opts(tdist.BroadcastOptions(), rootTensor=1))
    with pytest.raises(ArgumentValueError, match=r"^reduce: tensors must hold one tensor"):
        pg.reduce([a, b], tdist.ReduceOptions())
    assert a.tolist() == [rank + 1.0] * 2 and b.tolist() == [rank + 2.0] * 2
    # several tensors: allreduce_coalesced, each reduced on its own
    pg.allreduce_coalesced([a, b]).wait()
    assert a.tolist() == [sum(r + 1.0 for r in range(size))] * 2
    assert b.tolist() == [sum(r + 2.0 for r in range(size))] * 2


def _opts(opts, **fields):
    for k, v in fields.items():
        setattr(opts, k, v)
    return opts


def _within(fut, seconds):
    """``fut``'s value, failing (not hanging) where it is not done within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not fut.done():
        assert time.monotonic() < deadline, f"the future did not complete in {seconds} s"
        time.sleep(0.01)
    return fut.wait()


def test_future_callback_that_waits_on_another_collective(rank, size):
    """PowerSGD's pattern: a .then() callback waits on the future of a second async
    collective. torch runs the callback inside set_result, on the thread that completed
    the first future: that thread must not be the only one that can complete the second
    (it was, and the job hung). Rank 1 arrives late, so the first future completes on
    the progress thread, not at the call."""
    x = torch.ones(4)
    y = torch.full((4,), 2.0)

    def both(fut):
        second = tdist.all_reduce(y, async_op=True).get_future().wait()[0]
        return fut.value()[0] + second

    if rank == 1:
        time.sleep(0.5)
    chained = tdist.all_reduce(x, async_op=True).get_future().then(both)
    # and a chain two deep: the callback's callback waits on a third collective
    z = torch.full((4,), 3.0)

    def deeper(fut):
        return tdist.all_reduce(z, async_op=True).get_future().then(
            lambda f: f.value()[0] + fut.value()).wait()

    got = _within(chained.then(deeper), 60)
    # x + y summed (3 size), then z summed (3 size)
    np.testing.assert_array_equal(got.numpy(), np.full(4, 6.0 * size))
    np.testing.assert_array_equal(x.numpy(), np.full(4, float(size)))
    np.testing.assert_array_equal(y.numpy(), np.full(4, 2.0 * size))


def test_gather_futures_give_flat_lists(rank, size):
    # as gloo's: the future of a gather/allgather holds the output tensors, not the list
    # of lists the call took
    pg = tdist.group.WORLD
    x = torch.full((2,), float(rank))
    outs = [torch.zeros(2) for _ in range(size)]
    got = pg.allgather([outs], [x]).get_future().wait()
    assert len(got) == size and all(g is o for g, o in zip(got, outs, strict=True))
    assert [g.tolist() for g in got] == [[float(r)] * 2 for r in range(size)]
    gl = [torch.zeros(2) for _ in range(size)]
    w = pg.gather([gl] if rank == 0 else [], [x], _opts(tdist.GatherOptions(), rootRank=0))
    got = w.get_future().wait()
    if rank == 0:
        assert [g.tolist() for g in got] == [[float(r)] * 2 for r in range(size)]
    else:
        assert got == []


@pytest.mark.mpi(min_size=2)
def test_wait_timeout_leaves_the_future_to_complete(rank, size):
    # a wait that times out is not the operation failing: the future still completes with
    # the result once the late rank arrives (as gloo's)
    import datetime
    import time

    from mpicoll.errors import CollectiveTimeout

    t = torch.full((2,), 1.0)
    if rank == 1:
        time.sleep(1.0)
    w = tdist.all_reduce(t, async_op=True)
    fut = w.get_future()
    if rank == 0:
        with pytest.raises(CollectiveTimeout):
            w.wait(datetime.timedelta(seconds=0.2))
        assert not fut.done()
    assert [v.tolist() for v in fut.wait()] == [[float(size)] * 2]
    assert w.exception() is None and t.tolist() == [float(size)] * 2


@pytest.mark.mpi(min_size=2)
def test_a_calls_own_timeout_raises_and_leaves_it_pending(rank, size):
    # dist.barrier(timeout=...) and an option's timeout bound that call, as gloo's do
    import datetime
    import time

    from mpicoll.errors import CollectiveTimeout

    short = datetime.timedelta(seconds=0.2)
    if rank == 1:
        time.sleep(1.0)
    if rank != 1:
        start = time.monotonic()
        with pytest.raises(CollectiveTimeout, match=r"barrier: not completed within 0\.2 s"):
            tdist.barrier(timeout=short)
        assert time.monotonic() - start < 0.9  # (rank 1 arrives after 1 s)
    else:
        tdist.barrier(timeout=short)  # the others are there by then
    tdist.barrier()  # the pending one completed first, in order
    t = torch.full((2,), 1.0)
    o = tdist.AllreduceOptions()
    o.timeout = datetime.timedelta(seconds=30)  # long enough: the call completes
    o.asyncOp = False
    tdist.group.WORLD.allreduce([t], o).wait()
    assert t.tolist() == [float(size)] * 2


def test_polling_is_completed_beside_the_future_thread(rank, size):
    # is_completed() and the progress thread (completing the future) test one request:
    # MPI allows that in one thread at a time (MPICH failed "unexpected value in case
    # statement" within a few thousand such loops)
    o = tdist.AllreduceOptions()
    o.reduceOp = tdist.ReduceOp.AVG
    pg = tdist.group.WORLD
    for _ in range(3000):
        t = torch.full((4,), 1.0 + 2 * rank)
        w = pg.allreduce([t], o)
        fut = w.get_future()
        while not w.is_completed():
            pass
        fut.wait()
        assert t.tolist() == [float(size)] * 4


def test_barrier(rank, size):
    # rank 0 enters last: no rank may leave the barrier before it (tests/_sync.py)
    check_async_barrier(lambda: tdist.barrier(async_op=True))
    check_blocking_barrier(tdist.barrier)


@pytest.mark.mpi(min_size=2)
def test_p2p_any_source_and_batch(rank, size):
    if rank == 0:
        got = set()
        for _ in range(size - 1):
            b = torch.zeros(1)
            src = tdist.recv(b)
            assert b.item() == src * 1.5
            got.add(src)
        assert got == set(range(1, size))
    else:
        tdist.send(torch.tensor([rank * 1.5]), dst=0)
    tdist.barrier()
    right, left = (rank + 1) % size, (rank - 1) % size
    buf = torch.zeros(3)
    reqs = tdist.batch_isend_irecv([tdist.P2POp(tdist.isend, torch.full((3,), float(rank)),
                                                right),
                                    tdist.P2POp(tdist.irecv, buf, left)])
    for r in reqs:
        r.wait()
    assert buf.tolist() == [float(left)] * 3
    # single isend/irecv, posted in opposite orders on odd and even ranks
    buf.fill_(-1)
    mine = torch.full((3,), rank + 0.25)
    w = tdist.irecv(buf, src=left) if rank % 2 else tdist.isend(mine, dst=right)
    w2 = tdist.isend(mine, dst=right) if rank % 2 else tdist.irecv(buf, src=left)
    w.wait()
    w2.wait()
    assert buf.tolist() == [left + 0.25] * 3


def test_object_collectives(rank, size):
    out = [None] * size
    tdist.all_gather_object(out, {"r": rank})
    assert out == [{"r": r} for r in range(size)]
    objs = [rank, "x"] if rank == 0 else [None, None]
    tdist.broadcast_object_list(objs, src=0)
    assert objs == [0, "x"]


@pytest.mark.mpi(min_size=2)
def test_new_group_and_subgroups(rank, size):
    g = tdist.new_group([0, 1])
    if rank < 2:
        t = torch.tensor([float(rank + 1)])
        tdist.all_reduce(t, group=g)
        assert t.item() == 3.0
        b = torch.tensor([float(rank)])
        tdist.broadcast(b, src=1, group=g)
        assert b.item() == 1.0
    if size % 2 == 0:
        cur, _ = tdist.new_subgroups(group_size=2)
        t = torch.tensor([rank])
        tdist.all_reduce(t, group=cur)
        assert t.item() == 2 * (rank - rank % 2) + 1


def test_torch_shrink_group(rank, size):
    """torch's shrink_group over the backend. On 2.15 the ranks that stay make the new
    group (the last rank is left out, and does nothing), whose collectives run over
    mpicoll. On 2.13, whose c10d Backend a Python class cannot extend, the backend says it
    does not shrink, and torch refuses."""
    from mpicoll.torch._device import MpicollBackend

    g = tdist.new_group(list(range(size)))
    backend = g._get_backend(torch.device("cpu"))
    if MpicollBackend is None:
        assert backend.supports_shrinking is False
        if size > 1 and rank < size - 1:
            with pytest.raises(TypeError, match="does not support shrinking"):
                tdist.shrink_group([size - 1], group=g)
        tdist.destroy_process_group(g)
        return
    assert backend.supports_shrinking is True
    if size == 1:  # torch's own check, before the backend's
        with pytest.raises(ValueError, match="size 1"):
            tdist.shrink_group([0], group=g)
        tdist.destroy_process_group(g)
        return
    if rank == size - 1:
        tdist.destroy_process_group(g)  # what torch does to the old group on the others
        return
    small = tdist.shrink_group([size - 1], group=g)
    assert tdist.get_world_size(small) == size - 1 and tdist.get_rank(small) == rank
    assert type(small._get_backend(torch.device("cpu"))) is MpicollBackend
    t = torch.full((3,), float(rank + 1))
    tdist.all_reduce(t, group=small)
    assert t.tolist() == [float(sum(range(1, size)))] * 3
    tdist.destroy_process_group(small)


def test_functional_collectives(rank, size):
    import torch.distributed._functional_collectives as fc

    x = torch.full((size * 2,), float(rank))
    assert fc.all_reduce(x, "sum", tdist.group.WORLD).tolist() == [float(sum(range(size)))] * (
        size * 2)
    g = fc.all_gather_tensor(torch.tensor([float(rank)]), 0, tdist.group.WORLD)
    assert g.tolist() == [float(r) for r in range(size)]
    rs = fc.reduce_scatter_tensor(torch.arange(size * 2, dtype=torch.float32), "sum", 0,
                                  tdist.group.WORLD)
    assert rs.tolist() == [float(size * v) for v in (2 * rank, 2 * rank + 1)]
    a2a = fc.all_to_all_single(torch.arange(size, dtype=torch.float32) + 10 * rank, None, None,
                               tdist.group.WORLD)
    assert a2a.tolist() == [float(10 * i + rank) for i in range(size)]


def test_ddp_matches_single_process_training(rank, size):
    _ddp.matches_single_process_training(rank, size)


def test_ddp_no_sync_and_unused_parameters(rank, size):
    from torch.nn.parallel import DistributedDataParallel as DDP

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.used = torch.nn.Linear(4, 2)
            self.unused = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.used(x)

    torch.manual_seed(0)
    ddp = DDP(Net(), find_unused_parameters=True)
    xs = [torch.full((2, 4), float(rank + k)) for k in range(2)]
    with ddp.no_sync():
        ddp(xs[0]).sum().backward()  # accumulated locally, no communication
    ddp(xs[1]).sum().backward()
    g = ddp.module.used.weight.grad.clone()
    # reference: mean over ranks of the locally accumulated gradients
    local = 2 * (2 * rank + 1)  # d/dW sum(W x) over both batches, per entry of x
    expected = sum(2 * (2 * r + 1) for r in range(size)) / size
    assert torch.allclose(g, torch.full_like(g, expected)), (g, local)
    assert ddp.module.unused.weight.grad is None


def test_future_completes_without_being_waited_on(rank, size):
    # DDP's Reducer only waits on get_future(): the progress thread must complete it
    import time

    t = torch.ones(1 << 16)
    fut = tdist.all_reduce(t, async_op=True).get_future()
    deadline = time.monotonic() + 60
    while not fut.done():
        assert time.monotonic() < deadline, "future never completed on its own"
        time.sleep(1e-3)
    assert t[0].item() == size


def test_dtensor_redistribute(rank, size):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (size,))
    full = torch.arange(size * 4, dtype=torch.float32).reshape(size * 2, 2)
    d = distribute_tensor(full, mesh, [Shard(0)])
    assert torch.equal(d.to_local(), full[rank * 2:(rank + 1) * 2])
    assert torch.equal(d.redistribute(mesh, [Replicate()]).to_local(), full)


def test_fsdp2_gradients_match_reference(rank, size):
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    ref.load_state_dict(model.state_dict())
    fully_shard(model[0])
    fully_shard(model[2])
    fully_shard(model)
    x = torch.randn(size * 2, 4, generator=torch.Generator().manual_seed(1))
    model(x[rank * 2:(rank + 1) * 2]).sum().backward()
    ref(x).sum().backward()
    for mine, theirs in ((model[0].weight, ref[0].weight), (model[2].bias, ref[2].bias)):
        # FSDP averages gradients over ranks; the reference sums over the whole batch
        torch.testing.assert_close(mine.grad.full_tensor() * size, theirs.grad, atol=1e-5,
                                   rtol=1e-5)


@pytest.mark.mpi(min_size=2)
def test_sizes_that_disagree_raise_size_mismatch(rank, size):
    # issue 33's mistake through torch: rank 1 sends rank 0 one row too many; rank 0's
    # output is wrong, so rank 0 raises, also as torch's DistBackendError
    splits = [2] * size
    if rank == 1:
        splits[0] = 3
    inp = torch.arange(sum(splits), dtype=torch.float32)
    out = torch.zeros(2 * size)
    for expected in (SizeMismatch, tdist.DistBackendError):
        if rank == 0:
            with pytest.raises(expected, match="rank 1 sends 3 elements to rank 0"):
                tdist.all_to_all_single(out, inp, [2] * size, splits)
        else:
            tdist.all_to_all_single(out, inp, [2] * size, splits)
    outs = [torch.zeros(2) for _ in range(size)]
    ins = [torch.ones(3 if rank == 1 and j == 0 else 2) for j in range(size)]
    if rank == 0:
        with pytest.raises(SizeMismatch, match=r"all_to_all: .*output_tensor_list"):
            tdist.all_to_all(outs, ins)
    else:
        tdist.all_to_all(outs, ins)


def _raises_on(ranks, rank, call, match):
    """``call()`` raises SizeMismatch (a DistBackendError too) holding ``match`` on
    ``ranks`` only; the others return."""
    if rank in ranks:
        with pytest.raises(tdist.DistBackendError) as e:
            call()
        assert isinstance(e.value, SizeMismatch) and match in str(e.value), str(e.value)
    else:
        call()


@pytest.mark.mpi(min_size=2)
def test_the_other_sizes_that_disagree_raise_where_the_output_is_wrong(rank, size):
    # issue 33's other mistakes through torch, each made by rank 1 against rank 0, twice
    # (the second call takes the quick path where there is one). Where the world sends
    # messages of its own (2 to 8 ranks), a receiver whose output is wrong raises; where
    # MPI's collectives carry all_gather's and reduce_scatter's lists (more ranks, or
    # MPICOLL_DIRECT=0), MPI passes data on between ranks, and every rank raises
    direct = mpicoll.group.WORLD.direct is not None
    for _ in range(2):
        mine = torch.full((6 if rank == 1 else 4,), float(rank))
        slots = [torch.zeros(6 if j == 1 and rank != 0 else 4) for j in range(size)]
        _raises_on({0} if direct else range(size), rank, lambda: tdist.all_gather(slots, mine),
                   "rank 1 sends 6 elements to rank 0, whose tensor_list[1] holds 4" if direct
                   else "the size of tensor_list[1] (rank 1's tensor) is from 4 to 6 elements")
        if rank != 0 and direct:
            assert [s.tolist() for s in slots] == [[float(j)] * len(s)
                                                    for j, s in enumerate(slots)]
        sent = torch.full((2 if rank == 1 else 3,), float(rank))
        got = [torch.zeros(3) for _ in range(size)] if rank == 0 else None
        _raises_on({0}, rank, lambda: tdist.gather(sent, got, dst=0),
                   "rank 1 sends 2 elements, and gather_list[1] on the root (rank 0) holds 3")
        parts = [torch.full((1 if j == 1 else 2,), float(j)) for j in range(size)] \
            if rank == 0 else None
        into = torch.zeros(2)
        _raises_on({1}, rank, lambda: tdist.scatter(into, parts, src=0),
                   "the root (rank 0) sends 1 element in scatter_list[1], and tensor on "
                   "rank 1 holds 2")
        chunks = [torch.ones(3 if rank == 1 and j == 0 else 4) for j in range(size)]
        out = torch.zeros(4)
        _raises_on({0} if direct else range(size), rank,
                   lambda: tdist.reduce_scatter(out, chunks),
                   "rank 1's chunk for rank 0 (its input_list[0]) has 3 elements, and "
                   "output on rank 0 holds 4" if direct else "the size of input_list[0] (the "
                   "chunk for rank 0) is from 3 to 4 elements")
        if rank != 0 and direct:
            assert out.tolist() == [float(size)] * 4
        # the tensor forms: rank 1's blocks are 3 where the others' are 2, so every rank
        # receives a block of a size it did not expect
        n = 3 if rank == 1 else 2
        _raises_on(range(size), rank, lambda: tdist.all_gather_into_tensor(
            torch.zeros(n * size), torch.ones(n)), "all_gather_into_tensor: the ranks "
            "disagree on sizes")
        _raises_on(range(size), rank, lambda: tdist.reduce_scatter_tensor(
            torch.zeros(n), torch.ones(n * size)), "reduce_scatter_tensor: the ranks "
            "disagree on sizes")
