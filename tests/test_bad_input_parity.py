"""Bad input that torch.distributed (gloo, or its Python layer) refuses is refused here too.

Each case is a local check: every rank that makes the call raises before communicating,
names the argument(s), and leaves the outputs untouched; then every rank goes on with
the same collectives. mpicoll accepts more than gloo where SPEC says so (uneven lists,
mapped to the v-collectives) and where NCCL does (all_gather_into_tensor and
reduce_scatter_tensor check only the count of elements, not the shape); those forms are
not bad input and are not listed here.
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import to_np

import mpicoll as dist
import mpicoll.paddle as pdist
import mpicoll.paddle.v2 as pdist2


def _full(xp, shape, dtype="float32", fill=7):
    return xp.full(shape, fill, dtype)


def _untouched(*outs, fill=7):
    for out in outs:
        a = to_np(out)
        np.testing.assert_array_equal(a, np.full(a.shape, fill))


def _a2a_still_works(xp, rank, size, group=None):
    """A correct all_to_all_single on every rank right after the refused call."""
    inp = xp.tensor(np.arange(size) + 10 * rank, "int64")
    out = _full(xp, (size,), "int64")
    dist.all_to_all_single(out, inp, group=group)
    np.testing.assert_array_equal(to_np(out), np.arange(size) * 10 + rank)


# -- all_to_all_single without split sizes: output and input of one size -------------


_A2A_SIZE = r"all_to_all_single: output and input must have the same number of elements " \
            r"when no split sizes are given: expected output to have {} elements " \
            r"\(as input, shape \({}\)\), got {} \(output shape \({}\)\)"


@pytest.mark.parametrize("splits", [None, []])
@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_single_unequal_sizes_without_splits(xin, rank, size, group, splits,
                                                        async_op):
    xo = xin.output()
    # at 2 ranks: the 6-element output and 4-element input
    out, inp = _full(xo, (3 * size,)), _full(xin, (2 * size,), fill=1)
    msg = _A2A_SIZE.format(2 * size, f"{2 * size},", 3 * size, f"{3 * size},")
    with pytest.raises(ValueError, match=msg):
        dist.all_to_all_single(out, inp, splits, splits, group=group, async_op=async_op)
    _untouched(out)
    # output smaller than input, rows of two elements
    out, inp = _full(xo, (size, 2)), _full(xin, (2 * size, 2), fill=1)
    with pytest.raises(ValueError, match=_A2A_SIZE.format(4 * size, f"{2 * size}, 2",
                                                          2 * size, f"{size}, 2")):
        dist.all_to_all_single(out, inp, group=group, async_op=async_op)
    _untouched(out)
    _a2a_still_works(xo, rank, size, group)


def test_all_to_all_single_unequal_sizes_with_splits_still_allowed(xin, rank, size, group):
    """With split sizes the sizes may differ (Alltoallv): not refused."""
    xo = xin.output()
    inp = xin.tensor(np.arange(2 * size) + 100 * rank, "int32")  # 2 rows to every rank
    out = _full(xo, (2 * size,), "int32", fill=-1)
    dist.all_to_all_single(out, inp, [2] * size, [2] * size, group=group)
    np.testing.assert_array_equal(to_np(out).reshape(size, 2),
                                  [[100 * r + 2 * rank, 100 * r + 2 * rank + 1]
                                   for r in range(size)])


def test_paddle_alltoall_single_unequal_sizes(xp, rank, size, group):
    out, inp = _full(xp, (3 * size,)), _full(xp, (2 * size,), fill=1)
    for call in (lambda: pdist.alltoall_single(out, inp, group=group),
                 lambda: pdist.alltoall(out, inp, group=group),
                 lambda: pdist2.alltoall_single(inp, out, group=group)):
        with pytest.raises(ValueError, match=r"alltoall_single: out_tensor and in_tensor must "
                                             r"have the same number of elements"):
            call()
        _untouched(out)
    _a2a_still_works(xp, rank, size, group)


def test_torch_backend_all_to_all_single_unequal_sizes(rank, size):
    import torch
    import torch.distributed as tdist

    import mpicoll.torch  # noqa: F401  (registers the backend)

    created = not tdist.is_initialized()  # use the session's group where there is one
    if created:  # (mpi://: a fresh store port for each of the session's groups)
        tdist.init_process_group("mpicoll", init_method="mpi://")
    assert tdist.get_backend() == "mpicoll"
    try:
        out = torch.full((3 * size,), 7.0)
        with pytest.raises(ValueError, match="output and input must have the same number "
                                             "of elements"):
            tdist.all_to_all_single(out, torch.ones(2 * size))
        _untouched(out)
        ok = torch.full((size,), 7.0)
        tdist.all_to_all_single(ok, torch.arange(size, dtype=torch.float32) + 10 * rank)
        assert ok.tolist() == [10.0 * r + rank for r in range(size)]
    finally:
        if created:
            tdist.destroy_process_group()


# -- what gloo refuses and mpicoll refused already (kept refused) -----------------------


def _cases(xp, rank, size):
    """name -> (outputs, call(outputs), message): inputs gloo refuses, at any group size.

    Every case raises ValueError before communicating; the outputs are filled with 7.
    """
    f = lambda shape, dtype="float32": _full(xp, shape, dtype)  # noqa: E731
    one = lambda shape, dtype="float32": _full(xp, shape, dtype, 1)  # noqa: E731
    each = lambda shape, dtype="float32", k=size: [one(shape, dtype) for _ in range(k)]  # noqa
    own = [f((2,)) for _ in range(size)]
    own[rank] = f((3,))
    return {
        "a2as rows differ (with splits)": (
            [f((size, 2))], lambda o: dist.all_to_all_single(o[0], one((size, 3)), [1] * size,
                                                             [1] * size),
            "output and input must have the same number of elements per row"),
        "a2as 0-d": (
            [f(())], lambda o: dist.all_to_all_single(o[0], one(())),
            "input must have at least one dimension"),
        "a2as dtypes differ": (
            [f((size,), "float64")], lambda o: dist.all_to_all_single(o[0], one((size,))),
            "output and input must have the same dtype"),
        "a2a self block sizes differ": (
            [f((3,)) for _ in range(size)], lambda o: dist.all_to_all(o, each((2,))),
            rf"sends itself 2 and receives from itself 3: input_tensor_list\[{rank}\] and "
            rf"output_tensor_list\[{rank}\] must match"),
        "a2a list length": (
            [f((2,)) for _ in range(size + 1)],
            lambda o: dist.all_to_all(o, each((2,), k=size + 1)),
            rf"must have one tensor per rank: expected {size} tensors, got {size + 1}"),
        "a2a dtypes differ": (
            [f((2,), "float64") for _ in range(size)], lambda o: dist.all_to_all(o, each((2,))),
            "output_tensor_list and input_tensor_list must have the same dtype"),
        "all_gather dtypes differ": (
            [f((2,), "float64") for _ in range(size)], lambda o: dist.all_gather(o, one((2,))),
            "tensor_list and tensor must have the same dtype"),
        "all_gather own entry size": (
            own, lambda o: dist.all_gather(o, one((2,))),
            rf"tensor_list\[{rank}\] must have the size of tensor on this rank: expected 2 "
            r"elements, got 3"),
        "all_gather_into_tensor shape": (
            [f((size * 3 + 1, 2))], lambda o: dist.all_gather_into_tensor(o[0], one((2, 3))),
            "output_tensor must hold group size x input_tensor"),
        "all_gather_into_tensor dtypes": (
            [f((2 * size,), "float64")], lambda o: dist.all_gather_into_tensor(o[0], one((2,))),
            "output_tensor and input_tensor must have the same dtype"),
        "reduce_scatter_tensor shape": (
            [f((2, 3))], lambda o: dist.reduce_scatter_tensor(o[0], one((size * 3 + 1, 2))),
            "input must hold group size x output"),
        "reduce_scatter_tensor dtypes": (
            [f((2,), "float64")], lambda o: dist.reduce_scatter_tensor(o[0], one((2 * size,))),
            "output and input must have the same dtype"),
        "reduce_scatter dtypes": (
            [f((2,))], lambda o: dist.reduce_scatter(o[0], each((2,), "float64")),
            "output and input_list must have the same dtype"),
        "reduce_scatter own entry size": (
            [f((2,))], lambda o: dist.reduce_scatter(o[0], each((3,))),
            rf"output must have the size of input_list\[{rank}\]"),
        "all_reduce MAX on complex": (
            [f((2,), "complex64")], lambda o: dist.all_reduce(o[0], op=dist.ReduceOp.MAX),
            "op MAX is not defined for complex dtype complex64"),
        "all_reduce BAND on float": (
            [f((2,))], lambda o: dist.all_reduce(o[0], op=dist.ReduceOp.BAND),
            "op BAND needs an integer or bool dtype"),
        "broadcast root outside the group": (
            [f((2,))], lambda o: dist.broadcast(o[0], src=size),
            rf"broadcast: src {size} is not a rank of the group"),
        "reduce root outside the group": (
            [f((2,))], lambda o: dist.reduce(o[0], dst=size),
            rf"reduce: dst {size} is not a rank of the group"),
        "send to self": (
            [f((2,))], lambda o: dist.send(o[0], dst=rank), "dst must be another rank"),
        "recv from self": (
            [f((2,))], lambda o: dist.recv(o[0], src=rank), "src must be another rank"),
        "batch_isend_irecv empty": (
            [], lambda o: dist.batch_isend_irecv([]), "p2p_op_list is empty"),
    }


_NAMES = list(_cases(frameworks.get("numpy"), 0, 1))


@pytest.mark.parametrize("case", _NAMES)
def test_refused_like_gloo(xp, rank, size, group, case):
    outs, call, msg = _cases(xp, rank, size)[case]  # refused on WORLD (group=None)
    with pytest.raises(ValueError, match=msg):
        call(outs)
    _untouched(*outs)
    _a2a_still_works(xp, rank, size, group)


# -- object collectives ----------------------------------------------------------------


def test_gather_object_list_on_non_destination(rank, size):
    if size == 1:
        pytest.skip("needs a non-destination rank")
    if rank != 0:  # torch: "gather_list must NOT be specified on non-destination ranks"
        objs = ["keep"] * size
        with pytest.raises(ValueError, match=r"gather_object: object_gather_list must be given "
                                             r"on the destination rank only \(group rank 0\); "
                                             rf"this is group rank {rank}"):
            dist.gather_object(rank, objs, dst=0)
        assert objs == ["keep"] * size
    out = [None] * size if rank == 0 else None
    dist.gather_object(rank, out, dst=0)
    if rank == 0:
        assert out == list(range(size))
    dist.gather_object(rank, [] if rank else [None] * size, dst=0)  # an empty list is none


def test_object_messages_to_or_from_oneself(rank, size):
    """torch: "Invalid destination/source rank"; a large one would never complete."""
    objs = ["keep"]
    with pytest.raises(ValueError, match=rf"send_object_list: dst must be another rank: "
                                         rf"expected a rank other than this one, got {rank} "
                                         r"\(this rank\)"):
        dist.send_object_list([b"x" * (1 << 20)], dst=rank)
    with pytest.raises(ValueError, match=rf"send_object_list: group_dst must be another rank.*"
                                         rf"got {rank}"):
        dist.send_object_list(["x"], group_dst=rank)
    with pytest.raises(ValueError, match=rf"recv_object_list: src must be another rank.*"
                                         rf"got {rank}"):
        dist.recv_object_list(objs, src=rank)
    assert objs == ["keep"]
    got = [None] * size
    dist.all_gather_object(got, rank)
    assert got == list(range(size))
