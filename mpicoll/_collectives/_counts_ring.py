"""[2] The persistent requests that carry the v-collectives' counts (:mod:`._sizes`).

On an MPI-4 library the counts beside a call's data go in a persistent collective
(``MPI_Alltoall_init``, ``MPI_Allreduce_init``, ``MPI_Gather_init``,
``MPI_Scatter_init``) restarted with ``MPI_Start``, which costs less than a new
nonblocking collective per call (measured in docs/performance.md's history:
``git log -p -- docs/performance.md``). A group keeps a :class:`Ring` of
``SLOTS`` of them per form, made at its first call of that form (every rank makes them at
the same call, in the same order) and taken in turn, so every rank starts the same slot
for the same call.

A slot is restarted only once this rank is done with the call that last used it: before
the next call's data is posted, :meth:`Ring.ready` completes that call (its Work, counts
compared) if it is still in flight. So up to ``SLOTS`` calls of one form may be in flight
on a group; the next waits for the oldest, which needs every rank to have issued it.
"""

from __future__ import annotations

from typing import Any

from numpy import empty as _empty
from numpy import int64 as _int64

from .._ordering import _complete_first
from .._wait import wait_requests

SLOTS = 32
# rings a group keeps: its first forms (every rank makes the same, in the same order);
# later forms (gathers to yet another root) take a nonblocking collective per call
RINGS = 16
UNSURE = object()  # a slot's owner after an error: its request may still be active


class Ring:
    """``SLOTS`` persistent requests of one counts collective on one group: ``method``
    (the nonblocking name, ``"Ialltoall"``) with ``after`` (the root, or the MPI op),
    ``nsend`` counts sent and ``nrecv`` received (0: none on this rank)."""

    __slots__ = ("at", "owners", "recvs", "reqs", "sends")

    def __init__(self, comm: Any, method: str, after: tuple, nsend: int, nrecv: int) -> None:
        init = getattr(comm, method[1].upper() + method[2:] + "_init")
        sends = [_empty(nsend, _int64) if nsend else None for _ in range(SLOTS)]
        self.recvs = [_empty(nrecv, _int64) if nrecv else None for _ in range(SLOTS)]
        self.reqs: list[Any] = []
        try:
            for k in range(SLOTS):
                self.reqs.append(init(sends[k], self.recvs[k], *after))
        except BaseException:
            self.free()
            raise
        # each send buffer as bytes to copy a call's counts into (no numpy call)
        self.sends = [None if b is None else memoryview(b).cast("B") for b in sends]
        # what still holds each slot: an async call's Work until it completes, UNSURE
        # after an error, else None
        self.owners: list[Any] = [None] * SLOTS
        self.at = 0

    def ready(self, op: str, group: Any) -> None:
        """Make the next slot free on this rank, before the next call's data is posted:
        complete the call that holds it (through the progress thread's claim, so its
        counts are compared before they are overwritten), and wait for a request an
        error left active."""
        k = self.at
        owner = self.owners[k]
        if owner is None:
            return
        if owner is not UNSURE:
            _complete_first(owner)
        req = self.reqs[k]
        if not req.Test():  # (a request an error or an interrupt left active)
            wait_requests([req], op, group, 0, ())
        self.owners[k] = None

    def start(self, op: str, group: Any, sent: bytes | None) -> tuple[Any, Any, Ring, int]:
        """Start the next slot with the counts ``sent``: (request, what it receives into,
        this ring, the slot)."""
        k = self.at
        if self.owners[k] is not None:  # (not made ready before the data: now, then)
            self.ready(op, group)
        self.at = (k + 1) % SLOTS
        if sent is not None:
            self.sends[k][:] = sent
        req = self.reqs[k]
        req.Start()
        return req, self.recvs[k], self, k

    def free(self) -> None:
        """Free the requests that are not active (before the group's communicator)."""
        for req in self.reqs:
            if req and req.Test():
                req.Free()
