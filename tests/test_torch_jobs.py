"""torch jobs that cannot run as launched, or cannot finish, end on every process with a
message that says why: torchrun and hand launches (mpicoll's ranks come from MPI), and a
future's callback that waits for ever, under the timeout's rule (the one given to
``init_process_group`` wins, then ``MPICOLL_TIMEOUT``, then torch's 30 minutes)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from _launch import ROOT, clean_env, run

pytestmark = pytest.mark.spawn

BOUND = 90  # seconds: a hang detector, not a speed assertion
REFUSAL = "MPI sees a job of 1 process: mpicoll's ranks come from MPI"


def test_torchrun_is_refused():
    # torchrun ends its other workers as soon as one fails, so the second process may be
    # stopped before it gets to say so: each process that got that far refused, at least
    # one did, and none went on alone (every process refuses by itself: the hand-launched
    # test below, where nothing stops the others)
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "tests/scripts/torch_launch.py"],
                       cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                       timeout=BOUND, check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    said = [rank for rank in (0, 1) if
            f"mpicoll: torchrun says this is rank {rank} of WORLD_SIZE=2, but {REFUSAL}" in out]
    assert said, out
    assert "`mpiexec -n 2 python script.py`" in out, out
    assert " of 1" not in p.stdout, out  # no process went on alone


@pytest.mark.parametrize("by", ["the environment", "torchrun"])
def test_hand_launch_is_refused_on_every_process(by):
    # (``torchrun``: the variable torchrun's workers have, without torchrun, which would
    # stop the second process once the first fails)
    extra = {"TORCHELASTIC_RUN_ID": "none"} if by == "torchrun" else {}
    procs = [subprocess.Popen([sys.executable, "tests/scripts/torch_launch.py"], cwd=ROOT,
                              env=clean_env(RANK=str(r), WORLD_SIZE="2",
                                            MASTER_ADDR="127.0.0.1", MASTER_PORT="1",
                                            **extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in (0, 1)]
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=BOUND)
        assert p.returncode != 0, out + err
        assert f"mpicoll: {by} says this is rank {r} of WORLD_SIZE=2, but {REFUSAL}" in err, err
        assert " of 1" not in out


def test_one_process_under_torchrun_runs():
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "1", "tests/scripts/torch_launch.py"],
                       cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                       timeout=BOUND, check=False)
    assert p.returncode == 0 and "rank 0 of 1" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize(("given", "env", "expected"), [
    ("-", "3", 3),  # torch hands its default: MPICOLL_TIMEOUT applies
    ("2", "600", 2),  # the timeout given to init_process_group wins
])
def test_callback_that_can_never_complete_ends_at_the_timeout(given, env, expected):
    p = run(2, ["tests/scripts/torch_stuck_callback.py", given, "token"], timeout=BOUND,
            MPICOLL_TIMEOUT=env)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "rank 0: past the callback" not in p.stdout
    assert "unreachable" not in p.stdout
    # (the time waited is the monitor's reading: its 50 ms tick, later on a loaded machine)
    stuck = re.search(rf"mpicoll watchdog: rank 0 stuck for (\d+\.\d) s \(timeout {expected} s\) "
                      r"in all_reduce #2 on group '0'", p.stderr)
    assert stuck and float(stuck[1]) >= expected, p.stderr
    assert "not arrived: global rank 1" in p.stderr, p.stderr


def test_a_thread_level_below_multiple_starts_no_progress_thread():
    # the user asked MPI for MPI_THREAD_SERIALIZED: mpicoll's progress threads would call
    # MPI beside the caller's thread (they did); the futures complete when made instead
    p = run(2, ["tests/scripts/serialized_level.py"], timeout=BOUND)
    assert p.returncode == 0, p.stdout + p.stderr
    for rank in (0, 1):
        assert f"rank {rank}: ok" in p.stdout, p.stdout + p.stderr
