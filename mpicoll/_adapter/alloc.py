"""[1] New tensors of a caller's framework: the one allocator every face uses.

Each hook module in ``frameworks/`` provides ``empty(like, shape)``; JAX's also
provides ``wrap(result, like)``, because its arrays are immutable: the result is
written into host scratch, then wrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import views
from .detect import framework_of


def empty(like: Any, shape: tuple[int, ...]) -> tuple[Any, Callable[[Any], Any] | None]:
    """(a writable tensor of ``like``'s framework, dtype and device, of ``shape``;
    the function that turns it into the result, None when it is the result)."""
    shape = tuple(int(s) for s in shape)
    fw = framework_of(like)
    if fw == "numpy":
        return np.empty(shape, dtype=like.dtype), None
    if fw == "dlpack":  # any other DLPack producer: answered in numpy
        return np.empty(shape, dtype=np.from_dlpack(like).dtype), None
    hooks = views.hooks(fw)
    wrap = getattr(hooks, "wrap", None)
    return hooks.empty(like, shape), None if wrap is None else lambda out: wrap(out, like)
