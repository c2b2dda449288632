"""Calls that differ across ranks in dtype, reduce op or collective, on the default path
(no MPICOLL_CHECK), where their data travels as direct messages (groups of 2 to 8
ranks): each message's tag carries the call's signature beside its count
(mpicoll/_collectives/_signature.py), so every rank that receives from a rank whose call
differs raises SignatureMismatch naming the collective and what differs, never a wrong
result. Rank 0 makes the other call; the counts agree, so only the signature can tell.
Each mistake is made twice, blocking and async: the second call takes the quick path
(on the compiled core where it is in use)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mpicoll as dist
from mpicoll._collectives import _direct, _signature
from mpicoll._start import is_open_mpi
from mpicoll.errors import SignatureMismatch, SizeMismatch

SENTINEL = -7


@pytest.fixture(autouse=True)
def _direct_only(size):
    if not 1 < size <= _direct.MAX_RANKS:
        pytest.skip("direct messages need a group of 2 to 8 ranks")
    if not _signature.bits():
        pytest.skip("this MPI's tags are too few to carry a signature")


def _every_rank_raises(call, *match):
    for _ in range(2):
        with pytest.raises(SignatureMismatch) as e:
            call()
        for m in match:
            assert m in str(e.value), str(e.value)


def _waited(work):
    if work is not None:
        work.wait()


@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_single_of_another_dtype(rank, size, async_op):
    dt = np.float32 if rank == 0 else np.float64  # (4 elements a peer: whole elements)
    out = np.full(4 * size, SENTINEL, dt)
    other = ("'float64' there, 'float32' here" if rank == 0 else
             "'float32' there, 'float64' here")
    _every_rank_raises(lambda: _waited(dist.all_to_all_single(
        out, np.ones(4 * size, dt), async_op=async_op)), "all_to_all_single", "dtype", other)


@pytest.mark.parametrize("async_op", [False, True])
def test_all_gather_into_tensor_of_another_dtype(rank, size, async_op):
    dt = np.int32 if rank == 0 else np.float32  # (same itemsize: bits reinterpreted before)
    out = np.full(4 * size, SENTINEL, dt)
    _every_rank_raises(lambda: _waited(dist.all_gather_into_tensor(
        out, np.ones(4, dt), async_op=async_op)), "all_gather_into_tensor", "dtype")


@pytest.mark.parametrize("async_op", [False, True])
def test_reduce_scatter_tensor_avg_against_sum(rank, size, async_op):
    op = dist.ReduceOp.AVG if rank == 0 else dist.ReduceOp.SUM
    out = np.full(3, SENTINEL, np.float64)
    _every_rank_raises(lambda: _waited(dist.reduce_scatter_tensor(
        out, np.ones(3 * size), op=op, async_op=async_op)),
        "reduce_scatter_tensor", "reduce op")


@pytest.mark.parametrize("async_op", [False, True])
def test_two_collectives_at_the_same_point(rank, size, async_op):
    # all_to_all_single of 2 elements a peer, against all_gather_into_tensor of 2: the
    # same messages, counts and dtype; before, each returned the other's data silently
    out = np.full(2 * size, SENTINEL, np.float64)
    if rank == 0:
        call = lambda: _waited(dist.all_to_all_single(  # noqa: E731
            out, np.ones(2 * size), async_op=async_op))
    else:
        call = lambda: _waited(dist.all_gather_into_tensor(  # noqa: E731
            out, np.ones(2), async_op=async_op))
    _every_rank_raises(call, "collective", "'all_to_all_single'", "'all_gather_into_tensor'")


def test_gather_of_another_dtype_raises_on_the_root(rank, size):
    dt = np.float32 if rank == 0 else np.float64
    x = np.ones(2, dt)
    gl = [np.zeros(2, dt) for _ in range(size)] if rank == 0 else None
    if rank == 0:  # (the root receives from every rank; the others only send)
        _every_rank_raises(lambda: dist.gather(x, gl, dst=0), "gather", "dtype")
    else:
        for _ in range(2):
            dist.gather(x, gl, dst=0)


def test_the_same_calls_still_agree(rank, size):
    # a signature of every dtype and op the tags carry: calls that agree never raise
    for dt in (np.float32, np.float64, np.int64, np.complex64, np.uint8, np.bool_):
        out = np.zeros(2 * size, dt)
        inp = (np.arange(2 * size) % 2).astype(dt)
        dist.all_to_all_single(out, inp)
        np.testing.assert_array_equal(out, np.tile(inp[2 * rank:2 * rank + 2], size))
    for op in ("SUM", "MAX", "MIN", "PRODUCT", "AVG"):
        out = np.zeros(2)
        dist.reduce_scatter_tensor(out, np.full(2 * size, 2.0), op=getattr(dist.ReduceOp, op))
        want = {"SUM": 2.0 * size, "MAX": 2.0, "MIN": 2.0, "PRODUCT": 2.0 ** size,
                "AVG": 2.0}[op]
        np.testing.assert_array_equal(out, [want, want])


@pytest.mark.parametrize("async_op", [False, True])
def test_all_reduce_of_another_dtype(rank, size, async_op):
    # numpy's float64 against torch's float32: the first thing to go wrong in a
    # cross-framework job (issue 52: before, garbage on every rank, exit 0)
    dt = np.float32 if rank == 0 else np.float64
    x = np.ones(4, dt)
    _every_rank_raises(lambda: _waited(dist.all_reduce(x, async_op=async_op)),
                       "all_reduce", "dtype")


def test_all_reduce_async_on_one_rank_only(rank, size):
    dt = np.float32 if rank == 0 else np.float64
    x = np.ones(4, dt)
    _every_rank_raises(lambda: _waited(dist.all_reduce(x, async_op=rank == 1)),
                       "all_reduce", "dtype")


@pytest.mark.parametrize("op", ["MAX", "AVG", "PREMUL_SUM"])
def test_all_reduce_with_another_reduce_op(rank, size, op):
    # (a premul_sum, whose pre-scaled copy is reduced, goes as messages too: told apart)
    other = dist.ReduceOp.SUM if rank != 0 else dist.ReduceOp.premul_sum(2.0) \
        if op == "PREMUL_SUM" else getattr(dist.ReduceOp, op)
    x = np.ones(3)
    _every_rank_raises(lambda: dist.all_reduce(x, op=other), "all_reduce", "reduce op",
                       f"'{op}'")


@pytest.mark.parametrize("async_op", [False, True])
@pytest.mark.parametrize("mistake", ["dtype", "reduce op", "premul_sum"])
def test_a_reduce_that_differs_raises_on_the_root_and_leaves_the_others(rank, size,
                                                                        async_op, mistake):
    # rank 1 sends the root (rank 0) int32 against float32 (the same size), MAX against
    # SUM, or a premul_sum's pre-scaled copy against SUM: the root, whose result its
    # message makes, raises; the others' tensors are only read (before, MPI's Reduce
    # returned a wrong result silently, or, for premul_sum, took MPI's way while the
    # others sent messages: the watchdog ended the job)
    dt = np.int32 if rank == 1 and mistake == "dtype" else np.float32
    op = dist.ReduceOp.SUM if rank != 1 else dist.ReduceOp.MAX if mistake == "reduce op" \
        else dist.ReduceOp.premul_sum(2.0) if mistake == "premul_sum" else dist.ReduceOp.SUM
    for _ in range(2):  # (the second: the quick path, on the core where it is in use)
        x = np.full(4, rank + 1, dt)
        if rank == 0:
            with pytest.raises(SignatureMismatch) as e:
                _waited(dist.reduce(x, dst=0, op=op, async_op=async_op))
            said = "dtype" if mistake == "dtype" else "reduce op"
            assert "reduce #" in str(e.value) and said in str(e.value), str(e.value)
        else:
            _waited(dist.reduce(x, dst=0, op=op, async_op=async_op))
            np.testing.assert_array_equal(x, np.full(4, rank + 1, dt))
    dist.barrier()


def test_a_reduce_s_result_is_its_all_reduce_s_bits(rank, size):
    # the root reduces the blocks in rank order, as every rank of an all_reduce does
    rng = np.random.default_rng(rank)
    x = rng.standard_normal(64).astype(np.float32)
    y = x.copy()
    for root in range(size):
        r = x.copy()
        dist.reduce(r, dst=root)
        dist.all_reduce(y := x.copy())
        if rank == root:
            assert r.tobytes() == y.tobytes()


def test_all_reduce_results_are_the_same_bits_on_every_rank(rank, size):
    # reduced in rank order on every rank: x0 + x1 + ... in float32, which a sum in
    # another order would round differently; the same bits everywhere, and numpy's
    # sequential sum of the same blocks
    rng = np.random.default_rng(7)
    blocks = (rng.standard_normal((size, 300)) * 10.0 ** rng.integers(-3, 4, (size, 300))
              ).astype(np.float32)
    want = blocks[0].copy()
    for j in range(1, size):
        want += blocks[j]
    for _ in range(3):  # the general path, then kept messages (in the core where in use)
        x = blocks[rank].copy()
        dist.all_reduce(x)
        np.testing.assert_array_equal(x, want)
        everyone = np.empty((size, 300), np.float32)
        dist.all_gather_into_tensor(everyone, x)
        assert all((everyone[j].view(np.int32) == x.view(np.int32)).all() for j in range(size))


@pytest.mark.parametrize("n", [3, 5])
def test_an_odd_count_of_another_dtype_raises_too(rank, size, n):
    # 3 float32 (12 bytes) where a float64 receive expects 24: no whole number of its
    # elements, which MPICH refused with an assertion that stopped the process; the
    # messages go as bytes, and the signature says what differs
    dt = np.float32 if rank == 0 else np.float64
    x = np.ones(n, dt)
    _every_rank_raises(lambda: dist.all_reduce(x), "all_reduce", "dtype")
    out = np.zeros(n * size, dt)
    _every_rank_raises(lambda: dist.all_gather_into_tensor(out, np.ones(n, dt)),
                       "all_gather_into_tensor", "dtype")


@pytest.mark.parametrize("async_op", [False, True])
@pytest.mark.parametrize("root_dtype", ["float32", "float64"])
def test_broadcast_of_another_dtype_raises_on_every_rank(rank, size, async_op, root_dtype):
    # the root's float32 into float64 tensors: on Open MPI before, the others returned
    # the root's bits in their first half and their own in the rest, silently; float64
    # into float32 raised MPI's error stack. Now each rank off the root raises, and the
    # root too (their acknowledgements carry their dtype), its own tensor untouched
    other = "float64" if root_dtype == "float32" else "float32"
    dt = np.dtype(root_dtype if rank == 0 else other)
    x = np.arange(4, dtype=dt) + 10 * rank
    call = lambda: _waited(dist.broadcast(x, src=0, async_op=async_op))  # noqa: E731
    if rank == 0:
        _every_rank_raises(call, "broadcast", f"dtype: '{other}' there, '{root_dtype}' here",
                           "The root's tensor (rank 0) is unchanged")
        np.testing.assert_array_equal(x, np.arange(4, dtype=dt))
    else:
        _every_rank_raises(call, "broadcast", f"dtype: '{root_dtype}' there, '{other}' here")


def test_broadcast_of_another_size_raises_on_every_rank(rank, size):
    x = np.zeros(5 if rank == 0 else 4)
    for _ in range(2):
        if rank == 0:
            with pytest.raises(SizeMismatch, match=r"broadcast: .*tensor on rank 1 holds 4 "
                               r"elements, and on the root \(rank 0\) 5[;.].* The root's tensor "
                               r"\(rank 0\) is unchanged"):
                dist.broadcast(x, src=0)
        else:
            with pytest.raises(SizeMismatch, match=r"broadcast: .*the root \(rank 0\) sends "
                               r"5 elements, and tensor on rank \d holds 4"):
                dist.broadcast(x, src=0)


@pytest.mark.parametrize("async_op", [False, True])
@pytest.mark.parametrize("count", [1, 512])
def test_a_root_that_differs_raises_at_the_call_and_leaves_nothing_queued(
        rank, size, async_op, count):
    """Two ranks that disagree on the root, both ways: each raises at that call, and the
    next broadcasts deliver their own data. Before, each returned its own tensor and left
    its message queued, so every later broadcast between them delivered the one before."""
    pair = dist.new_group([0, 1])  # (collective: every rank makes it)
    if rank > 1:
        return
    x = np.full(count, 10.0 + rank)
    dist.broadcast(x, group=pair, group_src=0)  # (right: the next calls may be quick)
    seq = 1  # (the pair's calls, numbered: the message names the call)
    for theirs, said in ((rank, "rank {me} and rank {peer} each took itself for the root"),
                         (1 - rank, "rank {me} took rank {peer} for the root, and rank "
                                    "{peer} took rank {me}")):
        for _ in range(2):
            x[:] = 10.0 + rank
            seq += 1
            with pytest.raises(SignatureMismatch) as e:
                _waited(dist.broadcast(x, group=pair, group_src=theirs, async_op=async_op))
            assert f"broadcast #{seq}: the ranks disagree on the root: " + \
                said.format(me=rank, peer=1 - rank) in str(e.value), str(e.value)
    for value in (100.0, 200.0, 300.0):  # nothing left over from the calls that raised
        y = np.full(count, value if rank == 0 else -1.0)
        _waited(dist.broadcast(y, group=pair, group_src=0, async_op=async_op))
        np.testing.assert_array_equal(y, np.full(count, value))


@pytest.mark.parametrize("async_op", [False, True])
@pytest.mark.parametrize("sizes", [(3, 3), (5000, 5000), (5000, 3)])
def test_a_scatter_root_that_differs_raises_at_the_call_and_leaves_nothing_queued(
        rank, size, async_op, sizes):
    """A scatter's root that differs between two ranks, both ways. Before, two ranks that
    each took themselves for the root each returned its own chunk and left the chunk it
    sent queued, and the next scatter between them received that stale chunk in place of
    its data. Now each raises at the call (its chunk, however long, meets the other's
    acknowledgement), and the next scatters deliver their own data, as numpy's split of
    the root's list says. 5000 float64: longer than an acknowledgement's least room; and
    chunks of 5000 and 3, where the chunk a root receives in place of an acknowledgement
    is longer than any it sends (on Open MPI a message longer than its receive is written
    past the receive's end)."""
    pair = dist.new_group([0, 1])
    if rank > 1:
        return
    at = [0, sizes[0], sizes[0] + sizes[1]]

    def scatter(root, base):
        chunks = list(np.split(np.arange(at[2], dtype=np.float64) + base, at[1:2])) \
            if rank == root else None
        out = np.full(sizes[rank], -1.0)
        _waited(dist.scatter(out, chunks, group=pair, group_src=root, async_op=async_op))
        return out

    mine = np.arange(at[rank], at[rank + 1], dtype=np.float64)
    np.testing.assert_array_equal(scatter(0, 0.0), mine)
    seq = 1
    for theirs, said in ((rank, "rank {me} and rank {peer} each took itself for the root"),
                         (1 - rank, "rank {me} took rank {peer} for the root, and rank "
                                    "{peer} took rank {me}")):
        for _ in range(2):
            seq += 1
            with pytest.raises(SignatureMismatch) as e:
                scatter(theirs, 100.0 * rank)
            assert f"scatter #{seq}: the ranks disagree on the root: " + \
                said.format(me=rank, peer=1 - rank) in str(e.value), str(e.value)
    for base in (1000.0, 2000.0, 3000.0):  # nothing left over from the calls that raised
        for root in (0, 1):
            np.testing.assert_array_equal(scatter(root, base), mine + base)


@pytest.mark.parametrize("async_op", [False, True])
def test_a_scatter_root_met_by_another_dtype_raises_on_the_root_too(rank, size, async_op):
    # the root's acknowledgements carry each rank's dtype: a rank whose tensor is int32
    # against the root's float32 list (the same itemsize) raises where it receives, and
    # the root raises too, naming it, where before it returned as if all had gone well
    g = dist.new_group(list(range(size)))
    dt = np.int32 if rank == 1 else np.float32
    chunks = list(np.ones((size, 2), np.float32)) if rank == 0 else None
    for _ in range(2):
        out = np.zeros(2, dt)
        if rank in (0, 1):
            with pytest.raises(SignatureMismatch) as e:
                _waited(dist.scatter(out, chunks, src=0, group=g, async_op=async_op))
            theirs, mine = ("int32", "float32") if rank == 0 else ("float32", "int32")
            assert "scatter #" in str(e.value), str(e.value)
            assert f"dtype: '{theirs}' there, '{mine}' here" in str(e.value), str(e.value)
        else:
            _waited(dist.scatter(out, chunks, src=0, group=g, async_op=async_op))
            np.testing.assert_array_equal(out, np.ones(2))


def test_a_pair_s_broadcast_then_the_whole_group_s_from_the_same_root(rank, size):
    # the root's messages were kept by (root, count) alone: the pair's, to rank 1 only,
    # then served the whole group's broadcast, and ranks 2 and up never received
    pair = dist.new_group([0, 1])
    for value in (5.0, 6.0):
        if rank < 2:
            x = np.full(3, value if rank == 0 else -1.0)
            dist.broadcast(x, group=pair, group_src=0)
            np.testing.assert_array_equal(x, np.full(3, value))
        y = np.full(3, value if rank == 0 else -1.0)
        dist.broadcast(y, src=0)
        np.testing.assert_array_equal(y, np.full(3, value))


def test_repeated_broadcasts_from_every_root_stay_right(rank, size):
    # kept messages per root (a Plan each: the same tensor, another root), small and
    # past the messages' limit (MPI's Ibcast), numpy's reference
    from mpicoll._collectives._rooted_direct import MAX_BROADCAST
    for n in (1, MAX_BROADCAST, MAX_BROADCAST + 1):
        x = np.zeros(n)
        for _ in range(3):
            for root in range(size):
                x[:] = rank + 1
                dist.broadcast(x, src=root)
                np.testing.assert_array_equal(x, np.full(n, root + 1.0))


@pytest.mark.parametrize("async_op", [False, True])
def test_a_rank_that_skipped_a_collective_raises_at_the_barrier(rank, size, async_op):
    """Rank 1 skips an all_reduce, then every rank calls barrier: by order, rank 1's
    barrier meets the others' all_reduce. Each raises there, naming the two collectives
    (and no dtype or op: a barrier has none), where MPI's barrier waited on the others'
    all_reduce until the watchdog ended the job; nothing is left queued."""
    if is_open_mpi():
        pytest.skip("on Open MPI a barrier is MPI's: a receive of nothing cut short there "
                    "overwrites memory (mpicoll/_collectives/barrier.py)")
    x = np.full(3, rank + 1.0)
    with pytest.raises(SignatureMismatch) as e:
        if rank != 1:
            _waited(dist.all_reduce(x, async_op=async_op))
        _waited(dist.barrier(async_op=async_op))
    said = str(e.value)
    if rank == 1:
        assert re.match(r"barrier #\d+: rank 0 made another call than rank 1 at the same "
                        r"point: collective: 'all_reduce' there, 'barrier' here\. Rank 1 did "
                        r"not wait for the others", said), said
    else:
        assert re.match(rf"all_reduce #\d+: rank 1 made another call than rank {rank} at the "
                        r"same point: collective: 'barrier' there, 'all_reduce' here\. The "
                        rf"output of rank {rank} is not what the call asked for", said), said
        np.testing.assert_array_equal(x, np.full(3, rank + 1.0))  # (not reduced)
    for _ in range(3):  # the next calls pair as they should
        y = np.full(3, rank + 1.0)
        _waited(dist.all_reduce(y, async_op=async_op))
        np.testing.assert_array_equal(y, np.full(3, size * (size + 1) / 2))
        _waited(dist.barrier(async_op=async_op))


def test_no_acknowledgements_where_the_tags_carry_no_signature(monkeypatch):
    # an MPI with MPI_TAG_UB below 2**20 (Intel MPI's is 2**20 - 1): tags carry counts
    # only, so an acknowledgement (no data, the count in its tag) would pass for the data
    # a receive expects; there, none is sent, and a broadcast is as it was before them
    from mpicoll._collectives import _messages

    sizes = object()  # (the check on: anything but None)
    root = _messages.Direct([], [(1, 3)], [3, 3], sizes, 2, sig=5, acks=[(1, 3, 1)])
    other = _messages.Direct([(0, 3, 0)], [], [3], sizes, 2, sig=5, acks=[(0, 3)])
    assert (len(root.acks_in), len(other.acks_out)) == (1, 1)
    # the root expects what the other sends, and no data's tag passes for it
    assert root.tags[0] == other.acks_out[0][1] != other.tags[0]
    assert root.tags[0] & ((1 << root.bits) - 1) != 5
    monkeypatch.setattr(_messages, "bits", lambda: 0)
    root = _messages.Direct([], [(1, 3)], [3, 3], sizes, 2, sig=5, acks=[(1, 3, 1)])
    other = _messages.Direct([(0, 3, 0)], [], [3], sizes, 2, sig=5, acks=[(0, 3)])
    assert (root.acks_in, root.tags, other.acks_out, other.tags) == ([], (), [], (3,))
