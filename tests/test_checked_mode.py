"""Cross-rank disagreement: checked mode raises the same error on every rank;
without it, MPI's own errors surface as mpicoll exceptions or the watchdog ends the job."""

from __future__ import annotations

import re
import time

import pytest
from _launch import run, run_per_rank

from mpicoll._start import is_open_mpi

pytestmark = pytest.mark.spawn

CASES = {
    "splits": "group rank 0 expects 2 elements from group rank 1, which sends it 1 (output "
              "split sizes on rank 0 must match input split sizes on its peers)",
    "dtype": "dtype differs: group rank(s) [0] have 'float32'; group rank(s) [1, 2] have "
             "'float64'",
    "op": "reduce_op differs: group rank(s) [0] have 'SUM'; group rank(s) [1, 2] have 'MAX'",
    "root": "root differs: group rank(s) [0] have 0; group rank(s) [1, 2] have 1",
    "collective": "different collectives called at the same point: group rank(s) [0] have "
                  "'all_reduce'; group rank(s) [1, 2] have 'broadcast'",
    "gather_counts": "the root (group rank 0) expects 2 elements for group rank 1, which has 3",
    "skip_barrier": "different collectives called at the same point: group rank(s) [0, 2] "
                    "have 'all_reduce'; group rank(s) [1] have 'barrier'",
}


@pytest.mark.parametrize("case", list(CASES))
def test_checked_mode_same_error_on_every_rank(case):
    p, out = run_per_rank(3, ["tests/scripts/disagree.py", case], timeout=60,
                          MPICOLL_CHECK="1", MPICOLL_TIMEOUT="20")
    assert p.returncode == 0, p.stderr
    expected = ("SignatureMismatch: checked mode: ranks disagree at collective #1 on the group "
                f"of global ranks [0, 1, 2]: {CASES[case]}")
    for r in range(3):
        assert out[r].strip() == f"rank {r}: {expected}"


def test_unchecked_truncation_surfaces_as_size_mismatch():
    # without checked mode, the counts that travel beside the data (docs/errors.md) name
    # the disagreement on every MPI: MPICH's Igatherv drops the truncation error, Open
    # MPI reports it (then it is the SizeMismatch's cause)
    p, out = run_per_rank(3, ["tests/scripts/disagree.py", "gather_counts"], timeout=60,
                          MPICOLL_TIMEOUT="20")
    assert p.returncode == 0, p.stderr
    assert out[0].startswith("rank 0: SizeMismatch: gather: the ranks disagree on sizes: "
                             "rank 1 sends 3 elements, and gather_list[1] on the root "
                             "(rank 0) holds 2"), out[0]
    for r in (1, 2):  # they sent what they meant to: their own outputs are not wrong
        assert out[r].startswith(f"rank {r}: ok"), out[r]


def test_unchecked_different_collectives_as_messages_raise_on_every_rank():
    # all_reduce on rank 0, broadcast elsewhere, 4 elements: rank 0's messages reach the
    # others where the root's data should, theirs (acknowledgements) reach rank 0 where
    # its peers' blocks should; every tag says which collective sent it
    p, out = run_per_rank(3, ["tests/scripts/disagree.py", "collective"], timeout=60,
                          MPICOLL_TIMEOUT="20")
    assert p.returncode == 0, p.stderr
    assert out[0].startswith("rank 0: SignatureMismatch: all_reduce #1: rank 1 made another "
                             "call than rank 0 at the same point: collective: 'broadcast' "
                             "there, 'all_reduce' here"), out[0]
    for r in (1, 2):
        assert out[r].startswith(f"rank {r}: SignatureMismatch: broadcast #1: rank 0 made "
                                 f"another call than rank {r} at the same point: collective: "
                                 "'all_reduce' there, 'broadcast' here"), out[r]


def test_unchecked_skipped_collective_raises_at_the_barrier_on_every_rank():
    # rank 1 skips an all_reduce; the others' all_reduce meets its barrier, whose
    # messages' tags say barrier: each rank raises there, where MPI's barrier waited
    # until the watchdog ended the job (not on Open MPI: there a barrier is MPI's)
    if is_open_mpi():  # (this process's MPI: the one its jobs run on)
        pytest.skip("on Open MPI a barrier is MPI's: a receive of nothing cut short there "
                    "overwrites memory (mpicoll/_collectives/barrier.py)")
    p, out = run_per_rank(3, ["tests/scripts/disagree.py", "skip_barrier"], timeout=60,
                          MPICOLL_TIMEOUT="20")
    assert p.returncode == 0, p.stderr
    for r in (0, 2):
        assert out[r].startswith(f"rank {r}: SignatureMismatch: all_reduce #1: rank 1 made "
                                 f"another call than rank {r} at the same point: collective: "
                                 "'barrier' there, 'all_reduce' here."), out[r]
    assert out[1].startswith("rank 1: SignatureMismatch: barrier #1: rank 0 made another "
                             "call than rank 1 at the same point: collective: 'all_reduce' "
                             "there, 'barrier' here. Rank 1 did not wait for the others"), out[1]


def test_unchecked_different_collectives_end_in_watchdog_report():
    start = time.monotonic()
    # generous enough that a slow start-up on a loaded machine is not mistaken for a hang;
    # 1024 elements: MPI's own collectives, whose messages carry no signature
    p = run(3, ["tests/scripts/disagree.py", "collective_large"], timeout=90,
            MPICOLL_TIMEOUT="8")
    assert p.returncode != 0
    # whichever stuck rank's watchdog fires first reports its own operation
    assert re.search(r"mpicoll watchdog: rank \d stuck for [\d.]+ s \(timeout 8 s\) in "
                     r"(all_reduce|broadcast) #1 on group '0'", p.stderr), p.stderr
    assert time.monotonic() - start < 60


def test_skipped_collective_watchdog_names_the_operation():
    start = time.monotonic()
    p = run(3, ["tests/scripts/skip_collective.py"], timeout=90, MPICOLL_TIMEOUT="8")
    assert p.returncode != 0
    assert "unreachable" not in p.stdout
    assert "(timeout 8 s) in all_reduce #2 on group '0' (global ranks [0, 1, 2]), " \
           "args: float32[16]" in p.stderr
    assert "last completed operations (oldest first):\n  barrier #1" in p.stderr
    # the stuck ranks ask their peers' monitor threads how far they got
    assert "ranks of the group: not arrived: global rank 1 (issued 1 collective(s) on " \
           "this group); arrived: global ranks [" in p.stderr, p.stderr
    assert time.monotonic() - start < 60


def test_killed_rank_ends_the_job():
    start = time.monotonic()
    # no watchdog (MPICOLL_TIMEOUT=0 disables it): the MPI runtime itself must notice the
    # dead rank and end the survivors, which wait in all_reduce for it. It takes about a
    # second; the bound is half the kill timeout, so a job that only ended late (or never)
    # fails here, while a slow start-up on a loaded machine is not mistaken for a hang.
    p = run(3, ["tests/scripts/sigkill_one_rank.py"], timeout=120, MPICOLL_TIMEOUT="0")
    elapsed = time.monotonic() - start
    assert p.returncode != 0
    assert "unreachable" not in p.stdout
    assert "stuck for" not in p.stderr  # ended by MPI, not by a timeout
    # Open MPI's launcher ends the survivors with SIGTERM, which mpicoll reports
    for line in p.stderr.splitlines():
        if line.startswith("mpicoll watchdog:") and "received" in line:
            assert "received SIGTERM while waiting" in line and "in all_reduce #2" in line
    assert elapsed < 60, f"the job took {elapsed:.1f} s to end after a rank was killed"


@pytest.mark.parametrize("how", ["exit", "sleep"])
def test_checked_mode_ends_the_job_where_a_peer_never_comes(how):
    # checked mode's signature exchange was mpi4py's blocking allgather, which no
    # watchdog watched: both jobs waited for ever
    start = time.monotonic()
    p = run(3, ["tests/scripts/checked_peer_gone.py", how], timeout=90, MPICOLL_CHECK="1",
            MPICOLL_TIMEOUT="5")
    assert p.returncode != 0 and "unreachable" not in p.stdout, p.stdout + p.stderr
    # (the time waited is the monitor's reading: its 50 ms tick, later on a loaded machine)
    said = (r"global rank 1 left the job after 1 collective\(s\) on this group; this is "
            r"collective #2" if how == "exit" else
            r"stuck for (\d+\.\d) s \(timeout 5 s\) in all_reduce #2 on group '0'")
    found = re.search(said, p.stderr)
    assert found and (how == "exit" or float(found[1]) >= 5.0), p.stderr
    assert time.monotonic() - start < 60
