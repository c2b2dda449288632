"""[1] torch tensors: host view without DLPack overhead, exotic dtypes, write-back."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch

from ..._env import warn_once
from ..._mpi import MPI
from ...errors import ArgumentTypeError as _Type
from ...errors import ArgumentValueError as _Value
from ..device import CUDA, ROCM, gpu_aware, ordered, plan
from ..dtypes import carrier_for

_NUMPY_NATIVE = {
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.float32,
    torch.float64, torch.complex64, torch.complex128,
}
_NAMES = {dt: str(dt)[6:] for dt in _NUMPY_NATIVE}
_NP_NAMES = {np.dtype(name): name for name in _NAMES.values()}
_fromaddress = MPI.buffer.fromaddress
_VIEW_AS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def dtype_name(t: torch.Tensor) -> str:
    """The logical dtype name, e.g. "bfloat16" or "float8_e4m3fn"."""
    return str(t.dtype)[6:]


def view_of(t: torch.Tensor, writable: bool, op: str,
            name: str) -> tuple[np.ndarray, str, Any, str]:
    """A numpy view of ``t``'s own memory (any strides), its dtype name, a write-back
    hook for outputs whose memory the view cannot reach, and ``t``'s device."""
    try:
        # refuses (so the checks below run) device tensors, tensors that require grad,
        # lazily conjugated/negated views and the dtypes numpy lacks
        view = t.numpy()
    except (RuntimeError, TypeError):
        pass
    else:
        return view, _NP_NAMES[view.dtype], None, "cpu"
    if not t.is_cpu:
        return _device_view(t, writable, op, name)
    if t.requires_grad:
        t = t.detach()
    wb = None
    if t.is_conj() or t.is_neg():
        # lazily conjugated/negated views: MPI must see the resolved values
        if writable:
            def wb(result: np.ndarray, target: torch.Tensor = t) -> None:
                writeback(target, result)
        t = t.resolve_conj().resolve_neg()
    name_ = _NAMES.get(t.dtype)
    if name_ is not None:
        return t.numpy(), name_, wb, "cpu"
    if t.layout != torch.strided:
        raise _Type(op, "layout", "{arg} has layout {got}; only dense tensors are supported",
                    {"arg": name}, got=t.layout)
    size = t.element_size()
    carrier = carrier_for(size)
    return t.view(_VIEW_AS[size]).numpy().view(carrier), str(t.dtype)[6:], wb, "cpu"


def _device_view(t: torch.Tensor, writable: bool, op: str, name: str) -> tuple[Any, str, Any, str]:
    """CUDA/ROCm tensors: direct to a GPU-aware MPI (through CuPy), else staged via host."""
    if not t.is_cuda:
        raise _Value(op, "device", "{arg} is on device {got}: expected a CPU, CUDA or ROCm "
                     "tensor", {"arg": name}, got=t.device)
    how = plan(ROCM if torch.version.hip else CUDA, gpu_aware()[0])
    ordered(t, writable)  # after the pending calls that use its memory
    # MPI must not read memory that kernels on the producer's stream are still writing
    torch.cuda.current_stream(t.device).synchronize()
    if t.requires_grad:
        t = t.detach()
    if how == "direct":
        try:
            import cupy
        except ImportError:
            warn_once("cupy-direct", "mpicoll: the MPI is GPU-aware but CuPy is not installed; "
                      "CUDA tensors are staged through host memory")
        else:
            arr = cupy.from_dlpack(t)
            return arr, _NAMES.get(t.dtype) or str(t.dtype)[6:], None, str(t.device)
    view, dtype, _, _ = view_of(_pinned_copy(t), False, op, name)
    wb = None
    if writable:
        def wb(result: np.ndarray, target: torch.Tensor = t) -> None:
            writeback(target, result)
            torch.cuda.current_stream(target.device).synchronize()
    return view, dtype, wb, str(t.device)


def _pinned_copy(t: torch.Tensor) -> torch.Tensor:
    """``t`` copied to page-locked host memory from torch's caching host allocator: the
    copy runs at the bus's speed, and the block is reused once the staged copy is
    dropped (a fresh pageable ``t.cpu()`` ran at ~1 GB/s at 64 MiB, measured on an
    H100). Pageable memory where pinning fails (a locked-memory limit)."""
    try:
        host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    except RuntimeError:
        return t.cpu()
    host.copy_(t)  # waits for the copy, itself after the stream's earlier kernels
    return host


def writeback(t: torch.Tensor, result: np.ndarray) -> None:
    """Copy a host result into ``t`` honouring its strides, conj and neg bits."""
    src = torch.from_numpy(result)
    if src.dtype != t.dtype:
        src = src.view(t.dtype)
    with torch.no_grad():
        t.copy_(src.reshape(t.shape))


def empty(t: Any, shape: tuple[int, ...]) -> torch.Tensor:
    """A new tensor of ``t``'s dtype and device."""
    return torch.empty(shape, dtype=t.dtype, device=t.device)


_COMPLEX = (torch.complex64, torch.complex128)


def quick(t: torch.Tensor) -> np.ndarray | None:
    """``t``'s own memory as numpy when nothing else is needed: a contiguous CPU tensor
    of a numpy dtype, not needing gradients, with no lazy negation or conjugation; else
    None (``view_of`` then handles it).

    The array is kept for ``t`` (while ``t`` lives, without keeping it alive) and
    handed out again while ``t`` still has the same memory, shape and dtype: a loop
    that communicates the same tensors pays for the checks and the array once."""
    # an entry is t's own: it goes (its weak reference's callback) before t's id can be
    # another tensor's, so only what t may have changed in place is checked
    seen = _SEEN.get(id(t))
    if seen is not None and t.data_ptr() == seen[1] and t.shape == seen[2] and \
            t.dtype is seen[3] and not t.requires_grad and t.is_contiguous():
        return seen[4]
    if t.is_cpu and not t.requires_grad and t.dtype in _NAMES and t.is_contiguous() and \
            not t.is_neg() and not (t.dtype in _COMPLEX and t.is_conj()):
        nbytes = t.nbytes
        if not nbytes:
            return t.numpy()
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        key, ptr = id(t), t.data_ptr()
        # over the memory, not over t (t.numpy() would keep t alive)
        a = np.frombuffer(_fromaddress(ptr, nbytes), _NP_DTYPES[t.dtype])
        if t.dim() != 1:
            a = a.reshape(t.shape)
        _SEEN[key] = (weakref.ref(t, lambda _, key=key: _forget(key)), ptr, t.shape, t.dtype, a)
        return a
    return None


# id(tensor) -> (weak reference, data pointer, shape, dtype, array over its memory), for
# quick(); an entry goes when its tensor does (or all at once, past _SEEN_MAX tensors)
_SEEN: dict[int, tuple[Any, int, Any, Any, np.ndarray]] = {}
_SEEN_MAX = 4096
_NP_DTYPES = {dt: np.dtype(name) for dt, name in _NAMES.items()}


def _forget(key: int) -> None:
    _SEEN.pop(key, None)
