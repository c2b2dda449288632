"""Object collectives (pickle-based)."""

from __future__ import annotations

import mpicoll as dist


def test_all_gather_object(rank, size):
    out = [None] * size
    dist.all_gather_object(out, {"rank": rank, "sq": rank * rank})
    assert out == [{"rank": r, "sq": r * r} for r in range(size)]


def test_broadcast_object_list(rank, size):
    objs = [f"from {rank}", rank, None]
    dist.broadcast_object_list(objs, src=size - 1)
    assert objs == [f"from {size - 1}", size - 1, None]


def test_gather_object(rank, size):
    out = [None] * size if rank == 0 else None
    dist.gather_object(("r", rank), out, dst=0)
    if rank == 0:
        assert out == [("r", r) for r in range(size)]


def test_scatter_object_list(rank, size):
    out = [None]
    src = [{"for": r} for r in range(size)] if rank == 0 else None
    dist.scatter_object_list(out, src, src=0)
    assert out == [{"for": rank}]
