"""[1] How a tensor of each type becomes a numpy view: the handler per exact type, the
framework hooks (loaded when a tensor of theirs first shows up), and dtype names."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _core_loader
from ..errors import ArgumentTypeError as _Type
from ..errors import ArgumentValueError as _Value
from . import detect

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
# of a plain dtype, or None. Where the compiled core is in use, a hook's quick is wrapped
# in the core's ``Quicker``, which answers as it does and remembers its answers in C.
QUICKERS: dict[type, Callable[[Any], np.ndarray | None]] = {}
_quicker: Callable[[Callable[[Any], np.ndarray | None]], Any] | None = None


def _use_core(core: Any) -> None:
    global _quicker
    _quicker = core.Quicker
    for tp, quick in QUICKERS.items():
        QUICKERS[tp] = _quicker(quick)


_core_loader.when_loaded(_use_core)


# the collectives mpicoll.jax serves inside jit (mpicoll/jax/__init__.py)
_IN_JIT = frozenset({"all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
                     "all_to_all_single", "broadcast", "reduce", "reduce_scatter",
                     "reduce_scatter_tensor"})


def _handler(x: Any, op: str, name: str) -> Callable[[Any, bool, str, str], View]:
    if detect.is_torch_tensor(x):
        h = hooks("torch").view_of
        quick = hooks("torch").quick
        QUICKERS[type(x)] = _quicker(quick) if _quicker is not None else quick
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
    elif "jax" in type(x).__module__ and "Tracer" in type(x).__name__:
        # (mpicoll.jax's calls, by the name a torch-style call has)
        fix = (f"call mpicoll.jax.{op} (or mpicoll.functional.{op}), which returns the "
               "result" if op in _IN_JIT else "mpicoll.jax's calls (mpicoll.jax.__all__) "
               "are the collectives that run there")
        raise _Type(op, "type", "{arg} of type {got} is not a supported tensor type: it is "
                    "a JAX tracer (the call is inside jax.jit, grad or vmap), which has no "
                    "values to send; inside jit, " + fix, {"arg": name},
                    got=type(x).__name__)
    else:
        raise _Type(op, "type", "{arg} of type {got} is not a supported tensor type",
                    {"arg": name}, got=type(x).__name__)
    _HANDLERS[type(x)] = h
    return h


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
