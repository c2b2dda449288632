"""mpicoll.paddle (Paddle 3.x API) and mpicoll.paddle.v2 with real Paddle tensors: the
Paddle face's semantics and the Paddle adapter's specifics.

The core collectives' dtype x op coverage on Paddle tensors comes from the framework
registry (tests/_frameworks.py), which runs every collective test on Paddle too. Every
result is checked against a numpy reference each rank computes locally.
"""

from __future__ import annotations

import subprocess
import sys

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import block, reduce_ref, split, to_np, values
from _sync import check_blocking_barrier

import mpicoll
import mpicoll.paddle as dist
import mpicoll.paddle.v2 as dist2
from mpicoll._adapter import as_buffer

P = frameworks.get("paddle")
paddle = P.module  # installed wherever the suite runs (make venv): a failure, never a skip

from mpicoll._adapter.frameworks import paddle as hooks  # noqa: E402  (imports paddle)

COLS = 3


def _a2a_input(rank, size, dtype):
    return np.concatenate([block(rank, j, split(rank, j), COLS, dtype) for j in range(size)])


def _a2a_expected(rank, size, dtype):
    return np.concatenate([block(j, rank, split(j, rank), COLS, dtype) for j in range(size)])


def _expect(got, ref: np.ndarray, dtype: str) -> None:
    """``got`` holds ``ref`` as a Paddle tensor of ``dtype`` would (Paddle's rounding)."""
    want = P.to_numpy(P.tensor(ref, dtype))
    np.testing.assert_array_equal(to_np(got), want.astype(to_np(got).dtype))


# -- the tensor adapter -------------------------------------------------------------


@pytest.mark.parametrize("dtype", P.dtypes)
def test_adapter_is_zero_copy_for_every_dtype(dtype):
    t = P.tensor(np.zeros((4, 3)), dtype)  # (paddle.zeros makes no uint32 or uint64)
    b = as_buffer(t, writable=True, op="test", name="t")
    assert not b.staged
    assert b.array.ctypes.data == t.data_ptr()
    assert b.dtype == dtype
    if dtype == "bfloat16":
        assert b.array.dtype == np.uint16  # the carrier
        b.array[0, 0] = 0x3F80  # 1.0
        assert float(t.astype("float32")[0, 0]) == 1.0


def test_adapter_views_strided_tensors_and_writes_back_in_order():
    base = paddle.zeros([3, 4], dtype="float32")
    view = base.T  # (4, 3) over the same memory, not contiguous
    assert not view.is_contiguous()
    b = as_buffer(view, writable=True, op="test", name="t")
    assert b.view.ctypes.data == base.data_ptr()
    b.array[...] = np.arange(12.0).reshape(4, 3)
    b.commit()
    np.testing.assert_array_equal(view.numpy(), np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(base.numpy(), np.arange(12.0).reshape(4, 3).T)


def test_adapter_tensor_needing_gradients_is_zero_copy():
    t = paddle.zeros([3])
    t.stop_gradient = False
    b = as_buffer(t, writable=True, op="test", name="t")
    assert b.array.ctypes.data == t.data_ptr()
    w = paddle.nn.Linear(2, 2).weight  # a parameter: a Tensor subclass needing gradients
    assert as_buffer(w, op="test", name="w").array.ctypes.data == w.data_ptr()


def test_importing_the_paddle_api_imports_no_framework_and_no_mpi():
    code = ("import sys, mpicoll.paddle, mpicoll.paddle.v2; print([m for m in "
            "['paddle', 'torch', 'numpy', 'mpi4py.MPI'] if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("dtype", ["float32", "bool", "bfloat16", "complex64"])
def test_staged_fallback_writes_into_a_strided_view(dtype):
    # the path for tensors DLPack refuses: a copy, written back with paddle.assign
    base = P.empty([3, 4], dtype)
    view = base[:, 1:3]
    arr, name, wb, _ = hooks.staged_view(view, True, "test", "t")
    assert name == dtype and arr.ctypes.data != view.data_ptr()
    new = P.tensor(values("float32" if dtype == "bfloat16" else dtype, (3, 2), 5), dtype)
    wb(as_buffer(new).array.copy())  # what MPI leaves in a staged buffer: the carrier
    expected = to_np(P.empty([3, 4], dtype)).copy()
    expected[:, 1:3] = to_np(new)
    np.testing.assert_array_equal(to_np(base), expected)


def test_non_cpu_tensor_is_refused():
    if not paddle.is_compiled_with_cuda() or paddle.device.cuda.device_count() == 0:
        pytest.skip("this Paddle build has no GPU: no non-CPU tensor can be made")
    t = paddle.zeros([2]).cuda()
    with pytest.raises(ValueError, match=r"all_reduce: tensor must be in host memory"):
        dist.all_reduce(t)


# -- environment and groups ---------------------------------------------------------


def test_init_parallel_env_world_group(rank, size):
    g = dist.init_parallel_env()
    assert isinstance(g, dist.Group)
    assert (g.rank, g.nranks, g.ranks, g.id, g.world_size) == (rank, size, list(range(size)),
                                                               0, size)
    assert g.is_member() and dist.is_initialized()
    assert dist.get_rank() == rank and dist.get_world_size() == size
    assert dist.get_rank(g) == rank and dist.get_world_size(g) == size


@pytest.mark.mpi(min_size=2)
def test_new_group_subset(rank, size):
    members = list(range(1, size))[::-1]  # everyone but rank 0, unsorted: Paddle sorts
    g = dist.new_group(members, backend="gloo")  # backend: accepted, unused
    assert g.ranks == sorted(members) and g.nranks == size - 1 and g.id > 0
    t = P.tensor(np.array([float(rank)]), "float32")
    if rank == 0:
        assert (g.rank, g.world_size, g.is_member()) == (-1, -1, False)
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        assert dist.all_reduce(t, group=g) is None
        assert dist.broadcast(t, src=size - 1, group=g) is None
        assert dist.alltoall_single(t, t, group=g) is None
        with pytest.raises(RuntimeError, match="all_gather: this rank is not a member"):
            dist.all_gather([], t, group=g)
        assert t.item() == 0.0
    else:
        assert g.rank == rank - 1 and dist.get_rank(g) == rank - 1
        assert g.get_group_rank(rank) == rank - 1 and g.get_global_rank(0) == 1
        dist.all_reduce(t, group=g)
        assert t.item() == sum(members)
        b = P.tensor(np.array([float(rank)]), "float32")
        dist.broadcast(b, src=size - 1, group=g)  # src: a global rank
        assert b.item() == size - 1
        out = []
        dist.all_gather(out, P.tensor(np.array([rank]), "int64"), group=g)
        assert [o.item() for o in out] == sorted(members)
    dist.barrier()


def test_group_accepts_an_mpicoll_process_group(rank, size):
    t = P.tensor(np.array([1.0]), "float32")
    dist.all_reduce(t, group=mpicoll.group.WORLD)
    assert t.item() == size


# -- alltoall -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int64", "float32", "bfloat16", "complex64", "bool"])
def test_alltoall_even_lists_empty_output_is_appended(dtype, rank, size):
    ins = [P.tensor(block(rank, j, 2, COLS, dtype), dtype) for j in range(size)]
    out = []
    task = dist.alltoall(out, ins)
    assert task.is_completed()
    assert len(out) == size and all(isinstance(o, paddle.Tensor) for o in out)
    for j in range(size):
        assert out[j].dtype == ins[j].dtype
        _expect(out[j], block(j, rank, 2, COLS, dtype), dtype)


def test_alltoall_uneven_lists(rank, size):
    ins = [P.tensor(block(rank, j, split(rank, j), COLS, "float64"), "float64")
           for j in range(size)]
    out = [P.empty([split(j, rank), COLS], "float64") for j in range(size)]
    dist.alltoall(out, ins)
    for j in range(size):
        _expect(out[j], block(j, rank, split(j, rank), COLS, "float64"), "float64")


def test_alltoall_async(rank, size):
    ins = [P.tensor(block(rank, j, 1, COLS, "int32"), "int32") for j in range(size)]
    out = [P.empty([1, COLS], "int32") for _ in range(size)]
    task = dist.alltoall(out, ins, sync_op=False)
    task.wait()
    assert task.is_completed()
    for j in range(size):
        _expect(out[j], block(j, rank, 1, COLS, "int32"), "int32")


# a representative subset: the core's dtype coverage on Paddle tensors is the registry's
@pytest.mark.parametrize("dtype", ["int8", "int64", "float16", "bfloat16", "complex128",
                                   "bool"])
def test_alltoall_single_split_sizes(dtype, rank, size):
    inp = P.tensor(_a2a_input(rank, size, dtype), dtype)
    exp = _a2a_expected(rank, size, dtype)
    in_splits = [split(rank, j) for j in range(size)]
    out_splits = [split(j, rank) for j in range(size)]
    out = P.empty(exp.shape, dtype)
    task = dist.alltoall_single(out, inp, in_splits, out_splits)
    assert task.is_completed()
    _expect(out, exp, dtype)
    # keywords, in any order, mean what their names say
    out = P.empty(exp.shape, dtype)
    dist.alltoall_single(in_split_sizes=in_splits, in_tensor=inp, out_split_sizes=out_splits,
                         out_tensor=out)
    _expect(out, exp, dtype)


def test_alltoall_single_equal_split_async(rank, size):
    inp = P.tensor(np.arange(2 * size) + 100 * rank, "int64")
    out = P.empty([2 * size], "int64")
    task = dist.alltoall_single(out, inp, sync_op=False)
    task.wait()
    assert task.is_completed()
    exp = np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * j for j in range(size)])
    _expect(out, exp, "int64")


def test_alltoall_single_into_a_non_contiguous_output(rank, size):
    base = P.empty([COLS, 2 * size], "float32")
    out = base.T  # (2 * size, COLS), not contiguous
    inp = P.tensor(np.concatenate([block(rank, j, 2, COLS, "float32") for j in range(size)]),
             "float32").T.contiguous().T  # a transposed input too
    assert not out.is_contiguous()
    dist.alltoall_single(out, inp)
    exp = np.concatenate([block(j, rank, 2, COLS, "float32") for j in range(size)])
    _expect(out, exp, "float32")
    _expect(base, exp.T, "float32")


def test_alltoall_tensors_form(rank, size):
    # Paddle 3.x's alltoall also takes two tensors
    inp = P.tensor(np.arange(size) + 10 * rank, "int64")
    out = P.empty([size], "int64")
    dist.alltoall(out, inp)
    _expect(out, np.arange(size) * 10 + rank, "int64")


# -- the two conventions ------------------------------------------------------------


def test_v2_takes_the_input_first(rank, size):
    inp = P.tensor(_a2a_input(rank, size, "int32"), "int32")
    exp = _a2a_expected(rank, size, "int32")
    in_splits = [split(rank, j) for j in range(size)]
    out_splits = [split(j, rank) for j in range(size)]
    out = P.empty(exp.shape, "int32")
    task = dist2.alltoall_single(inp, out, in_splits, out_splits, None, False)
    task.wait()
    _expect(out, exp, "int32")
    out = P.empty(exp.shape, "int32")
    dist2.alltoall_single(out_tensor=out, in_tensor=inp, in_split_sizes=in_splits,
                          out_split_sizes=out_splits)
    _expect(out, exp, "int32")
    ins = [P.tensor(block(rank, j, split(rank, j), COLS, "int32"), "int32") for j in range(size)]
    outs = [P.empty([split(j, rank), COLS], "int32") for j in range(size)]
    dist2.alltoall(ins, outs)
    for j in range(size):
        _expect(outs[j], block(j, rank, split(j, rank), COLS, "int32"), "int32")
    outs = []
    dist2.alltoall(out_tensor_list=outs,
                   in_tensor_list=[P.tensor(np.array([rank]), "int64")] * size)
    assert [o.item() for o in outs] == list(range(size))


def _mismatched(rank, size):
    # in: 3 rows per rank, out: 1 row per rank; in the other order neither fits
    inp = P.tensor(np.full((3 * size, 2), rank), "float32")
    out = P.empty([size, 2], "float32")
    return inp, out, [3] * size, [1] * size


def test_swapped_tensors_with_split_sizes_name_the_other_module(rank, size):
    inp, out, in_splits, out_splits = _mismatched(rank, size)
    with pytest.raises(ValueError) as e:
        dist.alltoall_single(inp, out, in_splits, out_splits)  # 2.x order given to 3.x
    msg = str(e.value)
    assert msg.startswith("alltoall_single: in_split_sizes must sum to dim 0 of in_tensor: "
                          f"expected {size}, got sum({in_splits}) = {3 * size}")
    assert ("the tensors may have been passed in Paddle 2.x order (in_tensor, out_tensor): "
            "mpicoll.paddle follows Paddle 3.x (out_tensor, in_tensor); for the 2.x order use "
            "mpicoll.paddle.v2") in msg
    with pytest.raises(ValueError) as e:
        dist2.alltoall_single(out, inp, in_splits, out_splits)  # 3.x order given to v2
    msg = str(e.value)
    assert msg.startswith("alltoall_single: in_split_sizes must sum to dim 0 of in_tensor")
    assert ("the tensors may have been passed in Paddle 3.x order (out_tensor, in_tensor): "
            "mpicoll.paddle.v2 follows Paddle 2.x (in_tensor, out_tensor); for the 3.x order "
            "use mpicoll.paddle") in msg
    np.testing.assert_array_equal(to_np(out), 99)  # nothing was written
    # the right order in each module works: 3 rows of value j from each rank j
    exp = np.repeat(np.arange(size, dtype=np.float32), 3)[:, None].repeat(2, axis=1)
    good = P.empty([3 * size, 2], "float32")
    dist.alltoall_single(good, inp, in_splits, in_splits)
    _expect(good, exp, "float32")
    good = P.empty([3 * size, 2], "float32")
    dist2.alltoall_single(inp, good, in_splits, in_splits)
    _expect(good, exp, "float32")


def test_swapped_lists_with_an_empty_output_list(rank, size):
    ins = [P.tensor(np.array([rank]), "int64") for _ in range(size)]
    with pytest.raises(ValueError, match=r"alltoall: in_tensor_list must not be empty: .*"
                                         r"for the 2\.x order use mpicoll\.paddle\.v2"):
        dist.alltoall(ins, [])
    with pytest.raises(ValueError, match=r"alltoall: in_tensor_list must not be empty: .*"
                                         r"for the 3\.x order use mpicoll\.paddle$"):
        dist2.alltoall([], ins)


def test_swapped_read_only_input_names_the_other_module(rank, size):
    inp = np.arange(size, dtype=np.int64)
    inp.flags.writeable = False
    out = np.zeros(size, np.int64)
    with pytest.raises(BufferError, match=r"alltoall_single: out_tensor is read-only .* "
                                          r"for the 2\.x order use mpicoll\.paddle\.v2"):
        dist.alltoall_single(inp, out)
    dist2.alltoall_single(inp, out)
    np.testing.assert_array_equal(out, np.full(size, rank))


# -- reductions ---------------------------------------------------------------------


PADDLE_OPS = {"SUM": "SUM", "MAX": "MAX", "MIN": "MIN", "PROD": "PRODUCT", "AVG": "AVG"}


@pytest.mark.parametrize("op", list(PADDLE_OPS))
@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_all_reduce_each_op(op, dtype, rank, size):
    src = "float32" if dtype == "bfloat16" else dtype
    inputs = [values(src, (5,), r) for r in range(size)]
    if dtype == "bfloat16":
        inputs = [P.to_numpy(P.tensor(a, "bfloat16")) for a in inputs]  # what the tensors hold
    t = P.tensor(inputs[rank], dtype)
    assert dist.all_reduce(t, getattr(dist.ReduceOp, op)).is_completed()
    ref = reduce_ref(inputs, PADDLE_OPS[op], "float32" if dtype == "bfloat16" else dtype)
    if dtype == "bfloat16":
        np.testing.assert_array_equal(to_np(t), P.to_numpy(P.tensor(ref, "bfloat16")))
    else:
        np.testing.assert_allclose(to_np(t), ref, rtol=1e-6)


def test_reduce_op_values_are_paddles():
    # MAX is 1 in Paddle (AVG in torch): the value must mean Paddle's op
    assert (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PROD,
            dist.ReduceOp.AVG) == (0, 1, 2, 3, 4)
    t = P.tensor(np.array([1.0]), "float32")
    with pytest.raises(ValueError, match=r"all_reduce: op must be a paddle ReduceOp: expected "
                                         r"one of SUM=0, MAX=1, MIN=2, PROD=3, AVG=4, got 7"):
        dist.all_reduce(t, 7)


def test_all_reduce_async_and_mpicoll_ops(rank, size):
    t = P.tensor(np.array([rank + 1], dtype=np.int32), "int32")
    task = dist.all_reduce(t, op=mpicoll.ReduceOp.BXOR, sync_op=False)
    task.wait()
    exp = 0
    for r in range(size):
        exp ^= r + 1
    assert t.item() == exp
    t = P.tensor(np.array([rank + 1.0]), "float32")
    dist.all_reduce(t, mpicoll.ReduceOp.premul_sum(2.0))
    assert t.item() == size * (size + 1)


@pytest.mark.parametrize("op", ["SUM", "MAX"])
def test_reduce_scatter(op, rank, size):
    inputs = [[values("float32", (2, COLS), r, salt=j) for j in range(size)]
              for r in range(size)]
    out = P.empty([2, COLS], "float32")
    task = dist.reduce_scatter(out, [P.tensor(a, "float32") for a in inputs[rank]],
                               getattr(dist.ReduceOp, op))
    assert task.is_completed()
    ref = reduce_ref([inputs[r][rank] for r in range(size)], op, "float32")
    np.testing.assert_allclose(to_np(out), ref, rtol=1e-6)
    # one tensor instead of a list (reduce_scatter_tensor), and sync_op=False
    out = P.empty([2, COLS], "float32")
    big = P.tensor(np.concatenate(inputs[rank]), "float32")
    dist.reduce_scatter(out, big, op=getattr(dist.ReduceOp, op), sync_op=False).wait()
    np.testing.assert_allclose(to_np(out), ref, rtol=1e-6)


def test_reduce(rank, size):
    dst = size - 1
    inputs = [values("float64", (4,), r) for r in range(size)]
    t = P.tensor(inputs[rank], "float64")
    dist.reduce(t, dst, dist.ReduceOp.MIN)
    if rank == dst:
        np.testing.assert_array_equal(to_np(t), reduce_ref(inputs, "MIN", "float64"))
    else:
        np.testing.assert_array_equal(to_np(t), inputs[rank])
    t = P.tensor(inputs[rank], "float64")
    dist.reduce(t, dst=0, sync_op=False).wait()
    if rank == 0:
        np.testing.assert_allclose(to_np(t), reduce_ref(inputs, "SUM", "float64"))


# -- rooted, gather, barrier ----------------------------------------------------------


def test_broadcast(rank, size):
    src = size - 1
    t = P.tensor(values("complex64", (3,), rank), "complex64")
    assert dist.broadcast(t, src).is_completed()
    np.testing.assert_array_equal(to_np(t), values("complex64", (3,), src))
    t = P.empty([2], "bfloat16") if rank != 0 else P.tensor(np.array([1.5, -2.25]), "bfloat16")
    dist.broadcast(t, src=0, sync_op=False).wait()
    np.testing.assert_array_equal(to_np(t), [1.5, -2.25])


def test_all_gather_lists_and_into_tensor(rank, size):
    mine = P.tensor(values("int16", (2, 2), rank), "int16")
    out = [P.empty([2, 2], "int16") for _ in range(size)]
    assert dist.all_gather(out, mine).is_completed()
    for j in range(size):
        _expect(out[j], values("int16", (2, 2), j), "int16")
    out = []
    dist.all_gather(out, mine, sync_op=False).wait()
    assert len(out) == size and all(isinstance(o, paddle.Tensor) for o in out)
    assert all(o.dtype == paddle.int16 and o.shape == [2, 2] for o in out)
    for j in range(size):
        _expect(out[j], values("int16", (2, 2), j), "int16")
    big = P.empty([2 * size, 2], "int16")
    dist.all_gather(big, mine)
    _expect(big, np.concatenate([values("int16", (2, 2), j) for j in range(size)]), "int16")


def test_scatter(rank, size):
    src = 0
    parts = [values("float32", (3,), j, salt=7) for j in range(size)]
    t = P.empty([3], "float32")
    if rank == src:
        assert dist.scatter(t, [P.tensor(p, "float32") for p in parts], src).is_completed()
    else:
        with pytest.warns(UserWarning, match="scatter: tensor_list is meaningless"):
            dist.scatter(t, [P.empty([3], "float32")] * size, src)  # ignored, as in Paddle
    np.testing.assert_array_equal(to_np(t), parts[rank])
    t = P.empty([3], "float32")
    lst = [P.tensor(p, "float32") for p in parts] if rank == src else None
    dist.scatter(t, lst, src=src, sync_op=False).wait()
    np.testing.assert_array_equal(to_np(t), parts[rank])


def test_gather(rank, size):
    dst = size - 1
    mine = P.tensor(values("int64", (2,), rank), "int64")
    out = [] if rank == dst else None
    task = dist.gather(mine, out, dst)
    assert task.is_completed()
    if rank == dst:
        assert len(out) == size
        for j in range(size):
            _expect(out[j], values("int64", (2,), j), "int64")
    out = [P.empty([2], "int64") for _ in range(size)] if rank == 0 else None
    dist.gather(mine, out, dst=0, sync_op=False).wait()
    if rank == 0:
        for j in range(size):
            _expect(out[j], values("int64", (2,), j), "int64")


def test_barrier():
    # rank 0 enters last: no rank may leave the barrier before it (tests/_sync.py)
    world = dist.init_parallel_env()
    returned = []
    check_blocking_barrier(lambda: returned.append(dist.barrier()))
    check_blocking_barrier(lambda: returned.append(dist.barrier(group=world)))
    assert returned == [None, None]


# -- point to point ---------------------------------------------------------------------


@pytest.mark.mpi(min_size=2)
def test_send_recv(rank, size):
    t = P.tensor(np.arange(4) + rank * 10, "float16")
    if rank == 0:
        assert dist.send(t, dst=1).is_completed()
    elif rank == 1:
        task = dist.recv(t, src=0)
        assert task.is_completed() and task.source_rank() == 0
        _expect(t, np.arange(4), "float16")
    if rank == 1:
        dist.send(t, 0, None, False).wait()
    elif rank == 0:
        got = P.empty([4], "float16")
        dist.recv(got, 1, None, False).wait()
        _expect(got, np.arange(4), "float16")


@pytest.mark.mpi(min_size=2)
def test_isend_irecv_ring(rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    send = P.tensor(values("bfloat16", (3,), rank), "bfloat16")
    got = P.empty([3], "bfloat16")
    tasks = [dist.isend(send, nxt), dist.irecv(got, prv)]
    for task in tasks:
        task.wait()
    assert all(task.is_completed() for task in tasks)
    _expect(got, values("bfloat16", (3,), prv), "bfloat16")
    got = P.empty([3], "bfloat16")
    tasks = [dist.irecv(got), dist.isend(send, nxt)]  # src=None: any source
    for task in tasks:
        task.wait()
    assert tasks[0].source_rank() == prv
    _expect(got, values("bfloat16", (3,), prv), "bfloat16")


@pytest.mark.mpi(min_size=2)
def test_batch_isend_irecv_ring(rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    send = P.tensor(values("int32", (2, 2), rank), "int32")
    got = P.empty([2, 2], "int32")
    ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, got, prv, group=None)]
    tasks = dist.batch_isend_irecv(ops)
    assert len(tasks) == 2
    for task in tasks:
        task.wait()
    _expect(got, values("int32", (2, 2), prv), "int32")


def test_p2pop_refuses_other_functions():
    with pytest.raises(ValueError, match="P2POp: op must be isend or irecv"):
        dist.P2POp(dist.send, P.tensor(np.zeros(1), "float32"), 0)
    with pytest.raises(TypeError, match="batch_isend_irecv: p2p_op_list must be a list"):
        dist.batch_isend_irecv([object()])


# -- objects ------------------------------------------------------------------------


def test_object_collectives(rank, size):
    gathered = []
    assert dist.all_gather_object(gathered, {"rank": rank, "sq": [rank] * rank}) is None
    assert gathered == [{"rank": r, "sq": [r] * r} for r in range(size)]

    src = size - 1
    objs = [f"from {rank}", (rank, None)] if rank == src else [None, None]
    dist.broadcast_object_list(objs, src)
    assert objs == [f"from {src}", (src, None)]

    out = ["stale", "entries"]
    ins = [{"for": j, "by": 0} for j in range(size)] if rank == 0 else None
    dist.scatter_object_list(out, ins, src=0)
    assert out == [{"for": rank, "by": 0}]


# -- the Paddle face with every framework's tensors ---------------------------------


def _exchange(xp, rank, size, group=None):
    """One uneven alltoall_single, one all_reduce and one all_gather (appended outputs)
    through the Paddle face, with ``xp``'s tensors; checked against numpy references."""
    inp = xp.tensor(_a2a_input(rank, size, "float32"), "float32")
    out = xp.empty(_a2a_expected(rank, size, "float32").shape, "float32")
    dist.alltoall_single(out, inp, [split(rank, j) for j in range(size)],
                         [split(j, rank) for j in range(size)], group=group)
    np.testing.assert_array_equal(to_np(out), _a2a_expected(rank, size, "float32"))
    red = xp.tensor(values("float32", (4,), rank), "float32")
    dist.all_reduce(red, dist.ReduceOp.MAX, group=group)
    np.testing.assert_array_equal(
        to_np(red), reduce_ref([values("float32", (4,), r) for r in range(size)], "MAX",
                               "float32"))
    gathered = []
    dist.all_gather(gathered, xp.tensor(values("float32", (2,), rank), "float32"), group=group)
    assert len(gathered) == size
    for j, g in enumerate(gathered):
        assert type(g) is type(inp)  # appended outputs are of the input's framework
        np.testing.assert_array_equal(to_np(g), values("float32", (2,), j))


def test_paddle_face_takes_every_framework(xp, rank, size, group):
    # Paddle's group=None (its world) and an mpicoll group both
    _exchange(xp, rank, size)
    _exchange(xp, rank, size, group)


@pytest.mark.mpi(min_size=2)
def test_frameworks_differ_per_rank_in_one_collective(rank, size):
    fws = frameworks.writable()
    _exchange(fws[(rank + 1) % len(fws)], rank, size)  # rank 0 torch, rank 1 paddle, ...
