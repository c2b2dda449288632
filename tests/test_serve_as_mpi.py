"""torch's "mpi" name served by mpicoll on a torch without MPI
(``mpicoll.torch.serve_as_mpi``, or ``MPICOLL_SERVE_AS_MPI=1``), only on opt-in; on
every torch lane (2.13 and the newest)."""

from __future__ import annotations

import pytest
from _launch import run, run_per_rank

pytestmark = pytest.mark.spawn


@pytest.mark.parametrize("how", ["call", "env"])
def test_torch_mpi_name_served_by_mpicoll(how):
    # 3 ranks: the subgroup [0, 1] leaves one rank out
    res = run(3, ["tests/scripts/serve_as_mpi.py", how], timeout=180,
              **({"MPICOLL_SERVE_AS_MPI": "1"} if how == "env" else {}))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    for r in range(3):
        assert f"rank {r}: mpi over mpicoll ok" in res.stdout, res.stdout


def test_the_stand_in_is_opt_in():
    res, out = run_per_rank(2, ["-c", "import torch.distributed as d, mpicoll.torch; "
                                "print('available', d.is_mpi_available())"], timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert [out[r].strip() for r in range(2)] == ["available False"] * 2, out
