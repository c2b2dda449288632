"""send/recv (any source), isend/irecv, P2POp + batch_isend_irecv, object p2p.

Every test runs on every framework of the registry (tests/_frameworks.py); JAX arrays
(``xin``) are sent, never received into.
"""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import assert_equal, to_np

import mpicoll as dist

pytestmark = pytest.mark.mpi(min_size=2)


def test_send_recv_ring(xin, rank, size, group):
    xo = xin.output("float32")
    right, left = (rank + 1) % size, (rank - 1) % size
    out = xo.empty((3, 2), "float32")
    msg = xin.full((3, 2), rank, "float32")
    if rank % 2 == 0:
        dist.send(msg, dst=right, group=group)
        src = dist.recv(out, src=left, group=group)
    else:
        src = dist.recv(out, src=left, group=group)
        dist.send(msg, dst=right, group=group)
    assert src == left
    assert_equal(out, np.full((3, 2), left, np.float32), "float32")
    assert_equal(msg, np.full((3, 2), rank, np.float32), "float32")  # sent, untouched


def test_recv_any_source_returns_sender(xp, rank, size):
    # on WORLD (group=None): the default group's path
    if rank == 0:
        seen = set()
        for _ in range(size - 1):
            buf = xp.empty((1,), "int64")
            src = dist.recv(buf, tag=7)
            assert int(to_np(buf)[0]) == src * 100
            seen.add(src)
        assert seen == set(range(1, size))
    else:
        dist.send(xp.tensor(np.array([rank * 100]), "int64"), dst=0, tag=7)
    dist.barrier()  # the next test's messages must not race these any-source receives


@pytest.mark.parametrize("xp", [fw for fw in frameworks.writable() if fw.holds("bfloat16")],
                         ids=lambda fw: fw.name)
def test_isend_irecv_ring_bf16_non_contiguous_recv(xp, rank, size, group):
    right, left = (rank + 1) % size, (rank - 1) % size
    base = xp.full((4, 6), 0, "bfloat16")
    out = base[:, ::2]  # strided receive buffer
    rw = dist.irecv(out, src=left, group=group)
    sw = dist.isend(xp.full((4, 3), rank + 0.5, "bfloat16"), dst=right, group=group)
    sw.wait()
    rw.wait()
    assert rw.source_rank() == left
    assert_equal(out, np.full((4, 3), left + 0.5, np.float32), "bfloat16")
    assert_equal(base[:, 1::2], np.zeros((4, 3), np.float32), "bfloat16")  # untouched


def test_batch_isend_irecv(xin, rank, size, group):
    xo = xin.output("int32")
    right, left = (rank + 1) % size, (rank - 1) % size
    out = xo.empty((5,), "int32")
    ops = [dist.P2POp(dist.isend, xin.tensor(np.arange(5) + rank, "int32"), right, group),
           dist.P2POp(dist.irecv, out, left, group)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 2
    for w in works:
        w.wait()
    assert_equal(out, np.arange(5) + left, "int32")


def test_p2p_with_torch_ops_and_group_peer(xp, rank, size, group):
    # torch.distributed's isend/irecv named in P2POp, whatever framework holds the tensors
    import torch.distributed as tdist

    right, left = (rank + 1) % size, (rank - 1) % size
    out = xp.empty((2,), "float32")
    ops = [dist.P2POp(tdist.irecv, out, group=group, group_peer=left),
           dist.P2POp(tdist.isend, xp.tensor(np.array([1.0, rank]), "float32"), group=group,
                      group_peer=right)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert_equal(out, np.array([1.0, left], np.float32), "float32")


def test_send_recv_object_list(rank, size, group):
    if rank == 0:
        dist.send_object_list([{"a": 1}, "two", 3.0], dst=size - 1, group=group)
    if rank == size - 1:
        objs = [None, None, None]
        assert dist.recv_object_list(objs, group=group) == 0
        assert objs == [{"a": 1}, "two", 3.0]
