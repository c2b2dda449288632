"""[3] What a persistent collective's tensors keep between starts, and the error if not.

A persistent collective hands MPI its tensors' memory once, at set-up: each start
compares every watched tensor's fingerprint (``_refresh.fingerprint``: data pointer,
shape, strides, dtype) with the one taken then, in one call, and refuses a tensor
that was reallocated, resized or changed dtype with an error naming what changed.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentValueError as _Value
from ._refresh import Step


def fingerprints(watch: tuple[tuple[str, Step], ...]) -> Step:
    """One call that returns every watched tensor's fingerprint (the only one's itself)."""
    if len(watch) == 1:
        return watch[0][1]
    if len(watch) == 2:
        first, second = watch[0][1], watch[1][1]
        return lambda: (first(), second())
    fps = [fp for _, fp in watch]
    return lambda: tuple(fp() for fp in fps)


def changed(name: str, op: str, watch: tuple[tuple[str, Step], ...], expected: Any) -> _Value:
    """The error for a start whose tensors no longer match their fingerprints at set-up.

    Args:
        name: the persistent collective's name in errors (``"persistent all_reduce"``).
        op: the collective (``"all_reduce"``, ...).
        watch: (argument name, fingerprint function) of each watched tensor.
        expected: what :func:`fingerprints` of ``watch`` returned at set-up.

    Returns:
        An ArgumentValueError naming the first tensor that changed and what changed.
    """
    olds = expected if len(watch) > 1 else (expected,)
    arg, old, now = next((arg, old, fp()) for (arg, fp), old in
                         zip(watch, olds, strict=True) if fp() != old)
    what = [w for w, a, b in zip(("data pointer", "shape", "strides", "dtype"),
                                 old, now, strict=True) if a != b]
    return _Value(name, "reallocated", "{arg} was reallocated, resized or changed "
                  "dtype since {op}_init ({what} changed): expected {expected}, got {got}; "
                  "a persistent collective keeps the memory it was set up with: write new "
                  "values in place (t.copy_(x), a[...] = x) or set up a new one",
                  {"arg": arg}, op=op, what=", ".join(what),
                  expected=_show(old), got=_show(now))


def _show(fp: tuple) -> str:
    ptr, shape, strides, dtype = fp
    return (f"(data pointer {hex(ptr) if isinstance(ptr, int) else ptr}, shape "
            f"{tuple(shape)}, strides {tuple(strides)}, dtype {dtype})")
