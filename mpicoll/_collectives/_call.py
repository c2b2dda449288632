"""[3] Issue one MPI call, blocking or nonblocking, and finish with [4]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _departures
from .._adapter.buffer import quick_array as _quick_array
from .._checkmode import verify
from .._env import settings as _settings
from .._mpi import MPI
from .._work import Work, mpi_error, wait_requests
from . import _large


def issue(op: str, group: Any, method: str, args: tuple, finalize: Callable[[], Any] | None,
          async_op: bool, outputs: list[Any] | None = None, keep: Any = None,
          sig: Callable[[], dict[str, Any]] | None = None) -> Work | None:
    """Call ``comm.<method>(*args)``, or ``comm.I<method>`` when ``async_op``.

    ``finalize`` writes results back (staging copy-back, AVG's divide) once the
    data has arrived: right away when blocking, at completion when async.
    ``sig`` describes the call for checked mode (MPICOLL_CHECK=1).
    """
    seq = next_seq(op, group)
    if _settings().check:
        verify(op, group, sig() if sig is not None else {})
    comm = group.comm
    if _large.MPI3 and _large.too_big(args):
        # counts above INT_MAX on an MPI-3 library: rewritten, and done before returning
        try:
            _large.call(comm, method, args)
        except MPI.Exception as e:
            raise mpi_error(op, e, args) from e
        if finalize is not None:
            finalize()
        return Work.completed(op, outputs) if async_op else None
    # always MPI's nonblocking call: a blocking collective never matches a nonblocking
    # one, and ranks may differ in async_op
    try:
        req = getattr(comm, _NONBLOCKING.get(method) or _nonblocking(method))(*args)
    except MPI.Exception as e:
        raise mpi_error(op, e, args, _large_hint(args)) from e
    if async_op:
        return Work(op, [req], finalize, keep=(args, keep), outputs=outputs, group=group,
                    seq=seq)
    # blocking: Work.wait's wait, without making a Work; a request complete at once (a
    # small message whose peers were there) needs no watching
    try:
        if not req.Test():
            wait_requests([req], op, group, seq, args)
    except MPI.Exception as e:
        raise mpi_error(op, e, args) from e
    if finalize is not None:
        finalize()
    return None


def quick(op: str, group: Any, method: str, args: tuple) -> None:
    """:func:`issue` for the common blocking call that needs nothing after the data
    arrives and no checked mode: the same numbering, departure check and wait, and
    ``method`` is already the nonblocking name (``"Iallreduce"``)."""
    seq = group.seq = group.seq + 1
    if _departures.left:
        _departures.check(op, group, seq)
    try:
        req = getattr(group.comm, method)(*args)
        if not req.Test():
            wait_requests([req], op, group, seq, args)
    except MPI.Exception as e:
        raise mpi_error(op, e, args) from e


def quick_array(tensor: Any) -> Any:
    """The numpy array over ``tensor``'s memory when the call can take :func:`quick`'s
    path (contiguous, writable, plain dtype, no staging; counts that fit an int; checked
    mode off); else None."""
    a = _quick_array(tensor)
    if a is None or a.size > _large.INT_MAX or _settings().check:
        return None
    return a


def next_seq(op: str, group: Any) -> int:
    """Number the next collective on ``group`` (every member counts the same); raise
    PeerExited if a member has left before issuing it."""
    seq = group.seq = group.seq + 1
    if _departures.left:
        _departures.check(op, group, seq)
    return seq


_NONBLOCKING: dict[str, str] = {}


def _nonblocking(method: str) -> str:
    name = _NONBLOCKING[method] = "I" + method[0].lower() + method[1:]
    return name


def _large_hint(args: Any) -> str:
    """Explain an MPI error that comes from counts this MPI cannot express."""
    if not (_large.MPI3 and _large.too_big(args)):
        return ""
    version = "{}.{}".format(*MPI.Get_version())
    return (f"; the message has more than 2**31-1 elements and this MPI implements MPI "
            f"{version}, without the MPI-4 large-count calls: use an MPI-4 library (the "
            "mpich wheel: pip install mpicoll[mpich]) or split the message")
