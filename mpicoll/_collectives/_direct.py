"""[2] Direct calls: all_to_all, all_gather, reduce_scatter, gather and scatter on a few
ranks as point-to-point messages, each carrying its count in its tag.

On a group of 2 to ``MAX_RANKS`` ranks, every rank posts one receive, of any tag, from
each peer it receives from, and one send to each peer it sends to, whose tag is the
number of elements it sends (an exchange, all_gather, reduce_scatter: every peer both
ways; gather and scatter: between the root and each rank); this rank's own block is
copied locally. The messages go on a communicator of the group's own for them
(``ProcessGroup.direct``, made with the group, so that no call waits for it). A
receive's status then says how many elements its peer sent, even where MPI cut the
message short, so sizes that disagree across ranks are caught (SizeMismatch on the
receiver, worded by :mod:`._sizes`) with no message beyond the data (:mod:`._messages`).

One call's messages pair up with the same call's on each peer: every rank posts them in
call order, one per pair of ranks that the call links (empty ones too), and MPI keeps
the messages between two ranks on one communicator in order. (Measured against MPI's
collectives with their counts beside them: the history of docs/performance.md.)

``MPICOLL_DIRECT``: the largest group that goes direct (default 8; 0: never), read when
the first group is made (:func:`mpicoll._process_group.direct_ranks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy import frombuffer as _frombuffer
from numpy import ndarray as _ndarray

from .. import _core_loader, _departed, _polling
from .._describe import mpi_error
from .._mpi import MPI
from .._process_group import direct_ranks
from .._recorder import kept as recorded
from .._recorder import recording
from .._work import Work
from ._entries import Messages
from ._layout import Layout
from ._messages import FRESH, Direct, Fold, Kept, free, issue, issue_plan, settle_core
from ._own_block import own_block_copy
from ._pack import displs
from ._signature import signature
from ._sizes import Sizes, _kept, exchange

__all__ = ["MAX_RANKS", "Direct", "chosen", "describe", "exchanged", "issue", "kept_call",
           "keeps", "new_plan", "over", "plan", "put_back", "run_kept", "settled", "single",
           "span", "started", "take", "where"]


MAX_RANKS = direct_ranks()
# repeated calls' messages kept per group, in use order (:func:`exchanged`): a training
# loop exchanges between a few tensors over and over
KEPT = 16
# a group's calls that found no kept messages, less those that found theirs, past which
# those that find none post their messages, but for one call in PROBE (:func:`keeps`)
MISSES = 8
PROBE = 32
_buffer = MPI.buffer
_fromaddress = MPI.buffer.fromaddress
_Status = MPI.Status


def chosen(pg: Any) -> bool:
    """Whether ``pg``'s calls above go direct: where the group was made with its
    communicator for them (its size alone decides: alike on every rank)."""
    return pg.direct is not None


def plan(pg: Any, scounts: list[int], rcounts: list[int], sizes: Sizes | None,
         sig: int) -> Direct:
    """The :class:`Direct` of an exchange of these counts on ``pg``, its tags carrying
    ``sig`` (:func:`._signature.signature`) (kept: a training loop's general path, async
    calls included, does not remake it per call)."""
    me, n = pg._rank, pg._size
    return _kept(("direct", me, tuple(scounts), tuple(rcounts), sizes, sig), lambda: Direct(
        [(j, rcounts[j], j) for j in range(n) if j != me],
        [(j, scounts[j]) for j in range(n) if j != me], list(rcounts), sizes, n,
        (list(scounts), list(rcounts)), sig))


def single(pg: Any, src: Any, dst: Any, sarr: Any, rarr: Any, scounts: list[int],
           rcounts: list[int], dt: Any, quick_key: tuple | None, table: dict, output: Any,
           async_op: bool) -> Work | None:
    """all_to_all_single's general path, from its validated buffers (``src``, ``dst``:
    the adapter's; ``sarr``, ``rarr``: their arrays; counts in elements), its quick entry
    stored in ``table`` (:func:`exchanged` makes it)."""
    name, me = "all_to_all_single", pg._rank
    d = plan(pg, scounts, rcounts, exchange(name, pg, scounts, rcounts, "output"),
             signature(name, sarr.dtype))
    sd, rd = displs(scounts), displs(rcounts)
    own = (sd[me], rd[me], scounts[me]) if scounts[me] else None
    if quick_key is not None:  # (this rank's own block: where it lies in each, flat)
        table[quick_key] = Messages("direct", (sd, rd), dt, None if own is None else (
            slice(own[0], own[0] + own[2]), slice(own[1], own[1] + own[2])), d)
    return issue(name, pg, d, ([sarr, (d.counts[0], sd), dt], [rarr, (d.counts[1], rd), dt]),
                 (sarr, sd, rarr, rd, dt),
                 None if own is None else own_block_copy(sarr, rarr, own), dst.commit_hook,
                 async_op, [output],
                 sig=lambda: {"dtype": src.dtype, "send": scounts, "recv": rcounts})


def exchanged(op: str, group: Any, hit: Messages, s: Any, r: Any, keep: Any = None) -> None:
    """:func:`._call.exchanged` of an entry :func:`single` stored, from array ``s`` to
    array ``r`` (the user's frame: 6 up from the recorder's): its messages kept by the
    group (:func:`started`), with the copy of this rank's own block made once for them."""
    (sd, rd), dt, own, d = hit.displacements, hit.datatype, hit.own, hit.direct
    core = _core_loader.module
    if core is not None and not d.big and not _departed.left and run_kept(
            core, op, group, hit, s, r, keep):
        return
    c = d.counts
    args = ((s, (c[0], sd), dt), (r, (c[1], rd), dt))
    sa, ra = _buffer(s).address, _buffer(r).address
    key = (id(hit), sa, ra)
    entry = None if d.big else take(group, key, hit)
    if entry is None:
        if d.big or not keeps(group):  # (posted, as async calls are)
            issue(op, group, d, args, (s, sd, r, rd, dt), None if own is None else (
                r.reshape(-1), own[1], s.reshape(-1)[own[0]]), keep=keep, depth=6)
            return
        spans = (_fromaddress(sa, s.nbytes, True), sd, _fromaddress(ra, r.nbytes), rd, dt)
        reqs, posts = d.prepare(group.direct, spans)
        # this rank's own block, flat, over the same address ranges (owning nothing)
        copy = None if own is None else (_frombuffer(spans[2], s.dtype)[own[1]], Ellipsis,
                                         _frombuffer(spans[0], s.dtype)[own[0]])
        sts = [_Status() for _ in reqs]
        if core is None:
            core = _core_loader.load()  # (where not loaded yet: decided once)
        if core is not None:  # (the core's Plan: its next calls run there, by run_kept)
            entry = new_plan(core, hit, reqs, sts, d, dt,
                             None if copy is None else (copy[0], copy[2]), args, posts=posts)
            issue(op, group, d, args, spans, copy, keep=keep, depth=6, started=entry)
            put_back(group.kept, key, entry)
            return
        entry = Kept(hit, reqs, sts, None, spans, copy)
    if type(entry) is Kept:
        issue(op, group, d, args, entry.bufs, entry.copy, keep=keep, depth=6, started=entry)
    else:  # (the core's Plan, where run_kept did not run it: a rank has left)
        issue_plan(op, group, entry, keep, 6)
    put_back(group.kept, key, entry)


def kept_call(op: str, group: Any, hit: Any, a: Any, keep: Any,
              make: Callable[[Any], tuple[Direct, tuple, tuple, Fold | None]],
              depth: int = 5) -> None:
    """A blocking call of quick entry ``hit`` on the plain array ``a`` alone (all_reduce,
    reduce and broadcast, as messages), its messages kept by the group by the entry and
    where ``a`` lies (:func:`plan_key`):
    where the compiled core is in use, a ``Plan`` found and run there (:func:`run_kept`);
    else made here by ``make(span)`` = (its :class:`Direct`, :meth:`Direct.post`'s
    buffers, the MPI call's arguments it stands for, the reduction of the blocks or None)
    over ``span``, ``a``'s address range (owning none: whatever array lies there now, the
    key fixes its size), and kept (the core's ``Plan`` where it is in use), or posted once
    where :func:`keeps` says so. ``depth``: frames up to the user's (:func:`issue`'s)."""
    core = _core_loader.module
    if core is not None and not _departed.left and run_kept(core, op, group, hit, a, None,
                                                            keep):
        return
    key = plan_key(hit, a, None)
    entry = take(group, key, hit)
    if entry is None:
        d, bufs, args, fold = make(_fromaddress(key[1], a.nbytes))
        if d.big or not keeps(group):  # (posted, as async calls are)
            issue(op, group, d, args, bufs, None, fold, keep=keep, depth=depth)
            return
        reqs, posts = d.prepare(group.direct, bufs)
        sts = [_Status() for _ in reqs]
        if core is None:
            core = _core_loader.load()  # (where not loaded yet: decided once)
        entry = Kept(hit, reqs, sts, args, bufs, finalize=fold, direct=d) if core is None \
            else new_plan(core, hit, reqs, sts, d, bufs[4], None, args,
                          None if fold is None else fold.spec, posts)
    if type(entry) is Kept:
        issue(op, group, entry.direct, entry.args, entry.bufs, None, entry.finalize,
              keep=keep, depth=depth, started=entry)
    else:  # (a Plan: the core's, run here this once, by the Python path's issue)
        issue_plan(op, group, entry, keep, depth)
    put_back(group.kept, key, entry)


def plan_key(hit: Any, first: Any, second: Any) -> tuple:
    """Where a group keeps a repeated call's messages: its quick entry ``hit``, where
    ``first`` lies, and where ``second`` lies (None: ``first``'s length in bytes; either
    an int: that address, where a list of tensors end to end starts; a tuple: the
    addresses of a list's separate tensors, :func:`where`); the compiled core's ``run``
    makes the same key."""
    if second is None:
        return (id(hit), _buffer(first).address, first.nbytes)
    return (id(hit), _part(first), _part(second))


def _part(x: Any) -> Any:
    return x if type(x) is int or type(x) is tuple else _buffer(x).address


def where(lay: Layout) -> int | tuple[int, ...]:
    """Where a list of tensors lies (its :func:`._layout.layout`), for :func:`plan_key`:
    where it starts, where its tensors lie end to end (their sizes are the quick
    entry's); else each tensor's address (-1: empty)."""
    return lay.start if lay.end_to_end else tuple(lay.addresses)


def new_plan(core: Any, hit: Any, reqs: list[Any], sts: list[Any], d: Direct, dt: Any,
             copy: tuple | None, args: tuple, fold: tuple | None = None,
             posts: tuple | None = None) -> Any:
    """The compiled core's ``Plan`` of a repeated call's messages (``reqs`` and ``posts``
    as :meth:`Direct.prepare` made them, their statuses ``sts``; ``copy``: this rank's own
    block, (destination, source) over the memory's address ranges; ``fold``: an
    all_reduce's reduction), for the group to keep under :func:`plan_key` and the core to
    run (:func:`run_kept`)."""
    return core.Plan(hit=hit, reqs=reqs, statuses=sts, direct=d, datatype=dt, copy=copy,
                     meta=recorded(args, sts) if recording() else None, fold=fold, args=args,
                     posts=posts)


def run_kept(core: Any, op: str, group: Any, hit: Any, first: Any, second: Any,
             keep: Any) -> bool:
    """Run in the compiled core the ``Plan`` the group keeps for a blocking call of quick
    entry ``hit`` on arrays ``first`` and ``second`` (:func:`plan_key`): numbered, its
    messages started, waited for and compared, recorded, all in C. False where the group
    keeps none: the caller makes one. An MPI error, or counts or signatures that differ,
    raise here, as :func:`._messages.issue` raises them."""
    seq = group.seq + 1
    try:
        res = core.run(op, group, seq, group.kept, hit, first, second, len(_polling.spin),
                       keep)
    except MPI.Exception as e:
        settled(core, op, group, hit, first, second, seq, e, keep)
    if res is False:
        return False
    if res is None:
        group.seq = seq
    else:
        settled(core, op, group, hit, first, second, seq, res, keep)
    return True


def settled(core: Any, op: str, group: Any, hit: Any, first: Any, second: Any, seq: int,
            outcome: Any, keep: Any) -> None:
    """Call ``seq`` of a kept ``Plan`` that the core did not finish (``outcome``: the MPI
    error, or the record's id where a tag or length differs), settled as
    :func:`._messages.settle_core` does: raised, the plan no longer kept; or, where the
    counts' check is off, the blocks reduced here."""
    group.seq = seq
    key = plan_key(hit, first, second)
    plan = group.kept[key]
    try:
        settle_core(core, op, group, seq, plan.direct, plan.reqs, plan.statuses,
                    plan.datatype, plan.args, keep, outcome)
    except BaseException:
        group.kept.pop(key, None)
        raise
    if plan.fold is not None:  # (not reduced in the core)
        Fold.of(plan.fold, plan.datatype)()


def core_found(core: Any, op: str, group: Any, found: Any, keep: Any,
               mpi_args: Callable[[Any, Any], tuple]) -> tuple | None:
    """What one tensor's quick path in the core (``reduce``, ``bcast``) handed back:
    None where the call is done (completed, or its Plan's run settled here); else
    (hit, array) for the caller to make the call, or (None, None): the general path takes
    it. An MPI error of MPI's collective is raised, its arguments worded by
    ``mpi_args(hit, array)``."""
    if found is True:
        return None
    if found is False:
        return None, None
    if len(found) == 5:  # (the Plan's run did not finish)
        settled(core, op, group, *found, keep)
        return None
    if len(found) == 3:  # (MPI's collective raised)
        hit, a, e = found
        raise mpi_error(op, e, mpi_args(hit, a)) from e
    return found


def started(op: str, group: Any, d: Direct, make: Callable[[], tuple[tuple, tuple]],
            copy: tuple | None, keep: Any = None, depth: int = 4, *, hit: Any,
            key: tuple) -> None:
    """A blocking direct call of a quick entry ``hit`` (a list's: its :class:`Direct`
    ``d``), its messages kept by the group (the core's ``Plan``) by ``key``
    (:func:`plan_key`'s: ``id(hit)`` and where the memory lies, :func:`where` for a list:
    whatever array lies there now, the entry fixes its size and layout), in use order;
    taken out while in use, put back once complete. ``make()`` gives :func:`issue`'s
    arguments and buffers, over address ranges that own nothing: called where the group
    keeps none for ``key``, and kept with the requests (a call that finds them pays for
    neither). Where :attr:`Direct.big`, or where :func:`keeps` says so, posted as usual.
    Where the compiled core is in use, the group keeps a ``Plan``, which its next calls
    run there (:func:`run_kept`), this rank's own block (``copy``: (destination,
    Ellipsis, source)) copied over the same memory."""
    entry = None if d.big else take(group, key, hit)
    if entry is None:
        args, bufs = make()
        if d.big or not keeps(group):
            issue(op, group, d, args, bufs, copy, keep=keep, depth=depth)
            return
        sbuf, sd, rbuf, rd, dt = bufs
        reqs, posts = d.prepare(group.direct, (span(sbuf, True), sd, span(rbuf, False), rd, dt))
        sts = [_Status() for _ in reqs]
        core = _core_loader.module or _core_loader.load()
        if core is not None:
            plan = new_plan(core, hit, reqs, sts, d, dt, None if copy is None else
                            (span(copy[0], False), span(copy[2], True)), args, posts=posts)
            issue(op, group, d, args, (None, None, None, None, dt), copy, keep=keep,
                  depth=depth, started=plan)
            put_back(group.kept, key, plan)
            return
        entry = Kept(hit, reqs, sts, args, bufs)
    if type(entry) is not Kept:  # (a Plan: run here by the Python path's issue)
        issue_plan(op, group, entry, keep, depth)
    else:
        issue(op, group, d, entry.args, entry.bufs, copy, keep=keep, depth=depth,
              started=entry)
    put_back(group.kept, key, entry)


def over(d: Direct, sbuf: Any, sd: list[int], rbuf: Any, rd: list[int],
         dt: Any) -> tuple[tuple, tuple]:
    """:func:`issue`'s arguments and buffers of ``d``'s messages from ``sbuf`` to ``rbuf``
    (their displacements ``sd``, ``rd``), for :func:`started`'s ``make``."""
    return (([sbuf, (d.counts[0], sd), dt], [rbuf, (d.counts[1], rd), dt]),
            (sbuf, sd, rbuf, rd, dt))


def take(group: Any, key: tuple, hit: Any) -> Any:
    """The group's entry for ``key``, taken out while in use; None where it has none (one
    whose ``hit`` is another object is freed: an id reused, that entry is gone)."""
    entry = group.kept.pop(key, None)
    if entry is not None:
        if entry.hit is hit:
            if group.missed:
                group.missed -= 1
            return entry
        free(entry.reqs)
    return None


def keeps(group: Any) -> bool:
    """Whether a call that found no kept messages (:func:`take`) makes its own kept ones,
    else posts them once (at 2 ranks a miss costs ~3 us more than posting, and a find
    saves ~2 us): while the group's calls mostly find theirs (a loop over the same
    tensors); where they mostly miss (memory that moves: XLA's buffers, a loop over more
    tensors than :data:`KEPT`), one call in :data:`PROBE`, to find out whether that
    changed. Never where no compiled core is in use and the messages carry the call's
    number (:data:`._messages.FRESH`): persistent requests, which the Python path
    would keep, cannot vary their tags."""
    if FRESH and (_core_loader.module or _core_loader.load()) is None:
        return False
    missed = group.missed = group.missed + 1
    if missed <= MISSES:
        return True
    if missed < MISSES + PROBE:
        return False
    group.missed = MISSES
    return True


def put_back(kept: dict[tuple, Any], key: tuple, entry: Any) -> None:
    """Keep ``entry`` (its requests complete) as the group's newest; free the oldest
    beyond :data:`KEPT`."""
    old = kept.get(key)  # (another thread's, made while this one was taken out)
    kept[key] = entry
    if old is not None:
        free(old.reqs)
    if len(kept) > KEPT:
        free(kept.pop(next(iter(kept))).reqs)


def span(buf: Any, readonly: bool) -> Any:
    """``buf`` (an array, a buffer, or None) as its memory's address range, owning none."""
    if type(buf) is not _ndarray:
        return buf
    return _fromaddress(_buffer(buf).address, buf.nbytes, readonly)


def describe() -> str:
    """Which exchanges go direct, for ``python -m mpicoll info``."""
    if MAX_RANKS < 2:
        return f"never (MPICOLL_DIRECT={MAX_RANKS}): MPI collectives, their counts beside them"
    return ("all_to_all, all_gather, reduce_scatter, gather and scatter (and all_reduce, "
            f"broadcast and reduce of small tensors; barrier too, on the MPICH family) on "
            f"groups of 2 "
            f"to {MAX_RANKS} ranks: "
            "point-to-point messages, each with its count and the call's signature in its tag"
            + (", and the call's number; a repeated blocking call's kept by the compiled core "
               f"and posted afresh (up to {KEPT} per group; posted with no core, or where a "
               "group's calls mostly find none)" if FRESH else
               f"; a repeated blocking call's kept as persistent ones (up to {KEPT} per "
               "group; posted where a group's calls mostly find none)"))
