"""The quick path of blocking calls (all_reduce, broadcast, all_to_all_single even and
uneven, all_gather_into_tensor, reduce_scatter_tensor, the list forms, gather, scatter
and reduce): once the general path has
validated a call of some shapes, dtype and split sizes, later calls like it skip to MPI.
These tests repeat calls and change what the quick path must not take for granted:
values, split sizes changed in place, the group, overlapping and read-only arrays, bad
input after good. Every result is checked against a numpy reference.
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import assert_equal, block, values
from mpi4py import MPI

import mpicoll as dist
from mpicoll.errors import ArgumentBufferError, ArgumentTypeError, ArgumentValueError

QUICK = frameworks.cross(["int64", "float32"], where=lambda fw, _: fw.name != "paddle")
COLS = 2


def _reduced(shape, size, salt, dtype):
    return sum(values(dtype, shape, r, salt) for r in range(size))


def _matrix(size, salt):
    """Rows rank i sends to rank j; every row sum and column sum is size + 1, so the
    shapes stay the same whatever the salt."""
    return [[1 + (j == (i + salt) % size) for j in range(size)] for i in range(size)]


def _a2a_input(me, size, m, dtype):
    return np.concatenate([block(me, j, m[me][j], COLS, dtype) for j in range(size)])


def _a2a_expected(me, size, m, dtype):
    return np.concatenate([block(j, me, m[j][me], COLS, dtype) for j in range(size)])


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_repeated_calls_see_new_values(xp, dtype, rank, size, group):
    shape = (size * 3, COLS)
    ag_out = xp.empty((size * 3, COLS), dtype)
    rs_out = xp.empty((3, COLS), dtype)
    bc = xp.empty(shape, dtype)
    for salt in range(4):
        t = xp.tensor(values(dtype, shape, rank, salt), dtype)
        dist.all_reduce(t, group=group)
        assert_equal(t, _reduced(shape, size, salt, dtype), dtype)

        mine = xp.tensor(values(dtype, (3, COLS), rank, salt), dtype)
        dist.all_gather_into_tensor(ag_out, mine, group=group)
        assert_equal(ag_out, np.concatenate([values(dtype, (3, COLS), r, salt)
                                             for r in range(size)]), dtype)

        big = xp.tensor(values(dtype, shape, rank, salt), dtype)
        dist.reduce_scatter_tensor(rs_out, big, group=group)
        assert_equal(rs_out, _reduced(shape, size, salt, dtype)[rank * 3:(rank + 1) * 3], dtype)

        if rank == salt % size:
            xp.fill(bc, salt + 5)
        dist.broadcast(bc, group_src=salt % size, group=group)
        assert_equal(bc, np.full(shape, salt + 5), dtype)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_all_to_all_single_even_repeated(xp, dtype, rank, size, group):
    for salt in range(3):
        m = [[2] * size for _ in range(size)]
        inp = _a2a_input(rank, size, m, dtype) + salt
        out = xp.empty((2 * size, COLS), dtype)
        dist.all_to_all_single(out, xp.tensor(inp, dtype), group=group)
        assert_equal(out, _a2a_expected(rank, size, m, dtype) + salt, dtype)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_split_sizes_changed_in_place(xp, dtype, rank, size, group):
    # 1-D tensors, whose counts are the split sizes themselves: lists rewritten between
    # calls, then new lists with the first values, are each honoured
    isz, osz = [0] * size, [0] * size
    out = xp.empty(((size + 1) * COLS,), dtype)
    for salt, fresh in ((0, False), (1, False), (0, True), (1, True)):
        m = _matrix(size, salt)
        if fresh:
            isz, osz = [0] * size, [0] * size
        isz[:] = [c * COLS for c in m[rank]]
        osz[:] = [m[j][rank] * COLS for j in range(size)]
        inp = xp.tensor(_a2a_input(rank, size, m, dtype).reshape(-1), dtype)
        dist.all_to_all_single(out, inp, osz, isz, group=group)
        assert_equal(out, _a2a_expected(rank, size, m, dtype).reshape(-1), dtype)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_own_block_copied_locally_on_the_quick_path(xp, dtype, rank, size, group,
                                                    monkeypatch):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory takes the device path (direct or staged), not the quick path")
    # blocks of 4 KiB and more: MPICH's Alltoallv is left out of a rank's own block, which
    # is copied locally, on the quick path too (explicit split sizes and lists of chunks),
    # with new values every call and once warm no general path
    from mpicoll._collectives import all_to_all

    rows = 4096 // (np.dtype(dtype).itemsize * COLS) + 1
    m = [[rows + (i == j) for j in range(size)] for i in range(size)]  # own: a row more
    isz = [m[rank][j] for j in range(size)]
    osz = [m[j][rank] for j in range(size)]
    out = xp.empty((sum(osz), COLS), dtype)
    recv = xp.empty((sum(osz), COLS), dtype)
    send = xp.tensor(np.zeros((sum(isz), COLS)), dtype)
    recvs, sends = xp.pieces(recv, osz), xp.pieces(send, isz)

    def calls(salt):
        inp = _a2a_input(rank, size, m, dtype) + salt
        want = _a2a_expected(rank, size, m, dtype) + salt
        xp.fill(out, 0)
        dist.all_to_all_single(out, xp.tensor(inp, dtype), list(osz), list(isz), group=group)
        assert_equal(out, want, dtype)
        send[...] = xp.tensor(inp, dtype)
        xp.fill(recv, 0)
        dist.all_to_all(recvs, sends, group=group)
        assert_equal(recv, want, dtype)

    calls(0)
    monkeypatch.setattr(all_to_all, "as_buffer", lambda *a, **k: pytest.fail("general path"))
    monkeypatch.setattr(all_to_all._validate, "tensor_list",
                        lambda *a, **k: pytest.fail("general path"))
    calls(1)
    calls(2)


def test_another_group_where_this_rank_has_another_place(rank, size, group):
    # the same shapes and split lists on a group whose ranks are in reverse order
    reverse = MPI.COMM_WORLD.Split(0, size - 1 - rank)
    try:
        for comm in (group, reverse, group, reverse):
            me = rank if comm is group else comm.Get_rank()
            m = _matrix(size, 1)
            out = np.full((size + 1, COLS), -1, np.int64)
            dist.all_to_all_single(out, _a2a_input(me, size, m, "int64"),
                                   [m[j][me] for j in range(size)], list(m[me]), group=comm)
            assert_equal(out, _a2a_expected(me, size, m, "int64"), "int64")
    finally:
        reverse.Free()


def test_calls_that_differ_in_one_part_of_their_key_alternate(rank, size, group):
    # the core remembers the last entry it found; each call here differs from the one
    # before in one part only (the shapes with the same count, the dtype, the split
    # sizes, the collective) and must take its own entry, three rounds over
    m1 = _matrix(size, 1)
    for _ in range(3):
        for dtype, shape in (("int64", (2 * size, COLS)), ("int64", (2 * size * COLS,)),
                             ("float32", (2 * size * COLS,))):
            even = [[2] * size for _ in range(size)]
            out = np.full(shape, -1, dtype)
            dist.all_to_all_single(out, _a2a_input(rank, size, even, dtype).reshape(shape),
                                   group=group)
            assert_equal(out, _a2a_expected(rank, size, even, dtype).reshape(shape), dtype)
        for m in (m1, _matrix(size, 2), m1):  # (split sizes that differ in value only)
            out = np.full((size + 1, COLS), -1, np.int64)
            dist.all_to_all_single(out, _a2a_input(rank, size, m, "int64"),
                                   [m[j][rank] for j in range(size)], list(m[rank]),
                                   group=group)
            assert_equal(out, _a2a_expected(rank, size, m, "int64"), "int64")
        g = np.full((size, 3), -1, np.float32)
        dist.all_gather_into_tensor(g, np.full(3, rank, np.float32), group=group)
        assert_equal(g, np.repeat(np.arange(size), 3).reshape(size, 3), "float32")
        flat = np.full(size * 3, -1, np.float32)
        dist.all_gather_into_tensor(flat, np.full(3, rank, np.float32), group=group)
        assert_equal(flat, np.repeat(np.arange(size), 3), "float32")
        r = np.full(3, -1, np.float32)
        dist.reduce_scatter_tensor(r, np.arange(3.0 * size, dtype=np.float32), group=group)
        assert_equal(r, size * np.arange(3.0 * rank, 3.0 * rank + 3), "float32")
        dist.reduce_scatter_tensor(r, np.arange(3.0 * size, dtype=np.float32),
                                   op=dist.ReduceOp.MAX, group=group)
        assert_equal(r, np.arange(3.0 * rank, 3.0 * rank + 3), "float32")


def test_overlapping_and_read_only_arrays_after_warm_up(rank, size, group):
    m = [[1] * size for _ in range(size)]
    src = _a2a_input(rank, size, m, "int64")
    out = np.empty_like(src)
    dist.all_to_all_single(out, src, group=group)  # warm up on distinct arrays
    both = src.copy()
    dist.all_to_all_single(both, both, group=group)  # output is input
    assert_equal(both, _a2a_expected(rank, size, m, "int64"), "int64")
    both = src.copy()
    dist.all_to_all_single(both[:], both, group=group)  # a view of an array that owns
    assert_equal(both, _a2a_expected(rank, size, m, "int64"), "int64")
    frozen = src.copy()
    frozen.flags.writeable = False
    dist.all_to_all_single(out, frozen, group=group)
    assert_equal(out, _a2a_expected(rank, size, m, "int64"), "int64")

    chunk = values("int64", (2, COLS), rank)
    gathered = np.zeros((size * 2, COLS), np.int64)
    dist.all_gather_into_tensor(gathered, chunk, group=group)
    gathered[:] = 0
    gathered[rank * 2:(rank + 1) * 2] = chunk  # in place: the input is this rank's chunk
    dist.all_gather_into_tensor(gathered, gathered[rank * 2:(rank + 1) * 2], group=group)
    assert_equal(gathered, np.concatenate([values("int64", (2, COLS), r)
                                           for r in range(size)]), "int64")


def test_bad_input_after_warm_up_still_raises(rank, size, group):
    # every call below is refused on every rank before anything is sent
    m = [[1] * size for _ in range(size)]
    src = _a2a_input(rank, size, m, "int64")
    out = np.empty_like(src)
    dist.all_to_all_single(out, src, [1] * size, [1] * size, group=group)
    dist.all_to_all_single(out, src, [1] * size, [1] * size, group=group)
    out[:] = -1
    with pytest.raises(ArgumentTypeError, match="input_split_sizes"):
        dist.all_to_all_single(out, src, [1] * size, [True] * size, group=group)
    with pytest.raises(ArgumentValueError, match="dtype"):
        dist.all_to_all_single(out, src.astype(np.int32), group=group)
    with pytest.raises(ArgumentValueError, match="output"):
        dist.all_to_all_single(out[:-1], src, group=group)
    assert (out == -1).all()

    t = np.arange(size * 2, dtype=np.float32)
    r = np.empty(2, np.float32)
    dist.reduce_scatter_tensor(r, t, group=group)
    with pytest.raises(ArgumentValueError, match="op"):
        dist.reduce_scatter_tensor(r, t, op=dist.ReduceOp.BAND, group=group)
    with pytest.raises(ArgumentValueError, match="output"):
        dist.reduce_scatter_tensor(np.empty(3, np.float32), t, group=group)
    g = np.empty(size * 2, np.float32)
    dist.all_gather_into_tensor(g, r, group=group)
    with pytest.raises(ArgumentValueError, match="dtype"):
        dist.all_gather_into_tensor(g, r.astype(np.float64), group=group)


def test_roots_named_wrong_after_warm_up_still_raise(rank, size, group):
    # the core finds the root of a repeated broadcast or reduce itself; a root it cannot
    # find is Python's to word, before anything is sent, and the tensor is untouched
    pg = dist.new_group(list(range(size)))
    x = np.full(4, float(rank), np.float32)
    for _ in range(3):
        dist.broadcast(x, src=0, group=pg)
        dist.reduce(x, dst=0, group=pg)
        dist.broadcast(x, group_src=0, group=pg)
        dist.reduce(x, group_dst=0, group=pg)
    x[:] = -1
    for call in (dist.broadcast, dist.reduce):
        dst = "src" if call is dist.broadcast else "dst"
        with pytest.raises(ArgumentValueError, match=f"{dst} {size + 5} is not a rank"):
            call(x, size + 5, group=pg)
        with pytest.raises(ArgumentValueError, match=f"group_{dst} must be in"):
            call(x, **{f"group_{dst}": size}, group=pg)
        with pytest.raises(ArgumentValueError, match=f"give either {dst} or group_{dst}"):
            call(x, 0, **{f"group_{dst}": 0}, group=pg)
        with pytest.raises(ArgumentTypeError, match=dst):
            call(x, 0.0, group=pg)
        with pytest.raises(ArgumentTypeError, match=f"group_{dst}"):
            call(x, **{f"group_{dst}": True}, group=pg)
    assert (x == -1).all()
    # gather and scatter, the same, on the root and off it
    outs = [np.full(4, -1, np.float32) for _ in range(size)] if rank == 0 else None
    ins = [np.full(4, float(j), np.float32) for j in range(size)] if rank == 0 else None
    for _ in range(3):
        dist.gather(x, outs, dst=0, group=pg)
        dist.scatter(x, ins, src=0, group=pg)
        dist.gather(x, outs, group_dst=0, group=pg)
        dist.scatter(x, ins, group_src=0, group=pg)
    assert_equal(x, np.full(4, float(rank)), "float32")
    x[:] = -1
    for call, what, lst in ((dist.gather, "dst", outs), (dist.scatter, "src", ins)):
        with pytest.raises(ArgumentValueError, match=f"{what} {size + 5} is not a rank"):
            call(x, lst, size + 5, group=pg)
        with pytest.raises(ArgumentValueError, match=f"group_{what} must be in"):
            call(x, lst, **{f"group_{what}": size}, group=pg)
        with pytest.raises(ArgumentValueError, match=f"give either {what} or group_{what}"):
            call(x, lst, 0, **{f"group_{what}": 0}, group=pg)
        with pytest.raises(ArgumentTypeError, match=what):
            call(x, lst, 0.0, group=pg)
    assert (x == -1).all()
    dist.destroy_process_group(pg)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_the_quick_path_is_taken(xp, dtype, rank, size, group, monkeypatch):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory takes the device path (direct or staged), not the quick path")
    # after one call has been validated, its like goes straight to MPI: the general
    # path's adapter is not called again
    from mpicoll._collectives import all_gather, all_to_all, reduce_scatter

    m = [[1] * size for _ in range(size)]
    src = xp.tensor(_a2a_input(rank, size, m, dtype), dtype)
    out = xp.empty((size, COLS), dtype)
    small = xp.empty((1, COLS), dtype)
    sizes = [1] * size

    def calls():
        dist.all_to_all_single(out, src, group=group)
        dist.all_to_all_single(out, src, sizes, sizes, group=group)
        dist.all_gather_into_tensor(out, xp.tensor(block(rank, 0, 1, COLS, dtype), dtype),
                                    group=group)
        dist.reduce_scatter_tensor(small, src, group=group)

    calls()

    def refuse(*args, **kwargs):
        raise AssertionError("the general path was taken")

    for module in (all_gather, all_to_all, reduce_scatter):
        monkeypatch.setattr(module, "as_buffer", refuse)
    calls()
    assert_equal(small, sum(_a2a_input(r, size, m, dtype) for r in range(size))[rank:rank + 1],
                 dtype)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_list_forms_repeated(xp, dtype, rank, size, group):
    # lists of adjacent views (x.chunk(n)), the same lists at every call, new values
    send = xp.tensor(np.zeros(size * 3, dtype), dtype)
    recv = xp.empty((size * 3,), dtype)
    sends, recvs = xp.pieces(send, [3] * size), xp.pieces(recv, [3] * size)
    out = xp.empty((3,), dtype)
    for salt in range(3):
        mine = values(dtype, (size * 3,), rank, salt)
        xp.fill(send, 0)
        for j, piece in enumerate(sends):
            piece[...] = xp.tensor(mine[j * 3:(j + 1) * 3], dtype)
        dist.all_to_all(recvs, sends, group=group)
        assert_equal(recv, np.concatenate([values(dtype, (size * 3,), j, salt)[rank * 3:
                                                                           (rank + 1) * 3]
                                           for j in range(size)]), dtype)
        dist.reduce_scatter(out, sends, group=group)
        assert_equal(out, _reduced((size * 3,), size, salt, dtype)[rank * 3:(rank + 1) * 3],
                     dtype)
        dist.all_gather(recvs, xp.tensor(mine[:3], dtype), group=group)
        assert_equal(recv, np.concatenate([values(dtype, (size * 3,), j, salt)[:3]
                                           for j in range(size)]), dtype)


def test_list_forms_that_are_not_adjacent_after_warm_up(rank, size, group):
    # the same sizes as a validated call, but pieces apart, reversed or overlapping
    send = values("int64", (size * 2,), rank)
    recv = np.full(size * 2, -1, np.int64)
    dist.all_to_all(np.split(recv, size), np.split(send, size), group=group)
    expected = np.concatenate([values("int64", (size * 2,), j)[rank * 2:(rank + 1) * 2]
                               for j in range(size)])
    apart = [np.full(2, -1, np.int64) for _ in range(size)]
    dist.all_to_all(apart, np.split(send, size), group=group)
    assert_equal(np.concatenate(apart), expected, "int64")
    backwards = np.full(size * 2, -1, np.int64)
    pieces = np.split(backwards, size)[::-1]
    dist.all_to_all(pieces, np.split(send, size), group=group)
    assert_equal(np.concatenate(pieces), expected, "int64")
    both = send.copy()  # outputs are the inputs: the general path copies the inputs first
    dist.all_to_all(np.split(both, size), np.split(both, size), group=group)
    assert_equal(both, expected, "int64")


def test_list_forms_bad_input_after_warm_up(rank, size, group):
    send = values("float32", (size * 2,), rank)
    recv = np.full(size * 2, -1, np.float32)
    out = np.full(2, -1, np.float32)
    dist.all_to_all(np.split(recv, size), np.split(send, size), group=group)
    dist.reduce_scatter(out, np.split(send, size), group=group)
    dist.all_gather(np.split(recv, size), send[:2].copy(), group=group)
    recv[:] = -1
    out[:] = -1
    with pytest.raises(ArgumentValueError, match="tensor_list"):
        dist.all_gather(np.split(recv, size), send[:1].copy(), group=group)
    with pytest.raises(ArgumentValueError, match="output_tensor_list"):
        dist.all_to_all(np.split(recv, size)[:-1] + [np.empty(0, np.float32)] * (size == 1),
                        np.split(send, size) if size > 1 else [send[:1]], group=group)
    with pytest.raises(ArgumentValueError, match="dtype"):
        dist.all_to_all(np.split(recv, size), np.split(send.astype(np.float64), size),
                        group=group)
    with pytest.raises(ArgumentValueError, match="op"):
        dist.reduce_scatter(out, np.split(send, size), op=dist.ReduceOp.BOR, group=group)
    with pytest.raises(ArgumentValueError, match="output"):
        dist.reduce_scatter(np.empty(3, np.float32), np.split(send, size), group=group)
    assert (recv == -1).all() and (out == -1).all()


def _list_calls(xp, dtype, rank, size, group, sends, recvs, out, salt):
    """all_to_all, reduce_scatter and all_gather on these lists (new values each salt),
    each result checked against numpy."""
    mine = values(dtype, (size * 3,), rank, salt)
    for j, piece in enumerate(sends):
        piece[...] = xp.tensor(mine[j * 3:(j + 1) * 3], dtype)
    dist.all_to_all(recvs, sends, group=group)
    for j, piece in enumerate(recvs):
        assert_equal(piece, values(dtype, (size * 3,), j, salt)[rank * 3:(rank + 1) * 3], dtype)
    dist.reduce_scatter(out, sends, group=group)
    assert_equal(out, _reduced((size * 3,), size, salt, dtype)[rank * 3:(rank + 1) * 3], dtype)
    dist.all_gather(recvs, xp.tensor(mine[:3], dtype), group=group)
    for j, piece in enumerate(recvs):
        assert_equal(piece, values(dtype, (size * 3,), j, salt)[:3], dtype)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_lists_the_core_remembers_changed_between_calls(xp, dtype, rank, size, group):
    # the core remembers the last call of each list form (where its tensors lie, their
    # sizes and dtype) and runs the same call again without making it anew: every change
    # to what it compares must give the right result, and a call it does not match must
    # be made as it is
    send, recv = xp.tensor(np.zeros(size * 3), dtype), xp.empty((size * 3,), dtype)
    out = xp.empty((3,), dtype)
    sends, recvs = xp.pieces(send, [3] * size), xp.pieces(recv, [3] * size)
    for salt in range(3):  # (remembered after the first)
        _list_calls(xp, dtype, rank, size, group, sends, recvs, out, salt)
    # new views of the same memory at each call: the same call
    for salt in range(3, 5):
        _list_calls(xp, dtype, rank, size, group, xp.pieces(send, [3] * size),
                    xp.pieces(recv, [3] * size), out, salt)
    # one tensor of each list replaced by another of its size, elsewhere: the results land
    # there, and nothing in the tensors it replaced
    last = size - 1
    old_recv, old_send = recvs[last], sends[last]
    xp.fill(old_recv, 7)
    recvs[last], sends[last] = xp.empty((3,), dtype), xp.empty((3,), dtype)
    _list_calls(xp, dtype, rank, size, group, sends, recvs, out, 5)
    assert_equal(old_recv, np.full(3, 7), dtype)
    # two pairs of lists in turn: each call right
    other = [xp.empty((3,), dtype) for _ in range(size)], [xp.empty((3,), dtype)
                                                            for _ in range(size)]
    for salt in range(6, 10):
        pair = (sends, recvs) if salt % 2 else other
        _list_calls(xp, dtype, rank, size, group, *pair, out, salt)
    recvs[last], sends[last] = old_recv, old_send
    if xp.name == "torch":  # a view given other storage in place (same object, new address)
        fresh = xp.empty((3,), dtype)
        recvs[0].set_(fresh)
        _list_calls(xp, dtype, rank, size, group, sends, recvs, out, 10)
        assert_equal(fresh, values(dtype, (size * 3,), 0, 10)[:3], dtype)
        return
    # numpy: the same memory seen as another dtype of its size (another descriptor): the
    # bits move as they are
    twin = {"int64": np.float64, "float32": np.int32}[dtype]
    send[...] = values(dtype, (size * 3,), rank, 11)
    recv[...] = 0
    dist.all_to_all([p.view(twin) for p in recvs], [p.view(twin) for p in sends], group=group)
    assert_equal(recv, np.concatenate([values(dtype, (size * 3,), j, 11)[rank * 3:
                                                                          (rank + 1) * 3]
                                       for j in range(size)]), dtype)
    twins = [p.view(twin) for p in sends]
    dist.reduce_scatter(out.view(twin), twins, group=group)  # (summed as the twin dtype)
    assert_equal(out.view(twin), sum(values(dtype, (size * 3,), r, 11).view(twin)
                                     for r in range(size))[rank * 3:(rank + 1) * 3], "")
    _list_calls(xp, dtype, rank, size, group, sends, recvs, out, 12)
    recv[...] = 0
    out[...] = 0
    with pytest.raises(ArgumentValueError, match="dtype"):  # (the inputs only)
        dist.all_to_all(recvs, twins, group=group)
    with pytest.raises(ArgumentValueError, match="dtype"):
        dist.reduce_scatter(out, twins, group=group)
    assert (recv == 0).all() and (out == 0).all()
    # a tensor of the output list made read-only in place, or given another shape: the
    # general path's errors, nothing written
    _list_calls(xp, dtype, rank, size, group, sends, recvs, out, 13)
    recv[...] = 0
    recvs[0].flags.writeable = False
    with pytest.raises(ArgumentBufferError, match="read-only"):
        dist.all_to_all(recvs, sends, group=group)
    with pytest.raises(ArgumentBufferError, match="read-only"):
        dist.all_gather(recvs, send[:3], group=group)
    recvs[0].flags.writeable = True
    recvs[rank].shape = (1, 3)
    with pytest.raises(ArgumentValueError, match="shape of tensor"):
        dist.all_gather(recvs, send[:3], group=group)
    assert (recv == 0).all()
    recvs[rank].shape = (3,)
    _list_calls(xp, dtype, rank, size, group, sends, recvs, out, 14)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_the_quick_path_of_lists_is_taken(xp, dtype, rank, size, group,
                                          refuse_list_general_path):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory takes the device path (direct or staged), not the quick path")
    send = xp.tensor(np.arange(size * 2), dtype)
    recv, out = xp.empty((size * 2,), dtype), xp.empty((2,), dtype)
    sends, recvs = xp.pieces(send, [2] * size), xp.pieces(recv, [2] * size)

    def calls():
        dist.all_to_all(recvs, sends, group=group)
        dist.all_gather(recvs, out, group=group)
        dist.reduce_scatter(out, sends, group=group)

    calls()

    refuse_list_general_path()
    xp.fill(out, 1)
    calls()
    assert_equal(recv, np.ones(size * 2), dtype)  # out (ones) gathered from every rank
    assert_equal(out, np.arange(size * 2)[rank * 2:rank * 2 + 2] * size, dtype)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_gather_and_scatter_repeated_and_quick(xp, dtype, rank, size, group, monkeypatch):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory takes the device path (direct or staged), not the quick path")
    # the root's list of adjacent views and every rank's tensor: new values each call,
    # roots that change, and once warm, no general path (its adapter refuses)
    from mpicoll._collectives import rooted

    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(size))
    whole = xp.tensor(np.zeros(size * 3), dtype)
    pieces = xp.pieces(whole, [3] * size)
    mine, got = xp.empty((3,), dtype), xp.empty((3,), dtype)

    def calls(salt):
        for root in (0, size - 1):
            xp.fill(whole, -1)
            mine_values = values(dtype, (3,), rank, salt + root)
            mine[...] = xp.tensor(mine_values, dtype)
            dist.gather(mine, pieces if rank == root else None, group=group,
                        dst=ranks[root])
            if rank == root:
                assert_equal(whole, np.concatenate([values(dtype, (3,), r, salt + root)
                                                    for r in range(size)]), dtype)
            if rank == root:
                for r, piece in enumerate(pieces):
                    piece[...] = xp.tensor(values(dtype, (3,), r, salt + 7 + root), dtype)
            xp.fill(got, -1)
            dist.scatter(got, pieces if rank == root else None, group=group,
                         src=ranks[root])
            assert_equal(got, values(dtype, (3,), rank, salt + 7 + root), dtype)

    calls(0)

    def refuse(*args, **kwargs):
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(rooted, "as_buffer", refuse)
    calls(1)
    calls(2)


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_root_lists_the_core_remembers_changed_between_calls(xp, dtype, rank, size, group):
    # gather's and scatter's lists on the root, remembered by the core as the other lists
    # are (test_lists_the_core_remembers_changed_between_calls): a tensor of the list
    # replaced, the root moved, the dtype seen anew; each result right
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(size))
    whole = xp.tensor(np.zeros(size * 3), dtype)
    pieces = xp.pieces(whole, [3] * size)
    mine, got = xp.empty((3,), dtype), xp.empty((3,), dtype)

    def calls(salt, root, pieces):
        mine[...] = xp.tensor(values(dtype, (3,), rank, salt), dtype)
        dist.gather(mine, pieces if rank == root else None, group=group, dst=ranks[root])
        if rank == root:
            for r, piece in enumerate(pieces):
                assert_equal(piece, values(dtype, (3,), r, salt), dtype)
                piece[...] = xp.tensor(values(dtype, (3,), r, salt + 1), dtype)
        xp.fill(got, -1)
        dist.scatter(got, pieces if rank == root else None, group=group, src=ranks[root])
        assert_equal(got, values(dtype, (3,), rank, salt + 1), dtype)

    for salt in range(3):
        calls(salt, 0, pieces)
    replaced = list(pieces)
    xp.fill(pieces[-1], 5)
    replaced[-1] = xp.empty((3,), dtype)
    calls(3, 0, replaced)
    assert_equal(pieces[-1], np.full(3, 5), dtype)
    calls(4, size - 1, pieces)
    calls(5, 0, pieces)
    if xp.name == "numpy" and rank == 0:  # (another dtype of the same memory: refused)
        twin = {"int64": np.float64, "float32": np.int32}[dtype]
        with pytest.raises(ArgumentValueError, match="dtype"):
            dist.gather(mine, [p.view(twin) for p in pieces], group=group, dst=ranks[0])


@pytest.mark.parametrize(("xp", "dtype"), QUICK)
def test_reduce_repeated_and_quick(xp, dtype, rank, size, group, monkeypatch):
    if not xp.host:
        pytest.skip(f"{xp.name}: device memory takes the device path (direct or staged), not the quick path")
    # new values each call, roots that change, the others' tensors left as they were, and
    # once warm, no general path (its adapter refuses)
    from mpicoll._collectives import rooted

    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(size))
    shape = (3, COLS)

    def calls(salt):
        for root in (size - 1, 0):
            mine = values(dtype, shape, rank, salt + root)
            t = xp.tensor(mine, dtype)
            dist.reduce(t, dst=ranks[root], group=group)
            assert_equal(t, _reduced(shape, size, salt + root, dtype) if rank == root else mine,
                         dtype)
            t = xp.tensor(mine, dtype)
            dist.reduce(t, group_dst=root, op=dist.ReduceOp.MAX, group=group)
            most = np.max([values(dtype, shape, r, salt + root) for r in range(size)], axis=0)
            assert_equal(t, most if rank == root else mine, dtype)

    calls(0)
    monkeypatch.setattr(rooted, "as_buffer", lambda *a, **k: pytest.fail("general path"))
    calls(1)
    calls(2)


def test_reduce_after_warm_up_keeps_every_check(rank, size, group):
    # the quick path takes only what the general path validated: AVG's divide, a
    # low-precision dtype's widening, a read-only root tensor and a bad root still go
    # the general way, with the same results and errors
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(size))
    shape = (4,)
    for _ in range(2):
        t = values("float32", shape, rank).copy()
        dist.reduce(t, dst=ranks[0], group=group)
    t = values("float32", shape, rank).copy()
    dist.reduce(t, dst=ranks[0], op=dist.ReduceOp.AVG, group=group)
    want = _reduced(shape, size, 0, "float32") / size
    assert_equal(t, want if rank == 0 else values("float32", shape, rank), "float32",
                 approx=True)
    h = values("float16", shape, rank).astype(np.float16)
    dist.reduce(h, dst=ranks[0], group=group)
    if rank == 0:  # summed in float32, rounded once
        wide = sum(values("float16", shape, r).astype(np.float16).astype(np.float32)
                   for r in range(size))
        np.testing.assert_array_equal(h, wide.astype(np.float16))
    frozen = values("float32", shape, rank).copy()
    frozen.flags.writeable = False
    if rank == 0:
        with pytest.raises(ArgumentBufferError, match="tensor"):
            dist.reduce(frozen, dst=ranks[0], group=group)
    with pytest.raises(ArgumentValueError, match="group_dst"):
        dist.reduce(frozen, group_dst=size, group=group)
    # a non-root only sends: a read-only tensor is fine there
    t = values("float32", shape, rank).copy()
    dist.reduce(t if rank == 0 else frozen, dst=ranks[0], group=group)
    assert_equal(t, _reduced(shape, size, 0, "float32") if rank == 0 else
                 values("float32", shape, rank), "float32")


def test_gather_and_scatter_bad_input_after_warm_up(rank, size, group):
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(size))
    whole = np.zeros(size * 2, np.float32)
    mine = np.ones(2, np.float32)
    root = rank == 0
    dist.gather(mine, np.split(whole, size) if root else None, group=group, dst=ranks[0])
    dist.scatter(mine, np.split(whole, size) if root else None, group=group, src=ranks[0])
    whole[:] = -1
    if root:  # on the root: one tensor too many, or its own piece of the wrong size
        longer = np.split(np.zeros(size * 2 + 2, np.float32), size + 1)
        short_own = [np.empty(1, np.float32), *np.split(whole, size)[1:]]
        for bad in (longer, short_own):
            with pytest.raises(ArgumentValueError, match="gather_list"):
                dist.gather(mine, bad, group=group, dst=ranks[0])
            with pytest.raises(ArgumentValueError, match=r"scatter_list|tensor"):
                dist.scatter(mine, bad, group=group, src=ranks[0])
    else:  # a list off the root
        with pytest.raises(ArgumentValueError, match="gather_list"):
            dist.gather(mine, np.split(whole, size), group=group, dst=ranks[0])
        with pytest.raises(ArgumentValueError, match="scatter_list"):
            dist.scatter(mine, np.split(whole, size), group=group, src=ranks[0])
    with pytest.raises(ArgumentTypeError):
        dist.gather([1.0, 2.0], np.split(whole, size) if root else None, group=group,
                    dst=ranks[0])
    assert (whole == -1).all() and (mine == 1).all()


def test_torch_tensor_changed_in_place_after_warm_up(rank, size, group):
    import torch
    t = torch.zeros(8)
    t.as_strided_((4,), (1,))
    t.fill_(1)
    dist.all_reduce(t, group=group)
    assert t.tolist() == [size] * 4
    # the same object, now a strided view of its memory: not contiguous any more
    t.as_strided_((4,), (2,))
    t.fill_(2)
    dist.all_reduce(t, group=group)
    assert t.tolist() == [2 * size] * 4
    t.set_(torch.full((64,), 3.0))  # the same object, other memory of another size
    dist.all_reduce(t, group=group)
    assert t.tolist() == [3 * size] * 64
    t.requires_grad_()  # now the general path's: written without recording autograd history
    dist.all_reduce(t, group=group)
    assert t.tolist() == [3 * size * size] * 64 and t.grad_fn is None


def test_torch_tensors_are_not_kept_alive(rank, size, group):
    import gc
    import weakref

    import torch
    t = torch.ones(16)
    dist.all_reduce(t, group=group)
    dist.all_reduce(t, group=group)
    gone = weakref.ref(t)
    del t
    gc.collect()
    assert gone() is None


def test_torch_tensor_changed_without_a_version_bump_after_warm_up(rank, size, group):
    """What the compiled core's memo of tensors (its Quicker) must notice: changes that
    torch's version counter does not see, and a square matrix transposed in place (same
    memory, shape and dtype; strides swapped)."""
    import torch
    t = torch.zeros(3, 3)
    for _ in range(2):  # (the second call answers from the memo)
        t.copy_(torch.arange(9.0).reshape(3, 3) * (rank + 1))
        dist.all_reduce(t, group=group)
    want = np.arange(9.0).reshape(3, 3) * sum(range(1, size + 1))
    assert np.array_equal(t.numpy(), want)
    t.t_()  # the same object and memory, no longer contiguous
    t.copy_(torch.arange(9.0).reshape(3, 3) * (rank + 1))
    dist.all_reduce(t, group=group)
    assert np.array_equal(t.numpy(), want)
    total = sum(range(1, size + 1))
    t.data = torch.full((3, 3), float(rank + 1), dtype=torch.float64)  # no version bump
    dist.all_reduce(t, group=group)
    assert t.dtype == torch.float64 and (t.numpy() == total).all()
    # the same memory under another dtype of the same size, and under another shape
    u = torch.zeros(8)
    dist.all_reduce(u, group=group)
    dist.all_reduce(u, group=group)
    u.data = u.data.view(torch.int32)
    u.fill_(-(rank + 1))  # (as float32's bits, NaN)
    dist.all_reduce(u, group=group)
    assert u.dtype == torch.int32 and u.tolist() == [-total] * 8
    v = u.data[:4]
    dist.all_reduce(v, group=group)
    dist.all_reduce(v, group=group)
    v.data = u.data  # the same data pointer: 8 elements now
    v.fill_(rank + 1)
    dist.all_reduce(v, group=group)
    assert v.tolist() == [total] * 8
    w = torch.ones(2)
    dist.all_reduce(w, group=group)
    w.requires_grad_()  # no version bump either: the general path's
    dist.all_reduce(w, group=group)
    assert w.grad_fn is None and w.tolist() == [float(size * size)] * 2


def test_torch_tensors_made_and_dropped_in_a_loop(rank, size, group):
    """A new tensor often lies where a dropped one did (the same address, the same data
    pointer): the memo answers only for the object it saw, alive."""
    import torch
    for i in range(300):
        t = torch.full((5,), float(i + rank), dtype=torch.float32)
        dist.all_reduce(t, group=group)
        assert t.tolist() == [float(size * i + sum(range(size)))] * 5, i
        del t


def test_a_torch_tensor_type_is_remembered_by_the_core_where_it_is_in_use(group):
    import torch

    from mpicoll import _core_loader
    from mpicoll._adapter.views import QUICKERS
    dist.all_reduce(torch.ones(2), group=group)
    quick = QUICKERS[torch.Tensor]
    if _core_loader.module is None:
        assert not hasattr(quick, "quick")  # the hook's own function
    else:
        assert type(quick) is _core_loader.module.Quicker
        t = torch.ones(3)
        assert quick(t) is quick(t)  # (remembered: the same array)
        t.data = torch.ones(3, dtype=torch.float64)
        assert quick(t).dtype == np.float64
        assert quick(torch.ones(3, requires_grad=True)) is None


def test_torch_tensor_subclasses_after_warm_up(rank, size, group):
    """A subclass of torch.Tensor has its own entry (and the core's memo learns how to
    ask it): repeated calls and a change that moves no memory are seen as for a
    Tensor; one whose `shape` is a Python property is asked through Python."""
    import torch

    class Marked(torch.Tensor):
        pass

    class Shaped(torch.Tensor):
        @property
        def shape(self):  # (what torch.Tensor's would say)
            return super().shape

    total = sum(range(1, size + 1))
    for kind in (Marked, Shaped):
        t = torch.zeros(6).as_subclass(kind)
        for _ in range(3):
            t.fill_(rank + 1)
            dist.all_reduce(t, group=group)
            assert type(t) is kind and t.tolist() == [total] * 6
        t.data = torch.zeros(6).view(torch.int32)[:3]  # the same object, other memory
        t.fill_(-(rank + 1))
        dist.all_reduce(t, group=group)
        assert t.tolist() == [-total] * 3
