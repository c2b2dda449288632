"""Lists of separately allocated tensors (``[torch.empty(n) for _ in range(P)]``) in
all_to_all, all_gather and reduce_scatter: contiguous, strided and mixed, repeated with
new values and new tensors, and with memory freed and reused for another size. Once a
call of some sizes was validated, later calls hand MPI the tensors where they lie
(displacements from the lowest address), so nothing about their addresses may be
taken from an earlier call. Every result is checked against a numpy reference.
"""

from __future__ import annotations

import gc

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import assert_equal, values

import mpicoll as dist
from mpicoll.errors import ArgumentValueError

CASES = frameworks.cross(["int64", "float32"])


def _rows(j: int, salt: int) -> int:
    """Rows of the tensor rank i sends rank j, the same whatever i: uneven, changing."""
    return 1 + (j + salt) % 3


def _a2a_ref(rank: int, size: int, salt: int, dtype: str) -> list[np.ndarray]:
    return [values(dtype, (_rows(rank, salt), 2), j, salt) for j in range(size)]


def _exchange(xp, dtype, rank, size, group, salt, make_out):
    ins = [xp.tensor(values(dtype, (_rows(j, salt), 2), rank, salt), dtype)
           for j in range(size)]
    outs = [make_out((_rows(rank, salt), 2)) for _ in range(size)]
    dist.all_to_all(outs, ins, group=group)
    for got, want in zip(outs, _a2a_ref(rank, size, salt, dtype), strict=True):
        assert_equal(got, want, dtype)

    gathered = [make_out((_rows(j, salt), 2)) for j in range(size)]
    dist.all_gather(gathered, xp.tensor(values(dtype, (_rows(rank, salt), 2), rank, salt),
                                        dtype), group=group)
    for j, got in enumerate(gathered):
        assert_equal(got, values(dtype, (_rows(j, salt), 2), j, salt), dtype)

    chunks = [xp.tensor(values(dtype, (_rows(j, salt), 2), rank, salt + j), dtype)
              for j in range(size)]
    out = make_out((_rows(rank, salt), 2))
    dist.reduce_scatter(out, chunks, group=group)
    want = sum(values(dtype, (_rows(rank, salt), 2), r, salt + rank) for r in range(size))
    assert_equal(out, want, dtype)


@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_separate_tensors_new_values_and_new_tensors(xp, dtype, rank, size, group):
    for salt in range(5):  # sizes change with salt, and repeat every third call
        _exchange(xp, dtype, rank, size, group, salt, lambda shape: xp.empty(shape, dtype))


@pytest.mark.parametrize("rows", [2, 1024])  # 1024 rows: blocks of 8 KiB and more, whose own
@pytest.mark.parametrize(("xp", "dtype"), CASES)  # block MPICH's Alltoallv is left out of
def test_the_same_separate_tensors_every_call(xp, dtype, rows, rank, size, group):
    ins = [xp.empty((rows, 2), dtype) for _ in range(size)]
    outs = [xp.empty((rows, 2), dtype) for _ in range(size)]
    for salt in range(4):
        for j, t in enumerate(ins):
            t[...] = xp.tensor(values(dtype, (rows, 2), rank, salt + j), dtype)
        dist.all_to_all(outs, ins, group=group)
        for j, got in enumerate(outs):
            assert_equal(got, values(dtype, (rows, 2), j, salt + rank), dtype)
        dist.all_gather(outs, ins[0], group=group)
        for j, got in enumerate(outs):
            assert_equal(got, values(dtype, (rows, 2), j, salt), dtype)


@pytest.mark.parametrize(("xp", "dtype"), CASES)
def test_strided_and_mixed_lists(xp, dtype, rank, size, group):
    # every other output a transposed (strided) view, the rest contiguous: staged through
    # the general path, which must still write every one
    def make_out(shape):
        make_out.k += 1
        if make_out.k % 2:
            return xp.transpose(xp.empty((shape[1], shape[0]), dtype))
        return xp.empty(shape, dtype)
    make_out.k = 0
    for salt in range(3):
        _exchange(xp, dtype, rank, size, group, salt, make_out)


def test_memory_reused_for_another_size(rank, size, group):
    # a call of one layout, then its tensors freed and new ones made at once, which the
    # allocator places where the old ones were, with other sizes: nothing of the first
    # call's addresses may be used
    for rows in (4, 1, 3, 4, 2):
        outs = [np.empty((rows, 2), np.float32) for _ in range(size)]
        ins = [values("float32", (rows, 2), rank, rows + j) for j in range(size)]
        dist.all_to_all(outs, ins, group=group)
        for j, got in enumerate(outs):
            assert_equal(got, values("float32", (rows, 2), j, rows + rank), "float32")
        dist.all_gather(outs, ins[0], group=group)
        for j, got in enumerate(outs):
            assert_equal(got, values("float32", (rows, 2), j, rows), "float32")
        dist.reduce_scatter(outs[0], ins, group=group)
        assert_equal(outs[0], sum(values("float32", (rows, 2), r, rows + rank)
                                  for r in range(size)), "float32")
        del outs, ins
        gc.collect()


def test_separate_outputs_that_overlap_are_refused_after_warm_up(rank, size, group):
    outs = [np.empty(2, np.int64) for _ in range(size)]
    ins = [values("int64", (2,), rank, j) for j in range(size)]
    dist.all_to_all(outs, ins, group=group)
    if size == 1:
        return
    shared = np.full(3, -1, np.int64)  # two outputs over the same memory
    bad = [shared[:2], shared[1:], *outs[2:]]
    with pytest.raises(ArgumentValueError, match="overlap"):
        dist.all_to_all(bad, ins, group=group)
    assert (shared == -1).all()


@pytest.mark.parametrize(("xp", "dtype"), frameworks.cross(["float32"],
                                                           where=lambda fw, _: fw.name != "paddle"))
def test_the_quick_path_takes_separate_tensors(xp, dtype, rank, size, group,
                                               refuse_list_general_path):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory takes the device path (direct or staged), not the quick path")
    ins = [xp.tensor(np.full(2, j, np.float32), dtype) for j in range(size)]
    outs = [xp.empty((2,), dtype) for _ in range(size)]
    out = xp.empty((2,), dtype)

    def calls():
        dist.all_to_all(outs, ins, group=group)
        dist.all_gather(outs, out, group=group)
        dist.reduce_scatter(out, ins, group=group)

    xp.fill(out, 1)
    calls()

    refuse_list_general_path()
    xp.fill(out, 1)
    calls()
    for got in outs:
        assert_equal(got, np.ones(2), dtype)
    assert_equal(out, np.full(2, rank * size), dtype)


def test_the_core_runs_repeated_calls_of_separate_tensors(rank, size, group, monkeypatch):
    # once warm, every list form of separate tensors is a kept Plan that the compiled core
    # finds by each tensor's address and runs in C: no Python issue path, and still right
    # with new values, inputs and outputs allocated in turn (their spans interleave), an
    # exchange from separate tensors into chunks of one tensor and back, and the roots'
    # lists of gather and scatter. On a group of its own: nine Plans, within what a group
    # keeps (_direct.KEPT), none missed before
    from mpicoll import _core_loader
    from mpicoll._collectives import _direct, _messages

    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(size))
    mine = dist.new_group(ranks)
    dist.all_reduce(np.zeros(1), group=mine)  # (the first call loads the core)
    if _core_loader.load() is None or mine.direct is None:
        dist.destroy_process_group(mine)
        pytest.skip("the compiled core runs kept messages, on groups of 2 to 8 ranks")
    pairs = [(np.empty(3, np.float64), np.empty(3, np.float64)) for _ in range(size)]
    ins, outs = [p[0] for p in pairs], [p[1] for p in pairs]
    whole = np.empty(3 * size, np.float64)
    chunks = np.split(whole, size)
    own, got = np.empty(3, np.float64), np.empty(3, np.float64)

    def calls(salt):
        for j, t in enumerate(ins):
            t[...] = values("float64", (3,), rank, salt + j)
        dist.all_to_all(outs, ins, group=mine)
        for j, t in enumerate(outs):
            assert_equal(t, values("float64", (3,), j, salt + rank), "float64")
        whole.fill(-1)
        dist.all_to_all(chunks, ins, group=mine)
        for j, t in enumerate(chunks):
            assert_equal(t, values("float64", (3,), j, salt + rank), "float64")
        dist.all_to_all(outs, chunks, group=mine)
        for j, t in enumerate(outs):
            assert_equal(t, values("float64", (3,), rank, salt + j), "float64")
        own[...] = values("float64", (3,), rank, salt)
        dist.all_gather(outs, own, group=mine)
        for j, t in enumerate(outs):
            assert_equal(t, values("float64", (3,), j, salt), "float64")
        dist.reduce_scatter(got, ins, group=mine)
        assert_equal(got, sum(values("float64", (3,), r, salt + rank) for r in range(size)),
                     "float64")
        for root in (0, size - 1):
            for t in outs:
                t.fill(-1)
            dist.gather(own, outs if rank == root else None, group=mine, dst=ranks[root])
            if rank == root:
                for j, t in enumerate(outs):
                    assert_equal(t, values("float64", (3,), j, salt), "float64")
            got.fill(-1)
            dist.scatter(got, ins if rank == root else None, group=mine, src=ranks[root])
            assert_equal(got, values("float64", (3,), root, salt + rank), "float64")

    for salt in range(3):  # (warm: each call's Plan made, and found)
        calls(salt)

    def refuse(*args, **kwargs):
        raise AssertionError("a repeated call of separate tensors left the compiled core")

    with monkeypatch.context() as m:
        m.setattr(_direct, "started", refuse)
        m.setattr(_messages, "issue", refuse)
        m.setattr(_direct, "issue", refuse)
        for salt in range(3, 6):
            calls(salt)
    dist.destroy_process_group(mine)


def test_separate_inputs_that_repeat_a_tensor_and_an_input_among_the_outputs(rank, size,
                                                                            group):
    # repeated calls whose input list names one tensor twice (its address twice in the
    # plan's key: read, never written), and an all_gather whose input is one of its own
    # outputs (they share memory: never a kept plan, the general path's in-place call);
    # each right at every call, with new values
    twice = np.empty(2, np.int64)
    ins = [twice if j % 2 else np.empty(2, np.int64) for j in range(size)]
    outs = [np.empty(2, np.int64) for _ in range(size)]
    for salt in range(4):
        twice[...] = values("int64", (2,), rank, salt)
        for j, t in enumerate(ins):
            if t is not twice:
                t[...] = values("int64", (2,), rank, salt + j)
        dist.all_to_all(outs, ins, group=group)
        for j, t in enumerate(outs):
            assert_equal(t, values("int64", (2,), j, salt if rank % 2 else salt + rank),
                         "int64")
        dist.reduce_scatter(outs[0], ins, group=group)
        assert_equal(outs[0], sum(values("int64", (2,), r, salt if rank % 2 else salt + rank)
                                  for r in range(size)), "int64")
        outs[rank][...] = values("int64", (2,), rank, salt)
        dist.all_gather(outs, outs[rank], group=group)
        for j, t in enumerate(outs):
            assert_equal(t, values("int64", (2,), j, salt), "int64")
