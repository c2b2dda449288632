"""A future's .then() callback that can never complete: on rank 0 it waits on a second
all_reduce that rank 1 never calls (rank 1 sleeps). argv: the timeout given to
init_process_group in seconds, or "-" for none (then MPICOLL_TIMEOUT applies), and the
job's token (unused here: it names the processes)."""

import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import mpicoll.torch  # noqa: F401

given = sys.argv[1]
dist.init_process_group("mpicoll", **({} if given == "-" else
                                      {"timeout": timedelta(seconds=float(given))}))
rank = dist.get_rank()
x, y = torch.ones(4), torch.full((4,), 2.0)


def stuck(fut):
    if rank == 0:
        return dist.all_reduce(y, async_op=True).get_future().wait()[0]
    return fut.value()[0]


dist.all_reduce(x, async_op=True).get_future().then(stuck).wait()
print(f"rank {rank}: past the callback", flush=True)
time.sleep(120)
print(f"rank {rank}: unreachable", flush=True)
