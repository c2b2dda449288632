"""What the watchdog says: a notice while a wait goes on (long before the timeout ends
the job), the last completed operations from the flight recorder (those finished without
a wait too), and where each rank of the group is when they disagree on the collective."""

from __future__ import annotations

import re

import pytest
from _launch import run

pytestmark = pytest.mark.spawn

BOUND = 90  # seconds: a hang detector, not a speed assertion


def test_a_long_wait_is_noticed_while_the_job_goes_on():
    p = run(2, ["tests/scripts/slow_peer.py", "3.5"], timeout=BOUND, MPICOLL_NOTICE="1")
    assert p.returncode == 0, p.stderr
    for rank in (0, 1):
        assert f"rank {rank}: done [4.0, 4.0, 4.0]" in p.stdout, p.stdout
    notices = [line for line in p.stderr.splitlines() if "still waiting" in line]
    # after 1 s, and not again before 1 + 4 s: the late rank came at 3.5 s
    assert len(notices) == 1, p.stderr
    assert notices[0].startswith("mpicoll: rank 0 still waiting in all_reduce #2 on group "
                                 "'0' (global ranks [0, 1])"), notices[0]
    # (the monitor's readings, rounded: a notice due at 1 s of the 30 min timeout)
    said = re.search(r"for (\d+) s; the job ends at its timeout in (\d+) s", notices[0])
    assert said and 1 <= int(said[1]) <= 2 and 1798 <= int(said[2]) <= 1799, notices[0]
    assert ("ranks of the group: not arrived: global rank 1 (issued 1 collective(s) on this "
            "group)") in notices[0], notices[0]


def test_no_notice_when_turned_off():
    p = run(2, ["tests/scripts/slow_peer.py", "2"], timeout=BOUND, MPICOLL_NOTICE="0")
    assert p.returncode == 0, p.stderr
    assert "still waiting" not in p.stderr, p.stderr


def test_report_names_the_other_collective_and_the_operations_that_completed():
    p = run(2, ["tests/scripts/diverge.py"], timeout=BOUND, MPICOLL_TIMEOUT="3")
    assert p.returncode != 0 and "unreachable" not in p.stdout, p.stdout + p.stderr
    err = p.stderr
    # each rank says what the other issued as #8 (the report that ends the job may be
    # either rank's, or both)
    assert ("in another collective: global rank 1 issued gather as #8 (this rank: "
            "all_reduce #8)" in err or "in another collective: global rank 0 issued "
            "all_reduce as #8 (this rank: gather #8)" in err), err
    assert "arrived: global ranks" not in err, err
    lines = err.splitlines()
    at = next(i for i, line in enumerate(lines) if "last completed operations" in line)
    done = [line.strip() for line in lines[at + 1:at + 8]]
    assert [line.split(" on ")[0] for line in done] == \
        [f"all_reduce #{k}" for k in range(1, 7)] + ["broadcast #7"], done


@pytest.mark.parametrize("how", ["first", "warm", "async"])
@pytest.mark.parametrize("call", ["gather", "reduce"])
def test_report_names_the_root_each_rank_takes_where_they_differ(call, how):
    # each rank takes itself for the root: both wait in the same call, and before, the
    # report said only "arrived: global ranks [1]" (and where the peer's wait was the
    # core's or an async one, it still did: its wait holds no MPI arguments to read the
    # root from; its flight record does)
    p = run(2, ["tests/scripts/roots_differ.py", call, how], timeout=BOUND,
            MPICOLL_TIMEOUT="3")
    assert p.returncode != 0 and "unreachable" not in p.stdout, p.stdout + p.stderr
    err = p.stderr
    said = [f"arrived with another root: global rank {1 - me} takes group rank {1 - me} "
            f"(this rank takes group rank {me}: every rank must pass the same root)"
            for me in (0, 1)]
    seq = 5 if how == "warm" else 3
    # (the time waited is the monitor's reading: its 50 ms tick, later on a loaded machine)
    stuck = re.search(rf"stuck for (\d+\.\d) s \(timeout 3 s\) in {call} #{seq} on group", err)
    assert stuck and float(stuck[1]) >= 3.0, err
    assert any(f"watchdog: ranks of the group: {s}" in err for s in said), err
    # (a run of kept messages numbers its group once finished: a peer waiting in one
    # was reported "not arrived ... (issued 4 collective(s) on this group)")
    assert "arrived: global ranks" not in err and "not arrived" not in err, err
