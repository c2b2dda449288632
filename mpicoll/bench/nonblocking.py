"""``python -m mpicoll.bench nonblocking``: MPI's nonblocking calls against its blocking
ones, and against the call mpicoll makes instead, all in raw mpi4py.

mpicoll issues every collective nonblocking (blocking and ``async_op`` ranks must
match), so it inherits the library's nonblocking algorithms; where one measured slow
it makes an equivalent call (``_collectives/_choices.py``). For each collective and
size this times, interleaved in one launch: the blocking call, its nonblocking call +
``Wait``, and the call mpicoll makes for it + ``Wait`` (with the local copy of the own
block where mpicoll makes one). Ratios are to the blocking call: the "before" column
is what an unconditional nonblocking call costs, the "after" one what mpicoll's choice
costs. Every call's result is checked against the blocking call's once.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from .._collectives import _choices
from .._start import is_mpich, mpi
from .timing import interleaved

SIZES = (8, 1 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20)
OPS = ("allreduce", "reduce_scatter_block", "alltoall", "alltoallv", "allgather", "bcast",
       "reduce")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", help="write results as JSON here (rank 0)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated, of: " +
                    ", ".join(OPS))
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES),
                    help="bytes per rank's block")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds")


def _iters(nbytes: int) -> int:
    return max(5, min(2000, (64 << 20) // max(nbytes, 64) // 4))


def _calls(op: str, n: int, comm: Any, MPI: Any) -> tuple[dict[str, Callable[[], Any]],
                                                          Callable[[], np.ndarray], str]:
    """(blocking, nonblocking, mpicoll's) calls of ``op`` with blocks of ``n`` float32
    elements, the array each writes, and the name of mpicoll's call."""
    # lazy: importing the collectives starts MPI, and the bench's modules must not
    from .._collectives._own_block import SELF_COPY_BYTES

    p, me = comm.Get_size(), comm.Get_rank()
    f = MPI.FLOAT
    rng = np.random.default_rng(me)
    src = rng.integers(0, 9, n * p).astype(np.float32)  # exact sums, in any order
    out = np.empty(n * p, np.float32)
    counts, displs = [n] * p, [n * j for j in range(p)]
    zero = [0] * p
    if op == "allreduce":  # in place, as mpicoll's all_reduce (Open MPI's libnbc picks
        # its algorithm by it)
        buf = src[:n].copy()
        b = lambda: comm.Allreduce(MPI.IN_PLACE, buf)  # noqa: E731
        i = lambda: comm.Iallreduce(MPI.IN_PLACE, buf).Wait()  # noqa: E731
        return {"blocking": b, "nonblocking": i, "mpicoll": i}, lambda: buf, "Iallreduce"
    if op == "reduce_scatter_block":
        b = lambda: comm.Reduce_scatter_block(src, out[:n])  # noqa: E731
        i = lambda: comm.Ireduce_scatter_block(src, out[:n]).Wait()  # noqa: E731
        if _choices.block_reduce_scatter(src.nbytes):
            return {"blocking": b, "nonblocking": i, "mpicoll": i}, lambda: out[:n], \
                "Ireduce_scatter_block"
        v = lambda: comm.Ireduce_scatter(src, out[:n], counts).Wait()  # noqa: E731
        return {"blocking": b, "nonblocking": i, "mpicoll": v}, lambda: out[:n], \
            "Ireduce_scatter"
    if op == "alltoall":
        b = lambda: comm.Alltoall(src, out)  # noqa: E731
        i = lambda: comm.Ialltoall(src, out).Wait()  # noqa: E731
        return {"blocking": b, "nonblocking": i, "mpicoll": i}, lambda: out, "Ialltoall"
    if op == "alltoallv":
        spec_s, spec_r = [src, (counts, displs), f], [out, (counts, displs), f]
        b = lambda: comm.Alltoallv(spec_s, spec_r)  # noqa: E731
        i = lambda: comm.Ialltoallv(spec_s, spec_r).Wait()  # noqa: E731
        if not (is_mpich() and n * 4 >= SELF_COPY_BYTES):
            return {"blocking": b, "nonblocking": i, "mpicoll": i}, lambda: out, "Ialltoallv"
        own = list(counts)
        own[me] = 0
        mine = slice(n * me, n * (me + 1))

        def v() -> None:
            comm.Ialltoallv([src, (own, displs), f], [out, (own, displs), f]).Wait()
            out[mine] = src[mine]

        return {"blocking": b, "nonblocking": i, "mpicoll": v}, lambda: out, \
            "Ialltoallv, own block copied"
    if op == "allgather":
        b = lambda: comm.Allgather(src[:n], out)  # noqa: E731
        i = lambda: comm.Iallgather(src[:n], out).Wait()  # noqa: E731
        if not _choices.gather_by_alltoallv(n * 4 * p, p):
            return {"blocking": b, "nonblocking": i, "mpicoll": i}, lambda: out, "Iallgather"
        local = is_mpich()  # as all_gather does there: the own block copied
        sends = [n] * p
        if local:
            sends[me] = 0
        recv = list(sends)
        mine = slice(n * me, n * (me + 1))

        def a() -> None:  # every rank's one block, at displacement 0, to every rank
            comm.Ialltoallv([src, (sends, zero), f], [out, (recv, displs), f]).Wait()
            if local:
                out[mine] = src[:n]

        return {"blocking": b, "nonblocking": i, "mpicoll": a}, lambda: out, \
            "Ialltoallv" + (", own block copied" if local else "")
    if op == "bcast":
        buf = src[:n].copy()
        b = lambda: comm.Bcast(buf, 0)  # noqa: E731
        i = lambda: comm.Ibcast(buf, 0).Wait()  # noqa: E731
        return {"blocking": b, "nonblocking": i, "mpicoll": i}, lambda: buf, "Ibcast"
    if op == "reduce":
        b = lambda: comm.Reduce(src[:n], out[:n], root=0)  # noqa: E731
        i = lambda: comm.Ireduce(src[:n], out[:n], root=0).Wait()  # noqa: E731
        return {"blocking": b, "nonblocking": i, "mpicoll": i}, \
            lambda: out[:n] if me == 0 else np.zeros(0, np.float32), "Ireduce"
    raise ValueError(f"--ops: unknown collective {op!r}; expected one of {', '.join(OPS)}")


def _verified(calls: dict[str, Callable[[], Any]], result: Callable[[], np.ndarray]) -> bool:
    """Whether every call writes what the blocking call writes."""
    got = {}
    for name, fn in calls.items():
        result()[...] = -1
        fn()
        got[name] = result().copy()
    return all(np.array_equal(got["blocking"], g) for g in got.values())


def run(args: argparse.Namespace) -> int:
    MPI = mpi()  # started with mpicoll's settings, as the calls it makes see it
    comm = MPI.COMM_WORLD.Dup()
    p, me = comm.Get_size(), comm.Get_rank()
    rows = []
    if me == 0:
        print(f"{MPI.Get_library_version().splitlines()[0].strip()}; {p} ranks; ratios to "
              "the blocking call (median of the rounds)", flush=True)
        print(f"{'call':22s} {'bytes':>9s} {'nonblocking':>12s} {'mpicoll':>8s}  "
              "mpicoll's call", flush=True)
    for op in filter(None, args.ops.split(",")):
        for nbytes in args.sizes:
            n = max(1, nbytes // 4)
            calls, result, chosen = _calls(op, n, comm, MPI)
            ok = comm.allreduce(_verified(calls, result), op=MPI.LAND)
            iters = _iters(n * 4 * (p if op in ("reduce_scatter_block", "alltoall",
                                                "alltoallv", "allgather") else 1))
            # a distinct call only: mpicoll's is timed apart where it differs
            timed = {k: (fn, iters) for k, fn in calls.items()
                     if k != "mpicoll" or fn is not calls["nonblocking"]}
            samples = interleaved(timed, args.rounds, comm, MPI)
            med = {k: float(np.median(v)) for k, v in samples.items()}
            med.setdefault("mpicoll", med["nonblocking"])
            row = {"op": op, "bytes": n * 4, "ranks": p, "verified": bool(ok),
                   "mpicoll_call": chosen, **{f"{k}_us": v * 1e6 for k, v in med.items()},
                   "nonblocking_ratio": med["nonblocking"] / med["blocking"],
                   "mpicoll_ratio": med["mpicoll"] / med["blocking"]}
            rows.append(row)
            if me == 0:
                print(f"{op:22s} {n * 4:>9d} {row['nonblocking_ratio']:>11.2f}x "
                      f"{row['mpicoll_ratio']:>7.2f}x  {chosen}"
                      + ("" if ok else "  WRONG RESULT"), flush=True)
    if me == 0 and args.out:
        with open(args.out, "w") as fh:
            json.dump({"library": MPI.Get_library_version().splitlines()[0].strip(),
                       "ranks": p, "rows": rows}, fh, indent=1)
    return 0 if all(r["verified"] for r in rows) else 1
