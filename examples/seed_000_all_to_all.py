"""Seed 000: torch.distributed.all_to_all examples, verbatim, over mpicoll.

Run: mpiexec -n 4 python examples/seed_000_all_to_all.py
"""

import torch

import mpicoll as dist

rank = dist.get_rank()
assert dist.get_world_size() == 4, "seed 000 is written for 4 ranks"

# Example 1: even split of a chunked tensor.
input = torch.arange(4) + rank * 4
input = list(input.chunk(4))
output = list(torch.empty([4], dtype=torch.int64).chunk(4))
dist.all_to_all(output, input)
print(f"even rank {rank}: {output}", flush=True)

# Example 2: uneven split sizes.
inputs = {
    0: torch.tensor([0, 1, 2, 3, 4, 5]),
    1: torch.tensor([10, 11, 12, 13, 14, 15, 16, 17, 18]),
    2: torch.tensor([20, 21, 22, 23, 24]),
    3: torch.tensor([30, 31, 32, 33, 34, 35, 36]),
}
input_splits = {0: [2, 2, 1, 1], 1: [3, 2, 2, 2], 2: [2, 1, 1, 1], 3: [2, 2, 2, 1]}[rank]
output_splits = {0: [2, 3, 2, 2], 1: [2, 2, 1, 2], 2: [1, 2, 1, 2], 3: [1, 2, 1, 1]}[rank]
input = inputs[rank]
input = list(input.split(input_splits))
output = list(torch.empty([sum(output_splits)], dtype=torch.int64).split(output_splits))
dist.all_to_all(output, input)
print(f"uneven rank {rank}: {output}", flush=True)

# Example 3: complex tensors. The documentation allocates the output as
# int64, which cannot receive complex data: mpicoll refuses before sending.
input = torch.tensor([1+1j, 2+2j, 3+3j, 4+4j], dtype=torch.cfloat) + 4 * rank * (1+1j)
input = list(input.chunk(4))
output = list(torch.empty([4], dtype=torch.int64).chunk(4))
try:
    dist.all_to_all(output, input)
except ValueError as e:
    print(f"complex-int64 rank {rank}: ValueError: {e}", flush=True)
output = list(torch.empty([4], dtype=torch.cfloat).chunk(4))
dist.all_to_all(output, input)
print(f"complex rank {rank}: {output}", flush=True)
