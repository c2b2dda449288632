"""[1]/[3] What a persistent collective redoes at each start: check that its tensors
still own the memory MPI was given, and bring staged copies up to date."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._adapter import Buffer, as_buffer, detect
from .._mpi import MPI
from ..errors import ArgumentBufferError as _Buffer

Step = Callable[[], Any]


def refuse_immutable(op: str, **tensors: Any) -> None:
    """JAX arrays cannot be served: a persistent collective rereads and rewrites its
    tensors in place at every start, and JAX arrays never change."""
    for name, x in tensors.items():
        if detect.is_jax_array(x):
            raise _Buffer(op, "immutable", "{arg} is a JAX array, which is immutable: a "
                          "persistent collective reads and writes the same tensors at every "
                          "start; use mpicoll.functional instead", {"arg": name})


def fingerprint(x: Any) -> Step:
    """A cheap function of ``x`` that changes when its memory is reallocated or resized:
    (data pointer, shape, strides, dtype)."""
    if detect.is_numpy_array(x):
        address = MPI.buffer

        def numpy_fp() -> tuple:
            try:
                ptr = address(x).address  # 0.1 us, where __array_interface__ costs 1 us
            except BufferError:  # not contiguous
                ptr = x.__array_interface__["data"][0]
            return ptr, x.shape, x.strides, x.dtype
        return numpy_fp
    if detect.is_torch_tensor(x):
        return lambda: (x.data_ptr(), x.shape, x.stride(), x.dtype)
    if detect.is_paddle_tensor(x):
        return lambda: (x.data_ptr(), tuple(x.shape), tuple(x.strides), x.dtype)
    if detect.is_cupy_array(x):
        return lambda: (x.data.ptr, x.shape, x.strides, x.dtype)

    def dlpack_fp() -> tuple:
        v = np.from_dlpack(x)
        return v.__array_interface__["data"][0], v.shape, v.strides, v.dtype
    return dlpack_fp


def refresh(buf: Buffer, op: str, name: str, *, reads: bool, writable: bool) -> Step | None:
    """What to do before each start so that MPI works on ``buf``'s current values.

    Nothing when MPI uses the caller's host memory itself, or only writes a staging
    array that ``commit`` writes back. A staged input is copied again into its
    staging array: from the caller's memory, or from a fresh view where the staged
    copy was a snapshot (lazily conjugated views, device tensors, ...). Device
    memory handed to MPI directly is viewed again, which synchronises the
    producer's stream.
    """
    array, view, obj = buf.array, buf.view, buf.obj
    if buf.device != "cpu":
        direct = not buf.staged
        if not (direct or reads):
            return None
    else:
        if not reads or not buf.numel:
            return None
        direct = False
        if view.__array_interface__["data"][0] == fingerprint(obj)()[0]:  # the caller's memory
            return None if array is view else lambda: np.copyto(array, view)

    def again() -> None:
        fresh = as_buffer(obj, writable=writable, op=op, name=name)
        if not direct:
            np.copyto(array, fresh.array.reshape(array.shape))
    return again


def derive(target: np.ndarray, make: Callable[[], np.ndarray]) -> Step:
    """Recompute a private array MPI sends from (widened or pre-scaled input)."""
    return lambda: np.copyto(target, make())
