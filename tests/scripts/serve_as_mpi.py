"""torch's "mpi" name over mpicoll (mpicoll.torch.serve_as_mpi, or MPICOLL_SERVE_AS_MPI=1
when argv[1] is "env"): is_mpi_available, init_process_group("mpi"), a subgroup made
with backend="mpi", collectives checked against values every rank computes."""

import sys

import torch
import torch.distributed as dist

assert not dist.is_mpi_available()  # pip's torch
import mpicoll.torch  # noqa: E402

if sys.argv[1] != "env":
    mpicoll.torch.serve_as_mpi()
    mpicoll.torch.serve_as_mpi()  # a second call changes nothing
assert dist.is_mpi_available()
dist.init_process_group("mpi")
rank, size = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "mpi"
t = torch.arange(4.0) + rank
dist.all_reduce(t)
assert t.tolist() == [float(i * size + sum(range(size))) for i in range(4)], t
out = [torch.zeros(2, dtype=torch.int64) for _ in range(size)]
dist.all_gather(out, torch.full((2,), rank))
assert [o.tolist() for o in out] == [[r, r] for r in range(size)]
sub = dist.new_group([0, 1], backend="mpi")
if rank < 2:
    x = torch.tensor([rank + 1.0])
    dist.all_reduce(x, group=sub)
    assert x.item() == 3.0, x
    assert dist.get_world_size(sub) == 2
else:
    assert sub == dist.GroupMember.NON_GROUP_MEMBER
dist.barrier()
print(f"rank {rank}: mpi over mpicoll ok", flush=True)
dist.destroy_process_group()
