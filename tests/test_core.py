"""The compiled core (mpicoll/_core.c): built for the MPI family mpi4py loaded and in use
(every lane builds it: `make venv`), or off with MPICOLL_CORE=0 (the Python path's lane);
its all_reduce right against a numpy reference, its records in the flight recorder's one
order with the Python path's, naming the user's call site."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from mpi4py import MPI

import mpicoll as dist
from mpicoll import _core_loader, _recorder

OFF = os.environ.get("MPICOLL_CORE") == "0"
FAMILY = "openmpi" if MPI.Get_library_version().startswith("Open MPI") else "mpich"


def _loaded():
    dist.all_reduce(np.zeros(1))  # (the first call loads it)
    return _core_loader.load()


def test_the_core_of_this_family_is_in_use_or_off():
    core = _loaded()
    if OFF:
        assert core is None and _core_loader.why == "off (MPICOLL_CORE=0): the Python path"
        return
    assert core is not None, _core_loader.why
    assert core.FAMILY == FAMILY
    assert _core_loader.why.startswith(f"in use ({FAMILY} family, built against MPI ")
    other = "mpich" if FAMILY == "openmpi" else "openmpi"
    assert f"mpicoll._core_{other}" not in sys.modules  # never the other family's


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "complex128"])
@pytest.mark.parametrize("op", ["SUM", "MAX", "PRODUCT"])
def test_repeated_all_reduce_equals_numpy(xp, dtype, op, rank, size, group):
    if op == "MAX" and dtype == "complex128":
        pytest.skip("MAX is not defined on complex numbers (refused: test_bad_input)")
    rop = getattr(dist.ReduceOp, op)
    ref = {"SUM": np.sum, "MAX": np.max, "PRODUCT": np.prod}[op]
    for k in range(4):  # the first call validates; the others take the core's path
        vals = [np.arange(1, 6) + r + k for r in range(size)]
        t = xp.tensor(vals[rank], dtype)
        dist.all_reduce(t, op=rop, group=group)
        want = ref(np.stack([v.astype(dtype) for v in vals]), axis=0)
        np.testing.assert_array_equal(xp.to_numpy(t), want)


def _line() -> int:
    return sys._getframe(1).f_lineno


def test_records_share_one_order_and_name_the_call_site(rank, size):
    x = np.ones(3)
    dist.all_reduce(x)  # (validated: the next are quick)
    lines = []
    for _ in range(3):
        dist.all_reduce(x); lines.append(_line())  # noqa: E702  (the call's own line)
        dist.broadcast(x, src=0); lines.append(_line())  # noqa: E702
    got = _recorder.records()[-6:]
    assert [r[_recorder.OP] for r in got] == ["all_reduce", "broadcast"] * 3
    ids = [r[_recorder.ID] for r in got]
    assert ids == sorted(ids) and len(set(ids)) == 6
    seqs = [r[_recorder.SEQ] for r in got]
    assert seqs == list(range(seqs[0], seqs[0] + 6))
    for r, line in zip(got, lines, strict=True):
        code, lasti = r[_recorder.FILE], r[_recorder.LINE]
        assert code.co_filename == __file__
        # the instruction offset maps to the line the call was made on
        assert any(start <= lasti < end and ln == line for start, end, ln in code.co_lines())
        assert _recorder.state(r) == _recorder.COMPLETED
    assert all(r[_recorder.DONE] >= r[_recorder.ISSUED] for r in got)
    # the core's records carry the count and datatype, as the Python path's do
    meta = got[0][_recorder.META]
    assert meta[1][0] == 3 and meta[1][1] == MPI.DOUBLE
