"""A group whose devices have different backends: "cpu:mpicoll,cuda:gloo".

On torch 2.15 mpicoll fills the CPU slot as a c10d Backend (a Python class can extend
it there), beside gloo's CUDA slot; on 2.13, whose Backend has no Python constructor,
mpicoll's creator returns the whole group, every device over mpicoll. Either way CPU
tensors go over mpicoll, checked against numpy. (No GPU here: the CUDA slot is made,
never used.)
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributed as tdist

import mpicoll.torch  # noqa: F401  (registers the backend)
from mpicoll.torch._backend import MpicollProcessGroup
from mpicoll.torch._device import MpicollBackend

SPEC = "cpu:mpicoll,cuda:gloo"


@pytest.fixture(scope="module", autouse=True)
def pg():
    # mpi://: a fresh store port (groups are made and destroyed in several modules)
    tdist.init_process_group(SPEC, init_method="mpi://")
    yield tdist.group.WORLD
    tdist.destroy_process_group()


def _per_device_torch() -> bool:
    return tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 15)


def test_the_cpu_slot_is_mpicoll(pg):
    cpu = pg._get_backend(torch.device("cpu"))
    if _per_device_torch():
        # the slot holds mpicoll's Backend; the group itself is torch's own
        assert MpicollBackend is not None and type(cpu) is MpicollBackend
        assert not isinstance(pg, MpicollProcessGroup)
        assert tdist.get_backend(pg) == SPEC
    else:
        assert MpicollBackend is None  # 2.13: the whole group is mpicoll's
        assert type(pg) is MpicollProcessGroup and cpu is pg


def test_collectives_on_cpu_tensors(rank, size):
    t = torch.arange(6, dtype=torch.float32) + rank
    tdist.all_reduce(t)
    np.testing.assert_allclose(t.numpy(), sum(np.arange(6.0) + r for r in range(size)))
    mine = torch.full((2, 3), float(rank))
    out = torch.empty(2 * size, 3)
    getattr(tdist, "all_gather_single", tdist.all_gather_into_tensor)(out, mine)
    np.testing.assert_array_equal(out.numpy(), np.repeat(np.arange(size, dtype=np.float32),
                                                         2)[:, None].repeat(3, 1))
    x = torch.arange(size * 2, dtype=torch.int64) + 100 * rank
    y = torch.empty_like(x)
    tdist.all_to_all_single(y, x)
    want = np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * r for r in range(size)])
    np.testing.assert_array_equal(y.numpy(), want)
    b = torch.full((4,), float(rank))
    work = tdist.broadcast(b, src=size - 1, async_op=True)
    work.wait()
    assert b.tolist() == [float(size - 1)] * 4
    got = [torch.empty(3, dtype=torch.int32) for _ in range(size)]
    tdist.all_gather(got, torch.full((3,), rank, dtype=torch.int32))
    assert [g.tolist() for g in got] == [[r] * 3 for r in range(size)]
    tdist.barrier()


def test_subgroup_keeps_the_devices_backends(rank, size):
    g = tdist.new_group(list(range(size)))
    t = torch.ones(3) * (rank + 1)
    tdist.all_reduce(t, group=g, op=tdist.ReduceOp.MAX)
    assert t.tolist() == [float(size)] * 3
    cpu = g._get_backend(torch.device("cpu"))
    assert type(cpu) is (MpicollBackend if _per_device_torch() else MpicollProcessGroup)
    tdist.destroy_process_group(g)
