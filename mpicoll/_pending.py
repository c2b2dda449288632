"""The Works still in flight: alive until they complete, in the order they were issued."""

from __future__ import annotations

from typing import Any

# id -> Work whose requests are still in flight: MPI writes into their buffers, so
# dropping the handle must not free them; completed at exit (``_progress.drain``)
pending: dict[int, Any] = {}


def wait_pending(group: Any, tensor: Any = None) -> None:
    """Wait for the pending Works on ``group`` (on any group if None) that write ``tensor``
    (any, if None), in the order they were issued."""
    for w in list(pending.values()):  # in the order they were issued
        if (group is None or w.group is group) and (
                tensor is None or any(o is tensor for o in w._outputs)):
            w.wait()
