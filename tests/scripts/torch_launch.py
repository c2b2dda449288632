"""init_process_group("mpicoll") as a torchrun (or hand-launched) script would call it."""

import torch.distributed as dist

import mpicoll.torch  # noqa: F401

dist.init_process_group("mpicoll")
print(f"rank {dist.get_rank()} of {dist.get_world_size()}", flush=True)
dist.destroy_process_group()
