"""The torch backend where the user asked MPI for MPI_THREAD_SERIALIZED
(``mpi4py.rc.thread_level``, set here before MPI starts): no mpicoll thread may call
MPI beside the caller's, so no progress thread starts, and a future completes when it is
made. Its values, a chain whose callback waits on a second collective (PowerSGD's), a
future of a failed operation, one of a call whose own timeout its peer outlasts, and
plain async Works are checked; then that no
``mpicoll-progress`` thread is there.

    mpiexec -n 2 python tests/scripts/serialized_level.py
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import mpi4py

mpi4py.rc.thread_level = "serialized"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402

import mpicoll  # noqa: E402
import mpicoll.torch  # noqa: E402
from mpicoll._mpi import MPI  # noqa: E402

tdist.init_process_group("mpicoll")
rank, size = tdist.get_rank(), tdist.get_world_size()
assert MPI.Query_thread() == MPI.THREAD_SERIALIZED, MPI.Query_thread()

x = torch.full((4,), float(rank + 1))
if rank == 1:
    time.sleep(0.3)  # the peer's future cannot complete at the call
got = tdist.all_reduce(x, async_op=True).get_future().then(lambda f: f.value()[0] * 2).wait()
total = sum(range(1, size + 1))
np.testing.assert_array_equal(got.numpy(), np.full(4, 2.0 * total))

y = torch.full((4,), 2.0)


def both(fut: torch.futures.Future) -> torch.Tensor:
    second = tdist.all_reduce(y, async_op=True).get_future().wait()[0]
    return fut.value()[0] + second


z = torch.ones(4)
chained = tdist.all_reduce(z, async_op=True).get_future().then(both).wait()
np.testing.assert_array_equal(chained.numpy(), np.full(4, 3.0 * size))

# a failed operation's future holds its error (the sizes differ: every rank raises)
if size > 1:
    fut = tdist.all_reduce(torch.zeros(3 + rank), async_op=True).get_future()
    assert fut.done()
    try:
        fut.wait()
    except Exception as e:
        assert "size" in str(e).lower(), e
    else:
        raise AssertionError("the future of an all_reduce whose sizes differ held no error")

# the call's own timeout (its options') is wait()'s, not the future's: a future made while
# the peer is later than it still completes (it was left unsettled for ever)
opts = tdist.AllreduceOptions()
opts.timeout = timedelta(seconds=0.2)
u = torch.full((2,), float(rank))
if rank == 1:
    time.sleep(1.0)
fut = tdist.group.WORLD.allreduce([u], opts).get_future()
assert fut.done()
np.testing.assert_array_equal(fut.wait()[0].numpy(), np.full(2, float(sum(range(size)))))

a = np.full(3, float(rank))
work = mpicoll.all_reduce(a, async_op=True)
work.wait()
np.testing.assert_array_equal(a, np.full(3, float(sum(range(size)))))

# (a progress thread, once started, stays: one idle thread is kept for the next future)
threads = sorted(t.name for t in threading.enumerate())
assert "mpicoll-progress" not in threads, threads
tdist.destroy_process_group()
print(f"rank {rank}: ok, threads: {threads}")
