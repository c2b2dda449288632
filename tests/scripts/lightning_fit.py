"""Lightning fit with DDP over BACKEND ("mpicoll" or "gloo") under mpiexec, with
``self.log(..., sync_dist=True)`` (an int64 counter reduced with AVG); rank 0 saves the
trained weights to OUT (.npy) for the test to compare across backends."""

import sys

import numpy as np
import torch
from lightning.fabric.plugins.environments import MPIEnvironment
from lightning.pytorch import LightningModule, Trainer, seed_everything
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset

import mpicoll.torch  # noqa: F401  (registers the "mpicoll" backend)

backend, out = sys.argv[1], sys.argv[2]


class Model(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                       torch.nn.Linear(16, 1))

    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss, sync_dist=True)
        self.log("seen", torch.tensor(len(x), dtype=torch.int64), sync_dist=True,
                 reduce_fx="mean")
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


seed_everything(7)
g = torch.Generator().manual_seed(7)
x = torch.randn(64, 8, generator=g)
data = TensorDataset(x, x.sum(1, keepdim=True).sin())
trainer = Trainer(accelerator="cpu", devices=2, max_epochs=3, logger=False,
                  enable_checkpointing=False, enable_progress_bar=False,
                  enable_model_summary=False,
                  strategy=DDPStrategy(process_group_backend=backend,
                                       cluster_environment=MPIEnvironment()))
model = Model()
trainer.fit(model, DataLoader(data, batch_size=8))
if trainer.global_rank == 0:
    np.save(out, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
    print("logged", {k: float(v) for k, v in trainer.logged_metrics.items()}, flush=True)
print(f"rank {trainer.global_rank}: fit done over {backend}", flush=True)
if sys.argv[1] == "gloo":
    from _gloo_exit import leave_without_gloo_teardown

    leave_without_gloo_teardown()
