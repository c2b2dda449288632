"""[2] gather and scatter as direct messages (:mod:`._direct`): between the root and each
rank, this rank's own entry copied locally on the root; a repeated blocking call's
messages kept by the group as persistent ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._mpi import MPI
from .._work import Work
from ._direct import keeps, put_back, span, take
from ._layout import area as _area
from ._layout import displs as _displs
from ._messages import Direct, issue
from ._own_block import flat_copy
from ._signature import signature
from ._sizes import Sizes, _kept
from ._sizes import rooted as rooted_sizes

_buffer = MPI.buffer
_Status = MPI.Status


def plan(pg: Any, root: int, gathering: bool, mine: int, counts: list[int] | None,
         sizes: Sizes | None, sig: int) -> Direct:
    """The :class:`Direct` of a gather (``gathering``) or scatter: ``mine`` elements of
    this rank's tensor, ``counts`` the root's list's sizes (None off the root), its tags
    carrying ``sig`` (:func:`._signature.signature`)."""
    me, n = pg._rank, pg._size
    key = ("rooted", me, root, gathering, mine, None if counts is None else tuple(counts),
           sizes, sig)
    if me == root:
        c = list(counts or ())
        others = [j for j in range(n) if j != root]
        return _kept(key, lambda: Direct([(j, c[j], j) for j in others], [], c, sizes, n,
                                         sig=sig)
                     if gathering else Direct([], [(j, c[j]) for j in others], [], sizes, n,
                                              sig=sig))
    return _kept(key, lambda: Direct([], [(root, mine)], [], sizes, n, sig=sig)
                 if gathering else Direct([(root, mine, 0)], [], [mine], sizes, n, sig=sig))


def rooted(op: str, pg: Any, root: int, gathering: bool, arr: Any, dt: Any,
           args: tuple | None, sizes: Sizes | None, area: Any = None,
           displs: list[int] | None = None, counts: list[int] | None = None,
           slot: Any = None, finalize: Callable[[], Any] | None = None,
           async_op: bool = False, outputs: list[Any] | None = None, keep: Any = None,
           sig: Callable[[], dict[str, Any]] | None = None, depth: int = 4,
           kept: Any = None, lay: tuple | None = None) -> Work | None:
    """A gather (``gathering``) or scatter as direct messages (``args``: its Gatherv's or
    Scatterv's): ``arr``, this rank's tensor's array (sent by a gather, written by a
    scatter); on the root, ``area``, the list's memory (owning none), with each rank's
    ``displs`` and ``counts`` there, and ``slot``, the root's own entry (numpy), copied
    locally. ``kept``: a blocking call of the quick path, its messages kept by the group
    (:func:`started`) under its table's entry (the root's list's, else the datatype;
    ``sizes`` then made only where the group has none kept). ``lay``: the root's list's
    layout in the quick path, in place of ``area``, ``displs`` and ``args``: its messages
    kept by where each tensor lies, the area made only where the group keeps none."""
    copy = None if (area is None and lay is None) or not arr.size else \
        flat_copy(slot, arr) if gathering else flat_copy(arr, slot)
    if kept is not None:
        # (a kept call off the root has no area; the root's quick path gives its layout)
        key = (id(kept), gathering, root, arr.size, _buffer(arr).address) if lay is None \
            else (id(kept), lay[2]) if lay[7] else (id(kept), *lay[5])
        entry = take(pg, key, kept)
        if entry is None and lay is not None:  # (kept: (counts, adjacent displacements), dt)
            area, displs = _area(lay), kept[0][1] if lay[7] else _displs(lay)
        if entry is None and keeps(pg):
            d = plan(pg, root, gathering, arr.size, counts,
                     rooted_sizes(op, pg, root, gathering, arr.size, counts),
                     signature(op, arr.dtype))
            if not d.big:
                bufs = _rooted_bufs(d, gathering, span(arr, gathering), dt, area, displs)
                reqs = d.prepare(pg.direct, bufs)
                entry = (kept, reqs, [_Status() for _ in reqs], d, bufs)
        if entry is not None:
            if lay is not None:  # (the list's area: where the entry's buffers hold it)
                args = _rooted_args(gathering, arr, dt, entry[4][2 if gathering else 0],
                                    kept, root)
            issue(op, pg, entry[3], args, entry[4], copy, keep=keep, depth=depth,
                  started=entry)
            put_back(pg.kept, key, entry)
            return None
        sizes = rooted_sizes(op, pg, root, gathering, arr.size, counts)
    if lay is not None:
        args = _rooted_args(gathering, arr, dt, area, kept, root)
    d = plan(pg, root, gathering, arr.size, counts, sizes, signature(op, arr.dtype))
    return issue(op, pg, d, args, _rooted_bufs(d, gathering, arr, dt, area, displs), copy,
                 finalize, async_op, outputs, keep, sig, depth)


def _rooted_args(gathering: bool, arr: Any, dt: Any, area: Any, hit: tuple,
                 root: int) -> tuple:
    """The root's Gatherv's or Scatterv's arguments (its quick entry's ``hit``: the
    list's counts and displacements, packed, and datatype), for the record and errors."""
    theirs = (area, *hit)
    return ((arr, dt), theirs, root) if gathering else (theirs, (arr, dt), root)


def _rooted_bufs(d: Direct, gathering: bool, arr: Any, dt: Any, area: Any,
                 displs: list[int] | None) -> tuple:
    """:meth:`Direct.post`'s buffers of a gather or scatter (:func:`rooted`'s)."""
    if area is None:
        return (arr, d.zeros, None, None, dt) if gathering else (None, None, arr, d.zeros, dt)
    return (None, None, area, displs, dt) if gathering else (area, displs, None, None, dt)
