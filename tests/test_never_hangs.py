"""A job that cannot finish ends, on every rank, with a message that says why:
a rank that leaves (exit status or not), one Ctrl-C, one SIGTERM.

Each job runs under a bound that only catches hangs (generous: a loaded 2-core
machine starts 4 ranks slowly); the tests assert the job's status, its message,
and that no rank process outlives the launcher.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid

import pytest
from _launch import ROOT, clean_env, mpiexec, run

pytestmark = pytest.mark.spawn

BOUND = 60  # seconds: a hang detector, not a speed assertion
ENDS_WITHIN = 20  # seconds from the signal to the job's end: the launcher's timeout is BOUND


def _survivors(token: str) -> list[str]:
    """Rank processes (found by the job's unique token) still alive after the launcher."""
    deadline = time.monotonic() + 10  # the launcher's own clean-up may still be reaping
    while True:
        ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        alive = [line for line in ps.splitlines() if token in line and "ps -eo" not in line]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def _job(n: int, script: str, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    token = f"job-{uuid.uuid4().hex}"
    p = run(n, [f"tests/scripts/{script}", *args, token], timeout=BOUND)
    assert not _survivors(token), "rank processes outlived the launcher"
    return p, token


@pytest.mark.parametrize("n", [2, 4])
def test_rank_exit_status_ends_the_job_with_it(n):
    p, _ = _job(n, "leave_early.py", "exit3")
    assert p.returncode == 3, p.stderr
    assert "unreachable" not in p.stdout
    # the notice reaches a peer either while it waits (the monitor ends the job) or, on
    # a slow start-up, before it issues the call (which then raises PeerExited)
    assert ("cannot finish all_reduce #1 on group '0'" in p.stderr
            or "PeerExited: all_reduce: cannot run on group '0'" in p.stderr), p.stderr
    assert ("global rank 1 left the job (exit status 3) after 0 collective(s) on this "
            "group; this is collective #1" in p.stderr), p.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_collective_after_a_rank_left_raises_on_the_caller(n):
    p, _ = _job(n, "leave_early.py", "late")
    assert p.returncode == 3, p.stderr
    assert "unreachable" not in p.stdout
    assert "mpicoll.errors.PeerExited: all_reduce: cannot run on group '0'" in p.stderr
    assert "global rank 1 left the job (exit status 3)" in p.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_rank_that_ends_normally_while_needed_ends_the_job(n):
    p, _ = _job(n, "leave_early.py", "normal")
    assert p.returncode != 0
    assert "unreachable" not in p.stdout
    assert "rank 1: done" in p.stdout  # it did end normally
    assert ("cannot finish all_reduce #2 on group '0'" in p.stderr
            or "PeerExited: all_reduce: cannot run on group '0'" in p.stderr), p.stderr
    assert ("global rank 1 left the job after 1 collective(s) on this group; this is "
            "collective #2" in p.stderr), p.stderr


def test_a_group_without_the_rank_that_left_goes_on():
    # rank 2 ends; ranks 0 and 1 repeat kept calls on a group of their own, which must
    # go on right once its notice is in (those calls then run from Python, not the core)
    p, _ = _job(3, "leave_early.py", "others")
    assert p.returncode == 0, p.stderr
    assert "rank 0: others went on" in p.stdout and "rank 1: others went on" in p.stdout, \
        p.stdout + p.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_receive_from_a_rank_that_left(n):
    p, _ = _job(n, "leave_early.py", "recv")
    assert p.returncode != 0
    assert "first message received" in p.stdout  # what it sent before leaving arrives
    assert "unreachable" not in p.stdout
    assert ("global rank 1 left the job after sending this rank 1 message(s), all received"
            in p.stderr), p.stderr


def _signal_job(n: int, sig: int) -> tuple[int, str, str, float]:
    token = f"job-{uuid.uuid4().hex}"
    cmd = [*mpiexec(), "-n", str(n), sys.executable, "tests/scripts/stuck.py", token]
    p = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # every rank is now inside its collective
        start = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=BOUND)
        elapsed = time.monotonic() - start
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert not _survivors(token), "rank processes outlived the launcher"
    return p.returncode, out, err, elapsed


@pytest.mark.parametrize("n", [2, 4])
def test_one_ctrl_c_stops_a_stuck_job(n):
    rc, out, err, elapsed = _signal_job(n, signal.SIGINT)
    assert rc != 0, err
    assert "unreachable" not in out
    if "Open MPI" not in _library():
        # MPICH's mpiexec forwards SIGINT to the ranks and passes their status on
        assert rc == 130, err
        assert "received SIGINT while waiting" in err, err
        # (each rank reports; the job may end before both reports are written)
        assert "in all_reduce #2 on group '0'" in err or "in recv on group '0'" in err, err
    assert elapsed < ENDS_WITHIN, f"the job took {elapsed:.1f} s to end after the signal"


@pytest.mark.parametrize("n", [2, 4])
def test_sigterm_stops_a_stuck_job_with_a_message(n):
    rc, out, err, elapsed = _signal_job(n, signal.SIGTERM)
    assert rc != 0, err
    assert "unreachable" not in out
    if "Open MPI" not in _library():
        assert rc == 143, err
        assert "received SIGTERM while waiting" in err, err
    assert elapsed < ENDS_WITHIN, f"the job took {elapsed:.1f} s to end after the signal"


def _library() -> str:
    p = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; "
                        "print(MPI.Get_library_version())"], capture_output=True, text=True,
                       env=clean_env(), timeout=BOUND)
    return p.stdout


def test_default_timeout_is_thirty_minutes(monkeypatch):
    from mpicoll import _env
    from mpicoll._wait import timeout_for

    monkeypatch.delenv("MPICOLL_TIMEOUT", raising=False)
    assert _env.Settings().timeout == 1800.0
    monkeypatch.setenv("MPICOLL_TIMEOUT", "0")
    assert _env.Settings().timeout is None
    monkeypatch.setenv("MPICOLL_TIMEOUT", "12.5")
    assert _env.Settings().timeout == 12.5

    class G:
        timeout = 7.0

    assert timeout_for(G()) == 7.0


def test_forked_child_signal_does_not_end_the_rank():
    p, _ = _job(2, "fork_child_sigterm.py")
    assert p.returncode == 0, p.stderr
    assert "rank 0 ok [2.0, 2.0]" in p.stdout and "rank 1 ok [2.0, 2.0]" in p.stdout
    assert "mpicoll watchdog" not in p.stderr
