"""accelerate on CPU under mpiexec: with MODE "mpi", over mpicoll serving torch's "mpi"
backend (accelerate picks "mpi" when torch.distributed.is_mpi_available()); with
"gloo", accelerate's own choice. prepare/backward/step, gather_for_metrics on a dataset
that does not split evenly, gather of a 2-D tensor, reduce(mean); rank 0 saves the weights to OUT."""

import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

mode, out = sys.argv[1], sys.argv[2]
if mode == "mpi":
    import mpicoll.torch

    mpicoll.torch.serve_as_mpi()

from accelerate import Accelerator  # noqa: E402
from accelerate.utils import set_seed  # noqa: E402

acc = Accelerator(cpu=True)
assert acc.state.backend == mode, acc.state.backend
assert acc.num_processes == 2 and str(acc.distributed_type) == "DistributedType.MULTI_CPU"
set_seed(3)
g = torch.Generator().manual_seed(3)
x = torch.randn(40, 6, generator=g)
train = DataLoader(TensorDataset(x, x.mean(1, keepdim=True)), batch_size=4)
model = torch.nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
model, opt, train = acc.prepare(model, opt, train)
for xb, yb in train:
    opt.zero_grad()
    acc.backward(torch.nn.functional.mse_loss(model(xb), yb))
    opt.step()
# 11 samples over 2 ranks in batches of 2: the last batch is padded, and
# gather_for_metrics drops what was added
evals = acc.prepare(DataLoader(TensorDataset(torch.arange(11.0)), batch_size=2))
seen = torch.cat([acc.gather_for_metrics(b[0]) for b in evals])
assert sorted(seen.tolist()) == list(range(11)), seen.tolist()
# a 2-D gather: on every backend but gloo, accelerate gathers into a flat output and
# views it (all_gather_into_tensor with output shape (2 * 5,) for an input of (1, 5))
rows = acc.gather(torch.arange(5.0).reshape(1, 5) + 10 * acc.process_index)
assert rows.tolist() == [[0.0, 1, 2, 3, 4], [10.0, 11, 12, 13, 14]], rows.tolist()
mean = acc.reduce(torch.tensor([float(acc.process_index + 1)]), "mean")
assert mean.item() == 1.5, mean
if acc.is_main_process:
    np.save(out, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
print(f"rank {acc.process_index}: accelerate ok over {acc.state.backend}", flush=True)
acc.wait_for_everyone()
acc.end_training()
if sys.argv[1] == "gloo":
    from _gloo_exit import leave_without_gloo_teardown

    leave_without_gloo_teardown()
