"""[3] Issue one MPI call, blocking or nonblocking, and finish with [4]."""

from __future__ import annotations

from typing import Any, Callable

from mpi4py import MPI

from .._work import Work
from ..errors import MPIError


def issue(op: str, comm: Any, method: str, args: tuple, finalize: Callable[[], Any] | None,
          async_op: bool, outputs: list[Any] | None = None, keep: Any = None) -> Work | None:
    """Call ``comm.<method>(*args)``, or ``comm.I<method>`` when ``async_op``.

    ``finalize`` writes results back (staging copy-back, AVG's divide) once the
    data has arrived: right away when blocking, at completion when async.
    """
    try:
        if async_op:
            req = getattr(comm, "I" + method[0].lower() + method[1:])(*args)
            return Work(op, [req], finalize, keep=(args, keep), outputs=outputs)
        getattr(comm, method)(*args)
    except MPI.Exception as e:
        raise MPIError(op, _describe(e)) from e
    if finalize is not None:
        finalize()
    return None


def _describe(e: Any) -> str:
    try:
        return e.Get_error_string().strip()
    except Exception:  # noqa: BLE001
        return str(e)


def done(op: str, outputs: list[Any] | None = None) -> Work:
    """A completed Work, for async calls with nothing to communicate."""
    w = Work(op, [], outputs=outputs)
    w._done = True
    return w
