"""Leave torch futures (DDP-style ``get_future().then(...)``) and async Works in flight
at exit, never waited for. Before mpicoll's exit hook, the progress thread could still
be running a future's callback inside torch when the interpreter finalized: the process
then died with SIGABRT ("terminate called without an active exception")."""
import sys

import numpy as np
import torch
import torch.distributed as dist

import mpicoll
import mpicoll.torch

dist.init_process_group("mpicoll")
rank = dist.get_rank()
m = torch.randn(64, 64)


def heavy(fut):
    # torch work that releases the GIL, as DDP's comm hooks do
    for _ in range(100):
        torch.mm(m, m)
    return fut.value()[0].sum()


futures = []
for _ in range(10):
    t = torch.ones(1000) * rank
    futures.append(dist.all_reduce(t, async_op=True).get_future().then(heavy))
x = np.ones(10)
mpicoll.all_reduce(x, async_op=True)  # dropped: completed at exit, never freed under MPI
print(f"rank {rank}: leaving with work in flight", flush=True)
sys.stdout.flush()
