"""[1] JAX arrays: readable zero-copy on the host, never writable (JAX is immutable)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ...errors import ArgumentBufferError as _Buffer
from ..detect import device_of


def view_of(x: Any, writable: bool, op: str, name: str) -> tuple[np.ndarray, str, Any, str]:
    """A read-only host view of a JAX array; outputs are refused with the fix."""
    if writable:
        raise _Buffer(op, "immutable", "{arg} is a JAX array, which is immutable and cannot "
                      "receive data: use mpicoll.functional.{op}(...), which returns a new "
                      "array", {"arg": name}, op=op)
    # np.asarray is zero-copy for CPU arrays and copies device arrays to the host
    view = np.asarray(x)
    return view, str(x.dtype), None, device_of(x)


def empty(like: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Host scratch for a result: JAX arrays are built from it by ``wrap``."""
    return np.empty(shape, dtype=np.dtype(like.dtype))


def wrap(result: np.ndarray, like: Any) -> Any:
    """A JAX array holding ``result`` on ``like``'s device."""
    devices = getattr(like, "devices", None)
    device = next(iter(devices())) if callable(devices) else None
    return jax.device_put(result, device)
