"""The public calls on process groups: init/destroy, new_group, split_group, queries."""

from __future__ import annotations

from typing import Any

from ._group import (
    NON_GROUP_MEMBER,
    ProcessGroup,
    _as_seconds,
    _check_int,
    _NonGroupMember,
    _State,
    default_group,
    resolve,
)
from ._runtime import mpi
from .errors import ArgumentValueError as _Value


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None, _ranks: list[int] | None = None) -> None:
    """Initialise the default group over MPI's COMM_WORLD.

    Optional: MPI is initialised on first use anyway. ``backend``,
    ``init_method``, ``store``, ``pg_options`` and ``device_id`` are accepted for
    compatibility and not used: MPI itself (``mpiexec``) decides ranks and
    transport. ``world_size`` and ``rank``, if given, must agree with MPI.
    """
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
    from ._shutdown import drain

    drain()
    if group is None:
        for pg in [*_State.groups, _State.default]:
            if pg is not None and pg.comm is not None:
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
        group.comm.Free()
        group.comm = None


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


def new_group(ranks: list[int] | None = None, timeout: Any = None, backend: Any = None,
              pg_options: Any = None, use_local_synchronization: bool = False,
              group_desc: str | None = None, device_id: Any = None,
              sort_ranks: bool = True) -> ProcessGroup | _NonGroupMember:
    """Create a group of the given global ranks (all of them if None).

    Call it on every rank (or, with ``use_local_synchronization=True``, on the
    members only). Non-members get ``GroupMember.NON_GROUP_MEMBER``.
    """
    world = default_group()
    n = world.nranks
    if ranks is None:
        ranks = list(range(n))
    else:
        ranks = list(ranks)
        for r in ranks:
            _check_int(r, "new_group", "ranks")
            if not 0 <= r < n:
                raise ValueError(f"new_group: ranks must be in [0, {n}), got {r}")
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"new_group: ranks must be distinct, got {ranks}")
        if sort_ranks:
            ranks.sort()
    _State.created += 1
    if world.my_rank not in ranks:
        return NON_GROUP_MEMBER
    MPI = mpi()
    parent = world.comm.Get_group()
    sub = parent.Incl(ranks)
    comm = world.comm.Create_group(sub, tag=_State.created % 32000)
    sub.Free()
    parent.Free()
    pg = ProcessGroup(comm, ranks, name=str(_State.created), desc=group_desc or "",
                      timeout=timeout)
    del MPI
    _State.groups.append(pg)
    return pg


def new_subgroups(group_size: int | None = None, group: Any = None, timeout: Any = None,
                  backend: Any = None, pg_options: Any = None,
                  group_desc: str | None = None) -> tuple[Any, list[Any]]:
    """Split ``group`` (default WORLD) into consecutive subgroups of ``group_size``."""
    parent = resolve(group, "new_subgroups")
    if parent is None:
        raise ValueError("new_subgroups: this rank is not a member of group")
    if group_size is None:
        raise ValueError("new_subgroups: group_size must be given (torch derives it from "
                         "the number of CUDA devices, which does not apply over MPI)")
    _check_int(group_size, "new_subgroups", "group_size")
    if group_size <= 0 or parent.nranks % group_size:
        raise ValueError(f"new_subgroups: group_size must be positive and divide the group "
                         f"size {parent.nranks}, got {group_size}")
    lists = [parent.ranks[i:i + group_size] for i in range(0, parent.nranks, group_size)]
    return new_subgroups_by_enumeration(lists, timeout, backend, pg_options, group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list: list[list[int]], timeout: Any = None,
                                 backend: Any = None, pg_options: Any = None,
                                 group_desc: str | None = None) -> tuple[Any, list[Any]]:
    """Create one group per list of global ranks; returns (this rank's, all)."""
    if not ranks_per_subgroup_list:
        raise ValueError("new_subgroups_by_enumeration: ranks_per_subgroup_list is empty")
    seen: set[int] = set()
    for ranks in ranks_per_subgroup_list:
        for r in ranks:
            if r in seen:
                raise ValueError(f"new_subgroups_by_enumeration: rank {r} appears in more "
                                 "than one subgroup")
            seen.add(r)
    me = default_group().my_rank
    cur: Any = None
    subgroups = []
    for ranks in ranks_per_subgroup_list:
        sub = new_group(ranks, timeout=timeout, group_desc=group_desc)
        subgroups.append(sub)
        if me in ranks:
            cur = sub
    return cur, subgroups


def split_group(parent_pg: Any = None, split_ranks: list[list[int]] | None = None,
                timeout: Any = None, pg_options: Any = None, group_desc: str | None = None,
                backend: Any = None) -> ProcessGroup | None:
    """Split ``parent_pg`` (WORLD if None) into disjoint groups of the ranks listed in
    ``split_ranks`` — ranks *of the parent group*, each list taken in sorted order, as
    torch — with one MPI_Comm_split; returns this rank's group, None if it is in no
    list. Call it on every rank of ``parent_pg``."""
    name = "split_group"
    parent = resolve(parent_pg, name)
    if parent is None:
        return None
    if not split_ranks:
        raise _Value(name, "missing", "{arg} must be a non-empty list of lists of ranks of "
                     "parent_pg, got {got!r}", {"arg": "split_ranks"}, got=split_ranks)
    color = None
    seen: set[int] = set()
    for i, ranks in enumerate(split_ranks):
        for r in ranks:
            if r not in range(parent.nranks):
                raise _Value(name, "not_in_group", "{arg} names rank {got}, which is not a "
                             "rank of the parent group (group ranks 0 to {expected})",
                             {"arg": "split_ranks"}, got=r, expected=parent.nranks - 1)
            if r in seen:
                raise _Value(name, "overlap", "{arg} must be disjoint: rank {got} appears "
                             "twice", {"arg": "split_ranks"}, got=r)
            seen.add(r)
        if parent.my_rank in ranks:
            color = i
    MPI = mpi()
    _State.created += 1
    # key = parent group rank: the new group's ranks follow the sorted list
    comm = parent.comm.Split(MPI.UNDEFINED if color is None else color, parent.my_rank)
    if color is None:
        return None
    pg = ProcessGroup(comm, [parent.ranks[r] for r in sorted(split_ranks[color])],
                      name=str(_State.created), desc=group_desc or "", timeout=timeout)
    _State.groups.append(pg)
    return pg


def get_pg_count() -> int:
    """Number of process groups made since the default group was (WORLD included), as
    torch counts them: every new_group/split_group call, member or not; destroying one
    group does not lower it, destroying them all (``destroy_process_group()``) resets it."""
    return (_State.default is not None) + _State.created
