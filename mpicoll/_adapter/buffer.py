"""[1] Buffer: the caller's memory as a C-contiguous host array, or a staged copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._work import ordered as _ordered
from .._work import pending as _pending
from ..errors import ArgumentBufferError as _Buffer
from ..errors import ArgumentTypeError as _Type
from ..errors import ArgumentValueError as _Value
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


# (a numpy view or the array MPI uses, logical dtype name, write-back hook or None,
#  the device of the caller's memory)
View = tuple[np.ndarray, str, "Callable[[np.ndarray], None] | None", str]


def _numpy_subclass_view(x: Any, writable: bool, op: str, name: str) -> View:
    view = np.asarray(x)
    return view, _name(view.dtype, op, name), None, "cpu"


def _dlpack_view(x: Any, writable: bool, op: str, name: str) -> View:
    view = _from_dlpack(x, op, name)
    return view, _name(view.dtype, op, name), None, "cpu"


# Exact type -> how to view it; filled as types are first seen, so the per-call
# cost is one dict lookup (frameworks are detected without being imported).
_HANDLERS: dict[type, Callable[[Any, bool, str, str], View]] = {}


# Exact type -> the hook's ``quick``: its memory as a C-contiguous, writable numpy array
# of a plain dtype, or None
QUICKERS: dict[type, Callable[[Any], np.ndarray | None]] = {}


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


def _handler(x: Any, op: str, name: str) -> Callable[[Any, bool, str, str], View]:
    if detect.is_torch_tensor(x):
        h = hooks("torch").view_of
        QUICKERS[type(x)] = hooks("torch").quick
    elif detect.is_paddle_tensor(x):
        h = hooks("paddle").view_of
    elif detect.is_cupy_array(x):
        h = hooks("cupy").view_of
    elif detect.is_jax_array(x):
        h = hooks("jax").view_of
    elif detect.is_numpy_array(x):
        h = _numpy_subclass_view
    elif hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        h = _dlpack_view
    else:
        raise _Type(op, "type", "{arg} of type {got} is not a supported tensor type",
                    {"arg": name}, got=type(x).__name__)
    _HANDLERS[type(x)] = h
    return h


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
    else:
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


# dtypes whose view MPI takes as it is (bool is carried as uint8, ml_dtypes as bytes)
PLAIN = _PLAIN = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                            "uint64", "float16", "float32", "float64", "complex64",
                            "complex128"})

_NAMES: dict[np.dtype, str] = {}
_frameworks: dict[str, Any] = {}


def hooks(framework: str) -> Any:
    """mpicoll's hooks for a framework, imported once a tensor of it shows up.

    Every hook module provides ``view_of(x, writable, op, name) -> View`` and
    ``empty(like, shape)``; ``writeback``/``wrap`` where the framework needs them.
    """
    mod = _frameworks.get(framework)
    if mod is None:
        import importlib

        mod = _frameworks[framework] = importlib.import_module(f".frameworks.{framework}",
                                                               __package__)
    return mod


def _name(dt: np.dtype, op: str = "", arg: str = "tensor") -> str:
    """The logical dtype name of a numpy dtype (cached: ``dtype.name`` costs ~2 us); an
    ArgumentTypeError naming ``arg`` for one MPI cannot carry (objects, strings, ...)."""
    name = _NAMES.get(dt)
    if name is None:
        # ml_dtypes' scalar types (bfloat16, float8_*) are kind "V" but not structured
        exotic = dt.kind == "V" and dt.names is None and dt.itemsize in (1, 2, 4, 8) and \
            not dt.name.startswith("void")
        if (dt.kind in "OVSUMm" and not exotic) or dt.hasobject:
            raise _Type(op, "dtype", "{arg} has dtype {got}, which mpicoll cannot "
                        "communicate (objects, strings, structures, dates)", {"arg": arg},
                        got=str(dt))
        name = _NAMES[dt] = dt.name
    return name


def _from_dlpack(x: Any, op: str, name: str) -> np.ndarray:
    try:
        dev = x.__dlpack_device__()
    except Exception as e:
        raise _Type(op, "dlpack", "{arg}: __dlpack_device__ failed: {got}", {"arg": name},
                    got=e) from e
    if int(dev[0]) not in (1, 3):  # kDLCPU, kDLCUDAHost
        raise _Value(op, "device", "{arg} is on DLPack device {got}; only host memory is "
                     "supported", {"arg": name}, got=tuple(dev))
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError) as e:
        raise _Type(op, "dlpack", "{arg} of type {got} cannot be read through DLPack: {e}",
                    {"arg": name}, got=type(x).__name__, e=e) from e
