"""Jobs spread over the simulated hosts of tests/multihost/run.sh, started from one process.

Not collected by ``pytest tests`` (the name does not start with ``test_``); run.sh runs it as
``pytest tests/multihost/check_multihost.py`` with MH_MPIEXEC (Hydra with the namespace
launcher, without -hosts), MH_NHOSTS and MH_NET set. The seed examples' documented outputs
are checked by tests/test_examples.py itself, which run.sh points at the same hosts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for _launch
from _launch import run_per_rank

BASE = os.environ.get("MH_MPIEXEC", "")
NHOSTS = int(os.environ.get("MH_NHOSTS", "2"))
NET = os.environ.get("MH_NET", "10.231.77")

pytestmark = [pytest.mark.spawn,
              pytest.mark.skipif(not BASE, reason="needs the simulated cluster of run.sh")]

PROBE = """
import socket
from mpi4py import MPI
c = MPI.COMM_WORLD
local = c.Split_type(MPI.COMM_TYPE_SHARED)
name = socket.gethostname()
print(f"host={name} addr={socket.gethostbyname(name)} proc={MPI.Get_processor_name()} "
      f"local_size={local.Get_size()}", flush=True)
"""


def _use(monkeypatch: pytest.MonkeyPatch, hosts: str) -> None:
    monkeypatch.setenv("MPIEXEC", f"{BASE} -hosts {hosts}")


def _fields(line: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in line.split())


@pytest.mark.parametrize("per_host", [1, 2])
def test_ranks_land_on_distinct_hosts(monkeypatch, per_host):
    """Each host has its own hostname and address; MPI sees one shared-memory node per host."""
    hosts = ",".join(f"h{i}:{per_host}" for i in range(1, NHOSTS + 1))
    _use(monkeypatch, hosts)
    n = NHOSTS * per_host
    p, out = run_per_rank(n, ["-c", PROBE], timeout=120)
    assert p.returncode == 0, p.stderr
    seen = [_fields(out[r].strip()) for r in range(n)]
    for r, f in enumerate(seen):
        host = f"h{r // per_host + 1}"  # Hydra fills each host's slots in order
        assert f == {"host": host, "addr": f"{NET}.{host[1:]}", "proc": host,
                     "local_size": str(per_host)}, (r, f)


@pytest.mark.parametrize("master_addr", ["resolved", "MPICOLL_MASTER_ADDR"])
def test_ddp_one_rank_per_host(monkeypatch, master_addr):
    """examples/ddp_train.py with one rank per host: identical parameters everywhere.

    The torch backend's rendezvous store runs on rank 0's host: found by resolving rank 0's
    hostname, or given by MPICOLL_MASTER_ADDR (h1's address on the bridge).
    """
    base = BASE
    if master_addr == "MPICOLL_MASTER_ADDR":
        base += f" -genv MPICOLL_MASTER_ADDR {NET}.1"
    monkeypatch.setenv("MPIEXEC", f"{base} -hosts " + ",".join(
        f"h{i}" for i in range(1, NHOSTS + 1)))
    p, out = run_per_rank(NHOSTS, ["examples/ddp_train.py"], timeout=300)
    assert p.returncode == 0, p.stderr
    checksums = set()
    for r in range(NHOSTS):
        line = next(x for x in out[r].splitlines() if x.startswith(f"rank {r}/{NHOSTS}: "))
        loss = float(line.split("final loss ")[1].split()[0])
        assert loss < 0.1, line
        checksums.add(line.split("checksum ")[1])
    assert len(checksums) == 1, checksums

