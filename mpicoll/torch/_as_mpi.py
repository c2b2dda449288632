"""mpicoll as torch's "mpi" backend, on a torch built without MPI (pip's), by opt-in.

Libraries that offer MPI ask ``torch.distributed.is_mpi_available()`` and then call
``init_process_group("mpi")`` (accelerate's multi-CPU path; torch's own MPI-gated
tests). torch treats that name apart from every registered backend: it needs no store
and no rank or size (MPI gives them), and ``_new_process_group_helper`` builds the
group with ``ProcessGroupMPI.create(ranks)``, a class that pip's torch lacks. So
:func:`serve_as_mpi` gives ``torch.distributed.distributed_c10d`` a stand-in for that
class, whose ``create`` returns mpicoll's process group, and marks MPI available.

That reaches into torch's internals, so it is done only when asked, only on a torch
whose "mpi" path reads as expected (checked from its source, not from its version), and
never over a torch that has MPI built in.
"""

from __future__ import annotations

import inspect
import os
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import torch
import torch.distributed.distributed_c10d as c10d

from .._env import flag
from ._create import _create, _world_group, records_itself

# what serve_as_mpi relies on in torch's distributed_c10d
_NEEDS = ("ProcessGroupMPI.create(", "is_mpi_available()")


class _AsMPI:
    """Stands in for torch's ``ProcessGroupMPI`` (only ``create`` is ever called)."""

    @staticmethod
    def create(ranks: list[int]) -> Any:
        world = _world_group()
        ranks = list(ranks)
        members = ranks or list(range(world.size()))
        if world.rank() not in members:
            return None  # torch's NON_GROUP_MEMBER
        opts = SimpleNamespace(
            global_ranks_in_group=ranks, group_size=len(members),
            group_rank=members.index(world.rank()), store=None,
            group_id="mpi:" + ",".join(map(str, members)),
            timeout=getattr(c10d, "default_pg_timeout", timedelta(minutes=30)))
        return _create(opts, None)


def serving() -> bool:
    """Whether :func:`serve_as_mpi` is in effect."""
    return getattr(c10d, "ProcessGroupMPI", None) is _AsMPI


def serve_as_mpi() -> None:
    """Serve ``init_process_group("mpi")`` (and ``new_group(backend="mpi")``) with
    mpicoll, and make ``torch.distributed.is_mpi_available()`` true, in this process.

    Call it on every rank, before the library that picks "mpi" starts (or set
    ``MPICOLL_SERVE_AS_MPI=1`` and ``import mpicoll.torch``). Raises RuntimeError, and
    changes nothing, where torch has MPI built in (its own backend is then the one to
    use) or where torch's "mpi" path is not the one this was written against.
    """
    if serving():
        return
    if c10d.is_mpi_available():
        raise RuntimeError(
            "mpicoll.torch.serve_as_mpi: this torch has its own MPI backend, which "
            "serve_as_mpi would hide; use init_process_group('mpi') as it is, or "
            "init_process_group('mpicoll')")
    try:  # torch 2.13 calls it from _new_process_group_helper, 2.15 from the creator
        # that its "mpi" entry point registers: either way by the module's global name
        source = inspect.getsource(c10d)
        available = inspect.getsource(c10d.is_mpi_available)
    except (AttributeError, OSError, TypeError) as e:
        raise RuntimeError(f"mpicoll.torch.serve_as_mpi: cannot read torch {torch.__version__}'s "
                           f"process group code ({e}); use init_process_group('mpicoll')") from e
    missing = [s for s in _NEEDS if s not in source]
    if "return _MPI_AVAILABLE" not in available or not hasattr(c10d, "_MPI_AVAILABLE"):
        missing.append("is_mpi_available returning _MPI_AVAILABLE")
    if missing:
        raise RuntimeError(
            f"mpicoll.torch.serve_as_mpi: torch {torch.__version__} builds its 'mpi' backend "
            f"in a way this mpicoll does not know (missing: {', '.join(missing)}), so it "
            "refuses rather than guess; use init_process_group('mpicoll')")
    c10d.ProcessGroupMPI = _AsMPI
    c10d._MPI_AVAILABLE = True
    records_itself("mpi")


def from_environment() -> None:
    """:func:`serve_as_mpi` if ``MPICOLL_SERVE_AS_MPI=1`` (read at import of mpicoll.torch)."""
    if flag("MPICOLL_SERVE_AS_MPI", False, os.environ):
        serve_as_mpi()
