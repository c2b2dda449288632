"""[2] gather, scatter and small broadcasts as direct messages (:mod:`._direct`): between
the root and each rank, this rank's own entry copied locally on the root; a repeated
blocking call's messages kept by the group (:func:`._direct.started`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy import frombuffer as _frombuffer

from .. import _core_loader
from .._mpi import MPI
from .._work import Work
from ._direct import keeps, kept_call, new_plan, plan_key, put_back, span, take, where
from ._entries import Broadcast, OffRoot, RootList
from ._layout import Layout
from ._layout import area as _area
from ._layout import displs as _displs
from ._messages import Direct, Kept, issue, issue_plan
from ._own_block import flat_copy
from ._signature import signature
from ._sizes import Sizes, _kept
from ._sizes import broadcast as broadcast_sizes
from ._sizes import rooted as rooted_sizes

# the largest broadcast (in elements) sent as direct messages, the root's tensor to each
# rank: above it, MPI's algorithms (trees, pipelines) win. Its messages' tags carry the
# count and the call's signature, so a rank whose dtype or size differs from the root's
# raises (where MPI's broadcast returned a wrong result silently on Open MPI). By
# elements, so that ranks whose dtypes differ still take the same way (and are told so)
MAX_BROADCAST = 512

_fromaddress = MPI.buffer.fromaddress
_Status = MPI.Status


def plan(pg: Any, root: int, gathering: bool, mine: int, counts: list[int] | None,
         sizes: Sizes | None, sig: int) -> Direct:
    """The :class:`Direct` of a gather (``gathering``) or scatter: ``mine`` elements of
    this rank's tensor, ``counts`` the root's list's sizes (None off the root), its tags
    carrying ``sig`` (:func:`._signature.signature`)."""
    me, n = pg._rank, pg._size
    key = ("rooted", me, root, gathering, mine, None if counts is None else tuple(counts),
           sizes, sig)
    # a scatter's ranks acknowledge the root's message, as a broadcast's do
    # (:func:`_broadcast_plan`): two ranks that each take themselves (or each other) for
    # the root then raise at the call, where each returned its own chunk and left the
    # other's queued for their next scatter. (A count of 0: a scatter's root has no sizes
    # to compare, its output is its own chunk.) A gather's roots that differ wait instead,
    # and no rank returns a wrong result: the watchdog ends that job
    if me == root:
        c = list(counts or ())
        others = [j for j in range(n) if j != root]
        return _kept(key, lambda: Direct([(j, c[j], j) for j in others], [], c, sizes, n,
                                         sig=sig)
                     if gathering else Direct([], [(j, c[j]) for j in others], [0] * n, sizes,
                                              n, sig=sig, acks=[(j, 0, j) for j in others],
                                              room=max(c, default=0)))
    return _kept(key, lambda: Direct([], [(root, mine)], [], sizes, n, sig=sig)
                 if gathering else Direct([(root, mine, 0)], [], [mine], sizes, n, sig=sig,
                                          acks=[(root, 0)]))


def rooted(op: str, pg: Any, root: int, gathering: bool, arr: Any, dt: Any,
           args: tuple, sizes: Sizes | None, area: Any = None,
           displs: list[int] | None = None, counts: list[int] | None = None,
           slot: Any = None, finalize: Callable[[], Any] | None = None,
           async_op: bool = False, outputs: list[Any] | None = None, keep: Any = None,
           sig: Callable[[], dict[str, Any]] | None = None) -> Work | None:
    """The general path's gather (``gathering``) or scatter as direct messages (``args``:
    its Gatherv's or Scatterv's): ``arr``, this rank's tensor's array (sent by a gather,
    written by a scatter); on the root, ``area``, the list's memory (owning none), with
    each rank's ``displs`` and ``counts`` there, and ``slot``, the root's own entry
    (numpy), copied locally."""
    copy = None if area is None or not arr.size else \
        flat_copy(slot, arr) if gathering else flat_copy(arr, slot)
    d = plan(pg, root, gathering, arr.size, counts, sizes, signature(op, arr.dtype))
    return issue(op, pg, d, args, _rooted_bufs(d, gathering, arr, dt, area, displs), copy,
                 finalize, async_op, outputs, keep, sig, 4)


def quick(op: str, pg: Any, root: int, gathering: bool, a: Any, hit: OffRoot | RootList,
          lay: Layout | None, keep: Any) -> None:
    """A blocking gather (``gathering``) or scatter of the plain array ``a`` (written by a
    scatter), of a quick entry ``hit`` that a general call validated: off the root, an
    :class:`OffRoot`; on the root, a :class:`RootList`, and ``lay``, where the list's
    tensors lie (:func:`._layout.layout`).
    Its messages are kept by the group by the entry and where the memory lies
    (:func:`._direct.plan_key`: where ``a`` lies, and where the list lies, its start or
    each tensor's address, :func:`._direct.where`): a ``Plan`` that the compiled core
    runs (the caller's :func:`._direct.run_kept` finds it), or a Python entry where the
    core is not in use. Here: a call that found no Plan, or where the core is not in
    use."""
    core = _core_loader.module
    dt = hit.datatype
    copy = None if lay is None or not a.size else \
        flat_copy(lay.arrays[root], a) if gathering else flat_copy(a, lay.arrays[root])
    key = plan_key(hit, a, None if lay is None else where(lay))
    entry = take(pg, key, hit)
    if entry is None:
        counts = None if lay is None else list(lay.counts)
        d = plan(pg, root, gathering, a.size, counts,
                 rooted_sizes(op, pg, root, gathering, a.size, counts), signature(op, a.dtype))
        # (over the memory's address ranges, owning none: whatever array lies there now,
        # the key fixes its size and layout)
        mine = span(a, gathering)
        area = None if lay is None else _area(lay)
        bufs = _rooted_bufs(d, gathering, mine, dt, area,
                            None if lay is None else hit.counts[1] if lay.end_to_end
                            else _displs(lay))
        args = _rooted_args(gathering, _frombuffer(mine, a.dtype), dt, area, hit, root) \
            if lay is not None else \
            ((_frombuffer(mine, a.dtype), dt), None, root) if gathering else \
            (None, (_frombuffer(mine, a.dtype), dt), root)
        if d.big or not keeps(pg):  # (posted, as async calls are)
            issue(op, pg, d, args, bufs, copy, keep=keep, depth=5)
            return
        reqs, posts = d.prepare(pg.direct, bufs)
        sts = [_Status() for _ in reqs]
        if core is None:
            core = _core_loader.load()  # (where not loaded yet: decided once)
        if core is not None:  # (its next calls run there: run_kept)
            slot = None if copy is None else _fromaddress(lay.addresses[root], a.nbytes,
                                                          not gathering)
            entry = new_plan(core, hit, reqs, sts, d, dt, None if copy is None else
                             (slot, mine) if gathering else (mine, slot), args, posts=posts)
        else:
            entry = Kept(hit, reqs, sts, args, bufs, direct=d)
    if type(entry) is Kept:
        issue(op, pg, entry.direct, entry.args, entry.bufs, copy, keep=keep, depth=5,
              started=entry)
    else:  # (a Plan: the core's, run here this once, by the Python path's issue)
        issue_plan(op, pg, entry, keep, 5)
    put_back(pg.kept, key, entry)


def _rooted_args(gathering: bool, arr: Any, dt: Any, area: Any, hit: RootList,
                 root: int) -> tuple:
    """The root's Gatherv's or Scatterv's arguments (its quick entry's ``hit``: the
    list's counts and displacements, packed, and datatype), for the record and errors."""
    theirs = (area, hit.counts, hit.datatype)
    return ((arr, dt), theirs, root) if gathering else (theirs, (arr, dt), root)


def _rooted_bufs(d: Direct, gathering: bool, arr: Any, dt: Any, area: Any,
                 displs: list[int] | None) -> tuple:
    """:meth:`Direct.post`'s buffers of a gather or scatter (:func:`rooted`'s)."""
    if area is None:
        return (arr, d.zeros, None, None, dt) if gathering else (None, None, arr, d.zeros, dt)
    return (None, None, area, displs, dt) if gathering else (area, displs, None, None, dt)


def broadcasts(pg: Any, count: int) -> bool:
    """Whether a broadcast of ``count`` elements on ``pg`` goes as direct messages."""
    return pg.direct is not None and 0 < count <= MAX_BROADCAST


def _broadcast_plan(name: str, pg: Any, root: int, count: int, dtype: Any) -> Direct:
    me, n = pg._rank, pg._size
    sizes, sig = broadcast_sizes(name, pg, root, count), signature(name, dtype)
    # each rank acknowledges the root's message (where the check is on): a root that
    # differs across ranks then raises at this call (:class:`._messages.Direct`). The
    # root's messages depend on the group's size, so does its key
    if me == root:
        others = [j for j in range(n) if j != root]
        return _kept(("broadcast", me, root, count, n, sizes, sig), lambda: Direct(
            [], [(j, count) for j in others], [count] * n, sizes, n, sig=sig,
            acks=[(j, count, j) for j in others]))
    return _kept(("broadcast", me, root, count, sizes, sig), lambda: Direct(
        [(root, count, 0)], [], [count], sizes, n, sig=sig, acks=[(root, count)]))


def _broadcast_bufs(d: Direct, is_root: bool, arr: Any, dt: Any) -> tuple:
    return (arr, d.zeros, None, None, dt) if is_root else (None, None, arr, d.zeros, dt)


def broadcast(name: str, pg: Any, root: int, arr: Any, dt: Any,
              finalize: Callable[[], Any] | None, async_op: bool, outputs: list[Any],
              sig: Callable[[], dict[str, Any]]) -> Work | None:
    """The general path's broadcast of the contiguous array ``arr`` from group rank
    ``root`` as direct messages (:func:`broadcasts`), then ``finalize`` (write-back)."""
    d = _broadcast_plan(name, pg, root, arr.size, arr.dtype)
    return issue(name, pg, d, ([arr, dt], root), _broadcast_bufs(d, pg._rank == root, arr, dt),
                 None, finalize, async_op, outputs, sig=sig, depth=4)


def broadcast_quick(name: str, pg: Any, a: Any, hit: Broadcast, keep: Any = None) -> None:
    """A blocking broadcast of the plain array ``a`` (``hit``: what a general call
    validated), its messages kept by the group by
    the entry and where ``a`` lies (:func:`._direct.kept_call`: where the compiled core
    is in use, a ``Plan`` that it runs)."""
    def make(span: Any) -> tuple[Direct, tuple, tuple, None]:
        dt, root = hit.datatype, hit.root
        d = _broadcast_plan(name, pg, root, a.size, a.dtype)
        return (d, _broadcast_bufs(d, pg._rank == root, span, dt),
                ([_frombuffer(span, a.dtype), dt], root), None)
    kept_call(name, pg, hit, a, keep, make)
