"""[1] GPU buffers: is the MPI GPU-aware, and does a buffer go direct or through the host.

The decision is made in one place: ``MPICOLL_GPU_AWARE=1``/``0`` forces it,
otherwise the MPI library's own report is used (``MPIX_Query_cuda_support`` in
Open MPI, ``MPIX_GPU_query_support`` in MPICH, or a ``--with-cuda``/``--with-hip``
build line), and without a report mpicoll stages device data through host memory.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache
from typing import Any

from .._env import flag
from .._ordering import ordered_span
from .._pending import pending

# DLPack device types (dlpack.h)
CPU, CUDA, CUDA_HOST, OPENCL, VULKAN, METAL, VPI, ROCM, ROCM_HOST = 1, 2, 3, 4, 7, 8, 9, 10, 11
CUDA_MANAGED = 13
HOST_TYPES = (CPU, CUDA_HOST, ROCM_HOST)
GPU_TYPES = (CUDA, ROCM, CUDA_MANAGED)


def plan(device_type: int, gpu_aware: bool) -> str:
    """How a buffer reaches MPI: "host" (its own memory), "direct" or "staged".

    Args:
        device_type: the DLPack device type of the tensor.
        gpu_aware: whether the MPI library can read and write device memory.

    Raises:
        ValueError: a device type that neither MPI nor host staging can serve.
    """
    if device_type in HOST_TYPES:
        return "host"
    if device_type in GPU_TYPES:
        return "direct" if gpu_aware else "staged"
    raise ValueError(f"unsupported DLPack device type {device_type}")


def _from_env(env: dict[str, str]) -> tuple[bool, str] | None:
    forced = flag("MPICOLL_GPU_AWARE", None, env)
    if forced is None:
        return None
    return forced, f"forced by MPICOLL_GPU_AWARE={int(forced)}"


def decide(env: dict[str, str], library_version: str, queried: bool | None) -> tuple[bool, str]:
    """Pure decision: the override, else the library's report, else host staging."""
    forced = _from_env(env)
    if forced is not None:
        return forced
    if queried is not None:
        return queried, ("the MPI library reports GPU support" if queried
                         else "the MPI library reports no GPU support")
    if any(flag in library_version for flag in ("--with-cuda", "--with-hip", "--with-ze")):
        return True, "the MPI library was configured with GPU support"
    return False, "the MPI library does not report GPU support: device data is staged via host"


def _query_library() -> bool | None:
    """Ask libmpi itself, where it has an extension for that (None: no answer)."""
    try:
        lib = ctypes.CDLL(None)
    except OSError:
        return None
    for name in ("MPIX_Query_cuda_support", "MPIX_Query_rocm_support"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            if fn():
                return True
    fn = getattr(lib, "MPIX_GPU_query_support", None)
    if fn is not None:
        flag = ctypes.c_int(0)
        for gpu_type in (0, 2):  # MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_HIP
            if fn(gpu_type, ctypes.byref(flag)) == 0 and flag.value:
                return True
        return False
    return None


def on_device(x: Any) -> bool:
    """Whether ``x`` is a tensor in CUDA device memory (torch, CuPy, any
    ``__cuda_array_interface__`` producer)."""
    cuda = getattr(x, "is_cuda", None)
    if type(cuda) is bool:  # torch
        return cuda
    if not hasattr(type(x), "__cuda_array_interface__"):
        return False
    try:
        x.__cuda_array_interface__  # noqa: B018  (raises for a host array: JAX on the CPU)
    except Exception:
        return False
    return True


def span_of(x: Any) -> tuple[int, int] | None:
    """The device memory of ``x`` (on :func:`on_device`) as addresses [first byte, last
    byte + 1); None when empty. A torch tensor's from its own fields (its
    ``__cuda_array_interface__`` refuses float8 and complex32), others' from
    ``__cuda_array_interface__``."""
    if type(getattr(x, "is_cuda", None)) is bool:
        shape, strides, size, lo = x.shape, x.stride(), x.element_size(), x.data_ptr()
        strides = [st * size for st in strides]
    else:
        cai = x.__cuda_array_interface__
        shape, strides, lo = cai["shape"], cai.get("strides"), cai["data"][0]
        size = int(cai["typestr"][2:])  # ("<f4", "|b1", "<V2": its bytes)
        if strides is None:  # C-contiguous
            n = 1
            for d in shape:
                n *= d
            return (lo, lo + n * size) if n else None
    if 0 in shape:
        return None
    hi = lo
    for n, st in zip(shape, strides, strict=True):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + size


def ordered(x: Any, writes: bool) -> None:
    """Before a device tensor is read or staged: complete the pending calls that use its
    memory (``_ordering``), as for host memory. Called by the device handlers."""
    if pending:
        span = span_of(x)
        if span is not None:
            ordered_span(span, writes)


@cache
def gpu_aware() -> tuple[bool, str]:
    """(is the MPI GPU-aware, why we think so), decided once per process."""
    from .._mpi import MPI  # lazy: importing mpicoll._mpi starts MPI

    forced = _from_env(dict(os.environ))
    if forced is not None:
        return forced
    return decide({}, MPI.Get_library_version(), _query_library())
