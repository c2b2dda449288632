"""The array frameworks the collective tests run on: one registry, as mpi4py's test suite
registers its array backends (``test/arrayimpl.py``). CuPy and ``torch-cuda`` (torch
tensors on the GPU) join where a CUDA device is visible.

Each framework is an object with the same small surface: ``name``; ``writable``; the
``dtypes`` it holds; ``tensor(a, dtype)`` (a C-contiguous tensor holding the numpy
array ``a``); ``to_numpy(t)`` (a numpy copy, bfloat16 and float8 widened to float32);
``empty(shape, dtype)`` (an output filled with a sentinel, so unwritten parts show);
``fill``, ``transpose`` (a 2-D view with swapped strides, not contiguous), ``pieces``
(adjacent views along dim 0, as ``x.split(sizes)`` gives), ``memory`` (address and size,
for zero-copy checks); ``output(dtype)`` (the framework that receives the outputs of a
test whose inputs come from this one).

numpy, torch, paddle and jax are installed wherever the suite runs (``make venv``): they
are always registered, and an import error is a test failure, never a skip. CuPy is
registered only where it imports and sees a GPU.

JAX arrays are immutable, so JAX is an input-only framework (``writable`` is False): the
``xin`` fixture and ``cross(..., inputs=True)`` hand it the input side of collectives,
and the outputs go to ``xin.output(dtype)`` (numpy, or torch for dtypes numpy lacks).
``empty`` refuses to make a JAX output, so a test cannot silently skip its outputs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from typing import Any

import numpy as np
import pytest

SENTINEL = 99

ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
              "complex128")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
# built from float32 values and rounded by the framework itself
_WIDENED = ("bfloat16", *FLOAT8)


def _numpy_data(a: Any, dtype: str) -> np.ndarray:
    """``a`` as a fresh C-contiguous numpy array of ``dtype`` (float32 for widened ones),
    keeping its shape (0-d included)."""
    return np.array(a, dtype=np.float32 if dtype in _WIDENED else dtype, order="C")


class Framework:
    """One array framework, as the tests see it."""

    name = ""
    module_name = ""
    writable = True
    host = True  # tensors live in host memory (CuPy's do not)
    required = True  # installed by `make venv`: never skipped
    _dtypes: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._module: Any = None

    def __repr__(self) -> str:
        return self.name

    # -- availability ------------------------------------------------------------------

    def available(self) -> bool:
        """Whether the framework's tests are generated here. Required frameworks always
        are (a broken install fails the tests that use it)."""
        return True

    @property
    def module(self) -> Any:
        """The framework's top-level module, imported on first use."""
        if self._module is None:
            self._module = importlib.import_module(self.module_name)
        return self._module

    @property
    def dtypes(self) -> tuple[str, ...]:
        return self._dtypes

    def holds(self, dtype: str) -> bool:
        return dtype in self.dtypes

    def is_tensor(self, x: Any) -> bool:
        """Whether ``x`` is one of this framework's arrays (without importing it)."""
        return type(x).__module__.split(".")[0] == self.module_name

    # -- making and reading tensors ----------------------------------------------------

    def tensor(self, a: Any, dtype: str) -> Any:
        """A new C-contiguous tensor holding ``a`` (numpy or nested lists) as ``dtype``."""
        raise NotImplementedError

    def to_numpy(self, t: Any) -> np.ndarray:
        """A numpy copy of ``t``; bfloat16 and float8 are widened to float32."""
        raise NotImplementedError

    def empty(self, shape: Any, dtype: str) -> Any:
        """An output of ``shape`` filled with a sentinel (99, or True for bool)."""
        if not self.writable:
            raise TypeError(f"{self.name} arrays are immutable: outputs come from "
                            f"{self.name}.output(dtype)")
        return self.tensor(np.full(shape, True if dtype == "bool" else SENTINEL), dtype)

    def full(self, shape: Any, value: Any, dtype: str) -> Any:
        return self.tensor(np.full(shape, value), dtype)

    def fill(self, t: Any, value: Any) -> None:
        """Set every element of ``t`` (a view writes through to its base)."""
        t[...] = value

    def transpose(self, t: Any) -> Any:
        """The transposed view of a 2-D tensor: same memory, not contiguous."""
        return t.T

    def pieces(self, t: Any, sizes: list[int]) -> list[Any]:
        """Adjacent views of ``t`` along dim 0, ``sizes[i]`` rows each (x.split(sizes))."""
        out, off = [], 0
        for k in sizes:
            out.append(t[off:off + k])
            off += k
        return out

    def dtype_name(self, t: Any) -> str:
        return str(t.dtype).rsplit(".", 1)[-1]

    def memory(self, t: Any) -> tuple[int, int]:
        """(address, number of bytes) of the memory ``t`` spans (contiguous ``t``)."""
        return int(t.data_ptr()), int(t.numel()) * int(t.element_size())

    def output(self, dtype: str | None = None) -> Framework:
        """Where a test writes the outputs of a collective whose inputs come from here:
        this framework if it is writable, else the first writable one holding ``dtype``."""
        if self.writable:
            return self
        for fw in writable():
            if dtype is None or fw.holds(dtype):
                return fw
        raise LookupError(f"no writable framework holds {dtype}")


class _Numpy(Framework):
    name = module_name = "numpy"
    _dtypes = tuple(d for d in ALL_DTYPES if d != "bfloat16")

    def tensor(self, a, dtype):
        if not self.holds(dtype):
            raise ValueError(f"numpy has no {dtype}")
        return _numpy_data(a, dtype)

    def to_numpy(self, t):
        return np.array(t)

    def memory(self, t):
        return t.ctypes.data, t.nbytes


class _Torch(Framework):
    name = module_name = "torch"
    _dtypes = ALL_DTYPES + FLOAT8

    def tensor(self, a, dtype):
        torch = self.module
        t = torch.from_numpy(_numpy_data(a, dtype))
        return t.to(getattr(torch, dtype)) if dtype in _WIDENED else t

    def is_tensor(self, x):
        return super().is_tensor(x) and not getattr(x, "is_cuda", False)

    def to_numpy(self, t):
        t = t.detach().cpu()
        if self.dtype_name(t) in _WIDENED:
            t = t.float()
        return np.array(t.numpy())


class _TorchCuda(_Torch):
    """torch tensors on the first CUDA device (registered only where one is visible)."""

    name = "torch-cuda"
    required = False
    host = False

    def available(self):
        if importlib.util.find_spec("torch") is None:
            return False
        return bool(self.module.cuda.is_available())

    def is_tensor(self, x):
        return Framework.is_tensor(self, x) and bool(getattr(x, "is_cuda", False))

    def tensor(self, a, dtype):
        return super().tensor(a, dtype).to("cuda")


class _Paddle(Framework):
    name = module_name = "paddle"
    # Paddle 3.3.1 (CPU) has no uint16 (``paddle.uint16`` is an alias of bfloat16, and
    # ``paddle.to_tensor`` turns numpy uint16 into bfloat16); its uint32 and uint64 tensors
    # come only through DLPack or a view ("Not supported numpy dtype" from to_tensor)
    _dtypes = tuple(d for d in ALL_DTYPES if d != "uint16") + FLOAT8
    _DLPACK_ONLY = ("uint32", "uint64")

    @property
    def module(self):
        if self._module is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Paddle warns on import that ccache is missing
                self._module = importlib.import_module("paddle")
        return self._module

    def tensor(self, a, dtype):
        if not self.holds(dtype):
            raise ValueError(f"paddle has no {dtype}")
        if dtype in self._DLPACK_ONLY:
            return self.module.utils.dlpack.from_dlpack(np.array(_numpy_data(a, dtype)))
        t = self.module.to_tensor(_numpy_data(a, dtype))
        return t.astype(dtype) if dtype in _WIDENED else t

    def to_numpy(self, t):
        if self.dtype_name(t) in _WIDENED:
            t = t.astype("float32")
        return np.array(t.numpy())


class _Jax(Framework):
    name = "jax"
    module_name = "jax"
    writable = False
    _64 = ("int64", "uint64", "float64", "complex128")

    @property
    def dtypes(self):
        # without jax_enable_x64 (the default, kept here), JAX makes 64-bit types 32-bit
        x64 = bool(self.module.config.jax_enable_x64)
        return tuple(d for d in ALL_DTYPES + FLOAT8 if x64 or d not in self._64)

    def is_tensor(self, x):
        return type(x).__module__.split(".")[0] in ("jax", "jaxlib")

    def tensor(self, a, dtype):
        if not self.holds(dtype):
            raise ValueError(f"jax (without jax_enable_x64) has no {dtype}")
        jnp = importlib.import_module("jax.numpy")
        x = jnp.asarray(_numpy_data(a, dtype))
        return x.astype(getattr(jnp, dtype)) if dtype in _WIDENED else x

    def to_numpy(self, t):
        a = np.asarray(t)
        return a.astype(np.float32) if str(t.dtype) in _WIDENED else np.array(a)

    def fill(self, t, value):
        raise TypeError("jax arrays are immutable")

    def memory(self, t):
        a = np.asarray(t)  # zero-copy for CPU arrays
        return a.ctypes.data, a.nbytes


class _Cupy(Framework):
    name = module_name = "cupy"
    required = False
    host = False
    _dtypes = tuple(d for d in ALL_DTYPES if d != "bfloat16")

    def available(self):
        if importlib.util.find_spec("cupy") is None:
            return False
        try:
            return self.module.cuda.runtime.getDeviceCount() > 0
        except Exception:  # no driver, no device: CuPy cannot run here
            return False

    def tensor(self, a, dtype):
        return self.module.asarray(_numpy_data(a, dtype))

    def to_numpy(self, t):
        return self.module.asnumpy(t)

    def memory(self, t):
        return t.data.ptr, t.nbytes


_REGISTRY: dict[str, Framework] = {}


def register(fw: Framework) -> Framework:
    _REGISTRY[fw.name] = fw
    return fw


for _fw in (_Numpy(), _Torch(), _Paddle(), _Jax(), _Cupy(), _TorchCuda()):
    register(_fw)


def get(name: str) -> Framework:
    return _REGISTRY[name]


def installed() -> list[Framework]:
    """Every framework whose tests run here, in registration order. A lane that installs
    only some (the newest-torch lane: numpy and torch) names them in
    MPICOLL_TEST_FRAMEWORKS; any other lane installs them all."""
    only = os.environ.get("MPICOLL_TEST_FRAMEWORKS")
    names = None if not only else set(only.split(","))
    return [fw for fw in _REGISTRY.values()
            if (names is None or fw.name in names) and fw.available()]


def writable() -> list[Framework]:
    """The installed frameworks that can receive results (every one but JAX)."""
    return [fw for fw in installed() if fw.writable]


def of(x: Any) -> Framework | None:
    """The registered framework ``x`` belongs to (None for anything else)."""
    for fw in _REGISTRY.values():
        if fw.is_tensor(x):
            return fw
    return None


def cross(cases: Any, *, inputs: bool = False, where: Any = None) -> list[Any]:
    """pytest params ``(framework, *case)`` for each case (a dtype, or a tuple whose first
    item is the dtype) and each installed framework that holds that dtype.

    Args:
        cases: dtypes, or tuples ``(dtype, ...)``.
        inputs: include the input-only frameworks (JAX); the test takes them as ``xin``.
        where: ``where(framework, case) -> bool`` keeps a subset (None keeps all).
    """
    out = []
    for fw in installed() if inputs else writable():
        for case in cases:
            case = case if isinstance(case, tuple) else (case,)
            if not fw.holds(case[0]) or (where is not None and not where(fw, case)):
                continue
            out.append(pytest.param(fw, *case, id="-".join([fw.name, *map(str, case)])))
    return out
