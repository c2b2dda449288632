"""[1] Buffer: the caller's memory as a C-contiguous host array, or a staged copy."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import detect
from .dtypes import carrier_for


class Buffer:
    """One tensor argument, ready for MPI.

    Attributes:
        obj: the caller's tensor.
        view: a numpy view of the caller's memory (any strides).
        array: C-contiguous host array handed to MPI (``view`` itself when
            zero-copy, else a staging copy written back by ``commit``).
        dtype: logical dtype name ("float32", "bfloat16", ...).
        shape: logical shape.
    """

    __slots__ = ("_writeback", "array", "dtype", "obj", "shape", "view")

    def __init__(self, obj: Any, view: np.ndarray, dtype: str,
                 writeback: Callable[[np.ndarray], None] | None = None) -> None:
        self.obj = obj
        self.view = view
        self.dtype = dtype
        self.shape = view.shape
        if view.flags.c_contiguous:
            self.array = view
        else:
            self.array = np.ascontiguousarray(view)
            if writeback is None:
                writeback = _copy_into(view)
        self._writeback = writeback

    @property
    def numel(self) -> int:
        """Number of elements."""
        return self.array.size

    @property
    def staged(self) -> bool:
        """Whether MPI works on a copy rather than the caller's memory."""
        return self._writeback is not None

    def flat(self) -> np.ndarray:
        """The data as a 1-D array (a view of ``array``)."""
        return self.array.reshape(-1)

    def detach_input(self) -> None:
        """Give this input private memory (it aliases an output)."""
        self.array = self.array.copy()

    def commit(self) -> None:
        """Write a staged result back into the caller's tensor."""
        if self._writeback is not None:
            self._writeback(self.array)


def _copy_into(view: np.ndarray) -> Callable[[np.ndarray], None]:
    def writeback(result: np.ndarray) -> None:
        np.copyto(view, result.reshape(view.shape))
    return writeback


def _overlapping_strides(view: np.ndarray) -> bool:
    return any(s == 0 and n > 1 for s, n in zip(view.strides, view.shape))


def as_buffer(x: Any, *, writable: bool = False, op: str = "", name: str = "tensor") -> Buffer:
    """Turn a tensor of any supported framework into a :class:`Buffer`.

    Args:
        x: numpy array, torch tensor, or any object with ``__dlpack__``.
        writable: the buffer receives data; read-only memory is refused.
        op: collective name for error messages.
        name: argument name for error messages.
    """
    if type(x) is np.ndarray:
        view, dtype, wb = x, x.dtype.name, None
    elif detect.is_torch_tensor(x):
        from .frameworks import torch as _torch

        view, dtype = _torch.host_view(x, op, name)
        wb = None
        if writable and _torch.needs_torch_writeback(x):
            def wb(result: np.ndarray, t: Any = x) -> None:
                _torch.writeback(t, result)
    elif detect.is_numpy_array(x):
        view, dtype, wb = np.asarray(x), x.dtype.name, None
    elif hasattr(x, "__dlpack__"):
        view, dtype, wb = _from_dlpack(x, op, name), "", None
        dtype = view.dtype.name
    else:
        raise TypeError(f"{op}: {name} of type {type(x).__name__} is not a supported tensor type")
    if view.dtype.kind == "V" or view.dtype.hasobject:
        raise TypeError(f"{op}: {name} has unsupported dtype {view.dtype}")
    if view.dtype == np.bool_:
        view = view.view(np.uint8)
    if writable:
        if not view.flags.writeable:
            raise BufferError(f"{op}: {name} is read-only and cannot receive data")
        if view.size > 1 and _overlapping_strides(view):
            raise BufferError(
                f"{op}: {name} has overlapping memory (a stride of 0, e.g. from expand) "
                "and cannot receive data")
    return Buffer(x, view, dtype, wb)


def _from_dlpack(x: Any, op: str, name: str) -> np.ndarray:
    try:
        dev = x.__dlpack_device__()
    except Exception as e:  # noqa: BLE001
        raise TypeError(f"{op}: {name}: __dlpack_device__ failed: {e}") from e
    if int(dev[0]) not in (1, 3):  # kDLCPU, kDLCUDAHost
        raise ValueError(f"{op}: {name} is on DLPack device {tuple(dev)}; only host memory is supported")
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError) as e:
        raise TypeError(f"{op}: {name} of type {type(x).__name__} cannot be read "
                        f"through DLPack: {e}") from e


def carrier_dtype(itemsize: int) -> np.dtype:
    """Re-export for callers that allocate temporaries of exotic dtypes."""
    return carrier_for(itemsize)
