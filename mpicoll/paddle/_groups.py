"""Paddle's groups and process state: Group, new_group, get_group, ParallelEnv, ..."""

from __future__ import annotations

import datetime
import warnings
from typing import Any, ClassVar

import mpicoll as _m


class Group:
    """paddle.distributed's Group over an mpicoll ProcessGroup.

    Attributes:
        process_group: the mpicoll ProcessGroup (``GroupMember.NON_GROUP_MEMBER``
            on ranks outside the group); any mpicoll function accepts it.
    """

    __slots__ = ("_id", "_name", "_ranks", "process_group")

    def __init__(self, process_group: Any, ranks: list[int], id: int, name: str) -> None:
        self.process_group = process_group
        self._ranks = list(ranks)
        self._id = id
        self._name = name

    @property
    def rank(self) -> int:
        """This process's rank in the group, -1 if it is not a member."""
        pg = self.process_group
        return -1 if pg is _m.GroupMember.NON_GROUP_MEMBER else pg.my_rank

    @property
    def ranks(self) -> list[int]:
        """The members' global ranks, in group-rank order."""
        return self._ranks

    @property
    def nranks(self) -> int:
        """Number of ranks in the group."""
        return len(self._ranks)

    @property
    def world_size(self) -> int:
        """Number of ranks in the group, -1 if this process is not a member."""
        return len(self._ranks) if self.rank >= 0 else -1

    @property
    def id(self) -> int:
        """The group's id: 0 for the global group, then 1, 2, ... in creation order."""
        return self._id

    @property
    def name(self) -> str:
        """The group's name."""
        return self._name

    @property
    def backend(self) -> str:
        """Always "mpi"."""
        return "mpi"

    def is_member(self) -> bool:
        """Whether this process belongs to the group."""
        return self.rank >= 0

    def get_group_rank(self, rank: int) -> int:
        """The group rank of global rank ``rank`` (-1 if this process is not a member)."""
        if not self.is_member():
            return -1
        try:
            return self._ranks.index(rank)
        except ValueError:
            raise ValueError(f"get_group_rank: rank {rank} is not a rank of the group: "
                             f"expected one of {self._ranks}, got {rank}") from None

    def get_global_rank(self, rank: int) -> int:
        """The global rank of group rank ``rank`` (-1 if this process is not a member)."""
        if not self.is_member():
            return -1
        return self._ranks[rank]

    def __repr__(self) -> str:
        return (f"rank: {self.rank}, nranks: {self.nranks}, id: {self.id}, ranks: "
                f"{', '.join(map(str, self._ranks))}; name: {self._name}")


class _Groups:
    by_id: ClassVar[dict[int, Group]] = {}  # live groups; 0 is the global group
    created = 0


def world() -> Group:
    """The global group (made on first use, and again if WORLD was recreated)."""
    g = _Groups.by_id.get(0)
    pg = _m.group.WORLD
    if g is None or g.process_group is not pg:
        g = _Groups.by_id[0] = Group(pg, list(pg.ranks), 0, "_default_pg0")
    return g


def pg_of(group: Any) -> Any:
    """What mpicoll's ``group=`` takes for a Paddle ``group=`` argument."""
    if type(group) is Group:
        return group.process_group
    return group


def member(pg: Any) -> bool:
    return pg is not _m.GroupMember.NON_GROUP_MEMBER


def not_member_error(name: str) -> RuntimeError:
    return RuntimeError(f"{name}: this rank is not a member of group: expected a member, "
                        "as Paddle requires every caller to be one")


def init_parallel_env(nccl_config: Any = None) -> Group:
    """Initialise MPI (if needed) and return the global group.

    Args:
        nccl_config: accepted for compatibility; unused (MPI decides transport).
    """
    return world()


def is_initialized() -> bool:
    """Whether the global group exists (after init_parallel_env or first use)."""
    return _m.is_initialized()


def is_available() -> bool:
    """Whether distributed communication is available: True (MPI is)."""
    return True


def new_group(ranks: list[int] | None = None, backend: Any = None,
              timeout: datetime.timedelta = datetime.timedelta(seconds=1800),
              nccl_comm_init_option: int = 0, nccl_config: Any = None) -> Group:
    """Create a group of the given global ranks (all if None), sorted as Paddle does.

    Call it on every rank. On ranks outside the group the returned Group has
    ``rank == -1`` and collectives given it return None at once.

    Args:
        ranks: global ranks of the members.
        backend: accepted for compatibility; unused (always MPI).
        timeout: a collective on the group stuck longer than this ends the job
            (mpicoll's watchdog).
        nccl_comm_init_option: accepted for compatibility; unused.
        nccl_config: accepted for compatibility; unused.
    """
    pg = _m.new_group(ranks, timeout=timeout)
    _Groups.created += 1
    gid = _Groups.created
    members = sorted(ranks) if ranks is not None else list(range(_m.get_world_size()))
    g = _Groups.by_id[gid] = Group(pg, members, gid, f"_default_pg{gid}")
    return g


def get_group(id: int = 0) -> Group | None:
    """The group with id ``id`` (0: the global group); None with a warning if there is
    none, as in Paddle."""
    if id == 0 and _m.is_initialized():
        return world()
    g = _Groups.by_id.get(id)
    if g is None:
        warnings.warn(f"Group {id} is not initialized.", stacklevel=2)
    return g


def get_backend(group: Any = None) -> str:
    """The backend of ``group`` (the global group if None): "mpi".

    Raises:
        RuntimeError: this rank is not a member of ``group`` (as in Paddle).
    """
    if group is not None and not member(pg_of(group)):
        raise RuntimeError("get_backend: Invalid group specified: this rank is not a member")
    return "mpi"


def destroy_process_group(group: Any = None) -> None:
    """Free ``group``'s communicator; None or the global group frees every group and the
    global one, after which the next call starts over (as Paddle's deinitialisation)."""
    if group is None or (type(group) is Group and group.id == 0):
        _m.destroy_process_group()
        _Groups.by_id.clear()
        return
    pg = pg_of(group)
    if member(pg):
        _m.destroy_process_group(pg)
    if type(group) is Group:
        _Groups.by_id.pop(group.id, None)


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the global rank if None; -1 if not a member)."""
    if group is None:
        return _m.get_rank()
    if type(group) is Group:
        return group.rank
    return _m.get_rank(group)


def get_world_size(group: Any = None) -> int:
    """The size of ``group`` (the world's if None; -1 if this rank is not a member)."""
    if group is None:
        return _m.get_world_size()
    if type(group) is Group:
        return group.world_size
    return _m.get_world_size(group)
