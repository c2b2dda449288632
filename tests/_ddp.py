"""DDP over the "mpicoll" torch backend against single-process training on the whole
batch: the same parameters after five steps, and bit-identical parameters on every rank.
Shared by the CPU test (test_torch_backend.py) and the CUDA one (test_gpu.py)."""

from __future__ import annotations

import torch
import torch.distributed as tdist
from torch.nn.parallel import DistributedDataParallel as DDP


def model(device: str = "cpu") -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 3)).to(device)


def matches_single_process_training(rank: int, size: int, device: str = "cpu") -> None:
    """Train 5 steps with DDP (tiny buckets: several all_reduces per step) on ``device``,
    each rank on its slice of the batch, and compare with one process on all of it."""
    per_rank = 4
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(5, size * per_rank, 6, generator=gen).to(device)
    y = torch.randn(5, size * per_rank, 3, generator=gen).to(device)
    torch.manual_seed(rank)  # different local init: DDP must broadcast rank 0's
    local = model(device) if rank == 0 else torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
    ids = [torch.device(device).index or 0] if device != "cpu" else None
    ddp = DDP(local, device_ids=ids, bucket_cap_mb=0.0001)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ref = model(device)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    sl = slice(rank * per_rank, (rank + 1) * per_rank)
    for step in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x[step, sl]), y[step, sl]).backward()
        opt.step()
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x[step]), y[step]).backward()
        ref_opt.step()
    for p, q in zip(ddp.module.parameters(), ref.parameters(), strict=True):
        assert p.device.type == torch.device(device).type
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    flat = torch.cat([p.detach().flatten() for p in ddp.module.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(size)]
    tdist.all_gather(everyone, flat)
    for other in everyone:
        assert torch.equal(other, flat)  # bit-identical across ranks
