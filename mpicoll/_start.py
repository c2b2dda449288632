"""Where MPI starts on first use, and the hooks that run when it does.

The layers above register what must happen once MPI is up (the lifecycle installs
its exit sequence, its abort hook and its signal handling) with :func:`on_start`;
this module never imports them.
"""

from __future__ import annotations

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
        _started = True
        for hook in _hooks:
            hook(MPI)
    return MPI


@cache
def is_mpich() -> bool:
    """Whether the MPI library is MPICH (for choices among equivalent MPI calls that
    measured faster there)."""
    return mpi().Get_library_version().startswith("MPICH")


@cache
def is_open_mpi() -> bool:
    """Whether the MPI library is Open MPI (as :func:`is_mpich`)."""
    return mpi().Get_library_version().startswith("Open MPI")
