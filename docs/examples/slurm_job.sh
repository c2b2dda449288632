#!/bin/bash
# mpicoll under Slurm, with the site's MPI. Submit with: sbatch docs/examples/slurm_job.sh
#
# One-time setup, on a login node (the module names are your site's):
#   module load gcc openmpi                       # or: cray-mpich, intel-mpi, mvapich2, ...
#   python3 -m venv ~/venvs/mpicoll
#   ~/venvs/mpicoll/bin/pip install --no-binary mpi4py mpi4py   # built against the module's mpicc
#   ~/venvs/mpicoll/bin/pip install -e '/path/to/mpicoll[torch]'  # no "mpich" extra on a cluster
#
#SBATCH --job-name=mpicoll
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --time=00:30:00
#SBATCH --output=%x-%j.out

set -eo pipefail        # not -u: some sites' module scripts read unset variables

module load gcc openmpi                           # the same modules mpi4py was built with
source ~/venvs/mpicoll/bin/activate

# one rank per task: let each use its own cores, not every core of the node
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}

# a collective stuck for 10 minutes reports where it is stuck, then ends the job
export MPICOLL_TIMEOUT=600

# check once that mpi4py uses the site's MPI (library, version, GPU-awareness)
srun --ntasks=1 --nodes=1 python -m mpicoll info

# srun starts the ranks (use --mpi=pmix or --mpi=pmi2 if your site needs it);
# mpicoll takes rank and size from MPI, and mpicoll.torch exports MASTER_ADDR/PORT
cd "$SLURM_SUBMIT_DIR"
srun python examples/ddp_train.py
