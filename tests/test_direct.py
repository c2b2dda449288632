"""all_to_all on a few ranks as point-to-point messages with the counts in their tags
(_collectives/_direct): on the group's own communicator for them, many calls in flight at
once (blocking ones among them, waited in any order, lists and single tensors mixed), a
mismatch among them reported by the call that made it with both counts, a destroyed
group's communicator freed. Each output is checked against a numpy reference; every rank
makes the same calls in the same order.
"""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import mpicoll as dist
from mpicoll import _env
from mpicoll import _core_loader
from mpicoll._collectives import _direct, _messages, _rooted_direct, _sizes
from mpicoll.errors import SizeMismatch

MULTI = pytest.mark.mpi(min_size=2)
CALLS = 40


@pytest.fixture(autouse=True)
def direct(size):
    if not 1 < size <= _direct.MAX_RANKS:
        pytest.skip(f"{size} ranks exchange through Alltoallv (MPICOLL_DIRECT="
                    f"{_direct.MAX_RANKS})")


def _rows(src, dst, k):
    """Rows rank ``src`` sends rank ``dst`` in call ``k`` (0 included: empty messages)."""
    return (src + 2 * dst + k) % 4


def _values(src, dst, k, rows):
    return np.arange(rows, dtype=np.float64) + 1000 * src + 100 * dst + 10000 * k


def _call(rank, size, group, k, async_op, wrong=False):
    """Call ``k``: all_to_all_single with split sizes, or all_to_all of separate
    tensors (every third); (Work or None, output, what it must hold)."""
    send = [_rows(rank, j, k) for j in range(size)]
    recv = [_rows(j, rank, k) for j in range(size)]
    if wrong:  # rank 1 sends rank 0 one row more than rank 0 expects
        send[0] += 1
    want = [_values(j, rank, k, recv[j]) for j in range(size)]
    if k % 3 == 2:
        ins = [_values(rank, j, k, send[j]) for j in range(size)]
        outs = [np.full(recv[j], -1.0) for j in range(size)]
        return dist.all_to_all(outs, ins, group=group, async_op=async_op), outs, want
    x = np.concatenate([_values(rank, j, k, send[j]) for j in range(size)])
    y = np.full(sum(recv), -1.0)
    w = dist.all_to_all_single(y, x, recv, send, group=group, async_op=async_op)
    return w, [y], [np.concatenate(want)]


def _same(got, want):
    for g, x in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, x)


@MULTI
@pytest.mark.parametrize("order", ["issued", "reversed"])
def test_many_calls_in_flight(rank, size, order):
    g = dist.new_group(list(range(size)))
    calls = [_call(rank, size, g, k, async_op=k % 4 != 3) for k in range(CALLS)]
    assert g.direct is not None and g.direct != g.comm  # (the messages' own communicator)
    assert not g.counts  # (no counts collective beside them)
    for w, got, want in (calls if order == "issued" else calls[::-1]):
        if w is not None:
            w.wait()
        _same(got, want)
    direct = g.direct
    dist.destroy_process_group(g)
    assert g.direct is None and direct == MPI.COMM_NULL


@MULTI
@pytest.mark.parametrize("async_op", [False, True])
def test_a_mismatch_among_calls_in_flight_is_reported_by_its_own_call(rank, size, group,
                                                                      async_op):
    bad = 7  # a single-tensor call, issued blocking or async among async ones
    calls = []
    for k in range(12):
        try:
            calls.append(_call(rank, size, group, k, async_op=async_op or k != bad,
                               wrong=(k == bad and rank == 1)))
        except SizeMismatch as e:  # (the blocking call raises at once)
            assert rank == 0 and k == bad
            calls.append((e, None, None))
    for k, (w, got, want) in enumerate(calls):
        if k == bad and rank == 0:
            if isinstance(w, SizeMismatch):
                e = w
            else:
                with pytest.raises(SizeMismatch) as caught:
                    w.wait()
                e = caught.value
            sent = _rows(1, 0, k) + 1
            assert (f"all_to_all_single: the ranks disagree on sizes: rank 1 sends {sent} "
                    f"element{'s' * (sent != 1)} to rank 0, whose output holds "
                    f"{sent - 1} for it") in str(e), str(e)
            continue
        if w is not None:
            w.wait()
        if k != bad:
            _same(got, want)


@MULTI
def test_the_check_off_exchanges_directly_too(rank, size, group, monkeypatch):
    monkeypatch.setattr(_sizes, "_KEPT", {})
    monkeypatch.setattr(_env.settings(), "sizes", False)
    for k in range(3):
        w, got, want = _call(rank, size, group, k, async_op=k == 1)
        if w is not None:
            w.wait()
        _same(got, want)
    plans = [p for p in _sizes._KEPT.values() if isinstance(p, _direct.Direct)]
    assert plans and all(p.sizes is None for p in plans)


def _rooted_calls(rank, size, group, k):
    """Call ``k``'s gather, scatter (roots in turn) and all_gather of separate tensors
    (sizes per rank, empty ones among them): (Work, outputs, what they must hold)."""
    root, rows = k % size, [(j + k) % 3 for j in range(size)]
    mine = np.full(rows[rank], 100.0 * rank + k)
    slots = [np.full(rows[j], -1.0) for j in range(size)] if rank == root else None
    yield (dist.gather(mine, slots, group_dst=root, group=group, async_op=True), slots,
           None if slots is None else [np.full(rows[j], 100.0 * j + k) for j in range(size)])
    parts = [np.full(rows[j], 10.0 * j + k) for j in range(size)] if rank == root else None
    got = np.full(rows[rank], -1.0)
    yield (dist.scatter(got, parts, group_src=root, group=group, async_op=k % 2 == 0), [got],
           [np.full(rows[rank], 10.0 * rank + k)])
    outs = [np.full(rows[j], -1.0) for j in range(size)]
    yield (dist.all_gather(outs, np.full(rows[rank], 1000.0 * rank + k), group=group,
                           async_op=True), outs,
           [np.full(rows[j], 1000.0 * j + k) for j in range(size)])


@MULTI
def test_gathers_scatters_and_all_gathers_in_flight(rank, size, group):
    calls = [c for k in range(CALLS) for c in _rooted_calls(rank, size, group, k)]
    for w, got, want in calls[::-1]:
        if w is not None:
            w.wait()
        if got is not None:
            _same(got, want)


@MULTI
@pytest.mark.parametrize("async_op", [False, True])
def test_a_gather_that_sends_more_than_the_slot(rank, size, group, async_op):
    # a longer message: MPI cuts it short on the root, whose status still has its tag
    mine = np.full(5 if rank == 1 else 3, float(rank))
    slots = [np.full(3, -1.0) for _ in range(size)] if rank == 0 else None

    def call():
        w = dist.gather(mine, slots, group_dst=0, group=group, async_op=async_op)
        if w is not None:
            w.wait()
    if rank == 0:
        with pytest.raises(SizeMismatch, match=r"gather: the ranks disagree on sizes: rank 1 "
                           r"sends 5 elements, and gather_list\[1\] on the root \(rank 0\) "
                           "holds 3"):
            call()
    else:  # (a sender's output is right: it returns)
        call()
    dist.barrier(group=group)  # (every rank went on)


@MULTI
def test_a_first_async_call_does_not_wait_for_its_peers(rank, size):
    # the group's communicator for direct calls is made with the group: rank 0's first
    # all_to_all may return at once, before rank 1 (in a receive from rank 0) has made it
    g = dist.new_group(list(range(size)))
    x = np.arange(size, dtype=np.float64) + 10 * rank
    y = np.full(size, -1.0)
    if rank == 0:
        w = dist.all_to_all_single(y, x, group=g, async_op=True)
        dist.send(np.ones(1), dst=1)
        w.wait()
    else:
        if rank == 1:
            dist.recv(np.zeros(1), src=0)
        dist.all_to_all_single(y, x, group=g)
    np.testing.assert_array_equal(y, [rank + 10.0 * j for j in range(size)])
    dist.destroy_process_group(g)


def _usable(kept):
    """Whether every entry a group keeps can run again: its persistent requests alive
    (none freed while kept), or, where the messages are posted afresh at each call
    (``MPICOLL_FRESH``, the default), none left running."""
    return all(not r if _messages.FRESH else r for entry in kept.values() for r in entry.reqs)


def _keeps():
    """Whether a group keeps a repeated call's messages: the compiled core's Plans, or
    the Python path's persistent requests (``MPICOLL_FRESH=0``)."""
    return _core_loader.load() is not None or not _messages.FRESH


def _even(rank, size, rows, k):
    """What rank ``rank`` receives in an even exchange of ``rows`` rows per peer whose
    input on rank j is ``arange(rows * size) + 100 * j + 1000 * k``."""
    return np.concatenate([np.arange(rows * rank, rows * (rank + 1)) + 100.0 * j + 1000 * k
                           for j in range(size)])


@MULTI
def test_kept_messages_follow_the_memory(rank, size):
    # a repeated blocking exchange starts persistent messages kept for its two arrays'
    # addresses: each pair of arrays has its own, arrays made anew (where freed memory
    # comes back) use what was made for their addresses, roles swapped are apart, and
    # the group keeps at most KEPT, freed with it
    g = dist.new_group(list(range(size)))
    rows, n = 3, 3 * size

    def exchange(x, y, k):
        x[:] = np.arange(n) + 100 * rank + 1000 * k
        y[:] = -1.0
        dist.all_to_all_single(y, x, group=g)
        np.testing.assert_array_equal(y, _even(rank, size, rows, k))
    pairs = [(np.empty(n), np.empty(n)) for _ in range(_direct.KEPT + 4)]
    buf = np.empty(2 * n)
    pairs += [(buf[:n], buf[n:]), (buf[n:], buf[:n])]
    for k in range(3):
        for x, y in pairs:
            exchange(x, y, k)
    if not _keeps():  # (the Python path posting afresh: nothing kept)
        assert not g.kept
        return
    assert 0 < len(g.kept) <= _direct.KEPT
    for k in range(40):
        exchange(np.empty(n), np.empty(n), k)
    kept = [r for entry in g.kept.values() for r in entry.reqs]
    assert kept and _usable(g.kept)
    dist.destroy_process_group(g)
    assert not g.kept and not any(kept)


@MULTI
@pytest.mark.parametrize("more", [True, False])
def test_a_mismatch_on_kept_messages_is_reported(rank, size, group, more):
    # rank 0 repeats an exchange (its messages kept and restarted); then rank 1 sends it
    # one row more (MPI cuts the message short) or one fewer: rank 0 raises, naming both
    # counts, and the calls after it are right
    rows, split = 2, [2] * size
    x = np.arange(rows * size, dtype=np.float64) + 100 * rank
    y = np.full(rows * size, -1.0)
    for _ in range(3):
        dist.all_to_all_single(y, x, split, split, group=group)
    if rank == 1:
        send = [rows + (1 if more else -1)] + split[1:]
        z = np.full(rows * size, -1.0)
        dist.all_to_all_single(z, np.arange(sum(send), dtype=np.float64), split, send,
                               group=group)
    elif rank == 0:
        sent = rows + (1 if more else -1)
        with pytest.raises(SizeMismatch, match=r"all_to_all_single: the ranks disagree on "
                           f"sizes: rank 1 sends {sent} element{'s' * (sent != 1)} to rank 0, whose "
                           f"output holds {rows} for it"):
            dist.all_to_all_single(y, x, split, split, group=group)
    else:
        dist.all_to_all_single(y, x, split, split, group=group)
    assert _usable(group.kept)
    for k in range(3):
        x[:] = np.arange(rows * size) + 100 * rank + 1000 * k
        y[:] = -1.0
        dist.all_to_all_single(y, x, split, split, group=group)
        np.testing.assert_array_equal(y, _even(rank, size, rows, k))


@MULTI
def test_kept_messages_of_lists_follow_their_tensors(rank, size, group):
    # all_to_all of separate tensors, repeated: the same lists, their tensors in another
    # order (the same memory, other displacements), and lists made anew
    rows = 2

    def exchange(outs, ins, k):
        for j, t in enumerate(ins):
            t[:] = np.arange(rows) + 100 * rank + 10 * j + 1000 * k
        for t in outs:
            t[:] = -1.0
        dist.all_to_all(outs, ins, group=group)
        _same(outs, [np.arange(rows) + 100.0 * j + 10 * rank + 1000 * k for j in range(size)])
    def gather_and_reduce(outs, ins, k):
        # all_gather into the list, and reduce_scatter from it, of the same memory
        x = np.arange(rows) + 100.0 * rank + 1000 * k
        dist.all_gather(outs, x, group=group)
        _same(outs, [np.arange(rows) + 100.0 * j + 1000 * k for j in range(size)])
        for j, t in enumerate(ins):
            t[:] = np.arange(rows) + 100 * rank + 10 * j + 1000 * k
        y[:] = -1.0  # (one output throughout: where the list lies decides alone)
        dist.reduce_scatter(y, ins, group=group)
        _same([y], [sum(np.arange(rows) + 100.0 * r + 10 * rank + 1000 * k
                        for r in range(size))])
    group.missed = 0  # (kept from the first call: no earlier test's misses count here)
    ins = [np.empty(rows) for _ in range(size)]
    outs = [np.empty(rows) for _ in range(size)]
    y = np.empty(rows)
    for k in range(3):
        exchange(outs, ins, k)
        exchange(outs[::-1], ins[::-1], k)
        exchange(outs[1:] + outs[:1], ins, k)
        exchange([np.empty(rows) for _ in range(size)], [np.empty(rows) for _ in range(size)], k)
        gather_and_reduce(outs, ins, k)
        gather_and_reduce(outs[::-1], ins[::-1], k)
    assert (bool(group.kept) == _keeps()) and _usable(group.kept)


def _prepared(monkeypatch):
    """A list that grows by one entry for each set of kept messages made from now on."""
    made = []
    prepare = _direct.Direct.prepare
    monkeypatch.setattr(_direct.Direct, "prepare",
                        lambda d, comm, bufs: made.append(1) or prepare(d, comm, bufs))
    return made


@MULTI
def test_memory_that_moves_posts_its_messages(rank, size, group, monkeypatch):
    # all_to_all_single over more pairs of arrays than a group keeps messages for, in turn,
    # so that a call that keeps its messages every time never finds them again: past
    # _direct.MISSES such calls post their messages instead of making kept ones (but for
    # one call in _direct.PROBE); then a loop over one pair keeps its messages again.
    # Every result against numpy throughout
    made = _prepared(monkeypatch)
    pairs = _direct.KEPT + 8
    xs = [np.arange(2.0 * size) + 100 * rank + k for k in range(pairs)]
    ys = [np.empty(2 * size) for _ in range(pairs)]

    def call(k):
        ys[k][:] = -1.0
        dist.all_to_all_single(ys[k], xs[k], group=group)
        _same([ys[k]], [np.concatenate([np.arange(2.0 * rank, 2.0 * rank + 2) + 100 * j + k
                                        for j in range(size)])])
    for k in range(2 * pairs):
        call(k % pairs)
    del made[:]
    for k in range(2 * pairs):
        call(k % pairs)
    # (kept every time, each evicted before its next call: 2 * pairs; the probes' messages
    # that are found again stay kept, so some calls find theirs and some make them anew)
    assert len(made) <= pairs, len(made)
    for _ in range(_direct.PROBE + 2 * _direct.MISSES):
        call(0)
    del made[:]
    for _ in range(10):
        call(0)
    assert not made and group.missed <= _direct.MISSES


@MULTI
def test_posted_where_the_group_mostly_misses(rank, size, group, monkeypatch):
    # every form's quick path, where its group's calls mostly missed their kept messages
    # (set here): new memory posts its messages, none made, each result against numpy
    made = _prepared(monkeypatch)
    posted, keeps = [], _direct.keeps
    for module in (_direct, _rooted_direct):  # (each decision, as it is made)
        monkeypatch.setattr(module, "keeps", lambda g: posted.append(not keeps(g)) or
                            not posted[-1])
    rows = 3
    for k in range(4):  # (the first calls of each form: the general path's)
        del posted[:]
        group.missed = _direct.MISSES + 1
        x = np.arange(rows * size, dtype=np.float64) + 100 * rank + k
        y = np.full(rows * size, -1.0)
        dist.all_to_all_single(y, x, group=group)
        _same([y], [np.concatenate([np.arange(rows * rank, rows * (rank + 1)) + 100.0 * j + k
                                    for j in range(size)])])
        group.missed = _direct.MISSES + 1
        ins = [np.full(rows, 10.0 * rank + j + k) for j in range(size)]
        outs = [np.full(rows, -1.0) for _ in range(size)]
        dist.all_to_all(outs, ins, group=group)
        _same(outs, [np.full(rows, 10.0 * j + rank + k) for j in range(size)])
        group.missed = _direct.MISSES + 1
        outs = [np.full(rows, -1.0) for _ in range(size)]
        dist.all_gather(outs, np.full(rows, rank + 10.0 * k), group=group)
        _same(outs, [np.full(rows, j + 10.0 * k) for j in range(size)])
        group.missed = _direct.MISSES + 1
        out = np.full(rows, -1.0)
        dist.reduce_scatter(out, ins, group=group)
        _same([out], [np.full(rows, sum(10.0 * j + rank + k for j in range(size)))])
        group.missed = _direct.MISSES + 1
        slots = [np.full(rows, -1.0) for _ in range(size)] if rank == 0 else None
        dist.gather(np.full(rows, rank + 10.0 * k), slots, dst=0, group=group)
        if rank == 0:
            _same(slots, [np.full(rows, j + 10.0 * k) for j in range(size)])
        group.missed = _direct.MISSES + 1
        got = np.full(rows, -1.0)
        dist.scatter(got, [np.full(rows, j + 10.0 * k) for j in range(size)]
                     if rank == 0 else None, src=0, group=group)
        _same([got], [np.full(rows, rank + 10.0 * k)])
        if k:  # (each form's quick path decided, and posted)
            assert not made and posted == [True] * 6, (len(made), posted)
    group.missed = 0  # (the module's next tests keep their messages from their first call)


@MULTI
def test_kept_messages_of_gathers_and_scatters(rank, size, group):
    # repeated gathers and scatters (roots in turn): on every rank the same tensors, ones
    # made anew, and on the root its list reordered; then a rank sends the root more than
    # its slot holds, on messages kept from the calls before: the root raises, and the
    # calls after it are right
    rows = 3
    group.missed = 0  # (kept from the first call: no earlier test's misses count here)
    mine, got = np.empty(rows), np.empty(rows)
    slots = [np.empty(rows) for _ in range(size)]
    for k in range(4 * size):
        root = k % size
        for remade in (False, True):
            if remade:
                mine, got = np.empty(rows), np.empty(rows)
                slots = [np.empty(rows) for _ in range(size)]
            order = slots if k % 3 else slots[::-1]
            mine[:] = 100 * rank + k
            for t in order:
                t[:] = -1.0
            dist.gather(mine, order if rank == root else None, group_dst=root, group=group)
            if rank == root:
                _same(order, [np.full(rows, 100.0 * j + k) for j in range(size)])
            for j, t in enumerate(order):
                t[:] = 10 * j + k
            got[:] = -1.0
            dist.scatter(got, order if rank == root else None, group_src=root, group=group)
            np.testing.assert_array_equal(got, np.full(rows, 10.0 * rank + k))
    # views of one buffer, of other sizes at the same address (each size's own messages)
    base = np.empty(rows + 1)
    for k in range(6):
        m = rows + k % 2
        part = base[:m]
        part[:] = 7 * rank + k
        parts = [np.full(m, -1.0) for _ in range(size)] if rank == 0 else None
        dist.gather(part, parts, group_dst=0, group=group)
        if rank == 0:
            _same(parts, [np.full(m, 7.0 * j + k) for j in range(size)])
    longer = np.ones(rows + 1)
    if rank == 0:
        with pytest.raises(SizeMismatch, match=r"gather: the ranks disagree on sizes: rank 1 "
                           rf"sends {rows + 1} elements, and gather_list\[1\] on the root "
                           rf"\(rank 0\) holds {rows}"):
            dist.gather(mine, slots, group_dst=0, group=group)
    else:
        dist.gather(longer if rank == 1 else mine, None, group_dst=0, group=group)
    assert _usable(group.kept)
    for k in range(2):
        mine[:] = rank + k
        dist.gather(mine, slots if rank == 0 else None, group_dst=0, group=group)
        if rank == 0:
            _same(slots, [np.full(rows, j + k, np.float64) for j in range(size)])


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("call", ["all_to_all_single", "all_gather_into_tensor",
                                  "reduce_scatter_tensor", "all_gather", "reduce_scatter"])
def test_equal_exchanges_on_groups_where_this_process_has_another_rank(call, rank, size):
    # process 1 is rank 1 of the first group and rank 0 of the second: each group's
    # repeated equal call sends to that group's peers (the quick entry of the first group
    # is not the second's: found for all_to_all_single, then reduce_scatter_tensor)
    first, second = dist.new_group([0, 1]), dist.new_group([1, 2])
    for k in range(4):
        for g, members in ((first, [0, 1]), (second, [1, 2])):
            if rank not in members:
                continue
            me = members.index(rank)
            x = np.arange(4, dtype=np.float64) + 100 * me + 1000 * k
            xs = [np.arange(4, dtype=np.float64) + 100 * j + 1000 * k for j in range(2)]
            if call == "all_to_all_single":
                y = np.full(4, -1.0)
                dist.all_to_all_single(y, x, group=g)
                want = np.concatenate([xs[j][2 * me:2 * me + 2] for j in range(2)])
            elif call == "all_gather_into_tensor":
                y = np.full(8, -1.0)
                dist.all_gather_into_tensor(y, x, group=g)
                want = np.concatenate(xs)
            elif call == "reduce_scatter_tensor":
                y = np.full(2, -1.0)
                dist.reduce_scatter_tensor(y, x, group=g)
                want = xs[0][2 * me:2 * me + 2] + xs[1][2 * me:2 * me + 2]
            elif call == "all_gather":
                y = np.full(8, -1.0)
                dist.all_gather(list(y.reshape(2, 4)), x, group=g)
                want = np.concatenate(xs)
            else:
                y = np.full(2, -1.0)
                dist.reduce_scatter(y, list(x.reshape(2, 2)), group=g)
                want = xs[0][2 * me:2 * me + 2] + xs[1][2 * me:2 * me + 2]
            np.testing.assert_array_equal(y, want)
    dist.destroy_process_group(first)
    dist.destroy_process_group(second)
