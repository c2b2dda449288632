"""Inputs every rank can recompute, numpy references, conversions through the registry."""

from __future__ import annotations

import _frameworks as frameworks
import numpy as np

ALL_DTYPES = list(frameworks.ALL_DTYPES)


def values(dtype: str, shape, rank: int, salt: int = 0) -> np.ndarray:
    """Deterministic data of ``shape`` for ``rank``; float32 stands in for bfloat16."""
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.int64)
    base = (i * 7 + rank * 3 + salt) % 11
    if dtype == "bool":
        return ((base + rank) % 3 == 0).reshape(shape)
    if dtype.startswith(("int", "uint")):
        return (base + 1).astype(dtype).reshape(shape)
    if dtype in ("float16", "bfloat16"):
        # not exactly representable sums: exercises rounding of the f32 accumulator
        return ((base + 1) * 0.3 + rank * 0.7).astype(np.float32).reshape(shape)
    if dtype.startswith("float"):
        return (base + 1).astype(dtype).reshape(shape) * 0.5
    re = (base + 1).astype(np.float64)
    return (re + 1j * (rank + 1 - base % 3)).astype(dtype).reshape(shape)


def to_xp(a: np.ndarray, dtype: str, xp):
    """A tensor of framework ``xp`` (a registry entry or a framework's module) holding
    ``a`` as ``dtype``."""
    return _framework(xp).tensor(a, dtype)


def to_np(t) -> np.ndarray:
    """Any test tensor as numpy (bfloat16 and float8 widened to float32)."""
    fw = frameworks.of(t)
    return np.asarray(t) if fw is None else fw.to_numpy(t)


def empty(xp, shape, dtype: str):
    """An output tensor filled with a sentinel, so unwritten parts show."""
    return _framework(xp).empty(shape, dtype)


def _framework(xp) -> frameworks.Framework:
    if isinstance(xp, frameworks.Framework):
        return xp
    return frameworks.get(xp.__name__.split(".")[0])  # a module: numpy, torch, paddle, ...


def round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    """Round a float32 reference to ``dtype`` with torch's (or numpy's) own rounding
    (bfloat16 and float8 come back widened to float32)."""
    if dtype in ("bfloat16", *frameworks.FLOAT8):
        torch = frameworks.get("torch")
        return torch.to_numpy(torch.tensor(np.asarray(a, np.float32), dtype))
    return np.asarray(a).astype(dtype)


def reduce_ref(arrays: list[np.ndarray], op: str, dtype: str) -> np.ndarray:
    """The reduction of every rank's input, computed locally with numpy."""
    lowp = dtype in ("float16", "bfloat16")
    # low precision: the inputs as the tensors hold them, summed in float32
    xs = [round_to(a, dtype).astype(np.float32) if lowp else np.asarray(a) for a in arrays]
    if dtype == "bool":
        stack = np.stack(xs)
        out = {"SUM": stack.any(0), "MAX": stack.any(0), "BOR": stack.any(0),
               "PRODUCT": stack.all(0), "MIN": stack.all(0), "BAND": stack.all(0),
               "BXOR": np.logical_xor.reduce(stack, 0)}[op]
        return out
    acc = xs[0].copy()
    for x in xs[1:]:
        if op in ("SUM", "AVG", "PREMUL_SUM"):
            acc = acc + x
        elif op == "PRODUCT":
            acc = acc * x
        elif op == "MIN":
            acc = np.minimum(acc, x)
        elif op == "MAX":
            acc = np.maximum(acc, x)
        elif op == "BAND":
            acc = acc & x
        elif op == "BOR":
            acc = acc | x
        elif op == "BXOR":
            acc = acc ^ x
    if op == "AVG" and dtype.startswith(("int", "uint")):
        # the sum wrapped in the dtype (above), divided rounding toward zero, as C and NCCL
        n = len(xs)
        return np.array([int(v) // n if v >= 0 else -(-int(v) // n) for v in acc.ravel()],
                        dtype=dtype).reshape(acc.shape)
    if op == "AVG":
        acc = acc / len(xs)
    if lowp:
        return round_to(acc, dtype).astype(np.float32)
    return acc.astype(dtype)


def valid_ops(dtype: str) -> list[str]:
    """ReduceOp names that make sense for ``dtype`` (PREMUL_SUM tested separately)."""
    if dtype == "bool":
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    if dtype.startswith(("int", "uint")):
        return ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    if dtype.startswith("complex"):
        return ["SUM", "AVG", "PRODUCT"]
    return ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]


def assert_equal(got, expected: np.ndarray, dtype: str, approx: bool = False) -> None:
    g = to_np(got)
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    if approx:
        np.testing.assert_allclose(g, e.astype(g.dtype), rtol=1e-6 if "64" in dtype else 1e-5)
    else:
        np.testing.assert_array_equal(g, e.astype(g.dtype))


MOVE_DTYPES = ["bool", "int8", "uint16", "int64", "uint64", "float16", "bfloat16",
               "float32", "float64", "complex64", "complex128"]


def split(i: int, j: int, salt: int = 0) -> int:
    """Rows rank i sends to rank j: world-consistent, zeros included."""
    return (i + 2 * j + salt) % 3


def block(i: int, j: int, rows: int, cols: int, dtype: str) -> np.ndarray:
    """The rows rank i sends to rank j: values encode (i, j, row, col)."""
    r = np.arange(rows * cols).reshape(rows, cols)
    v = (i * 37 + j * 11 + r) % 120
    if dtype == "bool":
        return (v % 2 == 1)
    if dtype.startswith("complex"):
        return (v + 1j * (i - j)).astype(dtype)
    if dtype in ("bfloat16", *frameworks.FLOAT8):  # rounded by the framework holding it
        return v.astype(np.float32)
    return v.astype(dtype)
