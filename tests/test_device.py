"""The GPU decision (direct vs staged) on its inputs, and the GPU path where a GPU exists."""

from __future__ import annotations

import numpy as np
import pytest

from mpicoll._adapter import device

MPICH_WHEEL = ("MPICH Version: 5.0.2\nMPICH configure: --with-device=ch4:ucx,ofi "
               "--with-pm=hydra:gforker")


@pytest.mark.parametrize(("dev", "aware", "expected"), [
    (device.CPU, False, "host"), (device.CPU, True, "host"),
    (device.CUDA_HOST, False, "host"), (device.ROCM_HOST, True, "host"),
    (device.CUDA, True, "direct"), (device.CUDA, False, "staged"),
    (device.ROCM, True, "direct"), (device.ROCM, False, "staged"),
    (device.CUDA_MANAGED, False, "staged"),
])
def test_plan(dev, aware, expected):
    assert device.plan(dev, aware) == expected


def test_plan_rejects_unknown_device():
    with pytest.raises(ValueError, match="unsupported DLPack device type 4"):
        device.plan(device.OPENCL, True)


def test_decide_override_wins():
    assert device.decide({"MPICOLL_GPU_AWARE": "1"}, MPICH_WHEEL, False) == (
        True, "forced by MPICOLL_GPU_AWARE=1")
    assert device.decide({"MPICOLL_GPU_AWARE": "0"}, "--with-cuda", True) == (
        False, "forced by MPICOLL_GPU_AWARE=0")
    with pytest.raises(ValueError, match="MPICOLL_GPU_AWARE='maybe': expected 0 or 1"):
        device.decide({"MPICOLL_GPU_AWARE": "maybe"}, "", None)


def test_decide_from_library_report():
    assert device.decide({}, MPICH_WHEEL, True)[0] is True
    assert device.decide({}, MPICH_WHEEL, False) == (
        False, "the MPI library reports no GPU support")
    assert device.decide({}, "MPICH configure: --with-cuda=/usr/local/cuda", None)[0] is True
    aware, why = device.decide({}, MPICH_WHEEL, None)
    assert not aware and "staged via host" in why


def test_this_machines_decision_is_reported():
    aware, why = device.gpu_aware()
    assert isinstance(aware, bool) and why


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    return torch


@pytest.mark.gpu
def test_torch_cuda_all_reduce(rank, size):
    torch = _cuda()
    import mpicoll as dist

    t = torch.full((1024,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    assert t.device.type == "cuda"
    assert torch.all(t == sum(r + 1 for r in range(size))).item()


@pytest.mark.gpu
def test_cupy_all_to_all_single(rank, size):
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        pytest.skip("no CUDA device on this machine")
    import mpicoll as dist

    x = cupy.arange(size * 2, dtype=cupy.float32) + 100 * rank
    out = cupy.empty_like(x)
    dist.all_to_all_single(out, x)
    exp = np.concatenate([np.arange(rank * 2, rank * 2 + 2) + 100 * j for j in range(size)])
    np.testing.assert_array_equal(cupy.asnumpy(out), exp)
