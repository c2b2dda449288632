#!/bin/bash
# Batch job of tests/slurm/run.sh: which launchers start a correct MPI job, per MPI wheel.
# Usage (inside an allocation): pmi_probe.sh DIR NAME=VENV [NAME=VENV...]
# For each MPI, runs one probe per launcher over every task of the allocation, each under
# `timeout`, and prints a section per probe for check_jobs.py probe:
#   === PROBE <name> | <launcher> | rc=<status>
#   rank R size S host H          one line per process (each writes a file of its own in
#                                 DIR: launchers merge ranks' stdout mid-line)
#   <what the launcher and the ranks printed: the errors>
# MPI is started the way mpicoll starts it (mpicoll/_mpi.py: its settings, then mpi4py):
# under srun --mpi=pmi2 that is the mpich wheel with the OFI netmod, not UCX.
PROBE='import os, socket, sys
from mpicoll._mpi import MPI
c = MPI.COMM_WORLD
with open(os.path.join(sys.argv[1], f"rank.{os.getpid()}"), "w") as f:
    f.write(f"rank {c.Get_rank()} size {c.Get_size()} host {socket.gethostname()}\n")'

n=${SLURM_NTASKS:?not inside an allocation}
dir=${1:?usage: pmi_probe.sh DIR NAME=VENV...}
shift
for spec in "$@"; do
    name=${spec%%=*}
    venv=${spec#*=}
    for launch in "srun --mpi=none" "srun --mpi=pmi2" "srun --mpi=pmix" "mpiexec"; do
        rc=0
        cmd=$launch
        [ "$launch" = mpiexec ] && cmd=$venv/bin/mpiexec   # the MPI's own (Hydra, prterun)
        rm -rf "$dir/probe"
        mkdir -p "$dir/probe"
        out=$(timeout -k 5 90 $cmd -n "$n" "$venv/bin/python" -c "$PROBE" "$dir/probe" 2>&1) \
            || rc=$?
        printf '=== PROBE %s | %s | rc=%s\n' "$name" "$launch" "$rc"
        cat "$dir"/probe/rank.* 2>/dev/null
        printf '%s\n' "$out"
    done
done
rm -rf "$dir/probe"
