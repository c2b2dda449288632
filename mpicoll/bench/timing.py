"""The timing loop shared by every mode: batches of calls, interleaved over rounds."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["batch_time", "interleaved"]


def batch_time(fn: Callable[[], Any], iters: int, comm: Any, MPI: Any,
               warmup: int = 0) -> float:
    """One batch: ``warmup`` calls, a barrier, ``iters`` timed calls.

    Returns the slowest rank's mean seconds per call.
    """
    for _ in range(warmup):
        fn()
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    mean = (time.perf_counter() - t0) / iters
    return float(comm.allreduce(mean, op=MPI.MAX))


def interleaved(variants: dict[str, tuple[Callable[[], Any], int]], rounds: int, comm: Any,
                MPI: Any, *, warmup_each: bool = True, no_gc: bool = False
                ) -> dict[str, list[float]]:
    """Time every variant in turn, ``rounds`` times: each one's seconds per call, per round.

    Alternating the variants (and rotating which goes first) spreads the machine's
    noise (other processes, frequency changes) evenly over them, so their
    differences and ratios are measured fairly.

    Args:
        variants: name -> (call, calls per batch).
        warmup_each: warm up before every batch (a tenth of it, at least 2 calls);
            otherwise once, before the first round.
        no_gc: keep Python's garbage collector off while timing (as ``timeit`` does).
    """
    samples: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    if not warmup_each:
        for fn, iters in variants.values():
            for _ in range(max(2, iters // 10)):
                fn()
    was_enabled = gc.isenabled()
    if no_gc:
        gc.disable()
    try:
        for i in range(rounds):
            for name in names[i % len(names):] + names[:i % len(names)]:
                fn, iters = variants[name]
                warm = max(2, iters // 10) if warmup_each else 0
                samples[name].append(batch_time(fn, iters, comm, MPI, warm))
    finally:
        if no_gc and was_enabled:
            gc.enable()
    return samples
