"""[1] Logical dtypes: their host carrier, their MPI datatype, how they reduce."""

from __future__ import annotations

from functools import cache

import numpy as np

# Logical dtypes that numpy cannot hold travel in an unsigned carrier of the
# same width; data movement sees only bytes, reductions convert explicitly.
_UINT_OF_SIZE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16),
                 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}

# kind: "bool", "int", "uint", "float", "complex", "lowp" (accumulated in
# float32), "opaque" (moved as bytes, never reduced).
_KIND_OF = {
    "bool": "bool",
    "int8": "int", "int16": "int", "int32": "int", "int64": "int",
    "uint8": "uint", "uint16": "uint", "uint32": "uint", "uint64": "uint",
    "float32": "float", "float64": "float",
    "float16": "lowp", "bfloat16": "lowp",
    "complex64": "complex", "complex128": "complex",
}


def kind_of(dtype: str) -> str:
    """Classify a logical dtype name for the reduction rules."""
    return _KIND_OF.get(dtype, "opaque")


def carrier_for(itemsize: int) -> np.dtype:
    """The numpy dtype that carries an exotic dtype of ``itemsize`` bytes."""
    try:
        return _UINT_OF_SIZE[itemsize]
    except KeyError:
        raise TypeError(f"dtype of {itemsize} bytes per element is not supported") from None


@cache
def mpi_datatype(np_dtype: np.dtype):  # -> MPI.Datatype
    """The predefined MPI datatype for a host carrier dtype (reductions need one)."""
    dt = _DATATYPES.get(np_dtype)  # per call: one dict lookup
    if dt is None:
        from .._mpi import MPI  # lazy: importing mpicoll._mpi starts MPI

        if np_dtype == np.bool_:
            dt = MPI.UINT8_T
        else:
            dt = MPI._typedict.get(np_dtype.char)
            if dt is None or dt == MPI.DATATYPE_NULL:  # not in this MPI: opaque bytes
                dt = MPI.BYTE.Create_contiguous(np_dtype.itemsize).Commit()
        _DATATYPES[np_dtype] = dt
    return dt


_DATATYPES: dict[np.dtype, object] = {}


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns (uint16) to float32 exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray, out: np.ndarray) -> None:
    """Round float32 to bfloat16 (nearest even) into the uint16 array ``out``."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    rounded = np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), rounded)
    np.copyto(out, rounded.astype(np.uint16).reshape(out.shape))


def widen(a: np.ndarray, dtype: str) -> np.ndarray:
    """Copy a lowp carrier array to float32 (small ints to 32 bits) for accumulation."""
    if dtype == "bfloat16":
        return bf16_to_f32(a)
    if a.dtype.kind in "iu":
        return a.astype(np.int32 if a.dtype.kind == "i" else np.uint32)
    return a.astype(np.float32)


def narrow_into(x: np.ndarray, out: np.ndarray, dtype: str) -> None:
    """Round float32 ``x`` back into the lowp carrier ``out`` (integers wrap, as in C)."""
    if dtype == "bfloat16":
        f32_to_bf16(x, out)
    else:
        np.copyto(out, x.reshape(out.shape), casting="unsafe")
