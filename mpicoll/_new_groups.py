"""The public calls that make process groups: new_group, new_subgroups, split_group."""

from __future__ import annotations

import zlib
from typing import Any

from ._process_group import (
    NON_GROUP_MEMBER,
    ProcessGroup,
    _check_int,
    _NonGroupMember,
    _State,
    default_group,
    resolve,
)
from ._start import mpi
from .errors import ArgumentValueError as _Value


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


SHRINK_DEFAULT = 0
SHRINK_ABORT = 1


def shrink_group(ranks_to_exclude: list[int], group: Any = None,
                 shrink_flags: int = SHRINK_DEFAULT, pg_options: Any = None) -> ProcessGroup:
    """A new group of ``group``'s ranks less ``ranks_to_exclude`` (group ranks).

    Call it on the ranks that stay, and only there: the new communicator is made by
    them alone (``MPI_Comm_create_group``), so an excluded rank takes no part and may
    be busy, or gone. If the default group is shrunk, the new group becomes the default
    (``group=None``, ``WORLD``); other groups stay usable, unlike torch's, which
    destroys them. ``SHRINK_ABORT`` is refused: MPI has no way to cancel a collective
    in flight on the old group.
    """
    name = "shrink_group"
    pg = resolve(group, name)
    if pg is None:
        raise RuntimeError(f"{name}: this rank is not in the group to shrink")
    if shrink_flags not in (SHRINK_DEFAULT, SHRINK_ABORT):
        raise _Value(name, "bad_flags", "{arg} must be SHRINK_DEFAULT (0) or SHRINK_ABORT "
                     "(1), got {got}", {"arg": "shrink_flags"}, got=shrink_flags)
    if shrink_flags == SHRINK_ABORT:
        raise _Value(name, "no_abort", "{arg}=SHRINK_ABORT needs a way to cancel the "
                     "group's collectives in flight, which MPI does not have",
                     {"arg": "shrink_flags"}, got=shrink_flags)
    n = pg.nranks
    out = list(ranks_to_exclude) if isinstance(ranks_to_exclude, (list, tuple)) else None
    if not out:
        raise _Value(name, "empty", "{arg} must be a non-empty list of group ranks",
                     {"arg": "ranks_to_exclude"}, got=ranks_to_exclude)
    for r in out:
        pg.check_group_rank(r, name, "ranks_to_exclude")
    if len(set(out)) != len(out) or len(out) >= n:
        raise _Value(name, "bad_set", "{arg} must be distinct and leave a rank, got {got}",
                     {"arg": "ranks_to_exclude"}, got=out)
    if pg.my_rank in out:
        raise RuntimeError(f"{name}: group rank {pg.my_rank} is excluded, and only the "
                           "ranks that stay may call it")
    stay = [r for r in range(n) if r not in out]
    parent = pg.comm.Get_group()
    sub = parent.Incl(stay)
    # a tag of its own: only the staying ranks call this, so _State.created (which
    # every rank counts alike for new_group) is left alone
    tag = 32000 + zlib.crc32(repr((pg.ranks, stay)).encode()) % 700
    comm = pg.comm.Create_group(sub, tag=tag)
    sub.Free()
    parent.Free()
    new = ProcessGroup(comm, [pg.ranks[r] for r in stay], name=f"{pg.name}-shrunk",
                       desc=pg.desc, timeout=pg.timeout)
    _State.groups.append(new)
    if pg is _State.default:
        _State.default = new
    return new
