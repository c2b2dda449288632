"""paddle.distributed's API (Paddle 3.x) over mpicoll.

``import mpicoll.paddle as dist`` gives the names, parameter names, parameter
order and defaults of ``paddle.distributed`` in Paddle 3.x (checked against
3.3.1), for Paddle, numpy, torch and any DLPack tensor, over MPI::

    import paddle
    import mpicoll.paddle as dist

    dist.init_parallel_env()
    out = paddle.empty([4], dtype="int64")
    dist.alltoall_single(out, paddle.arange(4) + 4 * dist.get_rank())

Every function translates names, argument order and return idioms, then calls
mpicoll's torch.distributed-style function (``alltoall_single`` ->
:func:`mpicoll.all_to_all_single`, ...):

- ``sync_op=True`` (the default) returns a completed task; ``sync_op=False``
  returns a :class:`mpicoll.Work` (``wait()``, ``is_completed()``), backed by MPI
  nonblocking operations.
- ``src``/``dst``/``peer`` are global ranks, as in Paddle.
- An empty output list given to :func:`alltoall`, :func:`all_gather` or (on the
  destination) :func:`gather` is filled by appending new tensors of the input's
  framework, as Paddle does.
- :func:`new_group` returns a :class:`Group` (Paddle's ``rank``, ``nranks``,
  ``ranks``, ``id``, ``world_size``, ``is_member()``); ``group=`` accepts it, an
  mpicoll ProcessGroup or an mpi4py communicator.
- ``ReduceOp`` holds Paddle's integer values (SUM=0, MAX=1, MIN=2, PROD=3, AVG=4).

Paddle's order of the tensors of :func:`alltoall_single` and :func:`alltoall`
changed between 2.x (``in_tensor, out_tensor``) and 3.x (``out_tensor,
in_tensor``). This module follows 3.x; :mod:`mpicoll.paddle.v2` follows 2.x.
Keyword arguments mean what their names say in both. When split sizes
contradict the shapes, the error says that the tensors may be in the other
order. A swap that no shape reveals (equal splits, tensors of one shape) cannot
be detected: the data then lands in the tensor passed as output.

Where this module differs from Paddle: it runs at any world size including 1
(Paddle's ``init_parallel_env`` does nothing below 2 ranks, and its groups of
one rank are not members of themselves); ``irecv``/``recv`` accept
``src=None`` (any source); ``backend``, ``nccl_comm_init_option`` and
``nccl_config`` are accepted and unused.
"""

from __future__ import annotations

import datetime
import importlib
import re
import sys
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

import mpicoll as _m

from .. import _group

if TYPE_CHECKING:
    from .._work import Work

__all__ = [
    "Group",
    "P2POp",
    "ReduceOp",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "alltoall",
    "alltoall_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "gather",
    "get_rank",
    "get_world_size",
    "init_parallel_env",
    "irecv",
    "is_initialized",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "scatter",
    "scatter_object_list",
    "send",
]


class ReduceOp:
    """paddle.distributed.ReduceOp: plain integers, with Paddle's values.

    Functions of this module map them onto :class:`mpicoll.ReduceOp`; an
    :class:`mpicoll.ReduceOp` member (e.g. ``BXOR``, or
    ``mpicoll.ReduceOp.premul_sum(f)``) is accepted as well and used as is.
    """

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


_OPS: dict[int, Any] = {}  # Paddle's value -> mpicoll.ReduceOp, filled on first use


def _op(op: Any, name: str) -> Any:
    """A Paddle ReduceOp value as the mpicoll ReduceOp it means."""
    if not _OPS:
        MOp = _m.ReduceOp
        _OPS.update({ReduceOp.SUM: MOp.SUM, ReduceOp.MAX: MOp.MAX, ReduceOp.MIN: MOp.MIN,
                     ReduceOp.PROD: MOp.PRODUCT, ReduceOp.AVG: MOp.AVG})
    if type(op) is _m.ReduceOp:  # an int too (IntEnum), with torch's values
        return op
    if isinstance(op, int) and not isinstance(op, bool):
        mop = _OPS.get(op)
        if mop is None:
            raise ValueError(f"{name}: op must be a paddle ReduceOp: expected one of SUM=0, "
                             f"MAX=1, MIN=2, PROD=3, AVG=4, got {op!r}")
        return mop
    return op  # mpicoll checks anything else (a torch ReduceOp works too)


# -- groups ---------------------------------------------------------------------


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
        return -1 if pg is _group.NON_GROUP_MEMBER else pg.my_rank

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
    world: Group | None = None
    created = 0


def _world() -> Group:
    g = _Groups.world
    pg = _group.default_group()
    if g is None or g.process_group is not pg:  # first use, or WORLD was recreated
        g = _Groups.world = Group(pg, list(pg.ranks), 0, "_default_pg0")
    return g


def _pg(group: Any) -> Any:
    """What mpicoll's ``group=`` takes for a Paddle ``group=`` argument."""
    if type(group) is Group:
        return group.process_group
    return group


def _member(pg: Any) -> bool:
    return pg is not _group.NON_GROUP_MEMBER


def init_parallel_env(nccl_config: Any = None) -> Group:
    """Initialise MPI (if needed) and return the global group.

    Args:
        nccl_config: accepted for compatibility; unused (MPI decides transport).
    """
    return _world()


def is_initialized() -> bool:
    """Whether the global group exists (after init_parallel_env or first use)."""
    return _group.is_initialized()


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
    pg = _group.new_group(ranks, timeout=timeout)
    _Groups.created += 1
    gid = _Groups.created
    members = sorted(ranks) if ranks is not None else list(range(_group.default_group().nranks))
    return Group(pg, members, gid, f"_default_pg{gid}")


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the global rank if None; -1 if not a member)."""
    if group is None:
        return _group.get_rank()
    if type(group) is Group:
        return group.rank
    return _group.get_rank(group)


def get_world_size(group: Any = None) -> int:
    """The size of ``group`` (the world's if None; -1 if this rank is not a member)."""
    if group is None:
        return _group.get_world_size()
    if type(group) is Group:
        return group.world_size
    return _group.get_world_size(group)


# -- how results come back --------------------------------------------------------


def _task(work: Work | None, name: str, sync_op: bool, outputs: Any = None) -> Work | None:
    """Paddle returns a task either way: completed when ``sync_op``, pending otherwise."""
    if sync_op:
        return _done(name, outputs)
    return work


def _done(name: str, outputs: Any = None) -> Work:
    from .._work import Work

    return Work.completed(name, outputs)


def _empty_like(x: Any, op: str, name: str) -> Any:
    """A new uninitialised tensor of ``x``'s framework, dtype and shape."""
    from .._adapter.detect import framework_of

    fw = framework_of(x)
    if fw == "numpy":
        import numpy as np

        return np.empty(x.shape, x.dtype)
    if fw in ("torch", "paddle"):
        hooks = importlib.import_module(f"mpicoll._adapter.frameworks.{fw}")
        return hooks.empty_like(x, tuple(x.shape))
    if fw == "cupy":
        return sys.modules["cupy"].empty(x.shape, x.dtype)
    raise TypeError(f"{op}: cannot allocate outputs like {name}: expected a numpy, torch, "
                    f"Paddle or CuPy tensor, got {type(x).__name__} (pass the output tensors)")


# Paddle's names for the arguments that mpicoll's messages call by torch's names.
_RENAMES: dict[str, dict[str, str]] = {
    "alltoall_single": {"all_to_all_single": "alltoall_single",
                        "input_split_sizes": "in_split_sizes",
                        "output_split_sizes": "out_split_sizes",
                        "input": "in_tensor", "output": "out_tensor"},
    "alltoall": {"all_to_all": "alltoall", "input_tensor_list": "in_tensor_list",
                 "output_tensor_list": "out_tensor_list"},
    "reduce_scatter": {"reduce_scatter_tensor": "reduce_scatter", "input_list": "tensor_list",
                       "input": "tensor_list", "output": "tensor"},
    "all_gather": {"all_gather_into_tensor": "all_gather", "output_tensor": "tensor_list",
                   "input_tensor": "tensor"},
    "scatter": {"scatter_list": "tensor_list"},
    "scatter_object_list": {"scatter_object_output_list": "out_object_list",
                            "scatter_object_input_list": "in_object_list"},
}
_PATTERNS = {op: re.compile(r"\b(" + "|".join(sorted(t, key=len, reverse=True)) + r")\b")
             for op, t in _RENAMES.items()}


def _reraise(e: BaseException, op: str, hint: str = "") -> NoReturn:
    """Raise ``e`` again, its message in Paddle's argument names plus ``hint``.

    The new exception has ``e``'s type and ``e`` as its cause.
    """
    table = _RENAMES.get(op)
    msg = str(e)
    if table is not None:
        msg = _PATTERNS[op].sub(lambda m: table[m.group(1)], msg)
    if hint or msg != str(e):
        try:
            new = type(e)(msg + hint)
        except Exception:  # an exception type with another constructor: keep it as is
            new = None
        if new is not None:
            raise new from e
    raise e


_SWAP_HINT = ("; the tensors may have been passed in Paddle {given} order ({order}): "
              "{module} follows Paddle {follows}; for the {given} order use {other}")
HINT_3X = _SWAP_HINT.format(given="2.x", order="in_tensor, out_tensor",
                            module="mpicoll.paddle", follows="3.x (out_tensor, in_tensor)",
                            other="mpicoll.paddle.v2")
HINT_2X = _SWAP_HINT.format(given="3.x", order="out_tensor, in_tensor",
                            module="mpicoll.paddle.v2", follows="2.x (in_tensor, out_tensor)",
                            other="mpicoll.paddle")


def _swap_symptom(e: BaseException) -> bool:
    """Errors that arguments in the other order produce: split sizes contradicting
    dim 0, or a read-only tensor (an input) in the output's place."""
    msg = str(e)
    return "must sum to dim 0 of" in msg or (
        "output" in msg and "is read-only and cannot receive data" in msg)


# -- collectives ------------------------------------------------------------------


def _alltoall_single(out_tensor: Any, in_tensor: Any, in_split_sizes: Any,
                     out_split_sizes: Any, group: Any, sync_op: bool, hint: str) -> Work | None:
    """alltoall_single for both conventions; ``hint`` names the other one."""
    pg = _pg(group)
    if not _member(pg):
        return None
    try:
        work = _m.all_to_all_single(out_tensor, in_tensor, out_split_sizes, in_split_sizes,
                                    group=pg, async_op=not sync_op)
    except (ValueError, TypeError, BufferError) as e:
        _reraise(e, "alltoall_single", hint if _swap_symptom(e) else "")
    return _task(work, "alltoall_single", sync_op, [out_tensor])


def _alltoall(out_tensor_list: Any, in_tensor_list: Any, group: Any, sync_op: bool,
              hint: str) -> Work | None:
    """alltoall for both conventions; ``hint`` names the other one."""
    pg = _pg(group)
    if not _member(pg):
        return None
    name = "alltoall"
    lists = isinstance(out_tensor_list, (list, tuple)), isinstance(in_tensor_list, (list, tuple))
    if lists == (False, False):  # Paddle 3.x takes two tensors too: all_to_all_single
        return _alltoall_single(out_tensor_list, in_tensor_list, None, None, group, sync_op,
                                hint)
    if lists != (True, True):
        raise TypeError(f"{name}: out_tensor_list and in_tensor_list must be of one kind: "
                        "expected two lists of tensors (or two tensors), got "
                        f"{type(out_tensor_list).__name__} and {type(in_tensor_list).__name__}")
    if len(in_tensor_list) == 0:
        raise ValueError(f"{name}: in_tensor_list must not be empty: expected one tensor per "
                         f"rank ({_group.get_world_size(pg)}), got 0" + hint)
    if len(out_tensor_list) == 0 and isinstance(out_tensor_list, list):
        out_tensor_list.extend([_empty_like(t, name, f"in_tensor_list[{i}]")
                                for i, t in enumerate(in_tensor_list)])
    try:
        work = _m.all_to_all(out_tensor_list, in_tensor_list, group=pg, async_op=not sync_op)
    except (ValueError, TypeError, BufferError) as e:
        _reraise(e, name, hint if _swap_symptom(e) else "")
    return _task(work, name, sync_op, list(out_tensor_list))


def alltoall(out_tensor_list: list[Any], in_tensor_list: list[Any], group: Any = None,
             sync_op: bool = True) -> Work | None:
    """Send ``in_tensor_list[j]`` to rank j; receive rank j's into ``out_tensor_list[j]``.

    Paddle 3.x order (output first); :func:`mpicoll.paddle.v2.alltoall` takes
    the 2.x order. Calls :func:`mpicoll.all_to_all` (sizes may differ per peer).

    Args:
        out_tensor_list: one tensor per rank, written in place; an empty list is
            filled with new tensors shaped like ``in_tensor_list``'s, as Paddle does.
        in_tensor_list: one tensor per rank.
        group: a :class:`Group` (or mpicoll ProcessGroup), None for the global group.
        sync_op: False returns a pending task.

    Returns:
        A task (completed when ``sync_op``); None on ranks outside ``group``.
    """
    return _alltoall(out_tensor_list, in_tensor_list, group, sync_op, HINT_3X)


def alltoall_single(out_tensor: Any, in_tensor: Any, in_split_sizes: list[int] | None = None,
                    out_split_sizes: list[int] | None = None, group: Any = None,
                    sync_op: bool = True) -> Work | None:
    """Split ``in_tensor`` along dim 0, send part j to rank j, gather into ``out_tensor``.

    Paddle 3.x order (output first); :func:`mpicoll.paddle.v2.alltoall_single`
    takes the 2.x order. Calls :func:`mpicoll.all_to_all_single`.

    Args:
        out_tensor: receives, in rank order, the parts every rank sent here.
        in_tensor: the tensor to scatter.
        in_split_sizes: rows of ``in_tensor`` sent to each rank (None: equal).
        out_split_sizes: rows of ``out_tensor`` received from each rank (None: equal).
        group: a :class:`Group` (or mpicoll ProcessGroup), None for the global group.
        sync_op: False returns a pending task.

    Returns:
        A task (completed when ``sync_op``); None on ranks outside ``group``.

    Raises:
        ValueError: split sizes contradict the shapes; the message adds that the
            tensors may be in Paddle 2.x order.
    """
    return _alltoall_single(out_tensor, in_tensor, in_split_sizes, out_split_sizes, group,
                            sync_op, HINT_3X)


def reduce_scatter(tensor: Any, tensor_list: list[Any], op: int = ReduceOp.SUM,
                   group: Any = None, sync_op: bool = True) -> Work | None:
    """Reduce ``tensor_list[j]`` across ranks into rank j's ``tensor``.

    Calls :func:`mpicoll.reduce_scatter` (or :func:`mpicoll.reduce_scatter_tensor`
    when ``tensor_list`` is one tensor, as Paddle allows).
    """
    pg = _pg(group)
    if not _member(pg):
        return None
    name = "reduce_scatter"
    mop = _op(op, name)
    try:
        if isinstance(tensor_list, (list, tuple)):
            work = _m.reduce_scatter(tensor, tensor_list, mop, group=pg, async_op=not sync_op)
        else:
            work = _m.reduce_scatter_tensor(tensor, tensor_list, mop, group=pg,
                                            async_op=not sync_op)
    except (ValueError, TypeError, BufferError) as e:
        _reraise(e, name)
    return _task(work, name, sync_op, [tensor])


def _not_member_error(name: str) -> RuntimeError:
    return RuntimeError(f"{name}: this rank is not a member of group: expected a member, "
                        "as Paddle requires every caller to be one")


def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None,
               sync_op: bool = True) -> Work | None:
    """Gather every rank's ``tensor`` into ``tensor_list``.

    An empty ``tensor_list`` is filled with one new tensor per rank, shaped
    like ``tensor``, as Paddle does. Calls :func:`mpicoll.all_gather` (or
    :func:`mpicoll.all_gather_into_tensor` when ``tensor_list`` is a tensor).

    Raises:
        RuntimeError: this rank is not a member of ``group`` (as in Paddle).
    """
    pg = _pg(group)
    name = "all_gather"
    if not _member(pg):
        raise _not_member_error(name)
    try:
        if isinstance(tensor_list, (list, tuple)):
            if len(tensor_list) == 0 and isinstance(tensor_list, list):
                tensor_list.extend(_empty_like(tensor, name, "tensor")
                                   for _ in range(_group.get_world_size(pg)))
            work = _m.all_gather(tensor_list, tensor, group=pg, async_op=not sync_op)
            outputs = list(tensor_list)
        else:
            work = _m.all_gather_into_tensor(tensor_list, tensor, group=pg,
                                             async_op=not sync_op)
            outputs = [tensor_list]
    except (ValueError, TypeError, BufferError) as e:
        _reraise(e, name)
    return _task(work, name, sync_op, outputs)


def all_reduce(tensor: Any, op: int = ReduceOp.SUM, group: Any = None,
               sync_op: bool = True) -> Work | None:
    """Reduce ``tensor`` across ``group``, in place on every rank (:func:`mpicoll.all_reduce`)."""
    pg = _pg(group)
    if not _member(pg):
        return None
    work = _m.all_reduce(tensor, _op(op, "all_reduce"), group=pg, async_op=not sync_op)
    return _task(work, "all_reduce", sync_op, [tensor])


def broadcast(tensor: Any, src: int, group: Any = None, sync_op: bool = True) -> Work | None:
    """Copy ``tensor`` from global rank ``src`` to every rank (:func:`mpicoll.broadcast`)."""
    pg = _pg(group)
    if not _member(pg):
        return None
    work = _m.broadcast(tensor, src=src, group=pg, async_op=not sync_op)
    return _task(work, "broadcast", sync_op, [tensor])


def reduce(tensor: Any, dst: int, op: int = ReduceOp.SUM, group: Any = None,
           sync_op: bool = True) -> Work | None:
    """Reduce ``tensor`` across ``group`` into global rank ``dst``'s (:func:`mpicoll.reduce`)."""
    pg = _pg(group)
    if not _member(pg):
        return None
    work = _m.reduce(tensor, dst=dst, op=_op(op, "reduce"), group=pg, async_op=not sync_op)
    return _task(work, "reduce", sync_op, [tensor])


def scatter(tensor: Any, tensor_list: list[Any] | None = None, src: int = 0,
            group: Any = None, sync_op: bool = True) -> Work | None:
    """Send ``tensor_list[j]`` from global rank ``src`` into rank j's ``tensor``.

    ``tensor_list`` is read on ``src`` only; elsewhere it is ignored with a
    warning, as in Paddle. Calls :func:`mpicoll.scatter`.
    """
    pg = _pg(group)
    if not _member(pg):
        return None
    name = "scatter"
    if src != _group.get_rank():
        if tensor_list is not None:
            warnings.warn(f"{name}: tensor_list is meaningless on a rank that is not src "
                          "and is ignored", stacklevel=2)
        tensor_list = None
    try:
        work = _m.scatter(tensor, tensor_list, src=src, group=pg, async_op=not sync_op)
    except (ValueError, TypeError, BufferError) as e:
        _reraise(e, name)
    return _task(work, name, sync_op, [tensor])


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int = 0,
           group: Any = None, sync_op: bool = True) -> Work | None:
    """Gather every rank's ``tensor`` into ``gather_list`` on global rank ``dst``.

    ``gather_list`` is read on ``dst`` only (elsewhere ignored with a warning);
    an empty list there is filled with one new tensor per rank, shaped like
    ``tensor``, as Paddle does. Calls :func:`mpicoll.gather`.
    """
    pg = _pg(group)
    if not _member(pg):
        return None
    name = "gather"
    if dst != _group.get_rank():
        if gather_list is not None:
            warnings.warn(f"{name}: gather_list is meaningless on a rank that is not dst "
                          "and is ignored", stacklevel=2)
        gather_list = None
    elif isinstance(gather_list, list) and len(gather_list) == 0:
        gather_list.extend(_empty_like(tensor, name, "tensor")
                           for _ in range(_group.get_world_size(pg)))
    work = _m.gather(tensor, gather_list, dst=dst, group=pg, async_op=not sync_op)
    return _task(work, name, sync_op, gather_list)


def barrier(group: Any = None) -> None:
    """Block until every rank of ``group`` has entered (:func:`mpicoll.barrier`)."""
    pg = _pg(group)
    if not _member(pg):
        return
    _m.barrier(group=pg)


def send(tensor: Any, dst: int = 0, group: Any = None, sync_op: bool = True) -> Work | None:
    """Send ``tensor`` to global rank ``dst`` (:func:`mpicoll.send` / :func:`mpicoll.isend`)."""
    pg = _pg(group)
    if not _member(pg):
        return None
    if not sync_op:
        return _m.isend(tensor, dst=dst, group=pg)
    _m.send(tensor, dst=dst, group=pg)
    return _done("send", [tensor])


def recv(tensor: Any, src: int = 0, group: Any = None, sync_op: bool = True) -> Work | None:
    """Receive into ``tensor`` from global rank ``src`` (None: any source).

    Calls :func:`mpicoll.recv` / :func:`mpicoll.irecv`; the task's
    ``source_rank()`` gives the sender's global rank.
    """
    pg = _pg(group)
    if not _member(pg):
        return None
    if not sync_op:
        return _m.irecv(tensor, src=src, group=pg)
    source = _m.recv(tensor, src=src, group=pg)
    work = _done("recv", [tensor])
    work._source = source
    return work


def isend(tensor: Any, dst: int, group: Any = None) -> Work | None:
    """Start sending ``tensor`` to global rank ``dst``; returns a task (:func:`mpicoll.isend`)."""
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor: Any, src: int | None = None, group: Any = None) -> Work | None:
    """Start receiving into ``tensor`` from global rank ``src`` (None: any source)."""
    return recv(tensor, src, group, sync_op=False)


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`.

    Args:
        op: :func:`isend` or :func:`irecv` (of this module, mpicoll or Paddle).
        tensor: the tensor to send, or to receive into.
        peer: the peer's global rank.
        group: a :class:`Group` (or mpicoll ProcessGroup), None for the global group.
    """

    def __init__(self, op: Any, tensor: Any, peer: int, group: Any = None) -> None:
        kind = getattr(op, "__name__", None)
        if kind not in ("isend", "irecv"):
            raise ValueError(f"P2POp: op must be isend or irecv: expected "
                             f"paddle.distributed.isend or irecv, got {op!r}")
        self.op = isend if kind == "isend" else irecv
        self.tensor = tensor
        self.peer = peer
        self.group = group

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__}, peer={self.peer})"


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work] | None:
    """Post every send and receive of the list at once; returns their tasks.

    Calls :func:`mpicoll.batch_isend_irecv`. None on ranks outside the first
    operation's group, as in Paddle.
    """
    name = "batch_isend_irecv"
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise TypeError(f"{name}: p2p_op_list must be a list of P2POp: expected "
                        f"list[P2POp], got {p2p_op_list!r}")
    if p2p_op_list and not _member(_pg(p2p_op_list[0].group)):
        return None
    ops = [_m.P2POp(_m.isend if p.op is isend else _m.irecv, p.tensor, p.peer,
                      _pg(p.group)) for p in p2p_op_list]
    return _m.batch_isend_irecv(ops)


# -- objects ----------------------------------------------------------------------


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Append every rank's picklable ``obj`` to ``object_list``, in rank order (as Paddle).

    Raises:
        RuntimeError: this rank is not a member of ``group`` (as in Paddle).
    """
    pg = _pg(group)
    name = "all_gather_object"
    if not _member(pg):
        raise _not_member_error(name)
    if not isinstance(object_list, list):
        raise TypeError(f"{name}: object_list must be a list: expected list, got "
                        f"{type(object_list).__name__}")
    gathered: list[Any] = [None] * _group.get_world_size(pg)
    _m.all_gather_object(gathered, obj, group=pg)
    object_list.extend(gathered)


def broadcast_object_list(object_list: list[Any], src: int, group: Any = None) -> None:
    """Replace ``object_list``'s entries with global rank ``src``'s, in place."""
    pg = _pg(group)
    if not _member(pg):
        return
    _m.broadcast_object_list(object_list, src=src, group=pg)


def scatter_object_list(out_object_list: list[Any], in_object_list: list[Any] | None = None,
                        src: int = 0, group: Any = None) -> None:
    """Give rank j ``in_object_list[j]`` of global rank ``src``.

    ``out_object_list`` is cleared and receives that one object, as in Paddle;
    ``in_object_list`` is read on ``src`` only.
    """
    pg = _pg(group)
    if not _member(pg):
        return
    name = "scatter_object_list"
    if not isinstance(out_object_list, list):
        raise TypeError(f"{name}: out_object_list must be a list: expected list, got "
                        f"{type(out_object_list).__name__}")
    box: list[Any] = [None]
    payload = in_object_list if src == _group.get_rank() else None
    try:
        _m.scatter_object_list(box, payload, src=src, group=pg)
    except (ValueError, TypeError) as e:
        _reraise(e, name)
    out_object_list.clear()
    out_object_list.append(box[0])
