"""Sizes that disagree across ranks, on the default path (no MPICOLL_CHECK): the mistakes
of issue 33's table, each made by rank 1 against rank 0 (the other ranks call correctly).
Every rank whose output the mistake makes wrong raises SizeMismatch naming the
operation, the peer and both counts; where one rank can see the mistake alone (a slot
of another shape), every rank raises before communicating, its outputs untouched. Each
mistake is made twice: the second call takes the quick path where there is one.
Through mpicoll and its Paddle face (the torch backend's are in test_torch_backend.py,
whose module holds the one torch process group of the session); the MPICOLL_CHECK=0
escape hatch in a launched job.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from _launch import run

import mpicoll as dist
from mpicoll import _polling
from mpicoll._collectives import _direct
from mpicoll.errors import ArgumentValueError, SizeMismatch

MULTI = pytest.mark.mpi(min_size=2)  # a mistake needs two ranks
SENTINEL = -7


def _raises_on(ranks, rank, call, *match):
    """``call()`` raises SizeMismatch (message holding every ``match``) on ``ranks`` only."""
    if rank in ranks:
        with pytest.raises(SizeMismatch) as e:
            call()
        for m in match:
            assert m in str(e.value), str(e.value)
    else:
        call()


def _waited(work):
    """A call's Work waited for (async_op=True); None (blocking) as it is."""
    if work is not None:
        work.wait()


def _direct_only(group):
    if not _direct.chosen(group):
        pytest.skip(f"all_gather is MPI's collective on {group.size()} ranks "
                    f"(MPICOLL_DIRECT={_direct.MAX_RANKS}): test_through_mpi_collectives_"
                    "every_rank_raises")


def _a2a_single(rank, size, group, sent_to_0, async_op=False):
    splits = [2] * size
    if rank == 1:
        splits[0] = sent_to_0
    inp = np.arange(sum(splits), dtype=np.float32) + 100 * rank
    out = np.full(2 * size, SENTINEL, np.float32)

    def call():
        _waited(dist.all_to_all_single(out, inp, [2] * size, splits, group=group,
                                       async_op=async_op))
    return call, out


@MULTI
@pytest.mark.parametrize("sent", [3, 1], ids=["more", "fewer"])
@pytest.mark.parametrize("async_op", [False, True])
def test_all_to_all_single_uneven(sent, async_op, rank, size, group):
    for _ in range(2):
        call, out = _a2a_single(rank, size, group, sent, async_op)
        _raises_on({0}, rank, call, "all_to_all_single", f"rank 1 sends {sent} element{'s' * (sent > 1)} to "
                   "rank 0, whose output holds 2")
        if rank != 0:  # every other exchange was right: rank j's rows for this rank
            def sent_here(j):
                sp = [2] * size
                if j == 1:
                    sp[0] = sent
                lo = sum(sp[:rank])
                return np.arange(lo, lo + 2, dtype=np.float32) + 100 * j
            want = np.concatenate([sent_here(j) for j in range(size)])
            np.testing.assert_array_equal(out, want)


@MULTI
@pytest.mark.parametrize("sent", [3, 1], ids=["longer", "shorter"])
def test_all_to_all_list_of_separate_tensors(sent, rank, size, group):
    for _ in range(2):
        ins = [np.full(sent if (rank == 1 and j == 0) else 2, rank, np.int64)
               for j in range(size)]
        outs = [np.full(2, SENTINEL, np.int64) for _ in range(size)]
        _raises_on({0}, rank, lambda: dist.all_to_all(outs, ins, group=group), "all_to_all",
                   f"rank 1 sends {sent} element{'s' * (sent > 1)} to rank 0, whose "
                   "output_tensor_list[1] "
                   "holds 2")
        if rank != 0:
            for j, got in enumerate(outs):
                np.testing.assert_array_equal(got, [j, j])


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("form", ["all_to_all_single", "all_to_all"])
@pytest.mark.parametrize("how", ["posted", "kept", "async"])
def test_a_message_cut_short_leaves_no_message_running(how, form, rank, size, group,
                                                       monkeypatch):
    # rank 1's message to rank 0 is too long and is there when rank 0 calls; the other
    # ranks call 0.5 s later. MPICH fails rank 0's wait at once, with their messages
    # still pending: as direct messages, they must have arrived by the time the call
    # raises, never after, when the output may be freed memory (seen: heap corruption
    # between hosts), nor be taken by a later call's receives. Blocking calls' direct
    # messages are posted (memory that moves) or kept (persistent requests). Waits
    # begin with Tests, as where a host's ranks have a core each (not when oversubscribed)
    _direct_only(group)
    monkeypatch.setattr(_polling, "spin", range(_polling.POLLS))
    async_op = how == "async"
    for it in range(2):
        v = rank + 10 * it  # (a message of an earlier call, received late, shows)
        group.missed = 0 if how == "kept" else _direct.MISSES + 1
        dist.barrier(group=group)
        time.sleep(0.15 if rank == 0 else 0.5 if rank >= 2 else 0)
        if form == "all_to_all":
            ins = [np.full(3 if (rank == 1 and j == 0) else 2, v, np.int64)
                   for j in range(size)]
            outs = [np.full(2, SENTINEL, np.int64) for _ in range(size)]
            call = lambda: _waited(dist.all_to_all(  # noqa: E731
                outs, ins, group=group, async_op=async_op))
            got = lambda: [o.tolist() for o in outs]  # noqa: E731
        else:
            splits = [2] * size
            if rank == 1:
                splits[0] = 3
            inp = np.full(sum(splits), v, np.int64)
            out = np.full(2 * size, SENTINEL, np.int64)
            call = lambda: _waited(dist.all_to_all_single(  # noqa: E731
                out, inp, [2] * size, splits, group=group, async_op=async_op))
            got = lambda: out.reshape(size, 2).tolist()  # noqa: E731
        _raises_on({0}, rank, call, form, "rank 1 sends 3 elements to rank 0")
        at_raise = got()
        dist.barrier(group=group)  # (MPI driven: a receive left running completes here)
        assert got() == at_raise
        want = [[j + 10 * it] * 2 for j in range(size)]
        if rank != 0:
            assert at_raise == want
        elif at_raise[0] == [SENTINEL] * 2:  # received into a staging area (a list's
            # general path: async, or a first call), unpacked only where the sizes agree
            # (a late write into that area shows only as the next exchange's data, below)
            assert at_raise == [[SENTINEL] * 2] * size
        else:  # into the output: what the ranks that agree sent is in place at the raise
            assert at_raise[0] == want[0] and at_raise[2:] == want[2:]
    group.missed = 0
    # and the group goes on: the next exchange receives its own messages
    outs = [np.full(2, SENTINEL, np.int64) for _ in range(size)]
    dist.all_to_all(outs, [np.full(2, 100 + rank, np.int64) for _ in range(size)],
                    group=group)
    assert [o.tolist() for o in outs] == [[100 + j] * 2 for j in range(size)]


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("form", ["all_to_all_single", "all_to_all"])
def test_a_kept_plan_cut_short_in_the_core_leaves_no_message_running(form, rank, size, group,
                                                                     monkeypatch):
    # as above, where rank 0 repeats its call on the same memory: the compiled core runs
    # the Plan its group keeps (on Open MPI its messages posted afresh at each run, not
    # restarted), and rank 1's message is too long, the other ranks' still on their way
    # when MPI fails the wait. Those left running are handed back and waited for before
    # rank 0 raises: nothing arrives later, and the next calls on the same memory are right
    from mpicoll import _core_loader
    from mpicoll._collectives import _messages

    _direct_only(group)
    dist.all_reduce(np.zeros(1), group=group)  # (the first call loads the core)
    if _core_loader.load() is None:
        pytest.skip("the compiled core runs kept Plans")
    monkeypatch.setattr(_polling, "spin", range(_polling.POLLS))
    long_ = rank == 1
    sends = [3 if (long_ and j == 0) else 2 for j in range(size)]
    if form == "all_to_all":
        ins = [np.empty(2, np.int64) for _ in range(size)]
        outs = [np.empty(2, np.int64) for _ in range(size)]
        wrong = [np.empty(n, np.int64) for n in sends]

        def fill(v):
            for t in ins + wrong:
                t.fill(v)
            for t in outs:
                t.fill(SENTINEL)

        def call(mistake=False):
            dist.all_to_all(outs, wrong if mistake else ins, group=group)
        got = lambda: [o.tolist() for o in outs]  # noqa: E731
    else:
        inp, out = np.empty(2 * size, np.int64), np.empty(2 * size, np.int64)
        wrong = np.empty(sum(sends), np.int64)

        def fill(v):
            inp.fill(v)
            wrong.fill(v)
            out.fill(SENTINEL)

        def call(mistake=False):
            dist.all_to_all_single(out, wrong if mistake else inp, [2] * size,
                                   sends if mistake else [2] * size, group=group)
        got = lambda: out.reshape(size, 2).tolist()  # noqa: E731

    def refuse(*args, **kwargs):
        raise AssertionError("rank 0's repeated call left the compiled core")

    for it in range(2):
        v = rank + 10 * it  # (a message of an earlier call, received late, shows)
        want = [[j + 10 * it] * 2 for j in range(size)]
        group.missed = 0
        for _ in range(2):  # (rank 0's Plan made, then found)
            fill(v)
            call()
            assert got() == want
        fill(v)
        dist.barrier(group=group)
        time.sleep(0.15 if rank == 0 else 0.5 if rank >= 2 else 0)
        if rank == 0:
            with monkeypatch.context() as m, pytest.raises(SizeMismatch) as e:
                m.setattr(_direct, "started", refuse)
                m.setattr(_messages, "issue", refuse)
                m.setattr(_direct, "issue", refuse)
                call()
            assert "rank 1 sends 3 elements to rank 0" in str(e.value), str(e.value)
        else:
            call(mistake=long_)
        at_raise = got()
        dist.barrier(group=group)  # (MPI driven: a receive left running completes here)
        assert got() == at_raise
        if rank != 0:
            assert at_raise == want
        else:  # what the ranks that agree sent is in place at the raise
            assert at_raise[2:] == want[2:]
    for k in range(2):  # the group goes on, on the same memory
        fill(100 + rank + k)
        call()
        assert got() == [[100 + j + k] * 2 for j in range(size)]


@MULTI
def test_all_gather_slots_of_another_shape_raise_everywhere_before_sending(rank, size, group):
    slots = [np.full((3, 2), SENTINEL, np.float32) for _ in range(size)]
    with pytest.raises(ArgumentValueError, match=r"tensor_list\[\d+\].*shape.*\(2, 3\)"):
        dist.all_gather(slots, np.ones((2, 3), np.float32), group=group)
    assert all((s == SENTINEL).all() for s in slots)
    dist.barrier(group=group)  # every rank raised, so nothing was sent


@MULTI
def test_all_gather_sizes_that_differ_across_ranks(rank, size, group):
    # direct messages (a group of up to 8 ranks): rank 0, whose slot for rank 1 is too
    # short, raises; the others' outputs are right
    _direct_only(group)
    for sep in (True, False):  # separate tensors, then adjacent views of one buffer
        for _ in range(2):
            mine = np.full(6 if rank == 1 else 4, rank, np.int32)
            sizes = [6 if j == 1 and rank != 0 else 4 for j in range(size)]
            flat = np.full(sum(sizes), SENTINEL, np.int32)
            slots = [np.full(c, SENTINEL, np.int32) for c in sizes] if sep else \
                np.split(flat, np.cumsum(sizes)[:-1])
            _raises_on({0}, rank, lambda: dist.all_gather(slots, mine, group=group),
                       "all_gather", "rank 1 sends 6 elements to rank 0, whose "
                       "tensor_list[1] holds 4 for it")
            if rank != 0:
                for j, got in enumerate(slots):
                    np.testing.assert_array_equal(got, np.full(sizes[j], j))


@MULTI
@pytest.mark.parametrize("async_op", [False, True])
def test_all_gather_into_tensor_sizes_that_differ_across_ranks(async_op, rank, size, group):
    # rank 1 gathers 3 elements a rank where the others gather 2: every rank receives a
    # block of a size it did not expect from some peer (direct messages), or every rank
    # compares the sizes (MPI's collective, on larger groups), so every rank raises
    for _ in range(2):
        n = 3 if rank == 1 else 2
        out = np.full(n * size, SENTINEL, np.float32)

        def call():
            _waited(dist.all_gather_into_tensor(out, np.full(n, rank, np.float32),
                                                group=group, async_op=async_op))
        peer, sent = (0, 2) if rank == 1 else (1, 3)
        said = (f"rank {peer} sends {sent} elements to rank {rank}, whose output_tensor "
                f"holds {n} for it") if _direct.chosen(group) else (
            f"the size of input_tensor is from 2 to 3 elements across the ranks ({n} on "
            f"rank {rank})")
        _raises_on(range(size), rank, call, "all_gather_into_tensor", said)


@MULTI
@pytest.mark.parametrize("async_op", [False, True])
def test_all_gather_coalesced_sizes_that_differ_across_ranks(async_op, rank, size, group):
    # rank 1's input list holds 3 + 2 elements where the others' hold 2 + 2, then 3 + 1
    # where the others' hold 2 + 2 (the same total): MPI's Allgather relays blocks, so
    # every rank compares each entry's size and raises
    for second in (2, 1):
        n, m = (3, second) if rank == 1 else (2, 2)
        ins = [np.full(n, rank, np.float32), np.full(m, rank, np.float32)]
        outs = [[np.full(n, SENTINEL, np.float32), np.full(m, SENTINEL, np.float32)]
                for _ in range(size)]

        def call():
            _waited(dist.all_gather_coalesced(outs, ins, group=group, async_op=async_op))
        said = ["all_gather_coalesced", "the size of input_tensor_list[0] is from 2 to 3 "
                f"elements across the ranks ({n} on rank {rank})"]
        if second == 1:
            said.append("the size of input_tensor_list[1] is from 1 to 2 elements across "
                        f"the ranks ({m} on rank {rank})")
        _raises_on(range(size), rank, call, *said)
    # the calls that follow are right
    ins = [np.full(2, rank, np.float32)]
    outs = [[np.zeros(2, np.float32)] for _ in range(size)]
    dist.all_gather_coalesced(outs, ins, group=group)
    for j in range(size):
        np.testing.assert_array_equal(outs[j][0], [j, j])


_RELAYED = """
import numpy as np, mpicoll as dist
from mpicoll.errors import SizeMismatch
rank, size = dist.get_rank(), dist.get_world_size()
mine = np.full(6 if rank == 1 else 4, rank, np.int32)
slots = [np.zeros(6 if j == 1 and rank != 0 else 4, np.int32) for j in range(size)]
try:
    dist.all_gather(slots, mine)
except SizeMismatch as e:
    print(f"rank {rank}: {e}", flush=True)
chunks = [np.ones(3 if (rank == 1 and j == 0) else 4, np.float32) for j in range(size)]
try:
    dist.reduce_scatter(np.zeros(4, np.float32), chunks)
except SizeMismatch as e:
    print(f"rank {rank}: {e}", flush=True)
n = 3 if rank == 1 else 2
for async_op in (False, False, True):  # (the second call: the quick path)
    try:
        w = dist.all_gather_into_tensor(np.zeros(n * size, np.float32), np.ones(n, np.float32),
                                        async_op=async_op)
        w and w.wait()
    except SizeMismatch as e:
        print(f"rank {rank}: {e}", flush=True)
    try:
        w = dist.reduce_scatter_tensor(np.zeros(n), np.ones(n * size), async_op=async_op)
        w and w.wait()
    except SizeMismatch as e:
        print(f"rank {rank}: {e}", flush=True)
dist.barrier()
out = np.zeros(2 * size, np.float32)  # what follows is right again
dist.all_gather_into_tensor(out, np.full(2, rank, np.float32))
print(f"rank {rank}: after: {out.tolist()}", flush=True)
"""


@pytest.mark.spawn
def test_through_mpi_collectives_every_rank_raises():
    # where all_gather and reduce_scatter are MPI's collectives (larger groups; here
    # MPICOLL_DIRECT=0), which may relay blocks between ranks, every rank raises, blocking
    # and async, also where the MPI never completes the data on some rank (Open MPI ends
    # a schedule whose receive was cut short), and the calls that follow are right
    res = run(2, ["-c", _RELAYED], timeout=60, MPICOLL_DIRECT="0")
    assert res.returncode == 0, res.stdout + res.stderr
    for r in range(2):
        assert (f"rank {r}: all_gather: the ranks disagree on sizes: the size of "
                "tensor_list[1] (rank 1's tensor) is from 4 to 6 elements across the ranks "
                f"({4 if r == 0 else 6} on rank {r})") in res.stdout, res.stdout
        assert (f"rank {r}: reduce_scatter: the ranks disagree on sizes: the size of "
                "input_list[0] (the chunk for rank 0) is from 3 to 4 elements across the "
                f"ranks ({3 if r == 1 else 4} on rank {r})") in res.stdout, res.stdout
        n = 3 if r == 1 else 2
        for op, what in (("all_gather_into_tensor", "input_tensor"),
                         ("reduce_scatter_tensor", "output (each rank's chunk)")):
            said = (f"rank {r}: {op}: the ranks disagree on sizes: the size of {what} is "
                    f"from 2 to 3 elements across the ranks ({n} on rank {r})")
            assert res.stdout.count(said) == 3, res.stdout
        assert f"rank {r}: after: [0.0, 0.0, 1.0, 1.0]" in res.stdout, res.stdout


@MULTI
def test_gather_a_rank_sends_fewer(rank, size, group):
    for _ in range(2):
        mine = np.full(2 if rank == 1 else 3, rank, np.float64)
        slots = [np.full(3, SENTINEL, np.float64) for _ in range(size)] if rank == 0 else None
        _raises_on({0}, rank, lambda: dist.gather(mine, slots, group_dst=0, group=group),
                   "gather", "rank 1 sends 2 elements, and gather_list[1] on the root "
                   "(rank 0) holds 3")


@MULTI
def test_scatter_the_root_sends_fewer(rank, size, group):
    for _ in range(2):
        parts = [np.full(1 if j == 1 else 2, j, np.int64) for j in range(size)] \
            if rank == 0 else None
        mine = np.full(2, SENTINEL, np.int64)
        _raises_on({1}, rank, lambda: dist.scatter(mine, parts, group_src=0, group=group),
                   "scatter", "the root (rank 0) sends 1 element in scatter_list[1], and "
                   "tensor on rank 1 holds 2")
        if rank != 1:
            np.testing.assert_array_equal(mine, [rank, rank])


@MULTI
def test_reduce_scatter_a_chunk_is_shorter(rank, size, group):
    # direct messages: rank 0, for which rank 1's chunk is short, raises; the others'
    # outputs are right
    _direct_only(group)
    for sep in (True, False):  # separate tensors, then adjacent views of one buffer
        for _ in range(2):
            sizes = [3 if (rank == 1 and j == 0) else 4 for j in range(size)]
            flat = np.ones(sum(sizes), np.float32)
            chunks = [np.ones(c, np.float32) for c in sizes] if sep else \
                np.split(flat, np.cumsum(sizes)[:-1])
            out = np.full(4, SENTINEL, np.float32)
            _raises_on({0}, rank, lambda: dist.reduce_scatter(out, chunks, group=group),
                       "reduce_scatter", "rank 1's chunk for rank 0 (its input_list[0]) has "
                       "3 elements, and output on rank 0 holds 4")
            if rank != 0:
                np.testing.assert_array_equal(out, np.full(4, size))


@MULTI
@pytest.mark.parametrize("async_op", [False, True])
def test_reduce_scatter_tensor_sizes_that_differ_across_ranks(async_op, rank, size, group):
    # rank 1 scatters chunks of 3 where the others scatter 2: every rank receives a chunk
    # of a size it did not expect from some peer (direct messages), or every rank
    # compares the sizes (MPI's collective, on larger groups), so every rank raises
    for _ in range(2):
        n = 3 if rank == 1 else 2
        out = np.full(n, SENTINEL, np.float64)

        def call():
            _waited(dist.reduce_scatter_tensor(out, np.ones(n * size), group=group,
                                               async_op=async_op))
        peer, sent = (0, 2) if rank == 1 else (1, 3)
        said = (f"rank {peer}'s chunk for rank {rank} has {sent} elements, and output on rank "
                f"{rank} holds {n}") if _direct.chosen(group) else (
            f"the size of output (each rank's chunk) is from 2 to 3 elements across the "
            f"ranks ({n} on rank {rank})")
        _raises_on(range(size), rank, call, "reduce_scatter_tensor", said)


@MULTI
def test_through_the_paddle_face(rank, size):
    pytest.importorskip("paddle")
    import _frameworks as frameworks

    import mpicoll.paddle as pdist

    P = frameworks.get("paddle")
    splits = [2] * size
    if rank == 1:
        splits[0] = 1
    inp = P.tensor(np.arange(sum(splits), dtype=np.float32), "float32")
    out = P.tensor(np.zeros(2 * size, np.float32), "float32")
    _raises_on({0}, rank, lambda: pdist.alltoall_single(out, inp, splits, [2] * size),
               "all_to_all_single", "rank 1 sends 1 element to rank 0")
    chunks = [P.tensor(np.ones(3 if rank == 1 and j == 0 else 4, np.float32), "float32")
              for j in range(size)]
    got = P.tensor(np.zeros(4, np.float32), "float32")
    # (as messages, rank 0 sees what rank 1 sent it; on MPI's Reduce_scatter, whose
    # chunks MPI may relay, every rank compares every size)
    if size <= _direct.MAX_RANKS:
        _raises_on({0}, rank, lambda: pdist.reduce_scatter(got, chunks), "reduce_scatter",
                   "rank 1's chunk for rank 0 (its input_list[0]) has 3 elements")
    else:
        _raises_on(set(range(size)), rank, lambda: pdist.reduce_scatter(got, chunks),
                   "reduce_scatter",
                   "the size of input_list[0] (the chunk for rank 0) is from 3 to 4 elements")


_UNCHECKED = """
import numpy as np, mpicoll as dist
rank, size = dist.get_rank(), dist.get_world_size()
splits = [2] * size
if rank == 1:
    splits[0] = 1
out = np.zeros(2 * size, np.float32)
dist.all_to_all_single(out, np.arange(sum(splits), dtype=np.float32), [2] * size, splits)
print(f"rank {rank} returned", flush=True)
"""


@pytest.mark.spawn
def test_check_0_turns_it_off():
    # what MPICOLL_CHECK=0 gives up: a message shorter than its receiver expects passes
    # unreported on every MPI, the tail of rank 0's block left as it was
    res = run(2, ["-c", _UNCHECKED], timeout=60, MPICOLL_CHECK="0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rank 0 returned" in res.stdout and "SizeMismatch" not in res.stderr
    res = run(2, ["-c", _UNCHECKED], timeout=60)  # the default: rank 0 raises, and the job ends
    assert res.returncode != 0
    assert "SizeMismatch" in res.stderr and "rank 1 sends 1 element to rank 0" in res.stderr
