"""`make bench` and `make bench-overhead` stay runnable: every case, every variant,
results verified, output of the documented shape (timings are never asserted)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import textwrap

import pytest
from _launch import ROOT, clean_env, run

pytestmark = pytest.mark.spawn

LISTS = ("all_to_all(list of chunks)", "all_gather(list of chunks)",
         "reduce_scatter(list of chunks)")


def test_bench_runs_and_verifies_every_collective(tmp_path):
    import torch  # noqa: F401  (the gloo and torch rows need it: a failure, never a skip)

    from mpicoll.bench import cases

    out = tmp_path / "np2.json"
    # the smallest size, one round, gloo included: the benchmark exits non-zero when any
    # variant's result is wrong (each is checked on an output reset to -1 first)
    p = run(2, ["-m", "mpicoll.bench", "--quick", "--rounds", "1", "--max-bytes", "8",
                "--out", str(out)], timeout=240)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = json.loads(out.read_text())["results"]
    assert [r["op"] for r in rows] == list(cases())
    for r in rows:
        assert r["verified"], r
        for key in ("raw_mpi4py", "mpicoll_numpy", "mpicoll_torch", "torch_backend", "gloo"):
            assert r[key] > 0, (r["op"], key)
    assert "| broadcast | 8 | 2 |" in p.stdout


def _overhead(n: int, tmp_path, *args: str, timeout: float = 240) -> tuple[dict, str]:
    out = tmp_path / f"overhead-np{n}.json"
    p = run(n, ["-m", "mpicoll.bench", "overhead", "--quick", *args, "--out", str(out)],
            timeout=timeout)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(out.read_text()), p.stdout


def _number(x) -> bool:
    return isinstance(x, float) and math.isfinite(x)


def test_overhead_mode_reports_every_op_per_call_and_per_tensor(tmp_path):
    from mpicoll.bench.overhead import DEFAULT_OPS

    data, stdout = _overhead(1, tmp_path)
    meta = data["meta"]
    assert meta["mode"] == "overhead" and meta["ranks"] == 1
    for key in ("date", "mpi", "host", "cpu", "cpus", "bytes", "iters", "rounds"):
        assert key in meta, key
    assert {"python", "mpi4py", "numpy", "torch"} <= set(meta["versions"])
    rows = data["results"]
    assert [r["op"] for r in rows] == list(DEFAULT_OPS)
    for r in rows:
        assert r["verified"] and r["ranks"] == 1, r
        for key in ("raw_us", "numpy_us", "numpy_over_us", "torch_us", "torch_over_us"):
            assert _number(r[key]), (r["op"], key)
        if r["op"] in LISTS:
            assert r["list_len"] == 1
            assert r["numpy_over_per_tensor_us"] == r["numpy_over_us"]
        else:
            assert r["list_len"] is None and "numpy_over_per_tensor_us" not in r
    assert "| op | ranks | raw us | numpy us | numpy over raw us |" in stdout
    assert "| all_to_all_single(uneven split sizes) | 1 |" in stdout


def test_overhead_mode_at_two_ranks_divides_by_the_list_length(tmp_path):
    data, _ = _overhead(2, tmp_path, "--frameworks", "numpy",
                        "--ops", "all_gather(list of chunks),all_to_all_single(uneven split sizes)")
    lists, uneven = data["results"]
    assert data["meta"]["ranks"] == 2 and lists["list_len"] == 2
    assert lists["verified"] and uneven["verified"]
    assert lists["numpy_over_per_tensor_us"] == pytest.approx(lists["numpy_over_us"] / 2)
    assert "torch_us" not in lists


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_overhead_callgrind_counts_instructions_per_call(tmp_path):
    data, stdout = _overhead(1, tmp_path, "--frameworks", "numpy", "--callgrind",
                             "--ops", "all_reduce,all_to_all(list of chunks)", timeout=600)
    for r in data["results"]:
        assert r["raw_ir"] > 0 and r["numpy_ir"] > 0, r
        assert r["numpy_over_ir"] == pytest.approx(r["numpy_ir"] - r["raw_ir"])
    assert "numpy_over_ir_per_tensor" in data["results"][1]
    assert "raw instr" in stdout


def test_a_case_is_one_registered_function_and_import_starts_no_mpi(tmp_path):
    # what a contributor writes: one decorated function; the commands then run it
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import mpicoll.bench as bench
        from mpicoll.bench import Ctx, Timed, register
        from mpicoll.bench.__main__ import main

        @register("all_reduce(copy)", frameworks=("numpy",), torch_distributed=False)
        def all_reduce_copy(ctx: Ctx) -> Timed:
            buf = ctx.array("buf", lambda: np.ones(ctx.elems(), np.float32))
            x = ctx.tensor(buf)
            call = lambda: ctx.dist.all_reduce(x)
            return Timed(call, lambda: ctx.check_output(call, buf, lambda: buf * 0 + 1, 1.0),
                         raw=lambda: ctx.comm.Allreduce(ctx.MPI.IN_PLACE, buf))

        bench.cases()
        assert "mpi4py.MPI" not in sys.modules, "importing mpicoll.bench started MPI"
        sys.exit(main(["overhead", "--quick", "--ops", "all_reduce(copy)", "--out", sys.argv[1]]))
    """)
    out = tmp_path / "mine.json"
    p = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, env=clean_env(),
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (row,) = json.loads(out.read_text())["results"]
    assert row["op"] == "all_reduce(copy)" and row["verified"] and _number(row["numpy_over_us"])
