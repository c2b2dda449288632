"""Outside mpiexec (1 MPI rank), ask torch for a world of 2: a clear error, no hang."""
from datetime import timedelta

import torch.distributed as dist

import mpicoll.torch  # noqa: F401

try:
    dist.init_process_group("mpicoll", store=dist.HashStore(), rank=0, world_size=2,
                            timeout=timedelta(seconds=20))
except Exception as e:
    print(f"{type(e).__name__}: {e}")
