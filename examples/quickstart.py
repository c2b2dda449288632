"""mpicoll in ten lines: run with  mpiexec -n 4 python examples/quickstart.py"""
import numpy as np
import torch

import mpicoll as dist

rank, size = dist.get_rank(), dist.get_world_size()

# numpy: sum across ranks, in place
x = np.full(3, rank, dtype=np.float32)
dist.all_reduce(x)

# torch: uneven all_to_all_single -- rank r sends j+1 rows to rank j
sends = [j + 1 for j in range(size)]
recvs = [rank + 1] * size
inp = torch.cat([torch.full((j + 1, 2), 10 * rank + j) for j in range(size)])
out = torch.empty(sum(recvs), 2, dtype=inp.dtype)
dist.all_to_all_single(out, inp, output_split_sizes=recvs, input_split_sizes=sends)

# one line per rank, printed by rank 0 in rank order: four processes printing at once
# would interleave their output
line = f"rank {rank}: all_reduce -> {x.tolist()}; all_to_all_single -> {out[:, 0].tolist()}"
lines = [None] * size
dist.all_gather_object(lines, line)
if rank == 0:
    print("\n".join(lines))
