"""torch.distributed's remaining calls, by behaviour, against numpy references.

all_reduce_coalesced / all_gather_coalesced (separate tensors, adjacent views of one
flat tensor, non-contiguous tensors; sync and async), split_group, get_pg_count,
get_node_local_rank, is_available, supports_complex, and the errors that are also
torch's ``DistBackendError``.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
import torch
import torch.distributed as torch_dist
from mpi4py import MPI

import mpicoll as dist
from mpicoll import errors

SHAPES = [(3,), (2, 4), (5,)]
FORMS = ["separate", "views", "non_contiguous"]
_TAG = 7411  # raw COMM_WORLD messages that order the ranks (no mpicoll group uses it)


def _values(rank, shape, k):
    """Rank ``rank``'s ``k``-th tensor: signs and magnitudes differ per rank, so SUM, MAX
    and AVG all give results that depend on every rank."""
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 3.0
    return a * (rank + 1) * (-1.0) ** (rank + k) + 10.0 * k


def _reference(op, shape, k, size):
    stack = np.stack([_values(r, shape, k) for r in range(size)])
    return {"SUM": stack.sum(0), "MAX": stack.max(0), "AVG": stack.sum(0) / size}[op]


def _from_np(xp, a):
    return torch.from_numpy(np.ascontiguousarray(a)).clone() if xp is torch else a.copy()


def _to_np(t):
    return t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _tensors(xp, form, arrays):
    """``arrays`` as the caller's tensors, in the given form; returns (tensors, flat or
    None: the one tensor that the views share)."""
    if form == "separate":
        return [_from_np(xp, a) for a in arrays], None
    if form == "views":
        flat = _from_np(xp, np.concatenate([a.reshape(-1) for a in arrays]))
        out, off = [], 0
        for a in arrays:
            out.append(flat[off:off + a.size].reshape(a.shape))
            off += a.size
        return out, flat
    # non_contiguous: every 2-d tensor is the transpose of a contiguous one
    out = []
    for a in arrays:
        if a.ndim == 2:
            t = _from_np(xp, a.T).T
            assert not (t.is_contiguous() if xp is torch else t.flags.c_contiguous)
            out.append(t)
        else:
            out.append(_from_np(xp, a))
    return out, None


def _done(work, async_op):
    if async_op:
        assert work is not None
        work.wait()
    else:
        assert work is None


def _check_in_step(size):
    """A good coalesced all-reduce that every rank makes, bounded in time: had a rank
    communicated before raising on bad input, this one would be mismatched on some rank
    and fail or time out there (which ends the job) instead of giving the sum."""
    ts = [torch.full((2,), float(k)) for k in range(2)]
    work = dist.all_reduce_coalesced(ts, async_op=True)
    work.wait(timeout=60)
    assert [t.tolist() for t in ts] == [[0.0, 0.0], [float(size)] * 2]


def _bad_on_rank0(rank, size, call, exc, arg):
    """Only rank 0 makes the bad call: it must raise ``exc`` naming ``arg`` without
    communicating (the others do not take part, so nothing may be sent or posted)."""
    if rank == 0:
        with pytest.raises(exc) as info:
            call()
        assert arg in str(info.value), str(info.value)
    _check_in_step(size)


# -- all_reduce_coalesced ------------------------------------------------------------


@pytest.mark.parametrize("async_op", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("op", ["SUM", "MAX", "AVG"])
@pytest.mark.parametrize("form", FORMS)
def test_all_reduce_coalesced(xp, form, op, async_op, rank, size):
    arrays = [_values(rank, s, k) for k, s in enumerate(SHAPES)]
    tensors, flat = _tensors(xp, form, arrays)
    originals = list(tensors)
    work = dist.all_reduce_coalesced(tensors, op=getattr(dist.ReduceOp, op),
                                     async_op=async_op)
    _done(work, async_op)
    assert all(a is b for a, b in zip(tensors, originals))
    for k, (t, s) in enumerate(zip(tensors, SHAPES)):
        assert tuple(t.shape) == s
        np.testing.assert_allclose(_to_np(t), _reference(op, s, k, size), rtol=1e-15)
    if flat is not None:  # the views are the flat tensor's memory: it holds every result
        np.testing.assert_allclose(_to_np(flat), np.concatenate(
            [_reference(op, s, k, size).reshape(-1) for k, s in enumerate(SHAPES)]))


def test_all_reduce_coalesced_torch_reduce_op_and_ints(rank, size):
    ts = [torch.arange(4, dtype=torch.int64) * (rank + 1), torch.tensor([rank], dtype=torch.int64)]
    dist.all_reduce_coalesced(ts, op=torch_dist.ReduceOp.SUM)
    total = sum(r + 1 for r in range(size))
    assert ts[0].tolist() == [i * total for i in range(4)]
    assert ts[1].tolist() == [sum(range(size))]


def test_all_reduce_coalesced_mixed_dtypes_raise_before_communicating(rank, size):
    ts = [torch.ones(3, dtype=torch.float64), torch.ones(2, dtype=torch.float32)]
    _bad_on_rank0(rank, size, lambda: dist.all_reduce_coalesced(ts), ValueError, "tensors[1]")
    assert ts[0].tolist() == [1.0] * 3 and ts[1].tolist() == [1.0] * 2
    arrays = [np.ones(3), np.ones(2, np.float32)]
    _bad_on_rank0(rank, size, lambda: dist.all_reduce_coalesced(arrays), ValueError, "tensors")
    assert arrays[0].tolist() == [1.0] * 3 and arrays[1].tolist() == [1.0] * 2


def test_all_reduce_coalesced_empty_list_raises_before_communicating(rank, size):
    _bad_on_rank0(rank, size, lambda: dist.all_reduce_coalesced([]), ValueError, "tensors")


def test_all_reduce_coalesced_bad_op_and_type_raise_before_communicating(rank, size):
    floats = [torch.arange(3.0), torch.arange(2.0)]  # BAND: integers and bools only
    _bad_on_rank0(rank, size, lambda: dist.all_reduce_coalesced(floats, op=dist.ReduceOp.BAND),
                  ValueError, "op")
    assert floats[0].tolist() == [0, 1, 2] and floats[1].tolist() == [0, 1]
    one = torch.ones(2)
    _bad_on_rank0(rank, size, lambda: dist.all_reduce_coalesced(one), TypeError, "tensors")
    assert one.tolist() == [1.0, 1.0]


# -- all_gather_coalesced ------------------------------------------------------------


def _gather_outputs(xp, form, size):
    """output_tensor_lists, zero-filled, and the flat tensor their views share, if any."""
    zeros = [np.zeros(s) for _ in range(size) for s in SHAPES]
    flat_list, flat = _tensors(xp, form, zeros)
    n = len(SHAPES)
    return [flat_list[i * n:(i + 1) * n] for i in range(size)], flat


@pytest.mark.parametrize("async_op", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("form", FORMS)
def test_all_gather_coalesced(xp, form, async_op, rank, size):
    inputs, _ = _tensors(xp, form, [_values(rank, s, k) for k, s in enumerate(SHAPES)])
    outputs, flat = _gather_outputs(xp, form, size)
    kept = [list(lst) for lst in outputs]
    work = dist.all_gather_coalesced(outputs, inputs, async_op=async_op)
    _done(work, async_op)
    for i in range(size):
        for k, s in enumerate(SHAPES):
            assert outputs[i][k] is kept[i][k]
            np.testing.assert_array_equal(_to_np(outputs[i][k]), _values(i, s, k))
    # inputs are never modified
    for k, s in enumerate(SHAPES):
        np.testing.assert_array_equal(_to_np(inputs[k]), _values(rank, s, k))
    if flat is not None:
        np.testing.assert_array_equal(_to_np(flat), np.concatenate(
            [_values(i, s, k).reshape(-1) for i in range(size) for k, s in enumerate(SHAPES)]))


def test_all_gather_coalesced_bad_sizes_raise_before_communicating(rank, size):
    inputs = [torch.ones(3), torch.ones(2, 2)]

    def outs(shapes=((3,), (2, 2)), lists=size, dtype=torch.float32):
        return [[torch.zeros(s, dtype=dtype) for s in shapes] for _ in range(lists)]

    too_many = outs(lists=size + 1)
    _bad_on_rank0(rank, size, lambda: dist.all_gather_coalesced(too_many, inputs), ValueError,
                  "output_tensor_lists")
    short = outs(shapes=((3,),))
    _bad_on_rank0(rank, size, lambda: dist.all_gather_coalesced(short, inputs), ValueError,
                  "output_tensor_lists[0]")
    wrong = outs()
    wrong[size - 1][1] = torch.zeros(5)
    _bad_on_rank0(rank, size, lambda: dist.all_gather_coalesced(wrong, inputs), ValueError,
                  f"output_tensor_lists[{size - 1}][1]")
    other_dtype = outs(dtype=torch.float64)
    _bad_on_rank0(rank, size, lambda: dist.all_gather_coalesced(other_dtype, inputs),
                  ValueError, "output_tensor_lists[0][0]")
    for lst in (too_many, short, wrong, other_dtype):  # outputs untouched
        assert all(not t.any() for row in lst for t in row)


# -- split_group ---------------------------------------------------------------------


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("xp_name", ["numpy", "torch"])
def test_split_group_halves(xp_name, rank, size):
    h = size // 2
    halves = [list(range(h)), list(range(h, size))]
    g = dist.split_group(split_ranks=halves)
    mine = halves[0] if rank < h else halves[1]
    assert dist.get_process_group_ranks(g) == mine
    assert dist.get_rank(g) == mine.index(rank) and dist.get_world_size(g) == len(mine)
    t = torch.tensor([rank + 1.0, -rank]) if xp_name == "torch" else np.array([rank + 1.0, -rank])
    dist.all_reduce(t, group=g)
    assert _to_np(t).tolist() == [sum(r + 1.0 for r in mine), -sum(mine)]
    dist.destroy_process_group(g)


@pytest.mark.mpi(min_size=2)
def test_split_group_ranks_are_parent_group_ranks(rank, size):
    # as torch: split_ranks holds ranks of parent_pg (not global ranks), each list sorted
    order = [(q + 1) % size for q in range(size)]  # parent group rank q is global order[q]
    parent = dist.new_group(order, sort_ranks=False)
    split = list(reversed(range(size - 1)))  # parent group ranks, unsorted; the last left out
    g = dist.split_group(parent, [split])
    me = order.index(rank)  # this rank's rank in parent
    if me == size - 1:  # global rank order[-1] == 0
        assert rank == 0 and g is None
    else:
        expected = [order[q] for q in sorted(split)]  # global ranks, sorted-group-rank order
        assert expected == list(range(1, size))
        assert dist.get_process_group_ranks(g) == expected
        assert dist.get_rank(g) == expected.index(rank)
        assert dist.get_group_rank(g, rank) == expected.index(rank)
        t = np.array([float(rank)])
        dist.all_reduce(t, group=g)
        assert t[0] == sum(expected)
        dist.destroy_process_group(g)
    dist.destroy_process_group(parent)


def test_split_group_whole_world(rank, size):
    g = dist.split_group(split_ranks=[list(range(size))])
    assert dist.get_process_group_ranks(g) == list(range(size))
    t = torch.tensor([2.0 ** rank])
    dist.all_reduce(t, group=g)
    assert t.item() == 2.0 ** size - 1
    dist.destroy_process_group(g)


@pytest.mark.mpi(min_size=2)
def test_split_group_rank_in_no_list_gets_none(rank, size):
    members = list(range(size - 1))
    g = dist.split_group(split_ranks=[members])
    if rank == size - 1:
        assert g is None
    else:
        assert dist.get_process_group_ranks(g) == members
        t = np.array([rank + 1])
        dist.all_reduce(t, group=g)
        assert t[0] == sum(r + 1 for r in members)
        dist.destroy_process_group(g)


@pytest.mark.parametrize("splits", [[[0], [0]], [[0, 0]], "out_of_range"])
def test_split_group_bad_lists_raise(splits, rank, size):
    if splits == "out_of_range":
        splits = [[size]]
    before = dist.get_pg_count()
    with pytest.raises(ValueError, match="split_ranks"):
        dist.split_group(split_ranks=splits)
    assert dist.get_pg_count() == before
    with pytest.raises(ValueError, match="split_ranks"):
        dist.split_group(split_ranks=[])
    _check_in_step(size)  # every rank raised without entering MPI_Comm_split


# -- get_pg_count --------------------------------------------------------------------


def test_get_pg_count_follows_groups(rank, size):
    c0 = dist.get_pg_count()
    assert c0 >= 1  # WORLD
    g = dist.new_group(list(range(size)))
    assert dist.get_pg_count() == c0 + 1
    s = dist.split_group(split_ranks=[list(range(size))])
    assert dist.get_pg_count() == c0 + 2
    # as torch: groups made are counted; destroying one does not lower the count
    dist.destroy_process_group(g)
    assert dist.get_pg_count() == c0 + 2
    dist.destroy_process_group(s)
    assert dist.get_pg_count() == c0 + 2
    none = dist.new_group([0]) if size > 1 else None  # a call this rank may not be in
    if size > 1:
        assert dist.get_pg_count() == c0 + 3
        if rank == 0:
            dist.destroy_process_group(none)


# -- node-local rank, is_available ---------------------------------------------------

# the launchers' variables, in the order the brief gives them
_LOCAL_VARS = ["LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
               "SLURM_LOCALID", "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID"]


@pytest.mark.mpi(min_size=2)
def test_node_local_rank_is_the_launchers(rank, size):
    node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        expected = node.Get_rank()
    finally:
        node.Free()
    assert dist.get_node_local_rank() == expected
    assert dist.get_node_local_rank(fallback_rank=99) == expected  # the launcher's wins


def test_node_local_rank_order_fallback_and_error(monkeypatch):
    for i, var in enumerate(_LOCAL_VARS):
        monkeypatch.setenv(var, str(10 + i))
    for i, var in enumerate(_LOCAL_VARS):
        assert dist.get_node_local_rank() == 10 + i, var
        assert dist.get_node_local_rank(fallback_rank=5) == 10 + i, var
        monkeypatch.delenv(var)
    assert dist.get_node_local_rank(fallback_rank=5) == 5
    assert dist.get_node_local_rank(fallback_rank=0) == 0
    with pytest.raises(RuntimeError):
        dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert torch_dist.get_node_local_rank() == dist.get_node_local_rank() == 3


def test_is_available():
    assert dist.is_available() is True
    assert dist.is_available() == torch_dist.is_available()


# -- supports_complex ----------------------------------------------------------------

_OP_NAMES = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]


def _complex_values(rank):
    return np.array([1 + 2j, -0.5 + 1j, 3 - 1j]) * (rank + 1) + 1j * rank


@pytest.mark.parametrize("op_name", _OP_NAMES)
def test_supports_complex_agrees_with_what_works(xp, op_name, rank, size):
    rop = getattr(dist.ReduceOp, op_name)
    op = dist.ReduceOp.premul_sum(2.0) if op_name == "PREMUL_SUM" else rop
    answer = dist.supports_complex(rop)
    assert dist.supports_complex(op) is answer
    assert dist.supports_complex(getattr(torch_dist.ReduceOp, op_name)) is answer
    t = _from_np(xp, _complex_values(rank))
    if answer:
        dist.all_reduce(t, op=op)
        stack = np.stack([_complex_values(r) for r in range(size)])
        expected = {"SUM": stack.sum(0), "AVG": stack.sum(0) / size,
                    "PRODUCT": stack.prod(0), "PREMUL_SUM": 2.0 * stack.sum(0)}[op_name]
        np.testing.assert_allclose(_to_np(t), expected, rtol=1e-12)
    else:
        with pytest.raises(ValueError, match="op"):
            dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(_to_np(t), _complex_values(rank))


def test_supports_complex_agrees_with_torch_where_torch_can_tell():
    # torch denies MIN/MAX/BAND/BOR/BXOR (undefined on complex) and PRODUCT; MPI's
    # MPI_PROD multiplies complex numbers, so mpicoll allows PRODUCT
    for name in _OP_NAMES:
        if name != "PRODUCT":
            theirs = torch_dist.supports_complex(getattr(torch_dist.ReduceOp, name))
            assert dist.supports_complex(getattr(dist.ReduceOp, name)) is theirs, name


# -- errors that are also torch's DistBackendError -----------------------------------


@pytest.mark.mpi(min_size=2)
def test_irecv_wait_timeout_is_collective_timeout_and_dist_backend_error(rank, size):
    peer = rank ^ 1
    if peer >= size:  # odd world: the last rank has no partner
        return
    if rank % 2 == 0:  # receives; its partner sends only once told the waits timed out
        t = torch.zeros(3)
        work = dist.irecv(t, src=peer)
        for timeout in (0.2, timedelta(milliseconds=100)):
            with pytest.raises(errors.CollectiveTimeout) as info:
                work.wait(timeout=timeout)
            assert isinstance(info.value, torch_dist.DistBackendError)
            assert isinstance(info.value, TimeoutError)
        assert not work.is_completed()
        assert t.tolist() == [0.0, 0.0, 0.0]
        MPI.COMM_WORLD.send("timed out", dest=peer, tag=_TAG)
        assert work.wait(timeout=60)
        assert t.tolist() == [peer * 1.0, peer * 2.0, peer * 3.0]
    else:
        assert MPI.COMM_WORLD.recv(source=peer, tag=_TAG) == "timed out"
        dist.send(torch.tensor([1.0, 2.0, 3.0]) * rank, dst=peer)


def test_torch_flavoured_errors_keep_their_fields():
    e = errors.torch_flavoured(errors.PeerExited)("m", 3)
    assert e.status == 3 and str(e) == "m"
    assert isinstance(e, errors.PeerExited) and isinstance(e, torch_dist.DistBackendError)
    assert errors.torch_flavoured(errors.PeerExited)("m").status == 1
    assert errors.torch_flavoured(errors.PeerExited) is errors.torch_flavoured(errors.PeerExited)
    m = errors.torch_flavoured(errors.MPIError)("all_reduce", "truncated")
    assert m.op == "all_reduce" and "all_reduce" in str(m) and "truncated" in str(m)
    for cls in (errors.MPIError, errors.CollectiveTimeout, errors.SignatureMismatch,
                errors.PeerExited):
        flavoured = errors.torch_flavoured(cls)
        assert issubclass(flavoured, cls) and issubclass(flavoured, torch_dist.DistBackendError)
        assert flavoured.__name__ == cls.__name__
    with pytest.raises(torch_dist.DistBackendError):
        raise errors.torch_flavoured(errors.CollectiveTimeout)("x")
