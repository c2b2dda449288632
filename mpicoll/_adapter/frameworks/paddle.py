"""[1] Paddle tensors: zero-copy host views through DLPack, exotic dtypes, write-back.

Measured on Paddle 3.3.1 (CPU build):

- ``np.from_dlpack(t)`` is a writable, zero-copy view of the tensor's own memory
  for bool, uint8, int8/16/32/64, float16, float32, float64, complex64 and
  complex128, with the tensor's strides (transposes, slices, ``as_strided``),
  about 2.6 us per call. This is the path used for those dtypes.
- bfloat16 and float8 tensors cannot be exported through DLPack ("Unsupported
  dtype in DLTensor"), but ``t.view(paddle.int16)`` / ``t.view(paddle.uint8)``
  reinterprets the same memory (strides kept), which DLPack then exports: the
  data is moved in a uint16 / uint8 carrier, still zero-copy.
- Tensors that need gradients (``stop_gradient=False``) refuse ``__dlpack__``;
  ``t.detach()`` shares their memory, so they are viewed through it.
- ``t.numpy()`` always copies; writes to it never reach the tensor. It is only
  the fallback (a staged copy written back with ``paddle.assign``, which honours
  the target's strides, unlike ``Tensor.set_value``) for a tensor that DLPack
  refuses to export.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import paddle

from ...errors import ArgumentTypeError as _Type
from ...errors import ArgumentValueError as _Value
from ..dtypes import carrier_for

# Paddle dtypes that numpy holds natively, by logical name. ``paddle.uint16`` is
# a legacy alias of bfloat16 in Paddle and must not be listed here.
_NAMES: dict[Any, str] = {
    getattr(paddle, n): n
    for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128", "uint32", "uint64")
    if hasattr(paddle, n)  # uint32/uint64: Paddle 3.x
}
# Same-width Paddle integer dtypes that DLPack exports, for reinterpreting
# dtypes it does not (bfloat16, float8_e4m3fn, float8_e5m2, ...).
_VIEW_AS = {1: paddle.uint8, 2: paddle.int16, 4: paddle.int32, 8: paddle.int64}
_EXOTIC: dict[Any, str] = {}  # their names, cached (str(dtype) costs ~1 us)

View = tuple[np.ndarray, str, "Callable[[np.ndarray], None] | None", str]


def dtype_name(t: paddle.Tensor) -> str:
    """The logical dtype name, e.g. "float32" or "bfloat16"."""
    return str(t.dtype).rsplit(".", 1)[-1]


def view_of(t: paddle.Tensor, writable: bool, op: str, name: str) -> View:
    """A numpy view of ``t``'s own memory (any strides), its dtype name, and a
    write-back hook (None unless the data had to be staged).

    Args:
        t: a Paddle tensor on the CPU.
        writable: the caller will write into the view.
        op: collective name, for error messages.
        name: argument name, for error messages.

    Raises:
        ValueError: ``t`` is not in host memory.
        TypeError: ``t``'s dtype has no fixed element width mpicoll can carry.
    """
    place = t.place
    if not place.is_cpu_place():
        raise _Value(op, "device", "{arg} must be in host memory (mpicoll supports CPU Paddle "
                     "tensors only): expected Place(cpu), got {got}", {"arg": name}, got=place)
    if not t.stop_gradient:
        t = t.detach()  # shares memory; DLPack refuses tensors that need gradients
    dt = t.dtype
    logical = _NAMES.get(dt)
    if logical is not None:
        try:
            return np.from_dlpack(t), logical, None, "cpu"
        except (BufferError, RuntimeError, TypeError):
            return staged_view(t, writable, op, name)
    logical = _EXOTIC.get(dt) or _EXOTIC.setdefault(dt, dtype_name(t))
    size = t.element_size()
    carrier = carrier_for(size)
    try:
        view = np.from_dlpack(t.view(_VIEW_AS[size]))
    except (BufferError, RuntimeError, TypeError, ValueError):
        return staged_view(t, writable, op, name)
    return view.view(carrier), logical, None, "cpu"


def staged_view(t: paddle.Tensor, writable: bool, op: str, name: str) -> View:
    """A private host copy of ``t`` and, for outputs, the hook that writes it back.

    The path for tensors DLPack will not export; :func:`view_of` uses it only
    when the zero-copy route fails.
    """
    logical = dtype_name(t)
    if writable and logical in _NO_KERNELS:
        raise _Type(op, "dtype", "{arg} of dtype {got} cannot receive data here: it is not "
                    "in a form DLPack exports, and Paddle has no CPU kernel to copy a result "
                    "into it (pass a contiguous tensor)", {"arg": name}, got=logical)
    try:
        arr = np.ascontiguousarray(t.numpy())
    except Exception as e:  # whatever Paddle raises, reported as unreadable
        raise _Type(op, "dtype", "{arg} of dtype {got} cannot be read by mpicoll: {e}",
                    {"arg": name}, got=logical, e=e) from e
    if logical not in _NAMES.values():
        arr = arr.view(carrier_for(t.element_size()))
    wb = None
    if writable:
        def wb(result: np.ndarray, target: paddle.Tensor = t) -> None:
            writeback(target, result)
    return arr, logical, wb, "cpu"


def writeback(t: paddle.Tensor, result: np.ndarray) -> None:
    """Copy a host result (the dtype's numpy type or its carrier) into ``t`` in place.

    ``paddle.assign(..., output=t)`` writes through ``t``'s strides, so a view
    into a larger tensor updates that tensor.
    """
    logical = dtype_name(t)
    if logical in _NAMES.values():
        src = paddle.to_tensor(np.ascontiguousarray(result).view(logical).reshape(t.shape))
    else:
        signed = np.dtype(f"int{8 * t.element_size()}")
        src = paddle.to_tensor(np.ascontiguousarray(result).view(signed).reshape(t.shape))
        src = src.view(t.dtype)
    paddle.assign(src, output=t)


def empty(t: paddle.Tensor, shape: tuple[int, ...]) -> paddle.Tensor:
    """A new tensor of ``t``'s dtype, on the CPU."""
    dt = t.dtype
    if _NAMES.get(dt) in _NO_KERNELS:  # no kernel makes one: the same-width int, viewed
        return paddle.empty(list(shape), dtype=f"int{8 * t.element_size()}").view(dt)
    return paddle.empty(list(shape), dtype=dt)


# dtypes numpy and DLPack carry but Paddle (3.3) has no CPU kernels for (full, assign,
# empty through numpy): made and written only through a view
_NO_KERNELS = frozenset({"uint32", "uint64"})
