"""Process groups over Dup'd MPI communicators; WORLD, new_group, rank maps."""

from __future__ import annotations

import weakref
from typing import Any

from . import _departures
from ._env import as_seconds
from ._runtime import mpi
from .errors import ArgumentTypeError as _Type
from .errors import ArgumentValueError as _Value


class ProcessGroup:
    """A group of ranks with its own MPI communicator.

    ``rank()`` and ``size()`` are this process's rank in the group and the
    group's size, as in ``torch.distributed.ProcessGroup``.
    """

    __slots__ = ("__weakref__", "_index", "_rank", "_size", "comm", "desc", "key", "name",
                 "ranks", "received", "sent", "seq", "timeout")

    def __init__(self, comm: Any, ranks: list[int], *, name: str = "",
                 desc: str = "", timeout: Any = None) -> None:
        self.comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self.ranks = ranks
        self._index = {g: i for i, g in enumerate(ranks)}
        self.name = name
        self.desc = desc
        self.timeout = _as_seconds(timeout)
        self.seq = 0  # collectives issued: every member counts the same
        self.sent: dict[int, int] = {}  # group rank -> messages sent to it
        self.received: dict[int, int] = {}  # group rank -> messages received from it
        # the same on every member: groups are made in the same order everywhere
        twins = sum(1 for g in _EVERY if g.name == name and g.ranks == ranks)
        self.key = (name, tuple(ranks), twins)
        _EVERY.append(self)

    @property
    def my_rank(self) -> int:
        """This process's rank within the group (read-only)."""
        return self._rank

    @property
    def nranks(self) -> int:
        """Number of ranks in the group (read-only)."""
        return self._size

    def rank(self) -> int:
        """This process's rank within the group."""
        return self._rank

    def size(self) -> int:
        """Number of ranks in the group."""
        return self._size

    def group_rank(self, global_rank: int, op: str, name: str) -> int:
        """Map a global rank to a group rank; ValueError names ``op`` and ``name``."""
        idx = self._index.get(global_rank) if type(global_rank) is int else None
        if idx is None:
            _check_int(global_rank, op, name)
            raise _Value(op, "not_in_group", "{arg} {got} is not a rank of the group (global "
                         "ranks {expected})", {"arg": name}, got=global_rank,
                         expected=self.ranks)
        return idx

    def check_group_rank(self, group_rank: int, op: str, name: str) -> int:
        """Validate a group rank."""
        _check_int(group_rank, op, name)
        if not 0 <= group_rank < self._size:
            raise _Value(op, "range", "{arg} must be in [0, {size}), got {got}", {"arg": name},
                         size=self._size, got=group_rank)
        return group_rank

    def __repr__(self) -> str:
        return f"ProcessGroup(name={self.name!r}, ranks={self.ranks})"


_EVERY: list[ProcessGroup] = []  # every group made, destroyed ones too (counted at exit)


class _NonGroupMember:
    """Returned by new_group on ranks outside the group, as torch does."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


NON_GROUP_MEMBER = _NonGroupMember()


def _check_int(value: Any, op: str, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Type(op, "type", "{arg} must be an int, got {got!r}", {"arg": name}, got=value)


def _as_seconds(timeout: Any) -> float | None:
    return None if timeout is None else as_seconds(timeout)


class _State:
    default: ProcessGroup | None = None
    explicit = False
    backend = "mpi"
    groups: list[ProcessGroup] = []  # noqa: RUF012
    wrapped: dict[int, tuple[Any, ProcessGroup]] = {}  # noqa: RUF012
    created = 0


def default_group() -> ProcessGroup:
    """The WORLD group, created (and MPI initialised) on first use."""
    pg = _State.default
    if pg is None:
        MPI = mpi()
        world = MPI.COMM_WORLD
        pg = ProcessGroup(world.Dup(), list(range(world.Get_size())), name="0")
        _departures.setup(MPI)
        _State.default = pg
    return pg


def all_groups() -> list[ProcessGroup]:
    """Every group this process has made (WORLD first), destroyed ones included."""
    return list(_EVERY)


def resolve(group: Any, op: str) -> ProcessGroup | None:
    """The ProcessGroup for a ``group=`` argument; None on a non-member rank."""
    if group is None:
        return _State.default or default_group()
    if type(group) is ProcessGroup:
        if group.comm is None:
            raise _Value(op, "destroyed", "{arg} {got!r} was destroyed", {"arg": "group"},
                         got=group.name)
        return group
    if group is NON_GROUP_MEMBER:
        return None
    MPI = mpi()
    if isinstance(group, MPI.Intracomm):
        return _wrap_comm(group)
    if isinstance(group, MPI.Comm):
        raise _Type(op, "type", "{arg} must be an intracommunicator, got {got}",
                    {"arg": "group"}, got=type(group).__name__)
    raise _Type(op, "type", "{arg} must be a ProcessGroup, an mpi4py Intracomm or None, got "
                "{got}", {"arg": "group"}, got=type(group).__name__)


def _wrap_comm(comm: Any) -> ProcessGroup:
    MPI = mpi()
    if comm == MPI.COMM_NULL:
        raise ValueError("group: the mpi4py communicator is COMM_NULL")
    key = comm.py2f()
    hit = _State.wrapped.get(key)
    if hit is not None and hit[0]() is comm:
        return hit[1]
    world_group = MPI.COMM_WORLD.Get_group()
    grp = comm.Get_group()
    ranks = list(MPI.Group.Translate_ranks(grp, list(range(grp.Get_size())), world_group))
    grp.Free()
    world_group.Free()
    pg = ProcessGroup(comm.Dup(), ranks, name=f"comm{key}")
    _State.wrapped[key] = (weakref.ref(comm), pg)
    _State.groups.append(pg)
    return pg


# -- public API -----------------------------------------------------------------


class GroupMember:
    """torch-compatible holder of ``WORLD`` and ``NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = NON_GROUP_MEMBER

    class _World:
        def __get__(self, obj: Any, cls: Any) -> ProcessGroup:
            return default_group()

    WORLD = _World()


group = GroupMember  # ``mpicoll.group.WORLD``, as ``torch.distributed.group.WORLD``


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
    return -1 if pg is None else pg._rank


def get_world_size(group: Any = None) -> int:
    """Size of ``group`` (-1 if not a member); the world's if None."""
    pg = resolve(group, "get_world_size")
    return -1 if pg is None else pg._size


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
    n = world._size
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
    if world._rank not in ranks:
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
    if group_size <= 0 or parent._size % group_size:
        raise ValueError(f"new_subgroups: group_size must be positive and divide the group "
                         f"size {parent._size}, got {group_size}")
    lists = [parent.ranks[i:i + group_size] for i in range(0, parent._size, group_size)]
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
    me = default_group()._rank
    cur: Any = None
    subgroups = []
    for ranks in ranks_per_subgroup_list:
        sub = new_group(ranks, timeout=timeout, group_desc=group_desc)
        subgroups.append(sub)
        if me in ranks:
            cur = sub
    return cur, subgroups
