"""[3] Native or fallback: whether ``*_init`` uses the MPI library's persistent collectives."""

from __future__ import annotations

from .._env import flag
from .._mpi import MPI


def choose() -> tuple[bool, str]:
    """Whether to use the library's ``MPI_*_init`` calls, and why (see
    :func:`~mpicoll._collectives._persistent.available`, which keeps the answer).

    Returns:
        (use, why): ``MPICOLL_PERSISTENT`` when set, else whether the library reports
        MPI 4.0 or later; ``why`` says which, with the library's MPI version.
    """
    forced = flag("MPICOLL_PERSISTENT", None)
    version = "{}.{}".format(*MPI.Get_version())
    if forced is not None:
        return (forced, f"{'forced' if forced else 'off'} by "
                f"MPICOLL_PERSISTENT={int(forced)}; MPI {version}")
    if MPI.Get_version() >= (4, 0):
        return (True, f"MPI {version}: MPI_*_init, restarted with MPI_Start")
    return (False, f"MPI {version} has no persistent collectives: the *_init "
            "calls restart the ordinary nonblocking call; MPICOLL_PERSISTENT=1 "
            "uses the library's MPI_*_init where it has them")
