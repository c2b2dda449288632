"""Where MPI starts on first use, and the hooks that run when it does.

The layers above register what must happen once MPI is up (the lifecycle installs
its exit sequence, its abort hook and its signal handling) with :func:`on_start`;
this module never imports them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

_hooks: list[Callable[[Any], None]] = []
_started = False


def on_start(hook: Callable[[Any], None]) -> None:
    """Run ``hook(MPI)`` once, when :func:`mpi` first starts MPI (at once if it has)."""
    _hooks.append(hook)
    if _started:
        hook(mpi())


def mpi() -> Any:
    """``mpi4py.MPI``, started (with the start hooks run) on the first call."""
    global _started
    from ._mpi import MPI  # lazy: importing mpicoll._mpi starts MPI

    if not _started:
        _refuse_a_world_mpi_cannot_see(MPI)
        _started = True
        for hook in _hooks:
            hook(MPI)
    return MPI


def _refuse_a_world_mpi_cannot_see(MPI: Any) -> None:
    """Raise where MPI sees one process but the environment names a larger job: torchrun
    (or processes started by hand with ``RANK``/``WORLD_SIZE``) made processes that MPI
    never joined, and each would go on as a job of one, silently."""
    env = os.environ
    try:
        world = int(env.get("WORLD_SIZE", "1"))
    except ValueError:
        return
    if world <= 1 or MPI.COMM_WORLD.Get_size() != 1:
        return
    by = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "the environment"
    raise RuntimeError(
        f"mpicoll: {by} says this is rank {env.get('RANK', '?')} of WORLD_SIZE={world}, but "
        f"MPI sees a job of 1 process: mpicoll's ranks come from MPI, and these processes "
        f"were not started by an MPI launcher, so each would run alone. Launch with "
        f"`mpiexec -n {world} python script.py` (or srun), not torchrun or by hand; for "
        f"a one-process run, unset WORLD_SIZE")


@cache
def is_mpich() -> bool:
    """Whether the MPI library is MPICH (for choices among equivalent MPI calls that
    measured faster there)."""
    return mpi().Get_library_version().startswith("MPICH")


@cache
def is_open_mpi() -> bool:
    """Whether the MPI library is Open MPI (as :func:`is_mpich`)."""
    return mpi().Get_library_version().startswith("Open MPI")
