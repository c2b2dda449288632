"""Where MPI starts: the MPI library's environment settings, then ``mpi4py.MPI``.

Every module of mpicoll imports MPI from here, so these settings are made
exactly when MPI is started, never by ``import mpicoll``:

- Open MPI 5's AVX reduction kernels saturate 8- and 16-bit integer sums
  (100 + 100 gives 127) where C, numpy, torch and MPICH wrap (-56). If MPI is not
  started yet and the user has not chosen, that component is left out (an
  Open MPI setting that other MPIs ignore); otherwise mpicoll sums those dtypes
  in 32 bits instead.
"""

from __future__ import annotations

import os
import sys

if "mpi4py.MPI" not in sys.modules and "OMPI_MCA_op" not in os.environ:
    os.environ["OMPI_MCA_op"] = "^avx"

from mpi4py import MPI  # noqa: E402  (after the settings above, on purpose)

__all__ = ["MPI"]
