"""Checked mode's exchange of signatures (``_checkmode._allgathered``): every rank's
object in group rank order, whether its pickle fits the first exchange's rows or needs
the second one, and whatever size each rank's is."""

from __future__ import annotations

import pytest

from mpicoll import _checkmode


@pytest.mark.parametrize("lengths", [(0, 3), (1200, 5), (5, 3000), (20000, 20000)],
                         ids=["fit", "rank0-longer", "others-longer", "all-longer"])
def test_every_rank_receives_every_signature_in_rank_order(lengths, rank, size, group):
    mine = {"op": "all_to_all_single", "rank": rank,
            "counts": list(range(lengths[min(rank, 1)]))}
    got = _checkmode._allgathered("all_to_all_single", group, mine)
    assert got == [{"op": "all_to_all_single", "rank": r,
                    "counts": list(range(lengths[min(r, 1)]))} for r in range(size)]
