"""The exceptions that users catch: MPI failures, timeouts, cross-rank mismatches."""

from __future__ import annotations


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


__all__ = ["CollectiveTimeout", "MPIError", "PeerExited", "SignatureMismatch"]
