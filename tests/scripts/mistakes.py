"""Issue 52's mistakes, one per job, over torch.distributed with BACKEND ("mpicoll" or
"gloo"; "checked": mpicoll with MPICOLL_CHECK=1), default settings: what each rank
gets. Run by ``python tests/scripts/mistakes.py table [RANKS [BACKENDS [CASES]]]``, which
launches every case (or the comma-separated CASES) over each backend (BACKENDS:
comma-separated, by default mpicoll,checked,gloo; mpiexec from $MPIEXEC or the PATH;
gloo's rendezvous on localhost) and prints the table docs/errors.md shows.

A rank prints one line, ``OUTCOME <rank> <what>``: ``right`` or ``WRONG`` (it returned,
its tensor compared with the numpy result of the call it made), or the exception's type.
A job that runs past its timeout is ``hang``; the ranks that printed nothing were ended by
an abort (mpicoll's watchdog at ``MPICOLL_TIMEOUT=20``, or its exit after another rank's
uncaught exception; gloo's own abort) and show as ``ended``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

CASES = {
    "dtype": "all_reduce, float32 on rank 0, float64 elsewhere",
    "dtype-async": "the same, async on rank 0",
    "bcast-dtype": "broadcast, float64 on the root, float32 elsewhere",
    "gather-dtype": "all_gather_into_tensor, float64 on rank 0, float32 elsewhere",
    "gather-int": "all_gather_into_tensor, float32 on rank 0, int32 elsewhere",
    "op": "all_reduce, SUM on rank 0, MAX elsewhere",
    "rs-avg": "reduce_scatter_tensor, AVG on rank 0, SUM elsewhere",
    "root": "broadcast, src=0 on rank 0, src=1 elsewhere",
    "scatter-root": "scatter, src=0 on rank 0, src=1 elsewhere, then a scatter from rank 0",
    "gather-root": "gather, dst=0 on rank 0, dst=1 elsewhere",
    "skip": "rank 1 skips one all_reduce, then barrier and all_reduce",
    "other": "all_reduce on rank 0, broadcast elsewhere",
    "reduce-dtype": "reduce to rank 0, float32 on rank 0, int32 elsewhere",
    "reduce-op": "reduce to rank 0, SUM on rank 0, MAX elsewhere",
    "shapes": "all_reduce of shapes (2, 3) and (3, 2), same count",
    "big-dtype": "all_reduce of 2**20 elements, float32 on rank 0, float64 elsewhere",
    "big-op": "all_reduce of 2**20 elements, SUM on rank 0, MAX elsewhere",
    "big-root": "broadcast of 2**20 elements, src=0 on rank 0, src=1 elsewhere",
    "big-reduce": "reduce of 2**20 elements to rank 0, float32 on rank 0, int32 elsewhere",
    # what the default check does not reach (docs/errors.md: not compared)
    "mid-dtype": "all_reduce of 4096 elements, float32 on rank 0, float64 elsewhere",
    "mid-op": "all_reduce of 4096 elements, SUM on rank 0, MAX elsewhere",
    "skip-same": "rank 1 skips one all_reduce, then two more all_reduces",
}
BIG = 1 << 20  # (MPI's own collectives, with their signature beside the data: _sizes)
MID = 4096  # (MPI's own collectives, nothing beside them: above 512 elements, below BIG)


def one(backend: str, case: str) -> None:
    """One job's rank: make the mistake, print what it got."""
    import numpy as np
    import torch
    import torch.distributed as dist

    if backend in ("mpicoll", "checked"):  # (checked: MPICOLL_CHECK=1, set by table)
        import mpicoll.torch  # noqa: F401

        backend = "mpicoll"
    else:
        from mpi4py import MPI

        os.environ.update(RANK=str(MPI.COMM_WORLD.rank),
                          WORLD_SIZE=str(MPI.COMM_WORLD.size))
    import datetime

    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=20))
    rank, size = dist.get_rank(), dist.get_world_size()
    f32, f64 = torch.float32, torch.float64
    try:
        if case in ("dtype", "dtype-async"):
            x = torch.full((5,), rank + 1.0, dtype=f32 if rank == 0 else f64)
            w = dist.all_reduce(x, async_op=case == "dtype-async" and rank == 0)
            if w is not None:
                w.wait()
            want = np.full(5, sum(range(1, size + 1)))
        elif case == "bcast-dtype":
            x = torch.full((5,), rank + 1.0, dtype=f64 if rank == 0 else f32)
            dist.broadcast(x, src=0)
            want = np.full(5, 1.0)
        elif case in ("gather-dtype", "gather-int"):
            dt = (f64 if case == "gather-dtype" else f32) if rank == 0 else (
                f32 if case == "gather-dtype" else torch.int32)
            x = torch.full((3,), rank + 1, dtype=dt)
            out = torch.zeros(3 * size, dtype=dt)
            dist.all_gather_into_tensor(out, x)
            x, want = out, np.repeat(np.arange(1, size + 1), 3)
        elif case == "op":
            x = torch.tensor([rank + 1.0, 10.0 - rank])
            dist.all_reduce(x, op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX)
            want = (np.array([sum(range(1, size + 1)), sum(10.0 - r for r in range(size))])
                    if rank == 0 else np.array([size, 10.0]))
        elif case == "rs-avg":
            x = torch.arange(2.0 * size) + rank
            out = torch.zeros(2)
            dist.reduce_scatter_tensor(out, x, op=dist.ReduceOp.AVG if rank == 0 else
                                       dist.ReduceOp.SUM)
            total = sum(np.arange(2.0 * size) + r for r in range(size))[2 * rank:2 * rank + 2]
            x, want = out, total / size if rank == 0 else total
        elif case == "root":
            x = torch.full((4,), float(rank))
            dist.broadcast(x, src=0 if rank == 0 else 1)
            want = np.full(4, 0.0 if rank == 0 else 1.0)
        elif case == "scatter-root":
            # (then every rank scatters from rank 0: where the first call left a chunk
            # queued, the second receives it in place of its data)
            src = 0 if rank == 0 else 1
            first, second = torch.zeros(4), torch.zeros(4)
            dist.scatter(first, [torch.full((4,), 10.0 * src + j) for j in range(size)]
                         if rank == src else None, src=src)
            dist.scatter(second, [torch.full((4,), 100.0 + j) for j in range(size)]
                         if rank == 0 else None, src=0)
            x = torch.cat([first, second])
            want = np.concatenate([np.full(4, 10.0 * src + rank), np.full(4, 100.0 + rank)])
        elif case == "gather-root":
            dst = 0 if rank == 0 else 1
            x = torch.full((4,), float(rank))
            out = [torch.zeros(4) for _ in range(size)] if rank == dst else None
            dist.gather(x, out, dst=dst)
            if out is not None:  # (the others' tensors are only sent)
                x, want = torch.cat(out), np.repeat(np.arange(size, dtype=np.float64), 4)
            else:
                want = np.full(4, float(rank))
        elif case == "skip":
            x = torch.ones(3)
            if rank != 1:
                dist.all_reduce(x)
            dist.barrier()
            y = torch.ones(3)
            dist.all_reduce(y)
            x, want = (y, np.full(3, float(size))) if rank == 1 else (
                torch.cat([x, y]), np.full(6, float(size)))
        elif case == "other":
            x = torch.full((4,), rank + 1.0)
            if rank == 0:
                dist.all_reduce(x)
                want = np.full(4, float(sum(range(1, size + 1))))
            else:
                dist.broadcast(x, src=0)
                want = np.full(4, 1.0)
        elif case in ("reduce-dtype", "reduce-op"):
            dt = torch.int32 if case == "reduce-dtype" and rank != 0 else f32
            x = torch.full((4,), rank + 1, dtype=dt)
            op = dist.ReduceOp.MAX if case == "reduce-op" and rank != 0 else \
                dist.ReduceOp.SUM
            dist.reduce(x, dst=0, op=op)
            # (the root: the reduction its own call asked for; the others: unchanged)
            want = np.full(4, float(sum(range(1, size + 1)) if rank == 0 else rank + 1))
        elif case in ("big-dtype", "mid-dtype"):
            n = BIG if case == "big-dtype" else MID
            x = torch.full((n,), rank + 1.0, dtype=f32 if rank == 0 else f64)
            dist.all_reduce(x)
            want = np.full(n, float(sum(range(1, size + 1))))
        elif case in ("big-op", "mid-op"):
            n = BIG if case == "big-op" else MID
            x = torch.full((n,), rank + 1.0)
            dist.all_reduce(x, op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX)
            want = np.full(n, float(sum(range(1, size + 1)) if rank == 0 else size))
        elif case == "big-root":
            x = torch.full((BIG,), float(rank))
            dist.broadcast(x, src=0 if rank == 0 else 1)
            want = np.full(BIG, 0.0 if rank == 0 else 1.0)
        elif case == "big-reduce":
            x = torch.full((BIG,), rank + 1, dtype=f32 if rank == 0 else torch.int32)
            dist.reduce(x, dst=0)
            want = np.full(BIG, float(sum(range(1, size + 1)) if rank == 0 else rank + 1))
        elif case == "skip-same":
            # (call k sums k + 1 on every rank: rank 1's first all_reduce, its call 1,
            # meets the others' call 0)
            ks = [1, 2] if rank == 1 else [0, 1, 2]
            ys = [torch.full((3,), k + 1.0) for k in ks]
            for y in ys:
                dist.all_reduce(y)
            x, want = torch.cat(ys), np.concatenate([np.full(3, size * (k + 1.0)) for k in ks])
        elif case == "shapes":
            x = torch.arange(6.0).reshape((2, 3) if rank == 0 else (3, 2))
            dist.all_reduce(x)
            want = np.arange(6.0).reshape(x.shape) * size
        got = "right" if np.array_equal(x.numpy().astype(np.float64), want) else "WRONG"
    except Exception as e:  # noqa: BLE001  (what the rank got is the measurement)
        got = type(e).__name__
        print(f"MESSAGE {rank} {e}", flush=True)
    print(f"OUTCOME {rank} {got}", flush=True)
    sys.stdout.flush()
    # (the launcher may end every rank once one has left without MPI_Finalize: a rank
    # that returned waits for its peers to say what they got)
    time.sleep(2)
    os._exit(0)  # (no teardown: a rank left in a collective is the point)


_OUTCOME = re.compile(r"OUTCOME (\d+) ([A-Za-z]+?)(?=OUTCOME|MESSAGE|\s|$)")


def table(ranks: int, backends: list[str], only: list[str] | None = None) -> None:
    """Every case (or those in ``only``) over each backend: a markdown table, one line a
    case."""
    mpiexec = os.environ.get("MPIEXEC", "mpiexec").split()
    print(f"| mistake ({ranks} ranks) | {' | '.join(backends)} |\n"
          f"| --- |{' --- |' * len(backends)}")
    for case, words in CASES.items():
        if only and case not in only:
            continue
        cells = []
        for backend in backends:
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29577",
                       MPICOLL_TIMEOUT="20")
            if backend == "checked":
                env["MPICOLL_CHECK"] = "1"
            try:
                p = subprocess.run([*mpiexec, "-n", str(ranks), sys.executable, __file__,
                                    backend, case], capture_output=True, text=True,
                                   timeout=60, env=env)
                out = p.stdout
            except subprocess.TimeoutExpired as e:
                out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (
                    e.stdout or "")
                out += "\nTIMEOUT"
            # (the ranks' lines may come joined: each outcome is read up to the next)
            got = {int(r): what for r, what in _OUTCOME.findall(out)}
            end = "hang" if "TIMEOUT" in out else "ended"
            cells.append(", ".join(f"{r}: {got.get(r, end)}" for r in range(ranks)))
        print(f"| {words} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "table":
        table(int(sys.argv[2]) if len(sys.argv) > 2 else 2,
              (sys.argv[3] if len(sys.argv) > 3 else "mpicoll,checked,gloo").split(","),
              sys.argv[4].split(",") if len(sys.argv) > 4 else None)
    else:
        one(sys.argv[1], sys.argv[2])
