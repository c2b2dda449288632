"""Reproducer (pure mpi4py, no mpicoll) for a hang of MPI_ANY_SOURCE receives on the UCX netmod.

Every rank but 0 sends one small message to rank 0, which receives them with
``Recv(source=ANY_SOURCE)``. With the pip ``mpich`` 5.0.2 wheel (ch4:ucx, UCX 1.20.1), when
two or more of those messages travel through the UCX netmod (ranks on other hosts), rank 0
often gets the first and then waits forever. Seen with the simulated hosts of run.sh and on
one machine without namespaces (``MPIR_CVAR_NOLOCAL=1`` sends everything through UCX):

    timeout 20 mpiexec -genv MPIR_CVAR_NOLOCAL 1 -n 4 python tests/multihost/anysource_repro.py

hangs in some runs (2 of 6 here; across the simulated hosts of run.sh, 1 rank on each of
4 hosts: 3 of 3), with UCX_TLS=self,tcp, self,sm or all alike. Receives from a
named source, Probe(ANY_SOURCE) then Recv(source), senders that arrive one at a time, the
ofi netmod (``MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp``) and shared memory alone all work.
Usage: python anysource_repro.py [any|specific|probe]
"""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mode = sys.argv[1] if len(sys.argv) > 1 else "any"
comm.Barrier()
if rank == 0:
    got = []
    for i in range(1, size):
        buf, st = np.zeros(1), MPI.Status()
        if mode == "specific":
            comm.Recv(buf, source=i, tag=0, status=st)
        elif mode == "probe":
            comm.Probe(MPI.ANY_SOURCE, 0, st)
            comm.Recv(buf, source=st.Get_source(), tag=0, status=st)
        else:
            comm.Recv(buf, source=MPI.ANY_SOURCE, tag=0, status=st)
        got.append(st.Get_source())
        print(f"rank 0 got a message from {st.Get_source()}", flush=True)
    assert sorted(got) == list(range(1, size))
else:
    comm.Send(np.array([float(rank)]), dest=0, tag=0)
comm.Barrier()
if rank == 0:
    print(f"{mode}: all {size - 1} messages received", flush=True)
