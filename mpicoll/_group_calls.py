"""The public calls on the process groups' lifetime and ranks: init/destroy and queries.

The calls that make groups are in :mod:`mpicoll._new_groups`.
"""

from __future__ import annotations

from typing import Any

from ._env import as_seconds
from ._process_group import (
    NON_GROUP_MEMBER,
    ProcessGroup,
    _as_seconds,
    _State,
    default_group,
    resolve,
)
from ._progress import drain
from ._start import mpi
from .errors import ArgumentValueError as _Value


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None, _ranks: list[int] | None = None,
                       enable_reconfigure: bool = False) -> None:
    """Initialise the default group over MPI's COMM_WORLD.

    Optional: MPI is initialised on first use anyway. ``backend``,
    ``init_method``, ``store``, ``pg_options`` and ``device_id`` are accepted for
    compatibility and not used: MPI itself (``mpiexec``) decides ranks and
    transport. ``world_size`` and ``rank``, if given, must agree with MPI.
    ``enable_reconfigure`` (torch 2.15) must stay False: MPI's world is fixed at launch.
    """
    if enable_reconfigure:
        raise _Value("init_process_group", "reconfigure", "{arg}=True (a default group "
                     "that can be reconfigured later) is not possible over MPI, whose world "
                     "is fixed at launch", {"arg": "enable_reconfigure"}, got=True)
    if _State.explicit:
        raise ValueError("init_process_group: trying to initialize the default process "
                         "group twice")
    world = mpi().COMM_WORLD
    if world_size not in (-1, None) and world_size != world.Get_size():
        raise ValueError(f"init_process_group: world_size must match MPI's: expected "
                         f"{world.Get_size()}, got {world_size} (mpicoll takes the world "
                         "from mpiexec)")
    if rank not in (-1, None) and rank != world.Get_rank():
        raise ValueError(f"init_process_group: rank must match MPI's: expected "
                         f"{world.Get_rank()}, got {rank}")
    pg = default_group()
    pg.timeout = _as_seconds(timeout)
    if group_name:
        pg.name = group_name
    _State.backend = backend or "mpi"
    _State.explicit = True


def is_initialized() -> bool:
    """Whether the default group exists (after init_process_group or first use)."""
    return _State.default is not None


def destroy_process_group(group: Any = None) -> None:
    """Free a group's communicator, or every group's when ``group`` is None.

    Pending Works are completed first (their future callbacks run in this thread) and
    the progress thread is joined: no request is left on a freed communicator.
    """
    drain()
    if group is None:
        for pg in [*_State.groups, _State.default]:
            if pg is not None and pg.comm is not None:
                _free_counts(pg)
                pg.comm.Free()
                pg.comm = None
        _State.groups.clear()
        _State.wrapped.clear()
        _State.default = None
        _State.created = 0
        _State.explicit = False
        return
    if group is NON_GROUP_MEMBER:
        return
    if type(group) is not ProcessGroup:
        raise TypeError(f"destroy_process_group: group must be a ProcessGroup, got "
                        f"{type(group).__name__}")
    if group is _State.default:
        destroy_process_group(None)
    elif group.comm is not None:
        _free_counts(group)
        group.comm.Free()
        group.comm = None


def _free_counts(pg: Any) -> None:
    """Free the persistent requests that carried the group's counts (before its
    communicator: MPI keeps a communicator with live requests), and the communicator of
    its direct exchanges."""
    if pg.counts is not None:  # (None: the group's counts never took a persistent request)
        for ring in pg.counts.values():
            ring.free()
        pg.counts.clear()
    for entry in pg.kept.values():
        for req in entry.reqs:
            if req:  # (a Plan posted afresh holds none)
                req.Free()
    pg.kept.clear()
    if pg.direct is not None:
        pg.direct.Free()
        pg.direct = None


def get_backend(group: Any = None) -> str:
    """The backend name given to init_process_group (always MPI underneath)."""
    return _State.backend


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (-1 if not a member); global if None."""
    pg = resolve(group, "get_rank")
    return -1 if pg is None else pg.my_rank


def get_world_size(group: Any = None) -> int:
    """Size of ``group`` (-1 if not a member); the world's if None."""
    pg = resolve(group, "get_world_size")
    return -1 if pg is None else pg.nranks


def get_process_group_ranks(group: Any) -> list[int]:
    """Global ranks of ``group``'s members, in group-rank order."""
    pg = resolve(group, "get_process_group_ranks")
    if pg is None:
        raise ValueError("get_process_group_ranks: this rank is not a member of the group")
    return list(pg.ranks)


def get_group_rank(group: Any, global_rank: int) -> int:
    """Translate a global rank into ``group``'s rank."""
    pg = resolve(group, "get_group_rank")
    if pg is None:
        raise ValueError("get_group_rank: this rank is not a member of the group")
    return pg.group_rank(global_rank, "get_group_rank", "global_rank")


def get_global_rank(group: Any, group_rank: int) -> int:
    """Translate ``group``'s rank into a global rank."""
    pg = resolve(group, "get_global_rank")
    if pg is None:
        raise ValueError("get_global_rank: this rank is not a member of the group")
    return pg.ranks[pg.check_group_rank(group_rank, "get_global_rank", "group_rank")]


def set_timeout(timeout: Any, group: Any = None) -> None:
    """Set ``group``'s timeout for its future operations (the watchdog's limit), as
    torch 2.15's ``set_timeout``: seconds or ``datetime.timedelta``."""
    pg = resolve(group, "set_timeout")
    if pg is None:
        raise ValueError("set_timeout: Invalid process group specified (this rank is not "
                         "a member)")
    try:
        secs = as_seconds(timeout)
    except (TypeError, ValueError):
        secs = None
    if secs is None or not secs > 0:
        raise _Value("set_timeout", "bad_timeout", "{arg} must be a positive duration "
                     "(seconds or timedelta), got {got}", {"arg": "timeout"}, got=timeout)
    pg.timeout = secs
