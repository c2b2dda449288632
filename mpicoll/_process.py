"""Process state that is not about a group: node-local rank, availability, defaults."""

from __future__ import annotations

import os
from datetime import timedelta

from ._env import DEFAULT_TIMEOUT

# where launchers put a process's rank on its node, in the order they are trusted
_LOCAL_RANK_VARS = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                    "SLURM_LOCALID", "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID")


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node, from the launcher's environment: torchrun's
    ``LOCAL_RANK``, else MPICH's, Open MPI's, Slurm's, PMI's or PALS's variable; else
    ``fallback_rank``.

    Raises:
        RuntimeError: none is set and no ``fallback_rank`` was given (as torch).
    """
    for var in _LOCAL_RANK_VARS:
        value = os.environ.get(var)
        if value is not None:
            return int(value)
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("get_node_local_rank: no launcher set a node-local rank (expected one "
                       f"of {', '.join(_LOCAL_RANK_VARS)} in the environment) and no "
                       "fallback_rank was given")


def is_available() -> bool:
    """Whether the distributed package is available: True (MPI is)."""
    return True


# torch's default collective timeout, and mpicoll's watchdog's (MPICOLL_TIMEOUT)
default_pg_timeout = timedelta(seconds=DEFAULT_TIMEOUT)
