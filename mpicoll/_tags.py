"""The message tags mpicoll reserves for itself on a group's communicator.

The three highest tags (``MPI_TAG_UB`` and the two below) carry mpicoll's own
messages: monitored_barrier's tokens, the object send/recv, and the large-count
rooted fallbacks. User point-to-point tags must stay below them.
"""

from __future__ import annotations

from functools import cache


@cache
def tag_ub() -> int:
    """MPI_TAG_UB of this MPI library (at least 32767)."""
    from ._mpi import MPI  # lazy: importing mpicoll._mpi starts MPI

    return int(MPI.COMM_WORLD.Get_attr(MPI.TAG_UB))


def barrier() -> int:
    """monitored_barrier's arrival and release tokens."""
    return tag_ub()


def objects() -> int:
    """send_object_list / recv_object_list."""
    return tag_ub() - 1


def large() -> int:
    """Gatherv/Scatterv rewritten as messages for counts above INT_MAX."""
    return tag_ub() - 2


def user_limit() -> int:
    """User tags are in [0, user_limit())."""
    return tag_ub() - 2
