"""The variants ``overhead`` compares for one case: raw mpi4py and mpicoll per framework."""

from __future__ import annotations

from typing import Any

import numpy as np

import mpicoll

from .registry import Ctx

__all__ = ["build"]


def build(case: Any, nbytes: int, fws: list[str], comm: Any,
          MPI: Any) -> tuple[dict[str, Any], bool, int | None]:
    """``raw`` and one call per framework over the same memory; this rank's check."""
    memory: dict[str, np.ndarray] = {}
    calls: dict[str, Any] = {}
    ok, list_len = True, None
    for fw in (f for f in fws if f in case.frameworks):
        t = case.build(Ctx(nbytes, fw, mpicoll, comm, MPI, memory))
        if t.raw is None:
            raise SystemExit(f"overhead: case {case.name!r} has no raw mpi4py call")
        calls.setdefault("raw", t.raw)
        calls[fw] = t.call
        ok &= t.check()
        list_len = t.list_len
    return calls, ok, list_len
