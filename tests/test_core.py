"""The compiled core (mpicoll/_core.c): built for the MPI family mpi4py loaded and in use
(every lane builds it: `make venv`), or off with MPICOLL_CORE=0 (the Python path's lane);
its all_reduce right against a numpy reference, its records in the flight recorder's one
order with the Python path's, naming the user's call site."""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import mpicoll as dist
from mpicoll import _core_loader, _recorder
from mpicoll.errors import SizeMismatch

OFF = os.environ.get("MPICOLL_CORE") == "0"
FAMILY = "openmpi" if MPI.Get_library_version().startswith("Open MPI") else "mpich"


def _loaded():
    dist.all_reduce(np.zeros(1))  # (the first call loads it)
    return _core_loader.load()


def test_the_core_of_this_family_is_in_use_or_off():
    core = _loaded()
    if OFF:
        assert core is None and _core_loader.why == "off (MPICOLL_CORE=0): the Python path"
        return
    assert core is not None, _core_loader.why
    assert core.FAMILY == FAMILY
    assert _core_loader.why.startswith(f"in use ({FAMILY} family, built against MPI ")
    other = "mpich" if FAMILY == "openmpi" else "openmpi"
    assert f"mpicoll._core_{other}" not in sys.modules  # never the other family's


_EXCHANGES_ONLY = """
import numpy as np
import mpicoll as dist
from mpicoll import _core_loader
n = dist.get_world_size()
for _ in range(3):
    out = np.zeros(4 * n)
    dist.all_to_all_single(out, np.arange(4.0 * n))
    assert (out == np.tile(np.arange(4.0) + 4 * dist.get_rank(), n)).all(), out
print("core", _core_loader.module is not None, _core_loader.why)
"""


@pytest.mark.spawn
def test_a_job_of_exchanges_only_on_mpi_s_collectives_loads_the_core():
    # no all_reduce, no broadcast, and no direct messages (MPICOLL_DIRECT=0: as on more
    # than 8 ranks): the exchanges' quick path loads the core itself, not only those
    from _launch import run_per_rank

    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(_EXCHANGES_ONLY)
        script.flush()
        p, out = run_per_rank(2, [script.name], timeout=60, MPICOLL_DIRECT="0")
    assert p.returncode == 0, p.stderr
    for r in (0, 1):  # (each rank's own output)
        assert out[r].startswith("core False off (MPICOLL_CORE=0)" if OFF else
                                 f"core True in use ({FAMILY} family"), out[r]


def test_the_jax_handler_is_built_with_the_core_or_off():
    """Every lane builds it (`make core`, where jax is installed); info says which."""
    handler, why = _core_loader.jax_handler()
    if OFF:
        assert handler is None and why == "off (MPICOLL_CORE=0): XLA's Python buffer callback"
        return
    assert handler is not None, why
    assert why.startswith(f"in use (XLA FFI API {handler.FFI_MAJOR}.{handler.FFI_MINOR})")
    with pytest.raises(TypeError, match="host must be callable"):
        handler.add_site(None, "float32", "float32", 4, 4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "complex128"])
@pytest.mark.parametrize("op", ["SUM", "MAX", "PRODUCT"])
def test_repeated_all_reduce_equals_numpy(xp, dtype, op, rank, size, group):
    if op == "MAX" and dtype == "complex128":
        pytest.skip("MAX is not defined on complex numbers (refused: test_bad_input)")
    rop = getattr(dist.ReduceOp, op)
    ref = {"SUM": np.sum, "MAX": np.max, "PRODUCT": np.prod}[op]
    for k in range(4):  # the first call validates; the others take the core's path
        vals = [np.arange(1, 6) + r + k for r in range(size)]
        t = xp.tensor(vals[rank], dtype)
        dist.all_reduce(t, op=rop, group=group)
        want = ref(np.stack([v.astype(dtype) for v in vals]), axis=0)
        np.testing.assert_array_equal(xp.to_numpy(t), want)


def _line() -> int:
    return sys._getframe(1).f_lineno


def test_records_share_one_order_and_name_the_call_site(rank, size):
    x = np.ones(3)
    dist.all_reduce(x)  # (validated: the next are quick)
    lines = []
    for _ in range(3):
        dist.all_reduce(x); lines.append(_line())  # noqa: E702  (the call's own line)
        dist.broadcast(x, src=0); lines.append(_line())  # noqa: E702
    got = _recorder.records()[-6:]
    assert [r[_recorder.OP] for r in got] == ["all_reduce", "broadcast"] * 3
    ids = [r[_recorder.ID] for r in got]
    assert ids == sorted(ids) and len(set(ids)) == 6
    seqs = [r[_recorder.SEQ] for r in got]
    assert seqs == list(range(seqs[0], seqs[0] + 6))
    for r, line in zip(got, lines, strict=True):
        code, lasti = r[_recorder.FILE], r[_recorder.LINE]
        assert code.co_filename == __file__
        # the instruction offset maps to the line the call was made on
        assert any(start <= lasti < end and ln == line for start, end, ln in code.co_lines())
        assert _recorder.state(r) == _recorder.COMPLETED
    assert all(r[_recorder.DONE] >= r[_recorder.ISSUED] for r in got)
    # the core's records carry the count and datatype, as the Python path's do
    meta = got[0][_recorder.META]
    assert meta[1][0] == 3 and meta[1][1] == MPI.DOUBLE


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64"])
def test_repeated_broadcast_from_each_root_equals_the_roots_tensor(xp, dtype, rank, size,
                                                                   group):
    n = group.size() if hasattr(group, "size") else size
    for k in range(3 * n):  # (each root's first call validates; its next take the core)
        root = k % n
        src = dist.get_global_rank(group, root) if group is not None else root
        t = xp.tensor(np.arange(7) * (rank + 1) + k, dtype)
        dist.broadcast(t, src=src, group=group)
        want = (np.arange(7) * (src + 1) + k).astype(dtype)
        np.testing.assert_array_equal(xp.to_numpy(t), want)


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64"])
@pytest.mark.parametrize("op", ["SUM", "MAX"])
def test_repeated_reduce_to_each_root_equals_numpy_and_leaves_the_others(xp, dtype, op, rank,
                                                                          size, group):
    if op == "MAX" and dtype == "complex64":
        pytest.skip("MAX is not defined on complex numbers (refused: test_bad_input)")
    n = group.size() if hasattr(group, "size") else size
    me = dist.get_group_rank(group, rank) if group is not None else rank
    ref = {"SUM": np.sum, "MAX": np.max}[op]
    for k in range(3 * n):  # (each root's first call validates; its next take the core)
        root = k % n
        dst = dist.get_global_rank(group, root) if group is not None else root
        vals = [(np.arange(5) * (r + 1) + k).astype(dtype) for r in range(n)]
        t = xp.tensor(vals[me], dtype)
        dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op), group=group)
        want = ref(np.stack(vals), axis=0) if me == root else vals[me]
        np.testing.assert_array_equal(xp.to_numpy(t), want)


def test_a_repeated_reduce_is_recorded_at_its_call_site_with_its_counts(rank, size):
    # (a group of its own: on 2 to 8 ranks its messages are kept, where a group's calls
    # mostly find theirs, and run by the core)
    g = dist.new_group(list(range(size)))
    x = np.ones(4)
    dist.reduce(x, dst=0, group=g)  # (validated: the next are quick)
    lines = []
    for _ in range(2):
        dist.reduce(x, dst=0, group=g); lines.append(_line())  # noqa: E702  (the call's line)
    got = _recorder.records()[-2:]
    assert [r[_recorder.OP] for r in got] == ["reduce"] * 2
    for r, line in zip(got, lines, strict=True):
        code, lasti = r[_recorder.FILE], r[_recorder.LINE]
        assert any(start <= lasti < end and ln == line for start, end, ln in code.co_lines())
        assert _recorder.state(r) == _recorder.COMPLETED
        # (what the Python path's record keeps of Ireduce's arguments: the root's in place)
        send, recv, rest = r[_recorder.META]
        assert (send, recv) == ((None, (4, MPI.DOUBLE)) if rank == 0 else
                                ((4, MPI.DOUBLE), None))
        assert rest == (MPI.SUM, 0)
    if not OFF:  # (recorded by the core: its ring holds them)
        assert {r[_recorder.ID] for r in got} <= {r[0] for r in _core_loader.load().records()}
    dist.destroy_process_group(g)


@pytest.mark.parametrize("lists", ["chunks", "separate"])
def test_repeated_gather_and_scatter_at_each_root_equal_numpy(xp, lists, rank, size, group):
    # on 2 to 8 ranks a repeated call's messages are kept: off the root by where the
    # tensor lies; on the root also by where its list starts (chunks of one tensor, run
    # in the core where it is in use) or where each tensor lies (separate ones)
    n = group.size() if hasattr(group, "size") else size
    me = dist.get_group_rank(group, rank) if group is not None else rank
    whole = xp.tensor(np.zeros(3 * n), "float32")
    outs = xp.pieces(whole, [3] * n) if lists == "chunks" else \
        [xp.tensor(np.zeros(3), "float32") for _ in range(n)]
    mine = xp.tensor(np.zeros(3), "float32")
    for k in range(3 * n):  # (each root's first call validates; its next are quick)
        root = k % n
        at = dist.get_global_rank(group, root) if group is not None else root
        xp.fill(mine, xp.tensor(np.arange(3) + 10 * me + 100 * k, "float32"))
        dist.gather(mine, outs if me == root else None, dst=at, group=group)
        if me == root:
            for j in range(n):
                np.testing.assert_array_equal(xp.to_numpy(outs[j]),
                                              np.arange(3) + 10 * j + 100 * k)
        for j, t in enumerate(outs):
            xp.fill(t, xp.tensor(np.arange(3) - 10 * j - 100 * k, "float32"))
        dist.scatter(mine, outs if me == root else None, src=at, group=group)
        np.testing.assert_array_equal(xp.to_numpy(mine), np.arange(3) - 10 * me - 100 * k)


def test_a_repeated_gather_and_scatter_are_recorded_at_their_call_sites(rank, size):
    g = dist.new_group(list(range(size)))
    x, out = np.ones(2), np.zeros(2 * size)
    chunks = np.split(out, size)
    dist.gather(x, chunks if rank == 0 else None, dst=0, group=g)  # (validated: the next
    dist.scatter(x, chunks if rank == 0 else None, src=0, group=g)  # are quick)
    lines = []
    for _ in range(2):
        dist.gather(x, chunks if rank == 0 else None, dst=0, group=g); lines.append(_line())  # noqa: E702
        dist.scatter(x, chunks if rank == 0 else None, src=0, group=g); lines.append(_line())  # noqa: E702
    got = _recorder.records()[-4:]
    assert [r[_recorder.OP] for r in got] == ["gather", "scatter"] * 2
    for r, line in zip(got, lines, strict=True):
        code, lasti = r[_recorder.FILE], r[_recorder.LINE]
        assert any(start <= lasti < end and ln == line for start, end, ln in code.co_lines())
        assert _recorder.state(r) == _recorder.COMPLETED
    if not OFF and 2 <= size <= _direct_ranks():
        # their messages kept by the group as the core's plans (one each), run from its
        # lookup: recorded there
        core = _core_loader.load()
        assert [type(e) for e in g.kept.values()] == [core.Plan, core.Plan]
        assert {r[_recorder.ID] for r in got} <= {r[0] for r in core.records()}
    dist.destroy_process_group(g)


@pytest.mark.mpi(min_size=2)
def test_repeated_lists_of_chunks_are_kept_as_the_core_s_plans_and_equal_numpy(xp, rank,
                                                                              size):
    # all_to_all, all_gather and reduce_scatter of lists of chunks (x.chunk(n)): where the
    # chunks lie end to end, where they start fixes all of their memory, so a repeated
    # call's messages are a Plan that the core runs from its lookup
    if OFF or size > _direct_ranks():
        pytest.skip("the compiled core's plans, on groups that send messages")
    g = dist.new_group(list(range(size)))
    n = 2
    inp, out = xp.tensor(np.zeros(n * size), "float64"), xp.tensor(np.zeros(n * size), "float64")
    mine = xp.tensor(np.zeros(n), "float64")
    ins, outs = xp.pieces(inp, [n] * size), xp.pieces(out, [n] * size)
    for k in range(4):
        xp.fill(inp, xp.tensor(np.arange(n * size) + 100 * rank + k, "float64"))
        dist.all_to_all(outs, ins, group=g)
        np.testing.assert_array_equal(xp.to_numpy(out), np.concatenate(
            [np.arange(rank * n, (rank + 1) * n) + 100 * j + k for j in range(size)]))
        red = size * (np.arange(n * size) + k) + 100 * sum(range(size))
        dist.reduce_scatter(mine, ins, group=g)
        np.testing.assert_array_equal(xp.to_numpy(mine), red[rank * n:(rank + 1) * n])
        dist.all_gather(outs, mine, group=g)
        np.testing.assert_array_equal(xp.to_numpy(out), red)
    if xp.name in ("numpy", "torch"):  # (the quick path's tensors; the others' go general)
        core = _core_loader.load()
        assert [type(e) for e in g.kept.values()] == [core.Plan] * 3
    dist.destroy_process_group(g)


def _direct_ranks() -> int:
    from mpicoll._collectives import _direct
    return _direct.MAX_RANKS


@pytest.mark.mpi(min_size=2)
def test_repeated_exchanges_equal_numpy_and_are_recorded_at_the_call_site(xp, rank, size):
    # on 2 to 8 ranks their messages are kept and restarted, in the core where it is in use
    n = 3
    inp = xp.tensor(np.arange(n * size) + 100 * rank, "float64")
    out, mine = xp.tensor(np.zeros(n * size), "float64"), xp.tensor(np.zeros(n), "float64")
    gathered = xp.tensor(np.zeros(n * size), "float64")
    lines = []
    for _ in range(4):
        dist.all_to_all_single(out, inp); lines.append(_line())  # noqa: E702
        dist.reduce_scatter_tensor(mine, inp); lines.append(_line())  # noqa: E702
        dist.all_gather_into_tensor(gathered, mine); lines.append(_line())  # noqa: E702
        np.testing.assert_array_equal(xp.to_numpy(out), np.concatenate(
            [np.arange(rank * n, (rank + 1) * n) + 100 * j for j in range(size)]))
        red = size * np.arange(n * size) + 100 * sum(range(size))
        np.testing.assert_array_equal(xp.to_numpy(mine), red[rank * n:(rank + 1) * n])
        np.testing.assert_array_equal(xp.to_numpy(gathered), red)
    got = _recorder.records()[-12:]
    assert [r[_recorder.OP] for r in got] == [
        "all_to_all_single", "reduce_scatter_tensor", "all_gather_into_tensor"] * 4
    for r, line in zip(got, lines, strict=True):
        code, lasti = r[_recorder.FILE], r[_recorder.LINE]
        assert code.co_filename == __file__
        assert any(start <= lasti < end and ln == line for start, end, ln in code.co_lines())
        assert _recorder.state(r) == _recorder.COMPLETED
    if size == 1:  # MPI's collectives (made in the core where in use): their counts,
        # datatype and op, as the recorder keeps an MPI call's arguments
        assert [r[_recorder.META] for r in got[-3:]] == [
            ((n, MPI.DOUBLE), (n, MPI.DOUBLE), ()),
            ((n, MPI.DOUBLE), (n, MPI.DOUBLE), (MPI.SUM,)),
            ((n, MPI.DOUBLE), (n, MPI.DOUBLE), ())]


@pytest.mark.mpi(min_size=2)
def test_kept_messages_whose_counts_then_differ_raise_and_are_recorded_failed(rank, size):
    # rank 0 repeats its call (its messages kept, restarted in the core); rank 1 then sends
    # it one element fewer, and expects one fewer back: rank 0's tags differ (compared in
    # the core), rank 1's receive is cut short, and both raise SizeMismatch
    g = dist.new_group(list(range(size)))
    out = np.zeros(2 * size)
    for _ in range(3):
        dist.all_to_all_single(out, np.full(2 * size, float(rank)), group=g)
    if rank != 1:  # the kept call's own arguments: counts as before
        call = lambda: dist.all_to_all_single(out, np.zeros(2 * size), group=g)  # noqa: E731
    else:
        split = [1] + [2] * (size - 1)
        call = lambda: dist.all_to_all_single(  # noqa: E731
            np.zeros(sum(split)), np.zeros(sum(split)), output_split_sizes=split,
            input_split_sizes=split, group=g)
    if rank > 1:
        call()
        return
    with pytest.raises(SizeMismatch, match="all_to_all_single"):
        call()
    last = [r for r in _recorder.records() if r[_recorder.GROUP] is g][-1]
    assert last[_recorder.OP] == "all_to_all_single"
    assert _recorder.state(last) == _recorder.FAILED


@pytest.mark.mpi(min_size=2)
def test_counts_a_tag_cannot_hold_are_compared_by_length(rank, size):
    # above 65535 elements (MPICH's tags, less the signature's bits) a message's count is
    # capped in its tag and compared by its length: right when it agrees, SizeMismatch
    # naming the count when a peer sends fewer (rank 1, one element fewer to rank 0)
    g = dist.new_group(list(range(size)))
    big = 70_000
    inp = np.arange(big * size, dtype=np.float32) + rank
    out = np.zeros(big * size, np.float32)
    for _ in range(3):  # (repeated: kept messages, compared in the core where in use)
        dist.all_to_all_single(out, inp, group=g)
        np.testing.assert_array_equal(out, np.concatenate(
            [np.arange(rank * big, (rank + 1) * big, dtype=np.float32) + j
             for j in range(size)]))
    split = [big - 1 if rank == 1 and j == 0 else big for j in range(size)]
    recv = [big] * size
    if rank == 0:
        with pytest.raises(SizeMismatch, match=f"rank 1 sends {big - 1:,}|rank 1 sends "
                           f"{big - 1} "):
            dist.all_to_all_single(out, inp, recv, split, group=g)
    else:
        dist.all_to_all_single(out, np.zeros(sum(split), np.float32), recv, split, group=g)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("form", ["all_reduce", "all_gather_into_tensor",
                                  "reduce_scatter_tensor"])
def test_a_repeated_call_met_by_another_dtype_raises_on_every_rank(form, rank, size):
    # every rank repeats the call (its Plan kept, found and run in the core where it is
    # in use); then rank 1 calls with float32, and rank 0's repeated call, run from the
    # core's lookup, sees a tag that differs: both raise, and the group still works
    from mpicoll._collectives import _direct, _signature
    from mpicoll.errors import SignatureMismatch
    if size > _direct.MAX_RANKS or not _signature.bits():
        pytest.skip("direct messages need 2 to 8 ranks and tags with room for a signature")
    g = dist.new_group(list(range(size)))

    def call(dt):
        if form == "all_reduce":
            x = np.full(4, float(rank + 1), dt)
            dist.all_reduce(x, group=g)
            return x, np.full(4, size * (size + 1) / 2)
        if form == "all_gather_into_tensor":
            out = np.zeros(2 * size, dt)
            dist.all_gather_into_tensor(out, np.full(2, float(rank), dt), group=g)
            return out, np.repeat(np.arange(size, dtype=np.float64), 2)
        out = np.zeros(2, dt)
        dist.reduce_scatter_tensor(out, np.arange(2 * size, dtype=dt) + rank, group=g)
        return out, np.arange(2 * rank, 2 * rank + 2) * size + size * (size - 1) / 2

    for _ in range(3):
        got, want = call(np.float64)
        np.testing.assert_array_equal(got, want)
    if rank in (0, 1):
        with pytest.raises(SignatureMismatch, match=form):
            call(np.float32 if rank == 1 else np.float64)
    else:  # (the others' peers include rank 1: they raise too, or meet rank 0's call)
        try:
            call(np.float64)
        except SignatureMismatch:
            pass
    dist.barrier(group=g)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("form", ["gather", "scatter"])
def test_a_repeated_gather_or_scatter_met_by_another_dtype_raises_where_it_receives(
        form, rank, size):
    # every rank repeats the call (kept, run from the core's lookup where it is in use);
    # then rank 1 calls with int32 against float32 (the same size): the rank that receives
    # its message (gather's root, rank 1 in a scatter) sees a tag that differs and raises,
    # and so does a scatter's root, which receives rank 1's acknowledgement
    from mpicoll._collectives import _signature
    from mpicoll.errors import SignatureMismatch
    if size > _direct_ranks() or not _signature.bits():
        pytest.skip("direct messages need 2 to 8 ranks and tags with room for a signature")
    g = dist.new_group(list(range(size)))

    def call(dt):
        chunks = np.split(np.arange(2 * size, dtype=dt), size) if rank == 0 else None
        x = np.full(2, rank, dt)
        if form == "gather":
            dist.gather(x, chunks, dst=0, group=g)
            return None if chunks is None else np.concatenate(chunks), np.repeat(
                np.arange(size), 2)
        dist.scatter(x, chunks, src=0, group=g)
        return x, np.arange(2 * rank, 2 * rank + 2)

    for _ in range(3):
        got, want = call(np.float32)
        if got is not None:
            np.testing.assert_array_equal(got, want)
    mine = np.int32 if rank == 1 else np.float32
    if rank == 0 or (form == "scatter" and rank == 1):
        with pytest.raises(SignatureMismatch, match=f"{form} #"):
            call(mine)
    else:
        call(mine)
    dist.barrier(group=g)
    dist.destroy_process_group(g)


def test_a_reduce_scatter_fold_equals_numpy():
    # the Python fold of a reduce_scatter's chunks (where the core left it: the counts'
    # check off), as the core's: this rank's chunk, then each peer's in rank order
    from mpicoll._collectives._messages import Fold
    rng = np.random.default_rng(5)
    own, scratch, out = rng.random(3), rng.random(4 * 3), np.zeros(3)
    Fold.of((MPI.SUM, 2, out, scratch, own), MPI.DOUBLE)()
    want = own.copy()
    for j in (0, 1, 3):
        want = scratch[3 * j:3 * j + 3] + want
    np.testing.assert_array_equal(out, want)


def _lists():
    """Lists the quick path meets, each with whether its tensors are written."""
    whole = np.arange(24, dtype=np.float32)
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float64)
    apart = [np.ones(3, np.float32) for _ in range(4)]
    return {
        "chunks of one array": (list(whole.reshape(4, 6)), True),
        "separate arrays": (apart, True),
        "separate arrays, read": (tuple(apart), False),
        "descending views": ([whole[18:], whole[12:18], whole[6:12], whole[:6]], True),
        "overlapping views, written": ([whole[:8], whole[4:12]], True),
        "overlapping views, read": ([whole[:8], whole[4:12]], False),
        "one array twice, written": ([apart[0], apart[0]], True),
        "dtypes that differ": ([np.ones(2, np.float32), np.ones(2, np.float64)], True),
        "not contiguous": ([whole[::2], whole[1::2]], False),
        "read only, written": ([np.frombuffer(b"\0" * 16, np.float32)], True),
        "read only, read": ([np.frombuffer(b"\0" * 16, np.float32)], False),
        "empty tensors among others": ([np.ones(0, np.float32), whole[:4], np.ones(0,
                                                                                  np.float32)],
                                       True),
        "every tensor empty": ([np.ones(0), np.ones(0)], True),
        "half an element apart": ([whole.view(np.uint8)[:4].view(np.float32),
                                   whole.view(np.uint8)[6:10].view(np.float32)], False),
        "torch chunks": (list(t.chunk(3)), True),
        "torch and numpy": ([t[:4].numpy(), t[4:8]], True),
        "a torch tensor that requires grad": ([torch.ones(2, requires_grad=True)], False),
    }


@pytest.mark.parametrize("case", [
    "chunks of one array", "separate arrays", "separate arrays, read", "descending views",
    "overlapping views, written", "overlapping views, read", "one array twice, written",
    "dtypes that differ", "not contiguous", "read only, written", "read only, read",
    "empty tensors among others", "every tensor empty", "half an element apart",
    "torch chunks", "torch and numpy", "a torch tensor that requires grad"])
def test_the_core_s_list_layout_is_the_python_one(case):
    from mpicoll._adapter.views import QUICKERS
    from mpicoll._collectives import _layout

    core = _loaded()
    if core is None:
        pytest.skip("the Python path: the core's layout is not built or off")
    xs, writable = _lists()[case]
    mine = _layout.layout_here(xs, writable)
    theirs = core.layout(xs, writable, QUICKERS, 2**31 - 1)
    if mine is None:
        assert theirs is None
        return
    assert theirs is not None
    # the same named fields, in the same order (Python reads them by name, C by index)
    assert type(theirs).__match_args__ == _layout.Layout._fields == type(mine)._fields
    for field in _layout.Layout._fields:
        if field != "arrays":
            assert getattr(theirs, field) == getattr(mine, field), field
    assert [a.__array_interface__["data"][0] for a in theirs.arrays] == \
        [a.__array_interface__["data"][0] for a in mine.arrays]
    # (the span's limit: a list past `most` elements is not the quick path's)
    assert core.layout(xs, writable, QUICKERS, 0) is None


def _lookups():
    """Calls between a tensor and a list that listed() meets: (tensor, list, how, the
    key's head, whether the table holds the entry the general path would have kept)."""
    from mpicoll._collectives._call import LIST_FIRST, SAME_SHAPE, WRITES_LIST
    whole = np.arange(8, dtype=np.float32)
    mine = np.ones(4, np.float32)
    flat = np.ones((2, 2), np.float32)
    return {
        "chunks, written": (mine, list(whole.reshape(2, 4)), WRITES_LIST, (0,)),
        "chunks, read, list first": (mine, list(whole.reshape(2, 4)), LIST_FIRST, (1, "x")),
        "separate tensors": (mine, [np.ones(4, np.float32), np.ones(4, np.float32)],
                             WRITES_LIST, (0,)),
        "a shape that differs": (flat, list(whole.reshape(2, 4)), WRITES_LIST | SAME_SHAPE,
                                 (1,)),
        "a shape that differs, not asked": (flat, list(whole.reshape(2, 4)), WRITES_LIST,
                                            (1,)),
        "dtypes that differ": (np.ones(4), list(whole.reshape(2, 4)), WRITES_LIST, (0,)),
        "the tensor inside the list": (whole[4:], list(whole.reshape(2, 4)), WRITES_LIST,
                                       (0,)),
        "a list of another length": (mine, list(whole.reshape(4, 2)), WRITES_LIST, (0,)),
        "no list": (mine, None, WRITES_LIST, (0,)),
        "a read-only tensor written": (np.frombuffer(b"\0" * 16, np.float32),
                                       list(whole.reshape(2, 4)), 0, (0,)),
        "a read-only list written": (mine, [np.frombuffer(b"\0" * 16, np.float32)] * 2,
                                     WRITES_LIST, (0,)),
    }


@pytest.mark.parametrize("case", [
    "chunks, written", "chunks, read, list first", "separate tensors", "a shape that differs",
    "a shape that differs, not asked", "dtypes that differ", "the tensor inside the list",
    "a list of another length", "no list", "a read-only tensor written",
    "a read-only list written"])
def test_the_core_s_list_lookup_is_the_python_one(case, monkeypatch):
    # core.listed (mpicoll/_core.c) finds what _call.quick_listed's Python path finds, on a
    # group of 2 that sends no messages (so that nothing is run: the entry is handed back)
    from types import SimpleNamespace

    from mpicoll._adapter.views import QUICKERS
    from mpicoll._collectives import _call

    core = _loaded()
    if core is None:
        pytest.skip("the Python path: the core's lookup is not built or off")
    assert (core.WRITES_LIST, core.LIST_FIRST, core.SAME_SHAPE) == \
        (_call.WRITES_LIST, _call.LIST_FIRST, _call.SAME_SHAPE)
    tensor, xs, how, head = _lookups()[case]
    group = SimpleNamespace(_size=2, _rank=0, direct=None)
    hit = ("an entry",)
    table = {(np.dtype(np.float32), 4, *head, 4, 4): hit}
    theirs = core.listed("all_gather", group, tensor, xs, how, table, head, QUICKERS, 0, False)
    monkeypatch.setattr(_core_loader, "module", None)
    mine = _call.quick_listed("all_gather", group, tensor, xs, how, table, head)
    expected = {"chunks, written", "chunks, read, list first", "separate tensors",
                "a shape that differs, not asked"}
    if case in expected:
        assert theirs is not False and mine is not False
        assert theirs[0] is hit and mine[0] is hit
        assert theirs[1] is tensor and mine[1] is tensor
        assert theirs[2][:6] == mine[2][:6] and theirs[2][7] == mine[2][7]
    elif case == "the tensor inside the list":
        # (the core tells it at the lookup; the Python path's caller, by apart())
        assert theirs is False and mine is not False and mine[0] is hit
    else:
        assert theirs is False and mine is False


def test_the_plan_cache_behaves_as_a_dict_in_order():
    # ProcessGroup.kept, where the core is in use: random puts, gets, pops and deletes,
    # of plan_key's keys (three ints) and others, against a dict doing the same
    import random

    core = _loaded()
    if core is None:
        pytest.skip("the Python path: a group keeps a dict")
    rng = random.Random(5)
    keys = [(1, 2, 3), (1, 2, 4), (2**62, -5, 0), (7, "apart", 1, 2), ("x",), (1, 2),
            (1, 2, 3.5), (2**70, 1, 1)]
    mine, model = core.PlanCache(), {}
    for step in range(3000):
        key, value = rng.choice(keys), step
        what = rng.randrange(6)
        if what == 0:
            mine[key] = model[key] = value
        elif what == 1:
            assert mine.get(key) == model.get(key)
            assert mine.get(key, "none") == model.get(key, "none")
        elif what == 2:
            assert mine.pop(key, None) == model.pop(key, None)
        elif what == 3:
            if key in model:
                del mine[key]
                del model[key]
            else:
                with pytest.raises(KeyError):
                    del mine[key]
        elif what == 4:
            assert (key in mine) == (key in model)
            if key in model:
                assert mine[key] == model[key]
            else:
                with pytest.raises(KeyError) as raised:
                    mine[key]
                assert raised.value.args == (key,)  # (as a dict's: the key, one argument)
        else:
            if model:  # (put_back's eviction: the oldest first)
                oldest = next(iter(model))
                assert next(iter(mine)) == oldest
                assert mine.pop(oldest) == model.pop(oldest)
        assert len(mine) == len(model)
        assert list(mine) == list(model) and mine.values() == list(model.values())
        assert mine.items() == list(model.items())
    mine.clear()
    assert len(mine) == 0 and list(mine) == []


def test_the_plan_cache_survives_a_key_that_changes_it_while_compared():
    # a key that is not three ints is compared as an object; its __eq__ may run any
    # Python, which here empties the cache in the middle of the search
    core = _loaded()
    if core is None:
        pytest.skip("the Python path: a group keeps a dict")
    cache = core.PlanCache()

    class Meddler:
        def __eq__(self, other):
            cache.clear()
            return False

        def __hash__(self):
            return 1

    cache[("x", 1)] = "one"
    cache[("y", 2)] = "two"
    assert cache.get(Meddler()) is None and len(cache) == 0
    cache[(1, 2, 3)] = "plan"
    assert cache.pop((1, 2, 3)) == "plan" and len(cache) == 0


def test_v_collectives_of_one_rank_are_made_in_the_core_and_recorded(xp, rank, size,
                                                                      monkeypatch):
    # on a group of one rank no counts go beside the data: all_to_all_single with split
    # sizes, all_to_all's lists (chunks of one tensor, and tensors apart), all_gather's
    # list, reduce_scatter's list of chunks, and gather's and scatter's root list of
    # chunks are MPI's v-collectives, which the core
    # makes itself once a call has been validated (the Python path's call refused below),
    # each right, and recorded at its call site with what the Python path's record keeps
    if OFF:
        pytest.skip("the compiled core's calls")
    if xp.name not in ("numpy", "torch"):
        pytest.skip("the quick path's tensors (the others' go general)")
    g = [dist.new_group([r]) for r in range(size)][rank]  # (collective: every rank)
    from mpicoll._collectives import _call, _rooted_quick, all_gather, all_to_all, reduce_scatter

    x = xp.tensor(np.arange(6.0) + 10 * rank, "float64")
    out = xp.tensor(np.zeros(6), "float64")
    apart_in = [xp.tensor(np.arange(6.0), "float64")]
    apart_out = [xp.tensor(np.zeros(6), "float64")]
    chunk_in, chunk_out = xp.pieces(x, [6]), xp.pieces(out, [6])
    calls = [
        ("all_to_all_single", lambda: dist.all_to_all_single(out, x, [6], [6], group=g),
         lambda: xp.to_numpy(out), np.arange(6.0) + 10 * rank),
        ("all_to_all", lambda: dist.all_to_all(chunk_out, chunk_in, group=g),
         lambda: xp.to_numpy(out), np.arange(6.0) + 10 * rank),
        ("all_to_all", lambda: dist.all_to_all(apart_out, apart_in, group=g),
         lambda: xp.to_numpy(apart_out[0]), np.arange(6.0)),
        ("all_gather", lambda: dist.all_gather(chunk_out, x, group=g),
         lambda: xp.to_numpy(out), np.arange(6.0) + 10 * rank),
        ("reduce_scatter", lambda: dist.reduce_scatter(out, chunk_in, group=g),
         lambda: xp.to_numpy(out), np.arange(6.0) + 10 * rank),
        ("gather", lambda: dist.gather(x, chunk_out, group_dst=0, group=g),
         lambda: xp.to_numpy(out), np.arange(6.0) + 10 * rank),
        ("scatter", lambda: dist.scatter(apart_out[0], chunk_in, group_src=0, group=g),
         lambda: xp.to_numpy(apart_out[0]), np.arange(6.0) + 10 * rank),
    ]
    for _, call, _, _ in calls:  # (validated, their quick entries stored)
        call()

    def refused(*args, **kwargs):
        raise AssertionError("the Python path made a call the core makes")
    for module in (_call, all_to_all, all_gather, reduce_scatter, _rooted_quick):
        monkeypatch.setattr(module, "quick", refused)
    for op, call, got, want in calls:
        xp.fill(out, xp.tensor(np.full(6, -1.0), "float64"))
        call()
        np.testing.assert_array_equal(got(), want, err_msg=op)
    lines = [call.__code__.co_firstlineno for _, call, _, _ in calls]  # (each lambda's)
    records = _recorder.records()[-len(calls):]
    assert [r[_recorder.OP] for r in records] == [op for op, *_ in calls]
    for r, line in zip(records, lines, strict=True):
        code, lasti = r[_recorder.FILE], r[_recorder.LINE]
        assert code.co_filename == __file__
        assert any(start <= lasti < end and ln == line for start, end, ln in code.co_lines())
        assert _recorder.state(r) == _recorder.COMPLETED
        sent, received, after = r[_recorder.META]
        assert received[1] == MPI.DOUBLE, r
    a2a_single, chunks, apart, gathered, reduced, gather, scatter = (
        r[_recorder.META] for r in records)
    assert a2a_single[:2] == ((([6], [0]), MPI.DOUBLE),) * 2
    assert [list(v) for v in apart[0][0]] == [[6], [0]]
    assert gathered[0] == (6, MPI.DOUBLE)
    assert reduced[2][-1] == MPI.SUM
    assert gather[0] == (6, MPI.DOUBLE) and gather[2] == (0,)
    assert scatter[1] == (6, MPI.DOUBLE) and scatter[2] == (0,)



@pytest.mark.spawn
@pytest.mark.parametrize("ranks", [2, 3])
def test_counts_beside_the_data_go_in_the_core_and_a_mismatch_raises(ranks):
    # where MPI's v-collectives carry the data (more than 8 ranks; here MPICOLL_DIRECT=0,
    # the whole job, since every group of one size takes the same transport), their
    # counts go beside the data: the core posts both, waits for the counts first and
    # compares them. tests/scripts/counts_in_core.py refuses the Python path's call
    # after the first of each and checks every result against numpy, the records, a
    # mismatch at a repeated call (SizeMismatch on every rank), the same where every
    # rank compares (all_gather, whose data may be left running), gather's (the root
    # compares) and scatter's (each rank compares its own), and the calls after
    if OFF:
        pytest.skip("the compiled core's calls")
    from _launch import run_per_rank

    p, out = run_per_rank(ranks, ["tests/scripts/counts_in_core.py"], timeout=90,
                          MPICOLL_DIRECT="0")
    assert p.returncode == 0, p.stdout + p.stderr
    for r in range(ranks):
        for xp in ("numpy", "torch"):
            assert (f"{xp}: 11 calls made in the core, right, recorded; the mismatch raised "
                    "SizeMismatch: all_to_all_single: the ranks disagree on sizes") in out[r], \
                out[r]
            assert (f"{xp}: relayed, SizeMismatch: all_gather: the ranks disagree on sizes"
                    in out[r]), out[r]
            assert (f"{xp}: packed, SizeMismatch: reduce_scatter: the ranks disagree on sizes"
                    in out[r]), out[r]
            assert (f"{xp}: signed, SizeMismatch: all_gather_into_tensor: the ranks disagree "
                    "on sizes" in out[r]), out[r]
            assert f"{xp}: after it, right" in out[r], out[r]
        # gather's counts are compared on the root (rank 0), scatter's on each rank
        assert (f"{xp}: gather compared here, SizeMismatch: gather: the ranks disagree on "
                "sizes: rank 1 sends 2 elements, and gather_list[1] on the root (rank 0) "
                "holds 1" in out[0]), out[0]
        assert (f"{xp}: scatter compared here, SizeMismatch: scatter: the ranks disagree on "
                "sizes: the root (rank 0) sends 1 element in scatter_list[1], and tensor on "
                "rank 1 holds 2" in out[1]), out[1]
        assert all(f"{xp}: gather compared here" not in out[r] for r in range(1, ranks))
        assert all(f"{xp}: scatter compared here" not in out[r] for r in range(ranks) if r != 1)
