"""[3] Issue one MPI call, blocking or nonblocking, and finish with [4]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from numpy import copyto as _copyto
from numpy import ndarray as _ndarray

from .. import _core_loader, _departed, _env, _polling
from .._adapter.buffer import quick_array as _quick_array
from .._adapter.views import QUICKERS
from .._checkmode import verify
from .._describe import mpi_error
from .._env import settings as _settings
from .._mpi import MPI
from .._pending import pending as _pending
from .._recorder import done, issued, waiting
from .._wait import wait_requests
from .._work import Work
from . import _direct, _large, _reduce_scatter_direct
from ._entries import Exchange, Messages, Reduced
from ._layout import layout
from ._own_block import own_blocks
from ._sizes import Sizes
from ._waits import counts_left, interrupted, with_sizes

try:  # numpy's C function itself, without the __array_function__ dispatch (2x faster)
    from numpy._core._multiarray_umath import may_share_memory as may_share_memory
except ImportError:  # numpy < 2
    from numpy import may_share_memory as may_share_memory


def issue(op: str, group: Any, method: str, args: tuple, finalize: Callable[[], Any] | None,
          async_op: bool, outputs: list[Any] | None = None, keep: Any = None,
          sig: Callable[[], dict[str, Any]] | None = None,
          sizes: Sizes | None = None) -> Work | None:
    """Call ``comm.<method>(*args)``, or ``comm.I<method>`` when ``async_op``.

    ``finalize`` writes results back (staging copy-back, AVG's divide) once the
    data has arrived: right away when blocking, at completion when async.
    ``sig`` describes the call for checked mode (MPICOLL_CHECK=1). ``sizes``: the
    call's counts, posted right after the data and compared once both are complete
    (:mod:`._sizes`; None where the counts cannot disagree, or with MPICOLL_CHECK=0).
    """
    seq = next_seq(op, group)
    if _settings().check:
        verify(op, group, sig() if sig is not None else {})
    comm = group.comm
    rec = issued(op, group, seq, args)
    if sizes is not None:
        sizes.prepare(group)  # (before any data is posted: _sizes)
    if _large.MPI3 and _large.too_big(args):
        # counts above INT_MAX on an MPI-3 library: rewritten, and done before returning
        try:
            _large.call(comm, method, args)
        except MPI.Exception as e:
            done(rec, False)
            raise mpi_error(op, e, args) from e
        if sizes is not None:  # its peers post the counts after their data: so here too
            with_sizes(op, group, seq, MPI.REQUEST_NULL, args, sizes, finalize, False,
                       outputs, keep, rec)
        else:
            done(rec)
            if finalize is not None:
                finalize()
        return Work.completed(op, outputs) if async_op else None
    # always MPI's nonblocking call: a blocking collective never matches a nonblocking
    # one, and ranks may differ in async_op
    try:
        req = getattr(comm, _NONBLOCKING.get(method) or _nonblocking(method))(*args)
    except MPI.Exception as e:
        done(rec, False)
        raise mpi_error(op, e, args, _large_hint(args)) from e
    if sizes is not None:
        return with_sizes(op, group, seq, req, args, sizes, finalize, async_op, outputs, keep,
                          rec)
    if async_op:
        return Work(op, [req], finalize, keep=(args, keep), outputs=outputs, group=group,
                    seq=seq, rec=rec)
    # blocking: Work.wait's wait, without making a Work; a request complete at once (a
    # small message whose peers were there) needs no watching
    try:
        if not req.Test():
            waiting(rec)
            wait_requests([req], op, group, seq, args)
    except MPI.Exception as e:
        done(rec, False)
        raise mpi_error(op, e, args) from e
    except BaseException:
        interrupted(op, req, group, seq, args, finalize, outputs, keep, rec)
        raise
    done(rec)
    if finalize is not None:
        finalize()
    return None


def quick(op: str, group: Any, method: str, args: tuple, sizes: Sizes | None = None,
          depth: int = 3, keep: Any = None) -> None:
    """:func:`issue` for the common blocking call that needs nothing after the data
    arrives and no checked mode: the same numbering, departure check and wait, and
    ``method`` is already the nonblocking name (``"Iallreduce"``). ``depth``: frames up
    to the user's (``_recorder.issued``); ``keep``: the caller's tensors, kept with data
    MPI still owns (an interrupted wait, counts that disagree: :func:`exchanged`)."""
    seq = group.seq = group.seq + 1
    if _departed.left:
        _departed.check(op, group, seq)
    rec = issued(op, group, seq, args, depth=depth)
    if sizes is not None:
        sizes.prepare(group)
        try:
            req = getattr(group.comm, method)(*args)
        except MPI.Exception as e:
            done(rec, False)
            raise mpi_error(op, e, args) from e
        with_sizes(op, group, seq, req, args, sizes, None, False, None, keep, rec)
        return
    req = None
    try:
        req = getattr(group.comm, method)(*args)
        if not req.Test():
            waiting(rec)
            wait_requests([req], op, group, seq, args)
    except MPI.Exception as e:
        done(rec, False)
        raise mpi_error(op, e, args) from e
    except BaseException:
        interrupted(op, req, group, seq, args, keep=keep, rec=rec)
        raise
    done(rec)


def quick_then_copy(op: str, group: Any, method: str, args: tuple,
                    copy: tuple[Any, Any], sizes: Sizes | None = None, depth: int = 3,
                    keep: Any = None) -> None:
    """:func:`quick`, then ``copy`` = (destination, source): this rank's own block, left
    out of MPICH's Alltoallv (:func:`own_blocks`); made also when the wait is interrupted."""
    try:
        quick(op, group, method, args, sizes, depth + 1, keep)
    finally:
        _copyto(*copy)


def quick_allowed() -> bool:
    """Whether a call may take a quick path at all: settings read, checked mode off, and
    no pending Work whose memory the call must be ordered after (as_buffer orders it)."""
    s_ = _env._settings
    return not (s_ is None or s_.check or _pending)


def quick_array(tensor: Any, writable: bool = True) -> Any:
    """The numpy array over ``tensor``'s memory when the call can take :func:`quick`'s
    path (contiguous, writable if ``writable``, plain dtype, no staging, counts that fit an
    int, checked mode off), else None."""
    s_ = _env._settings
    if s_ is None or s_.check or _pending:  # (pending Works: as_buffer orders the call)
        return None
    a = _quick_array(tensor, writable)
    return None if a is None or a.size > _large.INT_MAX else a


# how quick_listed serves a call (the compiled core's listed() takes the same bits): the
# list is written and the tensor read (else the other way round); the list's start comes
# first in the key of the Plan the group keeps (else the tensor's); the list's entry at
# head[0] must have the tensor's shape
WRITES_LIST, LIST_FIRST, SAME_SHAPE = 1, 2, 4


def quick_listed(op: str, group: Any, tensor: Any, tensors: Any, how: int,
                 table: dict[tuple, Any], head: tuple) -> Any:
    """The lookup of a blocking call between ``tensor`` and a list ``tensors`` of one
    tensor per rank (all_gather, reduce_scatter): the tensor a :func:`quick_array`, the
    list a :func:`._layout.layout`, of one dtype, and ``table`` holding the entry that the
    general path validated for (dtype, the tensor's size, ``*head``, the list's sizes).
    Where the list shares no memory with the tensor and the group keeps the call's
    ``Plan`` (keyed by where the list lies: :func:`._direct.where`), the compiled core
    runs it (its lookup and run in C: ``core.listed``). Returns True (done), False
    (the general path takes the call), or (entry, array, layout): the caller makes the
    call."""
    if not quick_allowed():
        return False
    core = _core_loader.module
    if core is not None:
        found = core.listed(op, group, tensor, tensors, how, table, head, QUICKERS,
                            len(_polling.spin), _departed.left)
        if found is True or found is False or len(found) == 3:
            return found
        if len(found) == 4:  # (MPI's collective, made in the core, did not complete)
            core_failed(op, group, *found, (tensor, tensors))
        _direct.settled(core, op, group, *found, (tensor, tensors))  # (a run not finished)
        return True
    writes = bool(how & WRITES_LIST)
    lay = layout(tensors, group._size, writes)
    a = quick_array(tensor, not writes) if lay is not None else None
    if a is None or a.dtype != lay.dtype:
        return False
    hit = table.get((a.dtype, a.size, *head, *lay.counts))
    if hit is None or (how & SAME_SHAPE and lay.arrays[head[0]].shape != a.shape):
        return False
    return hit, a, lay


def quick_exchange(op: str, group: Any, output: Any, input: Any, table: dict[tuple, Any],
                   extra: Any = None) -> bool:
    """The quick path of a call from ``input`` to ``output`` (all_to_all_single,
    all_gather_into_tensor, reduce_scatter_tensor): when both are :func:`quick_array`'s
    (``output`` writable), do not overlap (an overlap needs the general path's copy),
    and ``table`` holds what the general path validated for their dtypes and shapes, the
    group's size and ``extra`` (the ReduceOp, the split sizes), make the call it stored
    (an :class:`._entries.Exchange`, or direct messages) with :func:`exchanged`. True
    when done; False: take the general path."""
    s_ = _env._settings
    if s_ is None or s_.check or _pending:  # (pending Works: as_buffer orders the call)
        return False
    # (loaded by the first such call: a job whose only collectives are these, on a group
    # that sends no direct messages, would otherwise never load it)
    core = _core_loader.module or _core_loader.load()
    if core is not None:  # the same tests and lookup in C, and a kept Plan run there
        found = core.exchange(op, group, output, input, table, extra, QUICKERS,
                              len(_polling.spin), _departed.left)
        if found is True or found is False:
            return found
        if len(found) == 3:  # (an entry the core does not make: the call is made here)
            exchanged(op, group, *found, (output, input))
        elif len(found) == 4:  # (the MPI collective raised, or its counts differ)
            hit, s, r, e = found
            args = ((s, hit.send, hit.datatype), (r, hit.recv, hit.datatype),
                    *(hit.after or ()))
            if isinstance(e, tuple):  # (counts beside the data: _waits.counts_left)
                counts_left(op, group, hit.sizes, args, (output, input), e)
            raise mpi_error(op, e, args) from e
        else:  # (the Plan's run did not finish: an MPI error, a tag that differs)
            _direct.settled(core, op, group, *found, (output, input))
        return True
    # quick_array's tests, inline (this is the per-call path)
    if type(output) is _ndarray:
        fr = output.flags
        if not fr.carray:
            return False
        r = output
    else:
        q = QUICKERS.get(type(output))
        r = q(output) if q is not None else None
        if r is None:
            return False
        fr = None
    if type(input) is _ndarray:
        fs = input.flags
        if not fs.c_contiguous:
            return False
        s = input
    else:
        q = QUICKERS.get(type(input))
        s = q(input) if q is not None else None
        if s is None:
            return False
        fs = None
    hit = table.get((s.dtype, s.shape, r.dtype, r.shape, group._size, extra))
    if hit is None:
        return False
    # two arrays that each own their memory are apart unless they are one array (two
    # flag reads; may_share_memory costs ~200 ns): else ask numpy
    if not (fr is not None and fs is not None and s is not r and fr.owndata and
            fs.owndata) and may_share_memory(s, r):
        return False
    exchanged(op, group, hit, s, r, (output, input))
    return True


def exchanged(op: str, group: Any, hit: Exchange | Messages | Reduced, s: Any, r: Any,
              keep: Any = None) -> None:
    """Make the call :func:`quick_exchange`'s ``hit`` stores, from array ``s`` to ``r``
    (C-contiguous, ``r`` writable, apart; the user's frame 5 up from the recorder's).
    ``keep``: the caller's tensors, kept with data MPI still owns (an interrupted wait's
    Work, data abandoned after counts that disagree: ``s``, ``r`` may own nothing)."""
    if hit.method == "direct":
        _direct.exchanged(op, group, hit, s, r, keep)
        return
    if hit.method == "reduced":
        _reduce_scatter_direct.exchanged(op, group, hit, s, r, keep)
        return
    method, sc, rc, dt, mpi_op, own, sizes = hit
    if own is not None:
        quick_then_copy(op, group, method, ((s, sc, dt), (r, rc, dt)), own_blocks(s, r, own),
                        sizes, 5, keep)
    else:
        quick(op, group, method, ((s, sc, dt), (r, rc, dt)) if mpi_op is None else
              ((s, sc, dt), (r, rc, dt), *mpi_op), sizes, 5, keep)


def core_failed(op: str, group: Any, hit: Any, first: Any, second: Any, outcome: Any,
                keep: Any = None) -> NoReturn:
    """Raise what MPI's collective, made by the compiled core from a list's quick entry
    ``hit`` between ``first`` and ``second`` (an array, a list's layout, or None), ended with:
    ``outcome``, MPI's error (an MPIError naming the tensors and counts), or what the
    core left of a call whose counts went beside its data (:func:`._waits.counts_left`;
    ``keep``: the caller's tensors, kept with data MPI still owns)."""
    def tensors(x: Any) -> Any:  # (None: a rank other than a gather's or scatter's root)
        return x if x is None or hasattr(x, "shape") else x.arrays
    args = (tensors(first), tensors(second), *hit[1:3])
    if isinstance(outcome, tuple):
        counts_left(op, group, hit.sizes, args, keep, outcome)
    raise mpi_error(op, outcome, args) from outcome


def exchange_key(out: Any, inp: Any, group: Any, extra: Any = None) -> tuple:
    """:func:`quick_exchange`'s key of a call the general path validated."""
    return inp.dtype, inp.shape, out.dtype, out.shape, group.nranks, extra


def next_seq(op: str, group: Any) -> int:
    """Number the next collective on ``group`` (every member counts the same); raise
    PeerExited if a member has left before issuing it."""
    seq = group.seq = group.seq + 1
    if _departed.left:
        _departed.check(op, group, seq)
    return seq


_NONBLOCKING: dict[str, str] = {}


def _nonblocking(method: str) -> str:
    return _NONBLOCKING.setdefault(method, "I" + method[0].lower() + method[1:])


def _large_hint(args: Any) -> str:
    """Explain an MPI error that comes from counts this MPI cannot express."""
    if not (_large.MPI3 and _large.too_big(args)):
        return ""
    return ("; the message has more than 2**31-1 elements and this MPI implements MPI {}.{},"
            " without the MPI-4 large-count calls: use an MPI-4 library (the mpich wheel: "
            "pip install mpicoll[mpich]) or split the message").format(*MPI.Get_version())
