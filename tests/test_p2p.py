"""send/recv (any source), isend/irecv, P2POp + batch_isend_irecv, object p2p."""

from __future__ import annotations

import numpy as np
import pytest
from _reference import assert_equal, empty, to_np, to_xp

import mpicoll as dist

pytestmark = pytest.mark.mpi(min_size=2)


def test_send_recv_ring(xp, rank, size):
    right, left = (rank + 1) % size, (rank - 1) % size
    out = empty(xp, (3, 2), "float64")
    if rank % 2 == 0:
        dist.send(to_xp(np.full((3, 2), rank, np.float64), "float64", xp), dst=right)
        src = dist.recv(out, src=left)
    else:
        src = dist.recv(out, src=left)
        dist.send(to_xp(np.full((3, 2), rank, np.float64), "float64", xp), dst=right)
    assert src == left
    assert_equal(out, np.full((3, 2), left, np.float64), "float64")


def test_recv_any_source_returns_sender(xp, rank, size):
    if rank == 0:
        seen = set()
        for _ in range(size - 1):
            buf = empty(xp, (1,), "int64")
            src = dist.recv(buf, tag=7)
            assert int(to_np(buf)[0]) == src * 100
            seen.add(src)
        assert seen == set(range(1, size))
    else:
        dist.send(to_xp(np.array([rank * 100]), "int64", xp), dst=0, tag=7)
    dist.barrier()  # the next test's messages must not race these any-source receives


def test_isend_irecv_ring_bf16_non_contiguous_recv(rank, size):
    import torch

    right, left = (rank + 1) % size, (rank - 1) % size
    base = torch.zeros(4, 6, dtype=torch.bfloat16)
    out = base[:, ::2]  # strided receive buffer
    rw = dist.irecv(out, src=left)
    sw = dist.isend(torch.full((4, 3), rank + 0.5, dtype=torch.bfloat16), dst=right)
    sw.wait()
    rw.wait()
    assert rw.source_rank() == left
    assert torch.equal(out, torch.full((4, 3), left + 0.5, dtype=torch.bfloat16))
    assert torch.equal(base[:, 1::2], torch.zeros(4, 3, dtype=torch.bfloat16))


def test_batch_isend_irecv(xp, rank, size):
    right, left = (rank + 1) % size, (rank - 1) % size
    out = empty(xp, (5,), "int32")
    ops = [dist.P2POp(dist.isend, to_xp(np.arange(5) + rank, "int32", xp), right),
           dist.P2POp(dist.irecv, out, left)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 2
    for w in works:
        w.wait()
    assert_equal(out, np.arange(5) + left, "int32")


def test_p2p_with_torch_ops_and_group_peer(rank, size):
    import torch
    import torch.distributed as tdist

    right, left = (rank + 1) % size, (rank - 1) % size
    out = torch.empty(2)
    ops = [dist.P2POp(tdist.irecv, out, group_peer=left),
           dist.P2POp(tdist.isend, torch.tensor([1.0, rank]), group_peer=right)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert out.tolist() == [1.0, float(left)]


def test_send_recv_object_list(rank, size):
    if rank == 0:
        dist.send_object_list([{"a": 1}, "two", 3.0], dst=size - 1)
    if rank == size - 1:
        objs = [None, None, None]
        assert dist.recv_object_list(objs) == 0
        assert objs == [{"a": 1}, "two", 3.0]
