"""Cost of a collective inside jax.jit: mpicoll.jax vs eager mpicoll vs mpi4jax.

Run (2 ranks, the sizes of the docs' table):

    mpiexec -n 2 python tests/scripts/jit_bench.py [--json out.json]

For all_reduce (SUM) and all_to_all_single (even) of float32 arrays, 8 B to 16 MiB
per rank, it times, in microseconds per collective (the slowest rank's mean over the
best of 7 batches):

- ``eager``: ``mpicoll.functional`` on a JAX array, outside jit (the way JAX was
  served before mpicoll.jax);
- ``jit:ffi`` / ``jit:buffer`` / ``jit:io``: one jitted call holding one mpicoll.jax
  collective, with each of the three lowerings (mpicoll's XLA FFI handler, where the
  compiled core is built; XLA's buffer callback; ``io_callback``): what a jitted
  function with one collective costs end to end, dispatch included;
- ``in-jit:ffi`` / ``in-jit:buffer`` / ``in-jit:io``: the cost of one more collective inside a
  jitted function, (a call with 10 chained collectives - a call with one) / 9: what
  each collective adds to a compiled training step;
- ``mpi4jax`` / ``in-jit:mpi4jax``: the same two measurements with mpi4jax, when it
  is importable (it needs a C++ compiler to install: ``pip install mpi4jax``
  builds from source).

Every result is checked against numpy once before timing. Not a test: timings are
never asserted.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import mpicoll as dist
import mpicoll.functional as F
import mpicoll.jax as mj
from mpicoll.jax import _primitive

mpi4jax = None  # imported in main(), once mpicoll has started MPI with its settings

SIZES = [8 << (3 * i) for i in range(8)]  # 8 B, 64 B, ..., 16 MiB
CHAIN = 10
BATCHES = 7


def _reps(nbytes: int) -> int:
    return max(3, min(100, (32 << 20) // max(nbytes, 1) // 8))


def _time(fn, x, reps: int) -> float:
    """Mean seconds per call, the slowest rank's; JAX's async dispatch included."""
    for _ in range(3):
        jax.block_until_ready(fn(x))
    best = float("inf")
    for _ in range(BATCHES):  # the best batch: the machine's noise only adds time
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            y = fn(x)
        jax.block_until_ready(y)
        best = min(best, (time.perf_counter() - t0) / reps)
    return float(F.all_reduce(np.array([best]), op=dist.ReduceOp.MAX)[0])


def _chain_length(nbytes: int) -> int:
    """Collectives in the chained call: enough that their time stands out of the jitted
    call's dispatch (some hundreds of microseconds) at small sizes."""
    return 100 if nbytes <= 4096 else 20 if nbytes <= (256 << 10) else CHAIN


def _chain(one, length):
    def fn(x):
        for _ in range(length):
            x = one(x)  # one after the other (the order is kept anyway)
        return x
    return fn


def _variants(kind: str, size: int, length: int) -> dict:
    if kind == "all_reduce":
        ours = mj.all_reduce
        eager = F.all_reduce
        theirs = None if mpi4jax is None else (
            lambda x: mpi4jax.allreduce(x, op=_mpi4py_sum()))
    else:
        ours = mj.all_to_all_single
        eager = F.all_to_all_single
        theirs = None if mpi4jax is None else (
            lambda x: mpi4jax.alltoall(x.reshape(size, -1)).reshape(-1))
    out = {"eager": eager}
    for via in ("ffi", "buffer", "io_callback"):
        if via == "ffi" and not _primitive.ffi_available():
            continue  # (the compiled core's handler is not built, or is off)
        _primitive.use(via)
        tag = "io" if via == "io_callback" else via
        # traced now, so each keeps its lowering
        out[f"jit:{tag}"] = _traced(jax.jit(lambda x, f=ours: f(x)))
        out[f"in-jit:{tag}"] = _traced(jax.jit(_chain(ours, length)))
    _primitive.use(None)
    if theirs is not None:
        out["mpi4jax"] = jax.jit(theirs)
        out["in-jit:mpi4jax"] = jax.jit(_chain(theirs, length))
    return out


def _mpi4py_sum():
    from mpi4py import MPI

    return MPI.SUM


_traced_example: list = []


def _traced(fn):
    """``fn`` traced now, with the current lowering: the lowering is a parameter of the
    traced program, which jit keeps."""
    jax.block_until_ready(fn(*_traced_example))
    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--sizes", type=int, nargs="*", default=SIZES, help="bytes per rank")
    args = parser.parse_args()
    rank, size = dist.get_rank(), dist.get_world_size()  # starts MPI
    global mpi4jax
    try:
        import mpi4jax
    except ImportError:  # not installed: its columns are left out
        mpi4jax = None
    results = []
    for kind in ("all_reduce", "all_to_all_single"):
        for nbytes in args.sizes:
            n = max(size, nbytes // 4 // size * size)
            x = jnp.asarray(np.arange(n, dtype=np.float32) % 7 + rank)
            _traced_example[:] = [x]
            length = _chain_length(n * 4)
            variants = _variants(kind, size, length)
            want = np.asarray(variants["eager"](x))
            row = {"collective": kind, "bytes": n * 4, "ranks": size}
            for name, fn in variants.items():
                if not name.startswith("in-jit"):
                    np.testing.assert_allclose(np.asarray(fn(x)), want, rtol=1e-6)
                    row[name] = _time(fn, x, _reps(n * 4)) * 1e6
                    continue
                # (a call with `length` collectives - a call with one) / (length - 1)
                chained = _time(fn, x, max(3, _reps(n * 4) // length)) * 1e6
                single = row[name.replace("in-jit:", "jit:").replace("jit:mpi4jax", "mpi4jax")]
                row[name] = (chained - single) / (length - 1)
            results.append(row)
            if rank == 0:
                cells = "  ".join(f"{k} {v:9.1f}" for k, v in row.items()
                                  if isinstance(v, float))
                print(f"{kind:18s} {n * 4:>9d} B  {cells}", flush=True)
    if rank == 0:
        print(f"mechanism by default: {mj.mechanism()}; jax {jax.__version__}; "
              f"mpi4jax {'n/a' if mpi4jax is None else mpi4jax.__version__}")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
