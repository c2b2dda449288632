"""Issue 52's mistakes as a user's job makes them (tests/scripts/mistakes.py: over
torch.distributed on the "mpicoll" backend, default settings), where only a job of
several ranks shows them: no rank returns a wrong result."""

from __future__ import annotations

import re

import pytest
from _launch import run_per_rank

pytestmark = pytest.mark.spawn

BOUND = 120  # seconds: a hang detector, not a speed assertion


@pytest.mark.parametrize("n", [3, 4])
def test_a_chunk_left_over_from_a_root_that_differed_is_refused(n):
    # scatter #1 from rank 0 on rank 0, from rank 1 on the others: ranks 0 and 1 raise
    # (each took itself for the root), the others return rank 1's chunk, right for the call
    # they made, and the chunk rank 0 sent each of them stays queued. Then every rank
    # scatters from rank 0. Before, ranks 2.. received that chunk in place of their data
    # and returned it; now its tag says which call sent it, and they raise
    p, out = run_per_rank(n, ["tests/scripts/mistakes.py", "mpicoll", "scatter-root"],
                          timeout=BOUND, MPICOLL_TIMEOUT="20")
    said = {r: re.search(rf"MESSAGE {r} (.*)", out.get(r, "")) for r in range(n)}
    assert all(f"OUTCOME {r} SignatureMismatch" in out.get(r, "") and said[r]
               for r in range(n)), (out, p.stderr)
    for me in (0, 1):
        assert said[me][1].startswith("scatter #1: the ranks disagree on the root: "
                                      f"rank {me} and rank {1 - me} each took itself"), \
            said[me][1]
    for me in range(2, n):
        assert said[me][1].startswith(
            f"scatter #2: rank 0's message to rank {me} belongs to another call: rank 0 "
            "sent it at its call #1 on the group (or 16, 32, ... calls before it"), \
            said[me][1]
