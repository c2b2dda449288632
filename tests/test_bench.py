"""`make bench` stays runnable: every collective, every variant, results verified."""

from __future__ import annotations

import json

import pytest
from _launch import run

pytestmark = pytest.mark.spawn


def test_bench_runs_and_verifies_every_collective(tmp_path):
    import torch  # noqa: F401  (the gloo and torch rows need it: a failure, never a skip)

    from mpicoll.bench import _register

    out = tmp_path / "np2.json"
    # the smallest size, one round, gloo included: the benchmark exits non-zero when any
    # variant's result is wrong (each is checked on an output reset to -1 first)
    p = run(2, ["-m", "mpicoll.bench", "--quick", "--rounds", "1", "--max-bytes", "8",
                "--out", str(out)], timeout=240)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = json.loads(out.read_text())["results"]
    assert [r["op"] for r in rows] == list(_register)
    for r in rows:
        assert r["verified"], r
        for key in ("raw_mpi4py", "mpicoll_numpy", "mpicoll_torch", "torch_backend", "gloo"):
            assert r[key] > 0, (r["op"], key)
    assert "| broadcast | 8 | 2 |" in p.stdout
