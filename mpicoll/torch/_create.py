"""The backend's process groups: what torch's creator (and the "mpi" stand-in) calls."""

from __future__ import annotations

import zlib
from typing import Any

import torch.distributed.distributed_c10d as c10d
from torch.distributed.constants import default_pg_timeout

from .._process_group import ProcessGroup as _Group
from .._process_group import birth as _birth
from .._start import mpi
from ._backend import MpicollProcessGroup
from ._device import MpicollBackend, other_devices

_world: _Group | None = None


def _world_group() -> _Group:
    """The backend's own duplicate of COMM_WORLD (kept apart from mpicoll's WORLD)."""
    global _world
    if _world is None or _world.comm is None:
        world = mpi().COMM_WORLD
        _birth(world)  # the departure channel and how blocking calls wait, if not yet
        _world = _Group(world.Dup(), list(range(world.Get_size())), name="torch-world")
    return _world


def records_itself(name: str) -> None:
    """Tell torch (2.15 on) that the backend ``name`` records its own operations (mpicoll's
    flight recorder: ``python -m mpicoll trace``), as gloo and NCCL do. torch attaches its
    C++ ``FlightRecorderHook`` to every other group, where it fails on a group that a
    Python creator returned ("Could not find the default backend type"), and on a
    ``cpu:mpicoll`` slot it would record every operation a second time."""
    own = getattr(c10d, "_FR_SELF_RECORDING_BACKENDS", None)
    if isinstance(own, set):
        own.add(name)


def _timeout(given: Any) -> Any:
    """The group's own timeout: the one given to ``init_process_group``/``new_group``, or
    None where torch handed its default (it always hands one), so that ``MPICOLL_TIMEOUT``
    applies, else the same 30 minutes. An explicit timeout equal to torch's default
    cannot be told from none: ``MPICOLL_TIMEOUT``, where set, wins over it."""
    return None if given == default_pg_timeout else given


def _create(dist_opts: Any, backend_opts: Any) -> Any:
    """The group's MpicollProcessGroup (every device), or on torch 2.15 its CPU slot's
    MpicollBackend where torch is giving another device another backend."""
    # (other_devices reads the frame of torch's helper that called this creator: called
    # from here, directly)
    slot = MpicollBackend is not None and other_devices()
    world = _world_group()
    ranks = list(dist_opts.global_ranks_in_group)
    if not ranks:  # the default group
        if dist_opts.group_size != world.size() or dist_opts.group_rank != world.rank():
            raise ValueError(
                f"mpicoll backend: torch was given world_size={dist_opts.group_size}, "
                f"rank={dist_opts.group_rank}, but MPI has world size {world.size()} and "
                f"rank {world.rank()}: launch with `mpiexec -n {dist_opts.group_size}` and "
                "leave rank/world_size to MPI")
        comm, ranks = world.comm.Dup(), list(range(world.size()))
    else:
        parent = world.comm.Get_group()
        sub = parent.Incl(ranks)
        tag = zlib.crc32(repr(ranks).encode()) % 32768
        comm = world.comm.Create_group(sub, tag=tag)
        sub.Free()
        parent.Free()
    group = _Group(comm, ranks, name=str(dist_opts.group_id), timeout=_timeout(dist_opts.timeout))
    if group.rank() != dist_opts.group_rank or group.size() != dist_opts.group_size:
        raise ValueError(f"mpicoll backend: group rank/size {group.rank()}/{group.size()} "
                         f"disagree with torch's {dist_opts.group_rank}/{dist_opts.group_size}")
    return (MpicollBackend if slot else MpicollProcessGroup)(group, dist_opts.store)
