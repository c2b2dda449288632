"""A Hugging Face ``Trainer`` under mpiexec, 2 ranks, DDP over MODE: "mpi" (mpicoll
serving torch's "mpi" backend: ``ddp_backend="mpi"``) or "gloo". A 2-layer GPT-2 made from
a config (nothing is downloaded), 4 steps and an evaluation; rank 0 saves the trained
weights and the eval loss to OUT (.npz) for the test to compare across backends."""

import os
import sys
import tempfile

import numpy as np
import torch

mode, out = sys.argv[1], sys.argv[2]
if mode == "mpi":
    import mpicoll.torch

    mpicoll.torch.serve_as_mpi()
else:
    from mpi4py import MPI

    c = MPI.COMM_WORLD
    os.environ.update(RANK=str(c.rank), WORLD_SIZE=str(c.size), LOCAL_RANK=str(c.rank),
                      LOCAL_WORLD_SIZE=str(c.size))

from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments  # noqa: E402

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                   n_positions=16))
g = torch.Generator().manual_seed(1)
ids = torch.randint(0, 64, (32, 16), generator=g)
data = [{"input_ids": row, "labels": row} for row in ids]
with tempfile.TemporaryDirectory() as tmp:
    args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=4, max_steps=4,
                             learning_rate=1e-3, logging_steps=1, report_to=[],
                             save_strategy="no", use_cpu=True, ddp_backend=mode,
                             dataloader_num_workers=0, seed=0, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:8])
    assert trainer.args.world_size == 2, trainer.args.world_size
    trainer.train()
    loss = trainer.evaluate()["eval_loss"]
if trainer.args.process_index == 0:
    np.savez(out, weights=torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy(),
             eval_loss=np.array(loss))
print(f"rank {trainer.args.process_index}: trainer ok over {mode}", flush=True)
if mode == "gloo":
    from _gloo_exit import leave_without_gloo_teardown

    leave_without_gloo_teardown()
