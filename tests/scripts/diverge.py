"""Six all_reduces (mostly complete without a wait), a broadcast, then rank 0 calls
all_reduce where rank 1 calls gather (to itself): the eighth collective differs, and
neither can complete (on 2 to 8 ranks a gather is point-to-point messages on the group's
own communicator for them, which an all_reduce of more than 512 elements, MPI's
Iallreduce, never matches, on either MPI; a smaller one is messages too, whose
signature says the calls differ: SignatureMismatch, tests/test_signature.py)."""

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
x = np.ones(3)
for _ in range(6):
    dist.all_reduce(x)
dist.broadcast(x, src=0)
if rank == 0:
    dist.all_reduce(np.ones(1000))
else:
    dist.gather(x, [np.zeros(3), np.zeros(3)], dst=1)
print(f"rank {rank}: unreachable", flush=True)
