"""[2] The quick path's entries: what the general path validated for one signature of a
call (dtypes, shapes, group, split sizes, op), kept in its collective's table
(:class:`._table.Table`) for the repeated blocking calls that find it.

Each is a named tuple, read by name here. The compiled core reads an entry's ``method``
first (mpicoll/_core.c: which MPI call, or ``"direct"``/``"reduced"`` for messages), and
an :class:`Exchange`'s seven fields by their place (``exchange()``, ``exchange_in``), so
a field's place is part of its meaning.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Exchange(NamedTuple):
    """all_to_all_single, all_gather_into_tensor or reduce_scatter_tensor as MPI's
    collective (:func:`._call.exchanged`; the compiled core makes the calls without an own
    block or sizes itself)."""

    method: str  # the nonblocking MPI method: "Ialltoall", "Ialltoallv", "Iallgather", ...
    send: Any  # the send count, or (counts, displacements)
    recv: Any  # the receive count, or (counts, displacements)
    datatype: Any  # the MPI datatype
    after: tuple | None  # MPI's arguments after the buffers: (op,), (counts, op), or None
    own: tuple | None  # this rank's own block, copied locally (_own_block), or None
    sizes: Any  # the counts' Sizes, posted beside the data, or None


class Messages(NamedTuple):
    """A call as direct messages (:mod:`._direct`): one tensor to one (all_to_all_single,
    all_gather_into_tensor) or lists (all_to_all, all_gather)."""

    method: str  # "direct"
    displacements: Any  # (send, receive) in elements; an all_gather list's: the receive's
    datatype: Any  # the MPI datatype
    own: tuple | None  # a tensor's own block: (input slice, output slice), or None
    direct: Any  # the messages' Direct


class Reduced(NamedTuple):
    """reduce_scatter_tensor or reduce_scatter as direct messages whose blocks this rank
    reduces (:mod:`._reduce_scatter_direct`)."""

    method: str  # "reduced"
    displacements: tuple  # (send, receive) in elements
    op: Any  # the MPI op
    datatype: Any  # the MPI datatype
    how: Any  # what reduces the blocks: a numpy ufunc, or the MPI op (ufunc_of)
    direct: Any  # the messages' Direct


class Listed(NamedTuple):
    """all_to_all or all_gather of a list as MPI's collective, over where the list lies
    (:mod:`._layout`)."""

    method: str  # "Ialltoallv", "Iallgather" or "Iallgatherv"
    send: Any  # (counts, displacements) for Ialltoallv, else None (all_gather's tensor)
    recv: Any  # the receive count, or (counts, displacements)
    datatype: Any  # the MPI datatype
    own: tuple | None  # this rank's own block, copied locally, or None
    sizes: Any  # the counts' Sizes, or None


class ReducedList(NamedTuple):
    """reduce_scatter of a list as MPI's collective, from its chunks where they lie end to
    end, else packed."""

    method: str  # "Ireduce_scatter_block" or "Ireduce_scatter"
    counts: Any  # each rank's count (an int for Ireduce_scatter_block), as MPI takes it
    datatype: Any  # the MPI datatype
    op: Any  # the MPI op
    sizes: Any  # the counts' Sizes, or None


class Reduction(NamedTuple):
    """all_reduce's or reduce's reduction, the same for every tensor of its dtype
    (``_reduce.QUICK``; the core calls MPI with both fields, read by place, and tells it
    from a :class:`RootedReduction` by its length)."""

    datatype: Any  # the MPI datatype
    op: Any  # the MPI op


class RootedReduction(NamedTuple):
    """A reduce to one root as direct messages (``_reduce_direct.QUICK``)."""

    datatype: Any  # the MPI datatype
    op: Any  # the MPI op
    root: int  # the root's group rank


class Broadcast(NamedTuple):
    """A broadcast from one root (``_rooted_quick.BROADCASTS``; the core reads both
    fields by place)."""

    datatype: Any  # the MPI datatype
    root: int  # the root's group rank


class OffRoot(NamedTuple):
    """A gather's or scatter's call on a rank that is not its root
    (``_rooted_quick.QUICK_OFF_ROOT``)."""

    datatype: Any  # the MPI datatype
    root: int  # the root's group rank
    gathering: bool  # a gather (True) or a scatter
    sizes: Any  # the counts' Sizes (:func:`._sizes.rooted`), or None


class RootList(NamedTuple):
    """The root's list of a gather or scatter (``_rooted_quick._QUICK_GATHER``,
    ``_QUICK_SCATTER``)."""

    counts: tuple  # (counts, displacements) over the list packed end to end
    datatype: Any  # the MPI datatype
    sizes: Any  # the counts' Sizes (:func:`._sizes.rooted`), or None
