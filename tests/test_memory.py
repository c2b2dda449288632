"""Memory stays flat when signatures keep changing: 100,000 calls whose split sizes,
shapes, list sizes and roots change every time, on numpy and torch, on groups made and
destroyed as they go (tests/scripts/soak.py), 2 ranks. Before the quick paths' tables
were bounded, each rank grew by about 100 MiB over this run."""

from __future__ import annotations

import re

import pytest
from _launch import run

pytestmark = pytest.mark.spawn

GROWTH_MIB = 16  # after the warm-up (the first tenth of the calls), per rank


def test_resident_memory_stays_flat_under_changing_signatures():
    p = run(2, ["tests/scripts/soak.py", "100000"], timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    found = re.findall(r"rank (\d): resident after warm-up ([\d.]+) MiB, at the end ([\d.]+) MiB",
                       p.stdout)
    assert sorted(r for r, _, _ in found) == ["0", "1"], p.stdout
    for rank, warm, end in found:
        assert float(end) - float(warm) < GROWTH_MIB, (rank, warm, end)
