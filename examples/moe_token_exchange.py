"""MoE-style token exchange with uneven all_to_all_single (torch tensors).

Run: mpiexec -n 4 python examples/moe_token_exchange.py

Each rank holds tokens and routes each one to an expert; expert e lives on rank
e % world. Step 1 exchanges the routing counts (one small all_to_all_single),
step 2 sends the tokens themselves with those counts as split sizes, the
experts apply their transformation, and step 3 sends the results back along
the reverse splits. Every rank checks that it got its own tokens back,
transformed by the right expert, and prints a summary line.
"""
import torch

import mpicoll as dist

rank, world = dist.get_rank(), dist.get_world_size()
hidden, tokens_per_rank = 8, 32
gen = torch.Generator().manual_seed(1000 + rank)
tokens = torch.randn(tokens_per_rank, hidden, generator=gen)
expert = torch.randint(0, world, (tokens_per_rank,), generator=gen)  # destination rank

# sort tokens by destination so that each peer's tokens are contiguous
order = torch.argsort(expert, stable=True)
send = tokens[order]
send_counts = torch.bincount(expert, minlength=world)

# step 1: how many tokens will each peer send me?
recv_counts = torch.empty_like(send_counts)
dist.all_to_all_single(recv_counts, send_counts)

# step 2: the tokens, with uneven split sizes (zeros included)
received = torch.empty(int(recv_counts.sum()), hidden)
dist.all_to_all_single(received, send, recv_counts.tolist(), send_counts.tolist())

# the expert on this rank: scale by (rank + 1) and add the rank
processed = received * (rank + 1) + rank

# step 3: results go back along the reverse splits
returned = torch.empty_like(send)
dist.all_to_all_single(returned, processed, send_counts.tolist(), recv_counts.tolist())

# undo the sort and check against a local computation
result = torch.empty_like(returned)
result[order] = returned
expected = tokens * (expert[:, None] + 1) + expert[:, None]
assert torch.allclose(result, expected), "tokens came back wrong"
print(f"rank {rank}: sent {send_counts.tolist()} received {recv_counts.tolist()} "
      f"tokens ok", flush=True)
