"""Memory that stays flat: CALLS collectives whose signatures keep changing (split sizes,
shapes, list sizes, roots; numpy and torch), on groups made and destroyed as they go.
Prints each rank's resident memory after the first tenth (the warm-up) and at the end;
with -v, the entries of the quick paths' tables too. argv: CALLS [-v]."""

import sys

import numpy as np
import torch

import mpicoll as dist

calls = int(sys.argv[1])
rank, size = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(7)  # the same on every rank: every rank draws the same sizes


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def splits() -> list[int]:
    """Sizes, one per rank, from 0 to 999: a new signature almost every call."""
    return [int(v) for v in rng.integers(0, 1000, size)]


group, warm, i = None, None, 0
while i < calls:
    if i % 2000 == 0:  # a new group now and then, the old one destroyed
        if group is not None:
            dist.destroy_process_group(group)
        group = dist.new_group(list(range(size)))
    xp = torch if (i // 7) % 2 else np
    matrix = [splits() for _ in range(size)]  # matrix[s][d]: what s sends d
    send, recv = matrix[rank], [matrix[s][rank] for s in range(size)]
    inp = xp.ones(sum(send), dtype=xp.float32)
    out = xp.zeros(sum(recv), dtype=xp.float32)
    dist.all_to_all_single(out, inp, recv, send, group=group)
    every = splits()  # every rank's tensor size this time
    mine = xp.full((every[rank],), float(rank), dtype=xp.float32)
    dist.all_gather([xp.zeros(n, dtype=xp.float32) for n in every], mine, group=group)
    dist.reduce_scatter(xp.zeros(every[rank], dtype=xp.float32),
                        [xp.ones(n, dtype=xp.float32) for n in every], group=group)
    root = int(rng.integers(0, size))
    dist.gather(mine, [xp.zeros(n, dtype=xp.float32) for n in every] if rank == root else None,
                group_dst=root, group=group)
    rows = int(rng.integers(1, 1000))
    grid = xp.ones((rows, 3), dtype=xp.float32)
    dist.all_gather_into_tensor(xp.zeros((size * rows, 3), dtype=xp.float32), grid, group=group)
    dist.reduce_scatter_tensor(xp.zeros((rows, 3), dtype=xp.float32),
                               xp.ones((size * rows, 3), dtype=xp.float32), group=group)
    i += 6
    if warm is None and i >= calls // 10:
        warm = rss_mib()
dist.destroy_process_group(group)
print(f"rank {rank}: resident after warm-up {warm:.1f} MiB, at the end {rss_mib():.1f} MiB",
      flush=True)
if "-v" in sys.argv:  # the quick paths' tables, for a diagnosis
    from mpicoll._collectives import _rooted_quick, all_gather, all_to_all, reduce_scatter

    tables = {"all_to_all": all_to_all._QUICK, "all_gather": all_gather._QUICK,
              "all_gather lists": all_gather._QUICK_LISTS,
              "reduce_scatter": reduce_scatter._QUICK,
              "reduce_scatter lists": reduce_scatter._QUICK_LISTS,
              "gather": _rooted_quick._QUICK_GATHER}
    print(f"rank {rank}: entries {({k: len(t) for k, t in tables.items()})}", flush=True)
