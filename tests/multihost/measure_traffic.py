"""Traffic evidence: one mpicoll all_to_all_single across simulated hosts.

Run under mpiexec across hosts (tests/multihost/run.sh does):
``python tests/multihost/measure_traffic.py [BYTES_PER_RANK]``. Each host's first rank
reads the bytes its host interface ($MH_IF, default mpi0) sent while the collective ran;
rank 0 prints one ``MEASURE`` line: what the collective had to move between hosts
(computed from the sizes and the placement of ranks) and what left the hosts' interfaces.
Exits 1 if the result is wrong or fewer bytes crossed than had to.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import mpicoll as dist

IFACE = os.environ.get("MH_IF", "mpi0")


def tx_bytes() -> int:
    return int(Path(f"/sys/class/net/{IFACE}/statistics/tx_bytes").read_text())


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    per_rank = int(sys.argv[1]) if len(sys.argv) > 1 else 16 << 20
    elems = per_rank // 4 // size * size
    blk = elems // size
    host = socket.gethostname()
    hosts = comm.allgather(host)

    send = np.arange(elems, dtype=np.int32) + rank * elems
    recv = np.full(elems, -1, np.int32)
    # the bytes this rank's input sends to ranks on other hosts
    needed = comm.allreduce(sum(blk * 4 for j in range(size) if hosts[j] != host))

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)  # one communicator per host
    leader = local.Get_rank() == 0
    dist.barrier()
    before = tx_bytes() if leader else 0
    dist.all_to_all_single(recv, send)
    dist.barrier()
    crossed = comm.allreduce((tx_bytes() - before) if leader else 0)

    expect = np.concatenate([np.arange(blk, dtype=np.int32) + j * elems + rank * blk
                             for j in range(size)])
    ok = comm.allreduce(bool(np.array_equal(recv, expect)), op=MPI.LAND)
    nhosts = len(set(hosts))
    if rank == 0:
        print(f"MEASURE op=all_to_all_single ranks={size} hosts={nhosts} "
              f"bytes_per_rank={elems * 4} needed={needed} crossed={crossed} "
              f"ratio={crossed / max(needed, 1):.3f} correct={ok} "
              f"placement={','.join(hosts)}", flush=True)
    local.Free()
    return 0 if ok and nhosts > 1 and crossed >= needed else 1


if __name__ == "__main__":
    sys.exit(main())
