"""The torch backend's calls, run with FutureWarning and DeprecationWarning as errors
(the launching test passes -W): none may come from mpicoll's code. On torch >= 2.14 also
the new calls, and init_process_group with nothing of mpicoll imported (argv[1] == "ep":
the torch.distributed.backends entry point; RANK etc. from the MPI launcher, as torchrun
or a batch script would give them)."""

import os
import sys
from datetime import timedelta

entry_point = sys.argv[1:] == ["ep"]
if entry_point:
    os.environ["RANK"] = os.environ.get("PMI_RANK") or os.environ["OMPI_COMM_WORLD_RANK"]
    os.environ["WORLD_SIZE"] = os.environ.get("PMI_SIZE") or os.environ["OMPI_COMM_WORLD_SIZE"]

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if not entry_point:
    import mpicoll.torch  # noqa: F401
assert entry_point == ("mpicoll" not in sys.modules)
dist.init_process_group("mpicoll")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.arange(4.0) + rank
dist.all_reduce(t)
assert t.tolist() == [float(i * size + sum(range(size))) for i in range(4)]
out = torch.empty(size * 2)
dist.all_gather_single(out, torch.full((2,), float(rank)))
assert out.tolist() == [float(r) for r in range(size) for _ in range(2)]
red = torch.empty(2)
dist.reduce_scatter_single(red, torch.ones(size * 2))
assert red.tolist() == [float(size)] * 2
a2a = torch.empty(size)
dist.all_to_all_single(a2a, torch.full((size,), float(rank)))
assert a2a.tolist() == [float(r) for r in range(size)]
new = tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 14)
if new:
    g = torch.empty(size, 3) if rank == 0 else None
    dist.gather_single(torch.full((3,), float(rank)), g, dst=0)
    if rank == 0:
        assert g.tolist() == [[float(r)] * 3 for r in range(size)]
    dist.set_timeout(timedelta(seconds=99))
    assert dist.group.WORLD._group.timeout == 99.0
dist.barrier()
print(f"rank {rank}: torch {torch.__version__} ok{' (new calls)' if new else ''}"
      f"{' by entry point' if entry_point else ''}", flush=True)
dist.destroy_process_group()
