"""Process groups over Dup'd MPI communicators: ProcessGroup, WORLD, resolving ``group=``.

The public calls that make, query and free groups are in :mod:`mpicoll._group_calls`.
What must happen collectively when WORLD is born (the departure channel, how
blocking calls wait) is registered by the layers above with :func:`at_birth`.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

from ._env import as_seconds
from ._start import mpi
from .errors import ArgumentTypeError as _Type
from .errors import ArgumentValueError as _Value

_DIRECT: list[int] = []


def direct_ranks() -> int:
    """The largest group whose all_to_all, all_gather, reduce_scatter, gather and scatter
    go as point-to-point messages (``MPICOLL_DIRECT``, default 8; 0: none), read once."""
    if not _DIRECT:
        raw = os.environ.get("MPICOLL_DIRECT", "")
        try:
            _DIRECT.append(int(raw) if raw else 8)
        except ValueError:
            raise ValueError(f"environment variable MPICOLL_DIRECT={raw!r}: expected the "
                             "largest number of ranks that exchange directly (0: never)"
                             ) from None
    return _DIRECT[0]


class ProcessGroup:
    """A group of ranks with its own MPI communicator.

    ``rank()`` and ``size()`` are this process's rank in the group and the
    group's size, as in ``torch.distributed.ProcessGroup``.
    """

    __slots__ = ("__weakref__", "_index", "_rank", "_size", "barriers", "comm", "counts",
                 "desc", "direct", "kept", "key", "missed", "name", "ranks", "received",
                 "sent", "seq", "timeout")

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
        self.barriers = 0  # monitored_barrier calls, counted alike (their messages say it)
        self.sent: dict[int, int] = {}  # group rank -> messages sent to it
        self.received: dict[int, int] = {}  # group rank -> messages received from it
        # persistent collectives that carry calls' counts, by form (_collectives/_sizes);
        # None once it is known that none are made (an MPI without them)
        self.counts: dict[tuple, Any] | None = {}
        # the communicator of its direct calls (_collectives/_direct), on groups small
        # enough for them: made here, where every member makes the group, so that no
        # call has to wait for it (an async first call would)
        self.direct: Any = comm.Dup() if 1 < self._size <= direct_ranks() else None
        self.kept: Any = new_kept()  # its repeated calls' persistent messages (_direct)
        self.missed = 0  # of them: calls that found none, less those that found theirs
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


# what a group keeps its repeated calls' messages in: a dict, or where the compiled core
# is in use its PlanCache (set at birth by the lifecycle), where the core finds its Plans
# without a hash
new_kept: Callable[[], Any] = dict

# run, in this order, when WORLD is first made: collective over COMM_WORLD
_BIRTH: list[Callable[[Any], None]] = []
_born = False


def at_birth(hook: Callable[[Any], None]) -> None:
    """Run ``hook(COMM_WORLD)`` on every rank when the first world group is made.

    The hooks are collective: every rank must register the same ones in the same
    order (the lifecycle registers them when ``mpicoll`` is imported)."""
    _BIRTH.append(hook)


def birth(world: Any) -> None:
    """Run the birth hooks over ``world`` (COMM_WORLD), once: before mpicoll's WORLD or
    the torch backend's world is made, whichever comes first."""
    global _born
    if not _born:
        _born = True
        for hook in _BIRTH:
            hook(world)


def default_group() -> ProcessGroup:
    """The WORLD group, created (and MPI initialised) on first use."""
    pg = _State.default
    if pg is None:
        world = mpi().COMM_WORLD
        birth(world)
        pg = ProcessGroup(world.Dup(), list(range(world.Get_size())), name="0")
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


class GroupMember:
    """torch-compatible holder of ``WORLD`` and ``NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = NON_GROUP_MEMBER

    class _World:
        def __get__(self, obj: Any, cls: Any) -> ProcessGroup:
            return default_group()

    WORLD = _World()


group = GroupMember  # ``mpicoll.group.WORLD``, as ``torch.distributed.group.WORLD``
