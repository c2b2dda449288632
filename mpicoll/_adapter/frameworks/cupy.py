"""[1] CuPy arrays: device memory straight to a GPU-aware MPI, else staged via host."""

from __future__ import annotations

from typing import Any

import cupy
import cupyx
import numpy as np

from ..device import gpu_aware, ordered, plan


def view_of(x: Any, writable: bool, op: str, name: str) -> tuple[Any, str, Any, str]:
    """The array MPI uses (the device array itself, or a host copy) and write-back."""
    how = plan(int(x.__dlpack_device__()[0]), gpu_aware()[0])
    ordered(x, writable)  # after the pending calls that use its memory
    with x.device:  # (its device's current stream, which may not be the current device's)
        # the producer's kernels must have finished before MPI reads the memory
        cupy.cuda.get_current_stream().synchronize()
        if how == "direct":
            return x, x.dtype.name, None, f"cuda:{x.device.id}"
        # page-locked memory from CuPy's pinned pool (reused once the copy is dropped):
        # the copies run at the bus's speed, not at a pageable copy's
        host = cupyx.empty_pinned(x.shape, x.dtype)
        x.get(out=host)
        cupy.cuda.get_current_stream().synchronize()
    wb = None
    if writable:
        def wb(result: np.ndarray, target: Any = x) -> None:
            # (bool travels as uint8: the same bytes, seen as the target's dtype)
            result = result.view(target.dtype).reshape(target.shape)
            with target.device:  # the copy done before the pinned block goes back
                if target.flags.c_contiguous:
                    target.set(result)
                else:
                    target[...] = cupy.asarray(result)
                cupy.cuda.get_current_stream().synchronize()
    return host, host.dtype.name, wb, f"cuda:{x.device.id}"


def empty(like: Any, shape: tuple[int, ...]) -> Any:
    """A new array of ``like``'s dtype on its device."""
    with like.device:
        return cupy.empty(shape, dtype=like.dtype)
