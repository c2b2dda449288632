"""torch's own libraries over BACKEND ("mpicoll" or "gloo"), 2 ranks, one job: DDP with
PowerSGD's hook (its callbacks wait on a second all-reduce), checkpointing (a model state
broadcast from rank 0, ``dcp.async_save``, ``dcp.load``), a GPipe pipeline schedule over
two stages, and a ``torch.compile``d function of functional collectives. Each rank saves
what it computed to OUT/<rank>.npz for the test to compare across backends."""

import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc
import torch.distributed.checkpoint as dcp
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

backend, out = sys.argv[1], sys.argv[2]
if backend == "mpicoll":
    import mpicoll.torch  # noqa: F401

    dist.init_process_group("mpicoll")
else:
    from mpi4py import MPI

    os.environ.update(RANK=str(MPI.COMM_WORLD.rank), WORLD_SIZE=str(MPI.COMM_WORLD.size))
    dist.init_process_group("gloo")
rank = dist.get_rank()
got = {}

# -- DDP with PowerSGD: rank-1 approximations from the third step (its error feedback and
# warm start on); a bucket per layer, so several hooks' futures are in flight at once
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 16),
                          torch.nn.Tanh(), torch.nn.Linear(16, 4))
ddp = torch.nn.parallel.DistributedDataParallel(net)
state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                               start_powerSGD_iter=2, min_compression_rate=0.5)
ddp.register_comm_hook(state, powersgd.powerSGD_hook)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for _ in range(5):
    x = torch.randn(8, 16, generator=g)
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(x), x[:, :4].sin()).backward()
    opt.step()
got["powersgd"] = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()

# -- checkpointing: rank 0's state to every rank, then an async save and a load
model = torch.nn.Linear(4, 3)
torch.nn.init.constant_(model.weight, float(rank))
full = {"weight": torch.arange(12.0).reshape(3, 4), "bias": torch.ones(3)} if rank == 0 else {}
set_model_state_dict(model, full, options=StateDictOptions(broadcast_from_rank0=True,
                                                            full_state_dict=True))
assert torch.equal(model.weight, torch.arange(12.0).reshape(3, 4)), model.weight
dcp.async_save({"m": model.state_dict()}, checkpoint_id=os.path.join(out, "ckpt")).result()
loaded = torch.nn.Linear(4, 3)
sd = {"m": loaded.state_dict()}
dcp.load(sd, checkpoint_id=os.path.join(out, "ckpt"))
loaded.load_state_dict(sd["m"])
assert torch.equal(loaded.weight, model.weight) and torch.equal(loaded.bias, model.bias)
got["checkpoint"] = loaded.weight.detach().numpy()

# -- a pipeline: stage r holds layer r; 4 microbatches of GPipe
torch.manual_seed(1)
layers = [torch.nn.Linear(6, 6), torch.nn.Linear(6, 2)]
stage = PipelineStage(layers[rank], rank, 2, torch.device("cpu"))
schedule = ScheduleGPipe(stage, n_microbatches=4,
                         loss_fn=lambda y, t: torch.nn.functional.mse_loss(y, t))
data = torch.randn(8, 6, generator=torch.Generator().manual_seed(5))
target = data[:, :2].cos()
losses = []
if rank == 0:
    schedule.step(data)
else:
    schedule.step(target=target, losses=losses)
    got["pipeline_losses"] = torch.stack(losses).detach().numpy()
got["pipeline_grad"] = layers[rank].weight.grad.numpy()


# -- functional collectives under torch.compile (inductor)
@torch.compile
def compiled(t):
    s = fc.all_reduce(t * 2, "sum", dist.group.WORLD)
    return fc.all_gather_tensor(s + 1, 0, dist.group.WORLD)


got["compiled"] = compiled(torch.arange(4.0) + rank).numpy()

np.savez(os.path.join(out, f"{rank}.npz"), **got)
dist.barrier()
print(f"rank {rank}: torch libraries ok over {backend}", flush=True)
dist.destroy_process_group()
if backend == "gloo":
    from _gloo_exit import leave_without_gloo_teardown

    leave_without_gloo_teardown()
