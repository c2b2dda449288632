"""``python -m mpicoll trace`` on dumps made by hand: a correct run, a rank that skips a
collective, counts that cannot match, a straggler, damaged files (schema: the recorder's
format 1). The analyzer reads files only, so this runs in the single-process session."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest
from _launch import ROOT, clean_env

from mpicoll._trace import analyze, chrome, load, timing
from mpicoll._trace.cli import main

pytestmark = pytest.mark.spawn

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
ITEM = {"float32": 4, "int64": 8, None: 1}


def rec(i, op, seq, t, *, group="default", send=None, recv=None, dtype="float32", root=None,
        peer=None, state="completed", end=None, line=10):
    """One record; ``end``: its completion (a blocking call that waited)."""
    return {"id": i, "op": op, "group": group, "seq": seq, "p2p": peer is not None,
            "peer": peer, "root": root, "dtype": dtype, "itemsize": ITEM[dtype],
            "send": send, "recv": recv, "file": "train.py", "line": line, "issued_ns": t,
            "wait_ns": None if state == "issued" else t + 1000,
            "done_ns": (end or t + MS) if state == "completed" else None, "state": state}


# one correct program at any size n: (op, fields of rank r); every count matches
STEPS = [
    ("all_reduce", lambda r, n: {"recv": 1024}),
    ("broadcast", lambda r, n: {"send": 256, "root": 0}),
    ("all_to_all_single", lambda r, n: {"send": [10 * r + j + 1 for j in range(n)],
                                        "recv": [10 * i + r + 1 for i in range(n)]}),
    ("all_gather_into_tensor", lambda r, n: {"send": 64, "recv": 64}),
    ("reduce_scatter_tensor", lambda r, n: {"send": 64 * n, "recv": 64}),
    ("all_gather", lambda r, n: {"send": r + 1, "recv": [j + 1 for j in range(n)]}),
    ("gather", lambda r, n: {"send": r + 2, "root": 1,
                             "recv": [j + 2 for j in range(n)] if r == 1 else None}),
    ("scatter", lambda r, n: {"send": [j + 3 for j in range(n)] if r == 0 else None,
                              "recv": r + 3, "root": 0}),
    ("barrier", lambda r, n: {"dtype": None}),
]


def simulate(n, steps=STEPS, delay=lambda r, k: 3000 * r, rounds=1):
    """Every rank's records of ``steps`` (``rounds`` times): a collective completes 1 ms
    after its last rank issued it."""
    out = {r: [] for r in range(n)}
    for k, (op, fields) in enumerate(steps * rounds):
        base = T0 + k * 30 * MS
        issued = {r: base + delay(r, k) for r in range(n)}
        for r in range(n):
            f = {"dtype": "float32", **fields(r, n)}
            out[r].append(rec(len(out[r]), op, k + 1, issued[r], end=max(issued.values()) + MS,
                              line=100 + k, **f))
    return out


def write(folder, records, *, reason="exit", dropped=None, hosts=None):
    """The dump files of ``records`` (rank -> records), as the recorder writes them."""
    n = len(records)
    folder.mkdir(exist_ok=True)
    for r, recs in records.items():
        ends = [x["done_ns"] or x["issued_ns"] for x in recs] or [T0]
        m = {"format": 1, "rank": r, "world_size": n, "host": (hosts or {}).get(r, "node0"),
             "pid": 1000 + r, "reason": reason, "time_ns": max(ends) + 5 * MS,
             "capacity": 2000, "dropped": (dropped or {}).get(r, 0),
             "groups": {"default": list(range(n))}, "records": recs}
        data = {"version": "2.10", "pg_config": {}, "pg_status": {}, "entries": [],
                "mpicoll": m}
        (folder / f"mpicoll_trace_rank_{r}").write_bytes(pickle.dumps(data, protocol=4))
    return folder


def skipping(n=4):
    """Rank 1 skips seq 3 (an all_reduce): it waits in a receive from rank 0 instead,
    while the others wait in seq 3."""
    recs = simulate(n, [STEPS[0], STEPS[1]])
    t = T0 + 100 * MS
    for r in range(n):
        if r == 1:
            recs[r].append(rec(2, "recv", 0, t, peer=0, recv=16, state="waiting", line=55))
        else:
            recs[r].append(rec(2, "all_reduce", 3, t + r * 1000, recv=1024, state="waiting",
                               line=50))
    return recs


def mismatched():
    """2 ranks: an all_reduce, then an all_to_all_single where rank 0 sends 3 elements to
    rank 1, which expects 2."""
    recs = simulate(2, [STEPS[0]])
    t = T0 + 50 * MS
    recs[0].append(rec(1, "all_to_all_single", 2, t, send=[4, 3], recv=[4, 5],
                       state="waiting", line=70))
    recs[1].append(rec(1, "all_to_all_single", 2, t, send=[5, 6], recv=[2, 6], line=70))
    return recs


def straggling(n=4):
    """Rank 2 sleeps 20 ms before every call; the others are within microseconds."""
    return simulate(n, delay=lambda r, k: 20 * MS if r == 2 else 2000 * ((r + k) % 3),
                    rounds=3)


def test_a_correct_run_has_no_divergence(tmp_path):
    for n in (2, 4):
        dumps = load.load(write(tmp_path / f"np{n}", simulate(n)))
        found, text = analyze.divergence(dumps)
        assert found is None, text
        assert text == f"no divergence found in {len(STEPS)} collectives on 1 group"
        assert timing.stragglers(dumps).straggler is None


def test_a_skipped_collective_names_the_rank_op_and_seq(tmp_path):
    dumps = load.load(write(tmp_path, skipping(), reason="timeout"))
    found, text = analyze.divergence(dumps)
    assert (found.kind, found.ranks, found.op, found.seq, found.group) == \
        ("missing", [1], "all_reduce", 3, "default")
    assert "DIVERGENCE at all_reduce seq 3 on group default (ranks 0, 1, 2, 3): rank 1" in text
    assert "rank 1 has no record of it (its last on this group is broadcast seq 2 at " \
           "train.py:101): it never got there" in text
    assert "rank 1: last completed broadcast seq 2 (train.py:101); not completed: recv " \
           "from rank 0 (train.py:55), waiting for" in text
    assert "rank 0: last completed broadcast seq 2 (train.py:101); not completed: " \
           "all_reduce seq 3 (train.py:50), waiting for" in text


def test_evicted_records_are_not_missing(tmp_path):
    recs = simulate(2, rounds=2)
    recs[1] = recs[1][5:]  # rank 1's ring lost its first five records
    dumps = load.load(write(tmp_path, recs, dropped={1: 5}))
    found, text = analyze.divergence(dumps)
    assert found is None, text
    assert text.startswith(f"no divergence found in {2 * len(STEPS) - 5} collectives")


def test_counts_that_cannot_match(tmp_path):
    dumps = load.load(write(tmp_path, mismatched()))
    found, text = analyze.divergence(dumps)
    assert (found.kind, found.op, found.seq, found.pairs) == \
        ("sizes", "all_to_all_single", 2, [(0, 1, 3, 2)])
    assert "rank 0 sends 3 to rank 1, which expects 2 from it" in text
    # the same collective, counts of an equal-count op, an op, a dtype
    recs = simulate(2, [STEPS[0]])
    recs[1][0]["recv"] = 512
    assert analyze.divergence(load.load(write(tmp_path / "a", recs)))[0].kind == "sizes"
    recs[1][0]["op"] = "broadcast"
    found = analyze.divergence(load.load(write(tmp_path / "b", recs)))[0]
    assert (found.kind, found.ranks) == ("op", [1])
    recs = simulate(4, [STEPS[3]])
    recs[3][0]["dtype"] = "int64"
    found = analyze.divergence(load.load(write(tmp_path / "c", recs)))[0]
    assert (found.kind, found.ranks) == ("dtype", [3])


def test_the_straggler_and_by_how_much(tmp_path):
    dumps = load.load(write(tmp_path, straggling()))
    s = timing.stragglers(dumps)
    assert s.straggler == 2
    assert s.collectives == 3 * len(STEPS)
    assert len(s.lags[2]) == s.collectives
    assert 19.9 * MS < s.mean_ns(2) < 20.1 * MS
    text = timing.stragglers_text(s)
    assert f"straggler: rank 2, last in {s.collectives} of {s.collectives} collectives, " \
           "by 20.0 ms on average" in text


def test_summary(tmp_path):
    stats = timing.summary(load.load(write(tmp_path, simulate(4))))
    ar = stats["all_reduce"]
    assert (ar.calls, ar.completed, ar.nbytes) == (4, 4, 4 * 1024 * 4)
    # per rank the larger of its sends (10r + j + 1 to each j) and receives (10i + r + 1)
    assert stats["all_to_all_single"].nbytes == 4 * sum(max(40 * r + 10, 64 + 4 * r)
                                                        for r in range(4))
    ag = stats["all_gather_into_tensor"]
    assert ag.nbytes == 4 * 4 * 64 * 4  # the larger side: 4 blocks of 64 received
    assert ar.busbw == pytest.approx(ar.nbytes * 2 * 3 / 4 / ar.time_ns)


def test_damaged_and_missing_files_are_reported_and_left_out(tmp_path):
    folder = write(tmp_path, simulate(4))
    f = folder / "mpicoll_trace_rank_3"
    f.write_bytes(f.read_bytes()[:200])  # cut short (a SIGKILL mid-write)
    (folder / "mpicoll_trace_rank_2").unlink()
    (folder / "mpicoll_trace_rank_2.4242.tmp").write_bytes(b"\x80\x04")
    problems = []
    dumps = load.load(folder, problems)
    assert sorted(dumps) == [0, 1]
    assert any(p.startswith("rank 3: mpicoll_trace_rank_3 unreadable") for p in problems)
    assert any(p.startswith("mpicoll_trace_rank_2.4242.tmp: left out") for p in problems)
    assert "no dump from rank 2 (killed before dumping, or never recording)" in problems
    assert analyze.divergence(dumps)[0] is None
    # a pickle that names a class is refused, not run
    (folder / "mpicoll_trace_rank_1").write_bytes(pickle.dumps({"mpicoll": pickle.PickleError}))
    problems = []
    assert sorted(load.load(folder, problems)) == [0]
    assert any("refused _pickle.PickleError" in p for p in problems), problems


def test_chrome_trace(tmp_path):
    dumps = load.load(write(tmp_path, skipping(), reason="timeout"))
    trace = json.loads(json.dumps(chrome.chrome(dumps)))
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {r: f"rank {r}" for r in range(4)}
    ops = [e for e in events if e["ph"] == "X"]
    assert len(ops) == sum(len(d["records"]) for d in dumps.values())
    assert min(e["ts"] for e in ops) == 0 and all(e["dur"] >= 0 for e in ops)
    open_ = [e for e in ops if "not completed" in e["args"]]
    assert sorted(e["pid"] for e in open_) == [0, 1, 2, 3]
    assert all(e["name"].endswith("(not completed)") for e in open_)
    late = next(e for e in open_ if e["pid"] == 1)
    assert late["name"].startswith("recv from rank 0") and late["args"]["site"] == "train.py:55"
    # it runs to the dump
    assert late["ts"] + late["dur"] == pytest.approx(
        (dumps[1]["time_ns"] - T0) / 1e3)
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads == {"group default"}


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from mpicoll._trace.plot import plot

    out = tmp_path / "trace.png"
    plot(load.load(write(tmp_path / "d", straggling())), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mpicoll", "trace", *map(str, args)],
                          cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                          timeout=120, check=False)


def test_cli_exit_status_and_report(tmp_path):
    p = _cli(write(tmp_path / "ok", simulate(4)), "--chrome", tmp_path / "t.json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "dumps in" in p.stdout and "ranks 0, 1, 2, 3 (4 of 4)" in p.stdout
    assert "rank 0 (node0, pid 1000): dumped on exit at " in p.stdout
    assert f"no divergence found in {len(STEPS)} collectives on 1 group" in p.stdout
    assert "per operation" in p.stdout and "all_to_all_single" in p.stdout
    assert "no clear straggler" in p.stdout
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    p = _cli(write(tmp_path / "skip", skipping(), reason="timeout"))
    assert p.returncode == 3, p.stdout + p.stderr
    assert "dumped on timeout" in p.stdout
    assert "DIVERGENCE at all_reduce seq 3 on group default" in p.stdout
    p = _cli(write(tmp_path / "slow", straggling()))
    assert p.returncode == 0 and "straggler: rank 2, last in 27 of 27" in p.stdout
    (tmp_path / "empty").mkdir()
    assert _cli(tmp_path / "empty").returncode == 2
    assert _cli().returncode == 2
    assert main(["--help"]) == 0


def test_cli_starts_no_mpi(tmp_path):
    """``python -m mpicoll trace`` runs where MPI cannot start: mpi4py.MPI (and numpy)
    stay unimported."""
    folder = write(tmp_path, skipping())
    code = ("import runpy, sys\n"
            f"sys.argv = ['mpicoll', 'trace', {str(folder)!r}]\n"
            "try:\n    runpy.run_module('mpicoll', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as e:\n    print('status', e.code)\n"
            "print('imported', 'mpi4py.MPI' in sys.modules, 'numpy' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean_env(),
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.stdout.splitlines()[-2:] == ["status 3", "imported False False"], \
        p.stdout + p.stderr


def test_torch_format_shapes_of_even_uneven_and_rooted_forms():
    """torch compares sizes across ranks: forms it has no even shape for are left out
    (0, 0); all_gather made as Alltoallv (MPICH leaves a rank's own block out, as 0) and
    Allgatherv of even lists get torch's all_gather shapes."""
    from mpicoll._trace.torch_format import shapes

    assert shapes("gather", [5, 5, 0], [5, 0, 5], 3) == (5, 15)  # Alltoallv, own block 0
    assert shapes("gather", 5, [5, 5, 5], 3) == (5, 15)  # Allgatherv, even
    assert shapes("gather", 5, 5, 3) == (5, 15)  # Iallgather (all_gather_into_tensor)
    assert shapes("gather", 5, [5, 6, 5], 3) == (0, 0)  # uneven
    assert shapes("gather", 5, [5, 5, 5], 3, rooted=True) == (0, 0)  # rooted gather
    assert shapes("scatter", 4, 4, 2) == (8, 4)  # Ireduce_scatter_block: the block
    assert shapes("scatter", 8, 4, 2) == (8, 4)  # Ireduce_scatter: the whole input
    assert shapes("scatter", 9, 4, 2) == (0, 0)  # uneven
    assert shapes("same", None, 7, 2) == (7, 7)
