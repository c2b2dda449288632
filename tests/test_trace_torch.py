"""torch's own analyzer reads the torch backend's flight-recorder dumps (issue 35).

A torch.distributed job over ``init_process_group("mpicoll")`` in which rank 1 skips an
all_reduce ends on the group's timeout; every rank writes its dump, and
``python -m torch.distributed.flight_recorder.fr_trace DIR -p mpicoll_trace_rank_``
(torch's analyzer, of whichever torch the lane installs) names the collective, the rank
that did not join it, and the call's line. mpicoll's own analyzer says the same.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from _launch import ROOT, clean_env, run

pytest.importorskip("torch")
pytestmark = pytest.mark.spawn

BOUND = 120  # seconds: a hang detector, not a speed assertion


@pytest.mark.parametrize("n", [2, 4])
def test_torch_fr_trace_names_the_rank_that_skipped(n, tmp_path):
    p = run(n, ["tests/scripts/trace_torch_skip.py"], timeout=BOUND,
            MPICOLL_TRACE_DIR=str(tmp_path))
    assert p.returncode != 0 and "unreachable" not in p.stdout, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        f"mpicoll_trace_rank_{r}" for r in range(n)], p.stderr
    fr = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                         str(tmp_path), "-p", "mpicoll_trace_rank_"], cwd=ROOT,
                        env=clean_env(), capture_output=True, text=True, timeout=120,
                        check=False)
    assert fr.returncode == 0, fr.stdout + fr.stderr
    out = fr.stdout + fr.stderr  # (torch 2.13 prints its report through a logger)
    first = out.split("Not all ranks joining collective")[1]  # the world group's report
    assert first.startswith(", sequence number: 3"), out
    assert "group info: 0:default_pg" in first and "collective: nccl:all_reduce" in first
    assert "missing ranks: {1}" in first, out
    assert "all_reduce at " in first and "trace_torch_skip.py:17" in first, out
    ours = subprocess.run([sys.executable, "-m", "mpicoll", "trace", str(tmp_path)], cwd=ROOT,
                          env=clean_env(), capture_output=True, text=True, timeout=60,
                          check=False)
    assert ours.returncode == 3, ours.stdout + ours.stderr
    assert "DIVERGENCE at all_reduce seq 3 on group 0" in ours.stdout
    assert "rank 1 (no record of it)" in ours.stdout, ours.stdout
