"""The GPU decision (direct vs staged) on its inputs, and the GPU path where a GPU exists."""

from __future__ import annotations

import ctypes
import re

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


@pytest.fixture
def fresh_decision(monkeypatch):
    """gpu_aware() decided anew (it is cached per process), and anew after the test."""
    device.gpu_aware.cache_clear()
    monkeypatch.delenv("MPICOLL_GPU_AWARE", raising=False)
    yield monkeypatch
    device.gpu_aware.cache_clear()


@pytest.mark.parametrize(("value", "aware"), [("1", True), ("on", True), ("0", False),
                                              ("no", False)])
def test_this_machines_decision_forced_by_the_environment(fresh_decision, value, aware):
    fresh_decision.setenv("MPICOLL_GPU_AWARE", value)
    assert device.gpu_aware() == (aware, f"forced by MPICOLL_GPU_AWARE={int(aware)}")


def test_this_machines_decision_refuses_a_bad_override(fresh_decision):
    fresh_decision.setenv("MPICOLL_GPU_AWARE", "maybe")
    with pytest.raises(ValueError, match="MPICOLL_GPU_AWARE='maybe': expected 0 or 1"):
        device.gpu_aware()


def _loaded_libmpi_reports_gpu_support() -> bool | None:
    """What the libmpi this process runs on answers itself (None: it has no such query).

    Found by its path in the process's memory map: mpi4py loads it without making its
    symbols global, so this does not go through the lookup mpicoll uses.
    """
    from mpi4py import MPI

    MPI.Get_version()
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps
                        if re.search(r"/libmpi(_abi)?\.so[.\d]*$", line.strip())})
    assert paths, "no libmpi in this process's memory map"
    answers = []
    for path in paths:
        lib = ctypes.CDLL(path)
        for name in ("MPIX_Query_cuda_support", "MPIX_Query_rocm_support"):  # Open MPI
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                answers.append(bool(fn()))
        fn = getattr(lib, "MPIX_GPU_query_support", None)  # MPICH
        if fn is not None:
            for kind in (0, 2):  # MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_HIP
                flag = ctypes.c_int(0)
                assert fn(kind, ctypes.byref(flag)) == 0
                answers.append(bool(flag.value))
    return any(answers) if answers else None


def test_this_machines_default_decision(fresh_decision):
    from mpi4py import MPI

    version = MPI.Get_library_version()
    truth = _loaded_libmpi_reports_gpu_support()
    if truth is None:  # no query in the library: its build line is all there is
        truth = any(f in version for f in ("--with-cuda", "--with-hip", "--with-ze"))
    if "pypi.org/p/mpich/" in version:
        assert truth is False  # the mpich wheel is built without GPU support
    aware, why = device.gpu_aware()
    assert aware is truth, (aware, why, version)
    if aware:
        assert why in ("the MPI library reports GPU support",
                       "the MPI library was configured with GPU support")
    else:
        assert why in ("the MPI library reports no GPU support",
                       "the MPI library does not report GPU support: device data is staged "
                       "via host")


def _cuda():
    import torch

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
