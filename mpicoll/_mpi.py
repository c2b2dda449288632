"""Where MPI starts: the MPI library's environment settings, then ``mpi4py.MPI``.

Every module of mpicoll imports MPI from here, so these settings are made
exactly when MPI is started, never by ``import mpicoll``:

- Open MPI 5's AVX reduction kernels saturate 8- and 16-bit integer sums
  (100 + 100 gives 127) where C, numpy, torch and MPICH wrap (-56). If MPI is not
  started yet and the user has not chosen, that component is left out (an
  Open MPI setting that other MPIs ignore); otherwise mpicoll sums those dtypes
  in 32 bits instead.
- Under ``srun --mpi=pmi2`` with the ``mpich`` wheel, MPICH's default network
  module (UCX) publishes a ~4.5 KB address through PMI in ~1 KB ``put`` lines
  whose length depends on the bytes in them; Slurm's pmi2 plugin (22.05 at
  least) reads a PMI-1 request with one 1024-byte ``read``, so a longer line is
  cut in two, its key is lost and every rank waits in ``MPI_Init`` until the
  job's time limit. The OFI module's address is ~70 bytes, so mpicoll chooses
  it there when the user has not chosen (``MPIR_CVAR_CH4_NETMOD``), and says so
  in ``python -m mpicoll info``. See docs/hpc.md.
- Open MPI's nonblocking collectives (libnbc) pick their algorithms apart from the
  blocking ones, and two measured slow from 64 KiB (2 and 4 ranks; every mpicoll
  collective is nonblocking): ``Ireduce``'s chain (1.3-3.1x the blocking ``Reduce``;
  libnbc's binomial tree 0.84-1.11x), and ``Iallreduce`` in place, which libnbc makes as a
  binomial reduce and broadcast (1.3-3.1x the blocking in-place ``Allreduce`` up to
  64 MiB; its Rabenseifner algorithm 1.00-1.14x). Where the user has not chosen, mpicoll
  chooses those (``LIBNBC_CHOSEN``; an Open MPI setting that other MPIs ignore; ``python
  -m mpicoll info`` says so).
"""

from __future__ import annotations

import os
import sys

if "mpi4py.MPI" not in sys.modules and "OMPI_MCA_op" not in os.environ:
    os.environ["OMPI_MCA_op"] = "^avx"

# why mpicoll chose MPICH's network module (None: it did not)
NETMOD_CHOICE: str | None = None

# Open MPI's libnbc algorithms mpicoll chose: collective -> algorithm (not those the user
# set, nor any when MPI was already up)
LIBNBC_CHOSEN: dict[str, str] = {}
for _call, _algorithm in (("ireduce", "binomial"), ("iallreduce", "rabenseifner")):
    if "mpi4py.MPI" not in sys.modules and \
            f"OMPI_MCA_coll_libnbc_{_call}_algorithm" not in os.environ:
        os.environ[f"OMPI_MCA_coll_libnbc_{_call}_algorithm"] = _algorithm
        LIBNBC_CHOSEN[_call] = _algorithm


def _mpich_wheel_under_slurm_pmi2() -> bool:
    """Whether MPI is about to start as the ``mpich`` wheel under ``srun --mpi=pmi2``."""
    if os.environ.get("SLURM_MPI_TYPE") != "pmi2" or "PMI_FD" not in os.environ:
        return False
    if os.environ.get("MPI4PY_LIBMPI") or os.environ.get("MPI4PY_MPIABI", "mpich") != "mpich":
        return False
    # mpi4py loads the libmpi of its own prefix first: the mpich wheel's is libmpi.so.12
    return os.path.exists(os.path.join(sys.prefix, "lib", "libmpi.so.12"))


if ("mpi4py.MPI" not in sys.modules and "MPIR_CVAR_CH4_NETMOD" not in os.environ
        and _mpich_wheel_under_slurm_pmi2()):
    os.environ["MPIR_CVAR_CH4_NETMOD"] = "ofi"
    NETMOD_CHOICE = ("ofi, chosen by mpicoll: the default UCX address overflows the "
                     "1024-byte PMI requests of srun --mpi=pmi2 (set "
                     "MPIR_CVAR_CH4_NETMOD to choose)")

from mpi4py import MPI  # noqa: E402  (after the settings above, on purpose)

__all__ = ["LIBNBC_CHOSEN", "MPI", "NETMOD_CHOICE"]
