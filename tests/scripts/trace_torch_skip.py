"""torch.distributed over the mpicoll backend; rank 1 skips an all_reduce and waits for a
message that never comes. The group's 3 s timeout has the watchdog end the job, and every
rank writes its flight record (MPICOLL_TRACE_DIR), which torch's fr_trace reads."""
from datetime import timedelta

import torch
import torch.distributed as dist

import mpicoll.torch  # noqa: F401

dist.init_process_group("mpicoll", timeout=timedelta(seconds=3))
rank = dist.get_rank()
t = torch.ones(8)
dist.all_reduce(t)
dist.broadcast(t, src=0)
if rank != 1:
    dist.all_reduce(t)
else:
    dist.recv(torch.empty(1), src=0)
print("unreachable")
