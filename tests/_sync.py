"""Checks that a barrier really holds every rank until the last one has entered it.

Rank 0 enters last, on purpose: it waits for a report from every other rank (a
point-to-point message on ``MPI.COMM_WORLD``, which no mpicoll group uses: each
group has its own duplicated communicator) and only then enters the barrier. So
while a rank writes its report, the barrier cannot be complete anywhere; a rank
that finds its own barrier finished at that point has been let through too early.

Every rank calls the barrier exactly once per check, in the same order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

_TAG = 7321

# How long a rank watches a blocking barrier (run in a thread) before reporting that it
# is still held. A correct barrier cannot return within it whatever the machine's load
# (rank 0 has not entered yet), so this cannot make the check fail; it only bounds how
# long a barrier that does not wait gets to show itself.
_WATCH_S = 0.5


def _rank_size() -> tuple[int, int]:
    return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()


def _enter_last(enter: Callable[[], Any]) -> Any:
    """Rank 0: collect every other rank's report, then enter the barrier."""
    _, size = _rank_size()
    for r in range(1, size):
        MPI.COMM_WORLD.recv(source=r, tag=_TAG)
    return enter()


def check_async_barrier(start: Callable[[], Any]) -> None:
    """``start()`` issues a nonblocking barrier and returns its Work (``is_completed``,
    ``wait``). Until rank 0 has started its own, no rank's Work may be completed."""
    rank, _ = _rank_size()
    if rank == 0:
        work = _enter_last(start)
        work.wait()
        assert work.is_completed()
        return
    work = start()
    held = not work.is_completed()  # rank 0 has not started the barrier yet
    MPI.COMM_WORLD.send(held, dest=0, tag=_TAG)
    work.wait()
    assert held, f"rank {rank}: the barrier completed before rank 0 entered it"
    assert work.is_completed()


def check_blocking_barrier(barrier: Callable[[], Any]) -> None:
    """``barrier()`` blocks; on every rank but 0 it runs in a thread that must still be
    blocked when the rank reports to rank 0 (which only then enters)."""
    rank, _ = _rank_size()
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE  # a barrier in a thread needs it
    if rank == 0:
        _enter_last(barrier)
        return
    returned = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier()
        except BaseException as e:  # re-raised below, on the test's thread
            errors.append(e)
        finally:
            returned.set()

    thread = threading.Thread(target=run, name="barrier-under-test", daemon=True)
    thread.start()
    held = not returned.wait(_WATCH_S)
    MPI.COMM_WORLD.send(held, dest=0, tag=_TAG)
    thread.join()
    if errors:
        raise errors[0]
    assert held, f"rank {rank}: the barrier returned before rank 0 entered it"
