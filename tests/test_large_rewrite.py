"""The large-count rewrite (_collectives/_large.py), exercised at small scale.

With its chunk size and int limit lowered, the rewrite runs every path on small
arrays, on whichever MPI this is, and must give what the plain MPI call gives.
The real >2**31-element runs are `make test-large` (tests/scripts/large_messages.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpicoll._collectives import _large

COMM = MPI.COMM_WORLD


@pytest.fixture(autouse=True)
def tiny_limits(monkeypatch):
    monkeypatch.setattr(_large, "CHUNK", 4)
    monkeypatch.setattr(_large, "INT_MAX", 5)


def _data(n, salt):
    return (np.arange(n) * 3 + salt * 100).astype(np.int64)


def test_bcast_allreduce_reduce_in_chunks():
    rank, size = COMM.Get_rank(), COMM.Get_size()
    a = _data(11, 7) if rank == 0 else np.zeros(11, np.int64)
    _large.call(COMM, "Bcast", ([a, MPI.INT64_T], 0))
    np.testing.assert_array_equal(a, _data(11, 7))
    x = _data(13, rank)
    _large.call(COMM, "Allreduce", (MPI.IN_PLACE, [x, MPI.INT64_T], MPI.SUM))
    np.testing.assert_array_equal(x, sum(_data(13, r) for r in range(size)))
    y = np.zeros(13, np.int64)
    _large.call(COMM, "Reduce", ([_data(13, rank), MPI.INT64_T],
                                 [y, MPI.INT64_T] if rank == 0 else None, MPI.MAX, 0))
    if rank == 0:
        np.testing.assert_array_equal(y, _data(13, size - 1))


def test_block_types_allgather_alltoall():
    rank, size = COMM.Get_rank(), COMM.Get_size()
    c = 9  # above the lowered int limit: one derived datatype per block
    out = np.zeros(c * size, np.int64)
    _large.call(COMM, "Allgather", ([_data(c, rank), c, MPI.INT64_T], [out, c, MPI.INT64_T]))
    np.testing.assert_array_equal(out, np.concatenate([_data(c, r) for r in range(size)]))
    send = np.concatenate([_data(c, rank * 10 + j) for j in range(size)])
    recv = np.zeros(c * size, np.int64)
    _large.call(COMM, "Alltoall", ([send, c, MPI.INT64_T], [recv, c, MPI.INT64_T]))
    np.testing.assert_array_equal(recv, np.concatenate([_data(c, j * 10 + rank)
                                                        for j in range(size)]))


def _v(counts):
    return counts, [int(v) for v in np.cumsum([0, *counts])[:-1]]


def test_alltoallv_as_alltoallw():
    rank, size = COMM.Get_rank(), COMM.Get_size()
    sc = [(rank + 2 * j) % 4 * 3 for j in range(size)]  # zeros and blocks above the limit
    rc = [(i + 2 * rank) % 4 * 3 for i in range(size)]
    send = np.concatenate([_data(sc[j], rank * 10 + j) for j in range(size)])
    recv = np.full(sum(rc), -1, np.int64)
    _large.call(COMM, "Alltoallv", ([send, _v(sc), MPI.INT64_T], [recv, _v(rc), MPI.INT64_T]))
    np.testing.assert_array_equal(recv, np.concatenate([_data(rc[i], i * 10 + rank)
                                                        for i in range(size)]))


def test_vector_rooted_and_reduce_scatter():
    rank, size = COMM.Get_rank(), COMM.Get_size()
    counts = [7 + r for r in range(size)]
    out = np.zeros(sum(counts), np.int64)
    _large.call(COMM, "Allgatherv", ([_data(counts[rank], rank), MPI.INT64_T],
                                     [out, _v(counts), MPI.INT64_T]))
    full = np.concatenate([_data(counts[r], r) for r in range(size)])
    np.testing.assert_array_equal(out, full)
    g = np.zeros(sum(counts), np.int64) if rank == 0 else None
    _large.call(COMM, "Gatherv", ([_data(counts[rank], rank), MPI.INT64_T],
                                  [g, _v(counts), MPI.INT64_T] if rank == 0 else None, 0))
    if rank == 0:
        np.testing.assert_array_equal(g, full)
    mine = np.zeros(counts[rank], np.int64)
    _large.call(COMM, "Scatterv", ([full, _v(counts), MPI.INT64_T] if rank == 0 else None,
                                   [mine, MPI.INT64_T], 0))
    np.testing.assert_array_equal(mine, _data(counts[rank], rank))
    send = np.concatenate([_data(c, rank) for c in counts])
    red = np.zeros(counts[rank], np.int64)
    _large.call(COMM, "Reduce_scatter", ([send, MPI.INT64_T], [red, MPI.INT64_T], counts,
                                         MPI.SUM))
    np.testing.assert_array_equal(red, sum(_data(counts[rank], r) for r in range(size)))
    blk = np.zeros(6, np.int64)
    _large.call(COMM, "Reduce_scatter_block", ([np.tile(_data(6, rank), size), 6,
                                                MPI.INT64_T], [blk, 6, MPI.INT64_T], MPI.SUM))
    np.testing.assert_array_equal(blk, sum(_data(6, r) for r in range(size)))
