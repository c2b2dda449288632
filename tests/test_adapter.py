"""The adapter: lazy detection, zero-copy views, staging and write-back, dtypes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mpicoll._adapter import as_buffer, framework_of
from mpicoll._adapter.dtypes import bf16_to_f32, f32_to_bf16


def test_import_mpicoll_imports_no_framework_and_no_mpi():
    code = ("import sys, mpicoll; mods = ['torch', 'paddle', 'cupy', 'jax', 'numpy', "
            "'mpi4py.MPI']; print([m for m in mods if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]"


def test_detection():
    assert framework_of(np.zeros(1)) == "numpy"
    with pytest.raises(TypeError, match="list is not a supported tensor type"):
        framework_of([1])
    import torch

    assert framework_of(torch.zeros(1)) == "torch"


def test_numpy_contiguous_is_zero_copy():
    a = np.arange(6.0).reshape(2, 3)
    b = as_buffer(a, writable=True)
    assert b.array is a and not b.staged


def test_torch_contiguous_is_zero_copy():
    import torch

    for dt in (torch.float32, torch.bfloat16, torch.bool, torch.complex64, torch.float8_e4m3fn):
        t = torch.zeros(4, 3, dtype=dt)
        b = as_buffer(t, writable=True)
        assert not b.staged
        assert b.array.ctypes.data == t.data_ptr()
        assert b.dtype == str(dt)[6:]


def test_torch_requires_grad_tensor_is_zero_copy():
    import torch

    t = torch.zeros(3, requires_grad=True)
    assert as_buffer(t).array.ctypes.data == t.data_ptr()


def test_transposed_output_is_staged_and_written_back_in_order():
    a = np.zeros((3, 4))
    view = a.T  # (4, 3), Fortran order in memory
    b = as_buffer(view, writable=True)
    assert b.staged and b.array.flags.c_contiguous
    b.array[...] = np.arange(12.0).reshape(4, 3)  # what MPI would write, in logical order
    b.commit()
    np.testing.assert_array_equal(view, np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(4, 3).T)


def test_torch_conj_view_output_written_back():
    import torch

    base = torch.zeros(2, dtype=torch.complex64)
    view = base.conj()
    b = as_buffer(view, writable=True)
    assert b.staged
    b.array[...] = np.array([1 + 2j, 3 - 1j], np.complex64)
    b.commit()
    assert view.tolist() == [1 + 2j, 3 - 1j]
    assert base.tolist() == [1 - 2j, 3 + 1j]


def test_read_only_rejected_only_as_output():
    a = np.ones(3)
    a.flags.writeable = False
    assert as_buffer(a).array is a
    with pytest.raises(BufferError, match="op: out is read-only"):
        as_buffer(a, writable=True, op="op", name="out")


class _DLPackOnly:
    """A producer that speaks only the DLPack protocol (no framework type)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_generic_dlpack_object_is_zero_copy():
    a = np.arange(5, dtype=np.int32)
    b = as_buffer(_DLPackOnly(a), writable=True)
    assert framework_of(_DLPackOnly(a)) == "dlpack"
    assert b.array.ctypes.data == a.ctypes.data and b.dtype == "int32"


def test_bfloat16_rounding_matches_torch():
    import torch

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(10000).astype(np.float32) * 100,
                        np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 3.4e38],
                                 np.float32),
                        # exact ties between two bfloat16 values: round to even
                        (np.arange(1, 200, dtype=np.uint32) << 16 | 0x8000).view(np.float32)])
    ours = np.empty(x.shape, np.uint16)
    f32_to_bf16(x, ours)
    theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(ours[finite], theirs[finite])
    assert np.isnan(bf16_to_f32(ours[~finite])).all()
    np.testing.assert_array_equal(bf16_to_f32(theirs[finite]),
                                  torch.from_numpy(x[finite]).to(torch.bfloat16).float().numpy())
