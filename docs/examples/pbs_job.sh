#!/bin/bash
# mpicoll under PBS Pro / OpenPBS, with the site's MPI. Submit with: qsub docs/examples/pbs_job.sh
#
# One-time setup, on a login node (the module names are your site's):
#   module load gcc openmpi
#   python3 -m venv ~/venvs/mpicoll
#   ~/venvs/mpicoll/bin/pip install --no-binary mpi4py mpi4py   # built against the module's mpicc
#   ~/venvs/mpicoll/bin/pip install -e '/path/to/mpicoll[torch]'  # no "mpich" extra on a cluster
#
#PBS -N mpicoll
#PBS -l select=2:ncpus=32:mpiprocs=4
#PBS -l walltime=00:30:00
#PBS -j oe

set -eo pipefail        # not -u: some sites' module scripts read unset variables

module load gcc openmpi                           # the same modules mpi4py was built with
source ~/venvs/mpicoll/bin/activate
cd "$PBS_O_WORKDIR"

NRANKS=$(wc -l < "$PBS_NODEFILE")                 # one line per MPI process (mpiprocs)
export OMP_NUM_THREADS=8                          # ncpus / mpiprocs
export MPICOLL_TIMEOUT=600                        # report a stuck collective, then end the job

mpiexec -n 1 python -m mpicoll info
# the site's mpiexec reads the node list from PBS (some need: --hostfile "$PBS_NODEFILE")
mpiexec -n "$NRANKS" python examples/ddp_train.py
