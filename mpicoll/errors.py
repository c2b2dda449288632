"""The exceptions that users catch: MPI failures, timeouts, cross-rank mismatches."""

from __future__ import annotations


class MPIError(RuntimeError):
    """MPI reported an error inside a collective; names the operation."""

    def __init__(self, op: str, detail: str) -> None:
        super().__init__(f"{op}: MPI error: {detail}")
        self.op = op


class CollectiveTimeout(TimeoutError):
    """A collective or point-to-point operation did not complete in time."""


class SignatureMismatch(RuntimeError):
    """Checked mode: peers called collectives that do not match."""


__all__ = ["CollectiveTimeout", "MPIError", "SignatureMismatch"]
