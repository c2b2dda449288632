"""The flight recorder: every call is recorded with its group, sequence number, dtype,
counts, root or peer, the caller's file and line, timestamps and state (issue 35).

Each rank dumps its own ring (``mpicoll.dump_trace``) into its own folder and reads it
back; the expected values come from the calls the test makes. Launched jobs (planted
hangs, stragglers, torch's analyzer) are in tests/test_trace_jobs.py.
"""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest

import mpicoll as dist
from mpicoll import _record_dump, _recorder
from mpicoll._collectives import _direct


def _here() -> int:
    """The line of the caller's previous statement (the call just made)."""
    return sys._getframe(1).f_lineno - 1


def _last_id() -> int:
    records = _record_dump.snapshot("test")["records"]
    return records[-1]["id"] if records else -1


def _dumped_since(first: int, tmp_path) -> tuple[dict, list[dict]]:
    path = dist.dump_trace(str(tmp_path))
    assert path == str(tmp_path / f"mpicoll_trace_rank_{dist.get_rank()}")
    with open(path, "rb") as f:
        data = pickle.load(f)
    m = data["mpicoll"]
    return m, [r for r in m["records"] if r["id"] > first]


def test_collectives_recorded_with_site_counts_root_and_state(rank, size, tmp_path):
    first = _last_id()
    seq0 = dist.group.WORLD.seq
    x = np.arange(4, dtype=np.float32)
    lines = {}
    dist.all_reduce(x)
    lines["all_reduce"] = _here()
    dist.all_reduce(x)  # the quick path this time
    lines["all_reduce 2"] = _here()
    send = [j + 1 for j in range(size)]  # uneven: j + 1 rows of 2 to rank j
    recv = [rank + 1] * size
    inp = np.zeros((sum(send), 2), np.int64)
    out = np.empty((sum(recv), 2), np.int64)
    dist.all_to_all_single(out, inp, recv, send)
    lines["all_to_all_single"] = _here()
    dist.all_to_all_single(out, inp, recv, send)  # the quick path this time
    lines["all_to_all_single 2"] = _here()
    root = size - 1
    dist.broadcast(x, src=root)
    lines["broadcast"] = _here()
    dist.gather(np.ones(3, np.float64), [np.empty(3) for _ in range(size)] if rank == root
                else None, dst=root)
    lines["gather"] = _here() - 1
    dist.barrier()
    lines["barrier"] = _here()
    got: list = [None] * size
    dist.all_gather_object(got, {"rank": rank})
    lines["all_gather_object"] = _here()
    m, recs = _dumped_since(first, tmp_path)
    assert m["rank"] == rank and m["world_size"] == size and m["reason"] == "request"
    assert [r["op"] for r in recs] == ["all_reduce", "all_reduce", "all_to_all_single",
                                       "all_to_all_single", "broadcast", "gather", "barrier",
                                       "all_gather_object"]
    assert [r["seq"] for r in recs] == list(range(seq0 + 1, seq0 + 9))
    # the default group's name: "0", or "0~k" once the default group was made k times
    world = _record_dump._group_name(dist.group.WORLD)
    assert world.split("~")[0] == "0"
    assert all(r["group"] == world and r["state"] == "completed" and not r["p2p"]
               for r in recs)
    assert m["groups"][world] == list(range(size))
    assert [r["line"] for r in recs] == [lines[k] for k in (
        "all_reduce", "all_reduce 2", "all_to_all_single", "all_to_all_single 2", "broadcast",
        "gather", "barrier", "all_gather_object")]
    assert all(r["file"] == __file__ for r in recs)
    ar, bc, ga = recs[1], recs[4], recs[5]
    assert (ar["dtype"], ar["itemsize"], ar["recv"], ar["root"]) == ("float32", 4, 4, None)
    for a2a in recs[2:4]:
        assert a2a["dtype"] == "int64"
        assert a2a["send"] == [2 * c for c in send] and a2a["recv"] == [2 * c for c in recv]
    assert bc["root"] == root and bc["send"] == 4
    assert ga["root"] == root and ga["dtype"] == "float64" and ga["send"] == 3
    for r in recs:
        assert r["issued_ns"] <= r["done_ns"]
        assert r["wait_ns"] is None or r["issued_ns"] <= r["wait_ns"] <= r["done_ns"]


@pytest.mark.mpi(min_size=2)
def test_direct_all_gathers_and_reduce_scatters_recorded_at_the_callers_line(rank, size,
                                                                            tmp_path):
    if size > _direct.MAX_RANKS:
        pytest.skip("direct messages: groups of 2 to MPICOLL_DIRECT ranks")
    # each call twice: the general path, then the quick path's kept messages
    first = _last_id()
    x = np.full(3, rank, np.float32)
    flat = np.empty(3 * size, np.float32)
    chunks = list(flat.reshape(size, 3))
    sep = [np.empty(j + 1, np.int64) for j in range(size)]
    mine = np.full(rank + 1, rank, np.int64)
    out = np.empty(3, np.float32)
    lines = []
    for _ in range(2):
        dist.all_gather(chunks, x)
        lines.append(_here())
        dist.all_gather(sep, mine)
        lines.append(_here())
        dist.all_gather_into_tensor(flat, x)
        lines.append(_here())
        dist.reduce_scatter(out, chunks)
        lines.append(_here())
        dist.reduce_scatter_tensor(out, flat)
        lines.append(_here())
    _, recs = _dumped_since(first, tmp_path)
    ops = ["all_gather", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor"] * 2
    assert [r["op"] for r in recs] == ops
    assert [r["line"] for r in recs] == lines
    assert all(r["file"] == __file__ and r["state"] == "completed" for r in recs)
    for k in (0, 5):
        assert (recs[k]["send"], recs[k]["recv"]) == ([3] * size, [3] * size)
        assert (recs[k + 1]["send"], recs[k + 1]["recv"]) == (
            [rank + 1] * size, [j + 1 for j in range(size)])
    np.testing.assert_array_equal(flat, np.repeat(np.arange(size), 3))
    np.testing.assert_array_equal(out, np.full(3, size * rank))


@pytest.mark.mpi(min_size=2)
def test_kept_messages_record_each_calls_own_counts(rank, size, tmp_path):
    if size > _direct.MAX_RANKS:
        pytest.skip("direct messages: groups of 2 to MPICOLL_DIRECT ranks")
    # a repeated call's record keeps what it worked out of the first one's arguments (per
    # kept messages, reduce_scatter_tensor's with their scratch array); other sizes, and
    # memory freed and taken again with another size, must never show an earlier call's.
    # A group of its own: whether a group keeps messages depends on its history of calls
    # that found theirs (_direct.keeps), here only this test's
    g = dist.new_group(list(range(size)))
    first = _last_id()
    want = []
    for n in (2, 2, 5, 5, 2, 3, 3):
        inp = np.arange(n * size, dtype=np.float64) + 100 * rank
        out, red, mine = np.empty(n * size), np.ones(n), np.empty(n)
        for _ in range(2):
            dist.all_to_all_single(out, inp, group=g)
            dist.reduce_scatter_tensor(mine, inp, group=g)
            dist.all_reduce(red, group=g)
            want.append(n)
        np.testing.assert_array_equal(out, np.concatenate(
            [np.arange(rank * n, (rank + 1) * n) + 100 * j for j in range(size)]))
        np.testing.assert_array_equal(mine, size * np.arange(rank * n, (rank + 1) * n)
                                      + 100 * sum(range(size)))
        np.testing.assert_array_equal(red, np.full(n, size ** 2))
        del inp, out, red, mine  # (the next sizes' arrays may take this memory)
    if g.direct is not None and g.kept:  # (the kept messages' path: the record reused;
        # the Python path keeps none where messages are posted afresh, MPICOLL_FRESH)
        last = [r for r in _recorder.records() if r[_recorder.OP] == "all_to_all_single"][-1]
        assert any(m is last[_recorder.META] for _, m in _recorder._kept.values())
    _, recs = _dumped_since(first, tmp_path)
    assert [r["op"] for r in recs] == ["all_to_all_single", "reduce_scatter_tensor",
                                       "all_reduce"] * len(want)
    assert [(r["send"], r["recv"]) for r in recs[::3]] == [([n] * size, [n] * size)
                                                          for n in want]
    assert [r["recv"] for r in recs[1::3]] == [[n] * size for n in want]
    assert [(r["send"], r["recv"]) for r in recs[2::3]] == [(None, n) for n in want]


@pytest.mark.mpi(min_size=2)
def test_point_to_point_and_async_states(rank, size, tmp_path):
    first = _last_id()
    right, left = (rank + 1) % size, (rank - 1) % size
    buf = np.empty(5, np.int32)
    rw = dist.irecv(buf, src=left)
    line_irecv = _here()
    _, before = _dumped_since(first, tmp_path)
    assert [(r["op"], r["state"], r["peer"], r["p2p"], r["seq"]) for r in before] == [
        ("irecv", "issued", left, True, 0)]  # not completed until waited for
    dist.send(np.full(5, rank, np.int32), dst=right)
    rw.wait()
    assert (buf == left).all()
    _, recs = _dumped_since(first, tmp_path)
    assert [(r["op"], r["state"], r["peer"]) for r in recs] == [
        ("irecv", "completed", left), ("send", "completed", right)]
    assert recs[0]["line"] == line_irecv and recs[0]["recv"] == 5
    assert recs[1]["send"] == 5 and recs[1]["dtype"] == "int32"
    w = dist.all_reduce(np.ones(3), async_op=True)
    w.wait()
    _, recs = _dumped_since(first, tmp_path)
    assert (recs[-1]["op"], recs[-1]["state"]) == ("all_reduce", "completed")


def test_subgroup_and_persistent_start(rank, size, tmp_path):
    first = _last_id()
    sub = dist.new_group(list(range(size)))
    x = np.ones(2, np.float32)
    coll = dist.all_reduce_init(x, group=sub)
    coll.start()
    line = _here()
    coll.free()
    _, recs = _dumped_since(first, tmp_path)
    mine = [r for r in recs if r["line"] == line]
    assert len(mine) == 1 and mine[0]["group"].split("~")[0] != "0"
    assert mine[0]["state"] == "completed"
    assert mine[0]["file"] == __file__


def test_torch_tensors_record_the_user_line(rank, tmp_path):
    torch = pytest.importorskip("torch")
    first = _last_id()
    t = torch.ones(6, dtype=torch.bfloat16)
    dist.all_reduce(t)
    line = _here()
    _, recs = _dumped_since(first, tmp_path)
    assert [(r["op"], r["line"], r["file"]) for r in recs] == [("all_reduce", line, __file__)]


def test_no_folder_means_no_dump(monkeypatch):
    monkeypatch.delenv("MPICOLL_TRACE_DIR", raising=False)
    assert dist.dump_trace() is None


@pytest.mark.mpi(min_size=2)
def test_group_names_agree_within_a_group_and_differ_across(rank, size):
    """Records are lined up across ranks by group name: every member of a group names it
    alike, and two groups never share a name (split parts; wrapped communicators, whose
    own names hold a per-process handle)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD.Split(rank % 2)  # wrapped by mpicoll on first use
    parts = [[r for r in range(size) if r % 2 == k] for k in (0, 1) if k < size]
    sub = dist.split_group(split_ranks=parts)
    names = []
    for g in (comm, sub):
        dist.all_reduce(np.ones(2), group=g)
        names.append(_record_dump.snapshot("test")["records"][-1]["group"])
    every = MPI.COMM_WORLD.allgather(names)
    for r in range(size):
        same_part = [q for q in range(size) if q % 2 == r % 2]
        assert all(every[q] == every[r] for q in same_part), every
        if r % 2 != rank % 2:
            assert not set(every[r]) & set(names), every
    assert names[0].startswith("comm") and names[0].endswith("]")
    comm.Free()
