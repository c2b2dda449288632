"""The flight recorder in real jobs (issue 35): planted faults at 2 and 4 ranks, each
job's dumps read by ``python -m mpicoll trace``, whose report is asserted.

- one rank skips a collective: the job ends on the timeout, every rank's record is
  written (the rank that timed out, and the others when it asks them how far they got),
  and the analyzer names the rank and the call;
- one rank sleeps before every call: the job ends normally, and the report names it as
  the straggler;
- SIGUSR1 while the main thread is stuck in MPI: the monitor thread writes the dump;
- the ring keeps the last N, and a dump killed mid-write leaves a readable file.

torch's own analyzer on the torch backend's dumps: tests/test_trace_torch.py.
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
import time

import pytest
from _launch import ROOT, clean_env, mpiexec, run

pytestmark = pytest.mark.spawn

BOUND = 90  # seconds: a hang detector, not a speed assertion


def _trace(folder, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpicoll", "trace", str(folder), *extra],
                          cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                          timeout=60, check=False)


def _dumps(folder) -> dict[int, dict]:
    out = {}
    for path in folder.glob("mpicoll_trace_rank_*"):
        with open(path, "rb") as f:
            out[int(path.name.rsplit("_", 1)[1])] = pickle.load(f)["mpicoll"]
    return out


@pytest.mark.parametrize("n", [2, 4])
def test_skipped_collective_ends_on_timeout_and_is_named(n, tmp_path):
    p = run(n, ["tests/scripts/skip_collective.py"], timeout=BOUND, MPICOLL_TIMEOUT="3",
            MPICOLL_TRACE_DIR=str(tmp_path))
    assert p.returncode != 0 and "unreachable" not in p.stdout, p.stderr
    assert f"flight record written to {tmp_path}/mpicoll_trace_rank_0" in p.stderr, p.stderr
    assert f"python -m mpicoll trace {tmp_path}" in p.stderr
    dumps = _dumps(tmp_path)
    assert sorted(dumps) == list(range(n)), p.stderr  # rank 1's too: it was asked
    # (Open MPI's launcher then sends SIGTERM to the ranks still alive: they write again)
    assert dumps[1]["reason"] in ("peer-timeout", "signal")
    assert {dumps[r]["reason"] for r in range(n) if r != 1} <= {"timeout", "peer-timeout",
                                                                 "signal"}
    waiting = dumps[0]["records"][-1]
    assert (waiting["op"], waiting["seq"], waiting["state"]) == ("all_reduce", 2, "waiting")
    assert waiting["file"].endswith("skip_collective.py") and waiting["line"] == 8
    t = _trace(tmp_path)
    assert t.returncode == 3, t.stdout + t.stderr
    assert (f"DIVERGENCE at all_reduce seq 2 on group 0 ({', '.join(map(str, range(n)))}): "
            "rank 1 (no record of it)") in t.stdout.replace("(ranks ", "("), t.stdout
    assert "rank 1 has no record of it (its last on this group is barrier seq 1" in t.stdout
    assert "skip_collective.py:8), waiting for" in t.stdout
    assert f"({n} of {n})" in t.stdout


@pytest.mark.parametrize("n", [2, 4])
def test_straggler_is_named(n, tmp_path):
    p = run(n, ["tests/scripts/trace_straggler.py"], timeout=BOUND,
            MPICOLL_TRACE_DIR=str(tmp_path))
    assert p.returncode == 0, p.stderr
    dumps = _dumps(tmp_path)
    assert sorted(dumps) == list(range(n))
    assert all(d["reason"] == "exit" and len(d["records"]) == 16 for d in dumps.values())
    chrome, png = tmp_path / "trace.json", tmp_path / "trace.png"
    t = _trace(tmp_path, "--chrome", str(chrome), "--plot", str(png))
    assert t.returncode == 0, t.stdout + t.stderr
    assert "no divergence found in 16 collectives on 1 group" in t.stdout, t.stdout
    assert f"straggler: rank {n - 1}, last in 16 of 16 collectives" in t.stdout, t.stdout
    summary = [line.split() for line in t.stdout.splitlines()
               if line.startswith(("all_reduce ", "all_to_all_single "))]
    assert [(s[0], s[1]) for s in summary] == [("all_reduce", str(12 * n)),
                                                ("all_to_all_single", str(4 * n))]
    events = json.loads(chrome.read_text())["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    assert len(spans) == 16 * n and {e["pid"] for e in spans} == set(range(n))
    assert png.stat().st_size > 10_000  # (matplotlib: the test extra)


def test_sigusr1_dumps_while_stuck_in_mpi(tmp_path):
    p = run(2, ["tests/scripts/trace_sigusr1.py"], timeout=BOUND,
            MPICOLL_TRACE_DIR=str(tmp_path))
    assert p.returncode == 0, p.stderr
    said = json.loads(p.stdout.strip().splitlines()[-1])
    assert said == {"reason": "request", "op": "recv", "state": "waiting", "peer": 1,
                    "got": [0, 1, 2]}, p.stdout
    assert "rank 0 wrote its flight record to" in p.stderr


def test_ring_keeps_the_last_entries_and_zero_turns_it_off(tmp_path):
    p = run(1, ["tests/scripts/trace_ring.py"], timeout=BOUND,
            MPICOLL_TRACE_DIR=str(tmp_path), MPICOLL_TRACE_ENTRIES="5")
    assert p.returncode == 0, p.stderr
    m = _dumps(tmp_path)[0]
    assert m["capacity"] == 5 and m["dropped"] == 7 and m["reason"] == "exit"
    assert [r["id"] for r in m["records"]] == [7, 8, 9, 10, 11]
    off = tmp_path / "off"
    p = run(1, ["tests/scripts/trace_ring.py"], timeout=BOUND, MPICOLL_TRACE_DIR=str(off),
            MPICOLL_TRACE_ENTRIES="0")
    assert p.returncode == 0 and p.stdout.strip() == "None", p.stdout + p.stderr
    assert not off.exists()


def test_a_dump_killed_mid_write_leaves_a_readable_file(tmp_path):
    job = subprocess.Popen([sys.executable, "tests/scripts/trace_ring.py", "kill"], cwd=ROOT,
                           env=clean_env(MPICOLL_TRACE_DIR=str(tmp_path)),
                           stdout=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline().strip() == "dumping"
        time.sleep(1.0)  # many dumps of 2000 records each, one of them cut short
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
    m = _dumps(tmp_path)[0]
    assert len(m["records"]) == 2000 and m["dropped"] == 1000
    # a temporary file left by the kill is no dump to any reader (torch's takes every
    # file whose name holds the prefix)
    assert [f.name for f in tmp_path.iterdir() if "mpicoll_trace_rank_" in f.name] == [
        "mpicoll_trace_rank_0"]
    t = _trace(tmp_path)
    assert t.returncode == 0, t.stdout + t.stderr
    assert "ranks 0 (1 of 1)" in t.stdout


def test_the_documented_example(tmp_path):
    """examples/hang_and_trace.py, as docs/debugging.md runs it: the hang and the
    straggler it plants are both named."""
    p = run(4, [str(ROOT / "examples" / "hang_and_trace.py")], timeout=BOUND,
            MPICOLL_TIMEOUT="5", MPICOLL_TRACE_DIR=str(tmp_path))
    assert p.returncode == 3, p.stderr
    t = _trace(tmp_path, "--plot", str(tmp_path / "trace.png"))
    assert t.returncode == 3, t.stdout + t.stderr
    out = t.stdout
    assert ("DIVERGENCE at all_reduce seq 16 on group 0 (ranks 0, 1, 2, 3): rank 1 (no "
            "record of it)") in out, out
    assert "rank 1: last completed all_to_all_single seq 15" in out
    assert "not completed: recv from rank 0 (" in out and "hang_and_trace.py:31)" in out
    assert "straggler: rank 2, last in " in out, out


def test_an_uncaught_exception_and_a_departure_write_every_rank(tmp_path):
    """Rank 1 raises: it writes its record, and asks the others to write theirs before
    its MPI_Abort ends them. Then a rank that leaves: the ranks that wait for it end the
    job and write theirs, the leaving rank at its exit."""
    p = run(3, ["tests/scripts/raise_on_one_rank.py"], timeout=BOUND,
            MPICOLL_TRACE_DIR=str(tmp_path / "raise"))
    assert p.returncode != 0 and "boom on rank 1" in p.stderr, p.stderr
    dumps = _dumps(tmp_path / "raise")
    assert dumps[1]["reason"] == "exception" and sorted(dumps) == [0, 1, 2], p.stderr
    # (Open MPI's launcher then sends SIGTERM to the ranks still alive: they write again)
    assert {dumps[0]["reason"], dumps[2]["reason"]} <= {"peer-abort", "signal"}, p.stderr
    assert [r["op"] for r in dumps[1]["records"]] == ["all_reduce"]
    assert dumps[0]["records"][-1]["op"] == "barrier"
    assert dumps[0]["records"][-1]["state"] in ("issued", "waiting")
    p = run(3, ["tests/scripts/leave_early.py", "exit3", "token"], timeout=BOUND,
            MPICOLL_TRACE_DIR=str(tmp_path / "leave"))
    assert p.returncode == 3, p.stderr
    dumps = _dumps(tmp_path / "leave")
    assert sorted(dumps) == [0, 1, 2], p.stderr
    assert dumps[1]["reason"] == "exit" and dumps[1]["records"] == []
    for r in (0, 2):
        # the notice reaches a peer while it waits (the monitor ends the job: departure)
        # or, on a slow start-up, before it issues the call (PeerExited, uncaught); under
        # Open MPI the launcher's SIGTERM after the abort may have a rank write again
        assert dumps[r]["reason"] in ("departure", "exception", "peer-abort", "signal"), (
            p.stderr)
        if dumps[r]["reason"] == "departure":
            assert dumps[r]["records"][-1]["op"] == "all_reduce"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_that_ends_a_stuck_job_writes_every_rank(sig, tmp_path):
    p = subprocess.Popen([*mpiexec(), "-n", "2", sys.executable, "tests/scripts/stuck.py",
                          "token"], cwd=ROOT, env=clean_env(MPICOLL_TRACE_DIR=str(tmp_path)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # every rank is now inside its call
        p.send_signal(sig)
        _, err = p.communicate(timeout=BOUND)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode != 0
    dumps = _dumps(tmp_path)
    assert sorted(dumps) == [0, 1], err
    assert {d["reason"] for d in dumps.values()} == {"signal"}, err
    assert dumps[0]["records"][-1]["state"] == "waiting"
