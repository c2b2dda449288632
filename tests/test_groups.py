"""Process groups: WORLD, new_group subsets, non-members, subgroups, mpi4py comms."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import mpicoll as dist


def test_world(rank, size):
    assert dist.get_rank() == MPI.COMM_WORLD.Get_rank() == rank
    assert dist.get_world_size() == MPI.COMM_WORLD.Get_size() == size
    assert dist.is_initialized()
    assert dist.get_process_group_ranks(dist.group.WORLD) == list(range(size))
    assert dist.group.WORLD.rank() == rank and dist.group.WORLD.size() == size


@pytest.mark.mpi(min_size=2)
def test_subset_group_and_non_member(rank, size):
    members = list(range(1, size))  # everyone but rank 0
    g = dist.new_group(members)
    t = np.array([float(rank)])
    if rank == 0:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        assert dist.all_reduce(t, group=g) is None
        assert dist.broadcast(t, src=1, group=g) is None
        assert t[0] == 0.0  # non-member: untouched, as torch leaves it
    else:
        assert dist.get_rank(g) == rank - 1
        assert dist.get_world_size(g) == size - 1
        assert dist.get_process_group_ranks(g) == members
        assert dist.get_group_rank(g, rank) == rank - 1
        assert dist.get_global_rank(g, 0) == 1
        dist.all_reduce(t, group=g)
        assert t[0] == sum(members)
        # src is a global rank, group_src a group rank
        b = np.array([float(rank)])
        dist.broadcast(b, src=size - 1, group=g)
        assert b[0] == size - 1
        c = np.array([float(rank)])
        dist.broadcast(c, group_src=0, group=g)
        assert c[0] == 1.0
        out = np.zeros(size - 1)
        dist.all_gather_into_tensor(out, np.array([rank * 2.0]), group=g)
        np.testing.assert_array_equal(out, [m * 2.0 for m in members])


@pytest.mark.mpi(min_size=2)
def test_unsorted_group_order(rank, size):
    order = list(reversed(range(size)))
    g = dist.new_group(order, sort_ranks=False)
    assert dist.get_process_group_ranks(g) == order
    assert dist.get_rank(g) == size - 1 - rank
    out = [np.zeros(1) for _ in range(size)]
    dist.all_gather(out, np.array([float(rank)]), group=g)
    assert [o[0] for o in out] == [float(r) for r in order]


@pytest.mark.mpi(min_size=2)
def test_new_subgroups(rank, size):
    if size % 2:
        pytest.skip("needs an even world")
    cur, subs = dist.new_subgroups(group_size=2)
    assert len(subs) == size // 2
    assert dist.get_process_group_ranks(cur) == [rank - rank % 2, rank - rank % 2 + 1]
    t = np.array([rank])
    dist.all_reduce(t, group=cur)
    assert t[0] == 2 * (rank - rank % 2) + 1


def test_new_subgroups_by_enumeration(rank, size):
    lists = [[r] for r in range(size)]
    cur, subs = dist.new_subgroups_by_enumeration(lists)
    assert dist.get_process_group_ranks(cur) == [rank]
    assert sum(s is not dist.GroupMember.NON_GROUP_MEMBER for s in subs) == 1


def test_mpi4py_comm_as_group(rank, size):
    comm = MPI.COMM_WORLD.Split(color=rank % 2, key=-rank)  # reversed order per colour
    t = np.array([rank])
    dist.all_reduce(t, group=comm)
    assert t[0] == sum(r for r in range(size) if r % 2 == rank % 2)
    ranks = dist.get_process_group_ranks(comm)
    assert ranks == sorted((r for r in range(size) if r % 2 == rank % 2), reverse=True)
    b = np.array([float(rank)])
    dist.broadcast(b, src=ranks[0], group=comm)  # src is a global rank
    assert b[0] == ranks[0]
    comm.Free()


def test_group_src_out_of_range(rank, size):
    with pytest.raises(ValueError, match="group_src must be in"):
        dist.broadcast(np.zeros(1), group_src=size)
    with pytest.raises(ValueError, match="src 99 is not a rank of the group"):
        dist.broadcast(np.zeros(1), src=99)


def test_init_process_group_checks_world(rank, size):
    if not dist.is_initialized():
        dist.init_process_group()
    with pytest.raises(ValueError, match="world_size must match"):
        dist.destroy_process_group()
        dist.init_process_group("gloo", world_size=size + 1)
    dist.init_process_group("mpi", rank=rank, world_size=size)
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group()
    assert dist.get_backend() == "mpi"
    # destroy, then use again: a fresh WORLD is created on first use
    dist.destroy_process_group()
    assert not dist.is_initialized()
    t = np.ones(1)
    dist.all_reduce(t)
    assert t[0] == size


def test_destroy_completes_pending_work(rank, size):
    g = dist.new_group(list(range(size)))
    x = np.ones(3) * rank
    work = dist.all_reduce(x, group=g, async_op=True)
    del work  # a dropped handle: its buffers stay alive until the request completes
    dist.destroy_process_group(g)  # completes it before freeing the communicator
    np.testing.assert_array_equal(x, np.full(3, float(sum(range(size)))))
