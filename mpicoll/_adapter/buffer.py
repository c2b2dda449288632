"""[1] Buffer: the caller's memory as a C-contiguous host array, or a staged copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _ordering
from .._ordering import ordered as _ordered
from .._pending import pending as _pending
from ..errors import ArgumentBufferError as _Buffer
from .device import on_device, span_of
from .dtypes import carrier_for
from .views import _HANDLERS, _NAMES, _PLAIN, QUICKERS, _handler, _name


class Buffer:
    """One tensor argument, ready for MPI.

    Attributes:
        obj: the caller's tensor.
        view: a numpy view of the caller's memory (any strides).
        array: C-contiguous host array handed to MPI (``view`` itself when
            zero-copy, else a staging copy written back by ``commit``).
        dtype: logical dtype name ("float32", "bfloat16", ...).
        shape: logical shape.
        device: where the caller's memory lives ("cpu", "cuda:0", ...).
    """

    __slots__ = ("_writeback", "array", "device", "dtype", "obj", "shape", "view")

    def __init__(self, obj: Any, view: np.ndarray, dtype: str,
                 writeback: Callable[[np.ndarray], None] | None = None,
                 device: str = "cpu", contiguous: bool | None = None) -> None:
        self.obj = obj
        self.view = view
        self.dtype = dtype
        self.device = device
        self.shape = view.shape
        if contiguous if contiguous is not None else view.flags.c_contiguous:
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

    @property
    def commit_hook(self) -> Callable[[], None] | None:
        """``commit`` where there is something to write back, else None (nothing to call)."""
        return self.commit if self._writeback is not None else None

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
    return any(s == 0 and n > 1 for s, n in zip(view.strides, view.shape, strict=True))


def quick_array(x: Any, writable: bool = True) -> np.ndarray | None:
    """``x``'s memory as a C-contiguous numpy array of a plain dtype (writable, if
    ``writable``) when it is one without staging or conversion (numpy arrays; CPU torch
    tensors once one has been seen by :func:`as_buffer`); else None, and
    :func:`as_buffer` is the way."""
    if type(x) is np.ndarray:
        f = x.flags
        # carray: C-contiguous, aligned and writeable, read in one attribute
        return x if (f.carray if writable else f.c_contiguous) else None
    q = QUICKERS.get(type(x))
    # a hook's quick view is C-contiguous and writable by contract (it is over the
    # tensor's own memory, which the tensor may write): nothing more to check
    return q(x) if q is not None else None


def as_buffer(x: Any, *, writable: bool = False, op: str = "", name: str = "tensor") -> Buffer:
    """Turn a tensor of any supported framework into a :class:`Buffer`.

    Args:
        x: numpy array, torch tensor, or any object with ``__dlpack__``.
        writable: the buffer receives data; read-only memory is refused.
        op: collective name for error messages.
        name: argument name for error messages.
    """
    if type(x) is np.ndarray:  # the common case, without a call
        view, dtype, wb, device = x, _NAMES.get(x.dtype) or _name(x.dtype, op, name), None, \
            "cpu"
    else:  # (device tensors are ordered against pending calls by their handlers)
        view, dtype, wb, device = (_HANDLERS.get(type(x)) or _handler(x, op, name))(
            x, writable, op, name)
    if dtype not in _PLAIN:
        if dtype == "bool":
            view = view.view(np.uint8)
        elif view.dtype.kind == "V":  # ml_dtypes (bfloat16, float8_*) from JAX: as bytes
            view = view.view(carrier_for(view.dtype.itemsize))
    if _pending and device == "cpu":  # an unfinished async call may use this memory
        _ordered(view, writable)
    flags = view.flags
    contiguous = flags.c_contiguous
    if writable:
        if not getattr(flags, "writeable", True):  # CuPy's flags have no writeable
            raise _Buffer(op, "read_only", "{arg} is read-only and cannot receive data",
                          {"arg": name})
        if not contiguous and view.size > 1 and _overlapping_strides(view):
            raise _Buffer(op, "overlapping", "{arg} has overlapping memory (a stride of 0, "
                          "e.g. from expand) and cannot receive data", {"arg": name})
    return Buffer(x, view, dtype, wb, device, contiguous)


def host_view(x: Any) -> Any:
    """The memory of tensor ``x``: its host memory as a numpy view, its device memory as
    an address range (:func:`~.device.span_of`), or None (not a tensor mpicoll reads)."""
    if isinstance(x, np.ndarray):
        return x
    if on_device(x):
        return span_of(x)
    device = getattr(x, "device", None)
    if getattr(device, "type", "cpu") != "cpu":  # (torch's other devices)
        return None
    place = getattr(x, "place", None)  # Paddle
    if place is not None and hasattr(place, "is_cpu_place") and not place.is_cpu_place():
        return None
    try:
        b = as_buffer(x)
    except Exception:  # not a tensor mpicoll reads (the call itself refused it)
        return None
    return b.view if b.device == "cpu" else None


_ordering.host_view = host_view  # how a pending Work's outputs are found in memory
