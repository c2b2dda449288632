"""[1] Framework detection that never imports a framework."""

from __future__ import annotations

import sys
from functools import cache
from typing import Any


@cache
def _issubclass_fast(cls: type, modname: str, clsname: str) -> bool:
    # A framework that was never imported cannot have produced ``cls``.
    mod = sys.modules.get(modname)
    if mod is None:
        return False
    target = getattr(mod, clsname, None)
    return isinstance(target, type) and issubclass(cls, target)


def is_numpy_array(x: Any) -> bool:
    """Return True for a numpy ndarray (not a numpy scalar)."""
    return _issubclass_fast(type(x), "numpy", "ndarray")


def is_torch_tensor(x: Any) -> bool:
    """Return True for a torch.Tensor (of any device)."""
    return _issubclass_fast(type(x), "torch", "Tensor")


def is_paddle_tensor(x: Any) -> bool:
    """Return True for a paddle.Tensor."""
    return _issubclass_fast(type(x), "paddle", "Tensor")


def is_cupy_array(x: Any) -> bool:
    """Return True for a cupy.ndarray."""
    return _issubclass_fast(type(x), "cupy", "ndarray")


def is_jax_array(x: Any) -> bool:
    """Return True for a jax.Array."""
    return _issubclass_fast(type(x), "jax", "Array")


def framework_of(x: Any) -> str:
    """Name the framework that owns ``x``: numpy, torch, paddle, cupy, jax or dlpack."""
    if is_numpy_array(x):
        return "numpy"
    if is_torch_tensor(x):
        return "torch"
    if is_paddle_tensor(x):
        return "paddle"
    if is_cupy_array(x):
        return "cupy"
    if is_jax_array(x):
        return "jax"
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return "dlpack"
    raise TypeError(f"{type(x).__name__} is not a supported tensor type")


def device_of(x: Any) -> str:
    """Where a tensor's memory lives: "cpu", or e.g. "cuda:0" (never imports anything)."""
    if is_numpy_array(x):
        return "cpu"
    if is_torch_tensor(x):
        return "cpu" if x.is_cpu else str(x.device)
    if is_cupy_array(x):
        return f"cuda:{x.device.id}"
    if is_jax_array(x):
        dev = next(iter(x.devices()))
        return "cpu" if dev.platform == "cpu" else f"{dev.platform}:{dev.id}"
    if is_paddle_tensor(x):
        place = x.place
        return "cpu" if place.is_cpu_place() else str(place)
    kind, index = x.__dlpack_device__()
    return "cpu" if int(kind) in (1, 3, 11) else f"dlpack-device-{int(kind)}:{int(index)}"
