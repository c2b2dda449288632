"""Rank 1 raises once torch.distributed is initialised (its excepthook captures stderr
while it calls the previous hook, mpicoll's); the others wait in a barrier."""
import sys

import torch
import torch.distributed as td

import mpicoll.torch  # noqa: F401  registers the "mpicoll" backend, sets the rendezvous

td.init_process_group(sys.argv[1])
t = torch.ones(1)
td.all_reduce(t)
if td.get_rank() == 1:
    raise RuntimeError("boom on rank 1 after init_process_group")
td.barrier()
print("unreachable: the barrier cannot complete")
