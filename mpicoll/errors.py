"""The exceptions that users catch: bad arguments, MPI failures, timeouts, departed
peers, cross-rank mismatches."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


class ArgumentError(Exception):
    """A bad argument, found before any communication (outputs are untouched).

    Raised as :class:`ArgumentValueError`, :class:`ArgumentTypeError` or
    :class:`ArgumentBufferError`, which are also ``ValueError``, ``TypeError``
    and ``BufferError``. The message reads ``"<op>: <argument> <problem>"``; its
    parts are fields, so a face can rename arguments without reading the text:

    Attributes:
        op: the operation that raised (``"all_to_all_single"``).
        reason: a stable key for the problem (``"split_sum"``, ``"read_only"``, ...).
        names: slot -> the argument named in the message (``{"arg": "input"}``);
            ``arg`` is the first, the argument at fault.
        values: the other values the message shows (``expected``, ``got``, ...).
    """

    def __init__(self, op: str, reason: str, template: str, names: Mapping[str, str], /,
                 **values: Any) -> None:
        self.op = op
        self.reason = reason
        self.template = template
        self.names = dict(names)
        self.values = values
        super().__init__(f"{op}: " + template.format(**self.names, **values))

    @property
    def arg(self) -> str:
        """The argument at fault, as the message names it."""
        return next(iter(self.names.values()), "")

    @property
    def expected(self) -> Any:
        return self.values.get("expected")

    @property
    def got(self) -> Any:
        return self.values.get("got")

    def renamed(self, op: str | None = None, names: Mapping[str, str] | None = None,
                hint: str = "") -> ArgumentError:
        """The same error in another API's words: ``op`` replaces the operation's
        name, ``names`` maps argument names (an element ``x[3]`` follows ``x``),
        ``hint`` is appended to the message."""
        table = names or {}

        def rename(name: str) -> str:
            base, bracket, index = name.partition("[")
            return table.get(base, base) + bracket + index

        new = type(self)(op or self.op, self.reason, self.template + hint.replace("{", "{{")
                         .replace("}", "}}"),
                         {slot: rename(n) for slot, n in self.names.items()}, **self.values)
        new.__cause__ = self
        return new

    def __reduce__(self) -> tuple:
        return _rebuild, (type(self), self.op, self.reason, self.template, self.names,
                          self.values)


def _rebuild(cls: type, op: str, reason: str, template: str, names: dict, values: dict) -> Any:
    return cls(op, reason, template, names, **values)


class ArgumentValueError(ArgumentError, ValueError):
    """A bad argument value (a ValueError)."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type (a TypeError)."""


class ArgumentBufferError(ArgumentError, BufferError):
    """A tensor whose memory cannot serve (a BufferError): read-only output, ..."""


class MPIError(RuntimeError):
    """MPI reported an error inside a collective; names the operation."""

    def __init__(self, op: str, detail: str) -> None:
        super().__init__(f"{op}: MPI error: {detail}")
        self.op = op


class CollectiveTimeout(TimeoutError):
    """A collective or point-to-point operation did not complete in time."""


class PeerExited(RuntimeError):
    """A rank this operation needs has left the job (its process ended).

    ``status`` is the exit status the departed rank announced (1 if unknown):
    uncaught, this error ends the job with it.
    """

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class SignatureMismatch(RuntimeError):
    """Checked mode: peers called collectives that do not match."""


class SizeMismatch(RuntimeError):
    """The sizes one rank sent differ from those its peer expected: raised, by default,
    on every rank whose output they made wrong (``MPICOLL_CHECK=0`` turns it off)."""


def torch_flavoured(cls: type[BaseException]) -> type[BaseException]:
    """``cls``, or, once ``torch.distributed`` is imported, a subclass of ``cls`` that is
    also torch's ``DistBackendError`` (a ``DistError``, a ``RuntimeError``): code
    written for torch's NCCL backend catches a failed or timed-out collective as
    that, and mpicoll's own type still matches."""
    td = sys.modules.get("torch.distributed")
    base = getattr(td, "DistBackendError", None)
    if base is None or issubclass(cls, base):
        return cls
    mixed = _MIXED.get(cls)
    if mixed is None:
        mixed = _MIXED[cls] = type(cls.__name__, (cls, base),
                                   {"__module__": cls.__module__, "__doc__": cls.__doc__})
    return mixed


_MIXED: dict[type, type] = {}


__all__ = ["ArgumentBufferError", "ArgumentError", "ArgumentTypeError", "ArgumentValueError",
           "CollectiveTimeout", "MPIError", "PeerExited", "SignatureMismatch",
           "SizeMismatch"]
