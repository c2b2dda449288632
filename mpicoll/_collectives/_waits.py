"""[3] A blocking call's wait, where it is more than one request's: the data's beside
its counts (:mod:`._sizes`), and a wait that an interrupt cut short."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from .._abandoned import ABANDONED
from .._describe import mpi_error
from .._mpi import MPI
from .._recorder import done, waiting
from .._wait import wait_requests
from .._work import Work
from ._counts_ring import UNSURE
from ._sizes import Sizes


def _owns(ring: Any, slot: int, owner: Any) -> Any:
    """Note ``owner`` (a Work, or UNSURE) as what holds slot ``slot`` of ``ring``, where
    the counts took a persistent request (:class:`~._sizes.Ring`); returns ``owner``."""
    if ring is not None:
        ring.owners[slot] = owner
    return owner


def interrupted(op: str, req: Any, group: Any, seq: int, args: tuple,
                finalize: Callable[[], Any] | None = None, outputs: list[Any] | None = None,
                keep: Any = None, rec: list | None = None) -> None:
    """A blocking call's wait was interrupted (KeyboardInterrupt raised between its
    Tests): MPI still owns the buffers, so the request becomes a pending Work (its
    buffers kept alive; completed by a later wait on the group, or at exit), as if the
    call had been made with ``async_op=True``."""
    if req:  # still active (a completed request is MPI_REQUEST_NULL)
        Work(op, [req], finalize, keep=(args, keep), outputs=outputs, group=group, seq=seq,
             rec=rec)
    else:  # completed (the interrupt came as its wait returned), or never posted (None)
        done(rec, req is not None)


def _counts_say(op: str, group: Any, seq: int, args: tuple, sizes: Sizes, creq: Any,
                crecv: Any) -> None:
    """Where the data's request failed: the counts' request ``creq`` completed (the peers
    posted theirs too), and SizeMismatch raised where what it received, ``crecv``,
    differs from what this rank expects; nothing where it failed as well."""
    try:
        if creq:
            wait_requests([creq], op, group, seq, args)
    except MPI.Exception:
        return
    sizes.check(crecv, group._rank, seq)


def with_sizes(op: str, group: Any, seq: int, req: Any, args: tuple, sizes: Sizes,
               finalize: Callable[[], Any] | None, async_op: bool,
               outputs: list[Any] | None, keep: Any, rec: list | None = None) -> Work | None:
    """The rest of :func:`issue` once the data's request ``req`` is posted: post the
    counts' collective beside it, wait for both (or return their Work), compare the
    counts, then ``finalize``."""
    me = group._rank
    try:
        creq, crecv, ring, slot = sizes.post(group)
    except MPI.Exception as e:
        # the data's request is posted: it becomes a pending Work, its buffers kept
        interrupted(op, req, group, seq, args, finalize, outputs, keep, rec)
        raise mpi_error(op, e, args) from e

    def compared() -> None:
        if ring is not None:  # (the slot's counts are read: the slot is free again)
            ring.owners[slot] = None
        sizes.check(crecv, me, seq)
        if finalize is not None:
            finalize()

    def explain() -> None:  # the data's request failed: what do the counts say?
        _counts_say(op, group, seq, args, sizes, creq, crecv)

    # (Work: the counts first, where every rank compares them)
    agree = (lambda: sizes.agree(crecv)) if sizes.relayed else None
    if async_op:
        return _owns(ring, slot, Work(op, [req, creq], compared, keep=(args, keep, crecv),
                                outputs=outputs, group=group, seq=seq, explain=explain, rec=rec,
                                agree=agree))
    try:
        if not (req.Test() and creq.Test()):  # (Test of a completed request: True)
            waiting(rec)
            # the counts first: they come even where the data never does (Open MPI ends
            # a collective's schedule on a rank whose receive was cut short, and the
            # peers it would have sent to wait for ever), so counts that disagree raise
            # at once, the data left to MPI (abandoned, its buffers kept)
            wait_requests([creq], op, group, seq, args)
            if req.Test() or not sizes.relayed or sizes.agree(crecv):
                wait_requests([req], op, group, seq, args)
            else:
                ABANDONED.append((req, (args, keep)))
    except MPI.Exception as e:
        # an MPI that reports the mismatch itself (Open MPI: a truncated message): the
        # counts, where they have arrived, say more (the data, where it is the counts'
        # wait that failed, left to MPI with its buffers)
        if req:
            ABANDONED.append((req, (args, keep)))
        done(rec, False)
        _owns(ring, slot, UNSURE)
        explain()
        raise mpi_error(op, e, args) from e
    except BaseException:
        # interrupted between Tests: both requests, and what follows them, become a
        # pending Work, as if the call had been made with async_op=True
        if req or (creq if ring is None else not creq.Test()):
            _owns(ring, slot, Work(op, [req, creq], compared, keep=(args, keep, crecv),
                             outputs=outputs, group=group, seq=seq, explain=explain, rec=rec,
                             agree=agree))
        else:
            done(rec)  # (both completed as the wait returned)
        raise
    try:
        compared()
    except BaseException:
        done(rec, False)  # (the counts disagreed: SizeMismatch)
        raise
    done(rec)
    return None


def counts_left(op: str, group: Any, sizes: Sizes, args: tuple, keep: Any,
                left: tuple) -> NoReturn:
    """A call whose counts the compiled core posted beside its data, and which did not
    complete as expected, settled as :func:`with_sizes` settles it, and raised.
    ``left`` = (MPI's error, or None where the counts differ from those expected; the
    data's request, still running or null; the counts' request and what they were
    received into, None where they were never started; their Ring, or None where they
    went in a call of their own; its slot; the call's number; what holds the counts MPI
    reads while the data runs). The core has marked the call's record failed."""
    e, req, creq, crecv, ring, slot, seq, held = left
    if req:  # (left to MPI, its buffers and counts kept: it may never complete)
        ABANDONED.append((req, (args, keep, held)))
    if e is None:  # (the core compared them: they differ)
        sizes.mismatch(crecv, group._rank, seq)
    # an MPI that reports the mismatch itself: the counts, where they have arrived, say more
    _owns(ring, slot, UNSURE)
    if creq is not None:  # (started beside the data)
        _counts_say(op, group, seq, args, sizes, creq, crecv)
    raise mpi_error(op, e, args) from e
