"""DistributedDataParallel over MPI with stock pip torch (no MPI build needed).

Run: mpiexec -n 4 python examples/ddp_train.py

Each rank trains on its shard of a synthetic regression problem; DDP averages
gradients through the "mpicoll" backend. At the end every rank prints its
loss and a checksum of its parameters, which must be identical on all ranks.
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import mpicoll.torch  # noqa: F401  registers the "mpicoll" backend

dist.init_process_group("mpicoll")
rank, world = dist.get_rank(), dist.get_world_size()

torch.manual_seed(0)
true_w = torch.randn(8, 1)
torch.manual_seed(100 + rank)  # each rank its own data shard
x = torch.randn(256, 8)
y = x @ true_w + 0.01 * torch.randn(256, 1)

model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(30):
    for i in range(0, 256, 32):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        opt.step()

checksum = sum(p.double().sum().item() for p in model.parameters())
print(f"rank {rank}/{world}: final loss {loss.item():.4f} parameter checksum {checksum:.10f}")
dist.destroy_process_group()
