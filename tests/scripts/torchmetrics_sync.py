"""torchmetrics synced over the "mpicoll" backend under mpiexec, each rank with a
different number of samples; every rank compares the synced result with the metric
computed locally on all ranks' data (which each rank can make: seeded per rank)."""

import torch
import torch.distributed as dist
from torchmetrics import MeanSquaredError
from torchmetrics.aggregation import CatMetric
from torchmetrics.classification import MulticlassAccuracy

import mpicoll.torch  # noqa: F401

dist.init_process_group("mpicoll")
rank, size = dist.get_rank(), dist.get_world_size()


def data(r):
    g = torch.Generator().manual_seed(100 + r)
    n = 5 + 3 * r  # uneven: 5, 8, 11, ...
    return (torch.randn(n, generator=g), torch.randn(n, generator=g),
            torch.randint(0, 4, (n,), generator=g), torch.randn(n, 4, generator=g))


def metrics(sync):
    kw = {"sync_on_compute": sync}
    return (MeanSquaredError(**kw), MulticlassAccuracy(num_classes=4, average="micro", **kw),
            CatMetric(**kw))


synced, local = metrics(True), metrics(False)  # the reference: every rank's data, unsynced
for r in range(size):
    p, t, labels, logits = data(r)
    for ms, mine in ((local, True), (synced, r == rank)):
        if mine:
            ms[0].update(p, t)
            ms[1].update(logits, labels)
            ms[2].update(p)
got = [m.compute() for m in synced]
want = [m.compute() for m in local]
assert torch.allclose(got[0], want[0], rtol=1e-6), (got[0], want[0])
assert torch.equal(got[1], want[1]), (got[1], want[1])
# CatMetric gathers every rank's values (uneven counts) in rank order
assert torch.equal(got[2], want[2]), (got[2].shape, want[2].shape)
print(f"rank {rank}: torchmetrics ok: mse {float(got[0]):.6f} acc {float(got[1]):.4f} "
      f"cat {tuple(got[2].shape)}", flush=True)
dist.destroy_process_group()
