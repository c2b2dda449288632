"""Rank 1 raises after a first collective; the others wait in a barrier."""
import numpy as np

import mpicoll as dist

t = np.ones(1)
dist.all_reduce(t)
if dist.get_rank() == 1:
    raise RuntimeError("boom on rank 1")
dist.barrier()
print("unreachable: the barrier cannot complete")
