"""Which face serves a functional call: torch autograd, JAX transformations, or none.

``mpicoll.functional`` asks first thing, so that a torch tensor that requires grad
gets a differentiable collective (``mpicoll._autograd``) and a JAX tracer (inside
``jax.jit``, ``jax.grad``, ``jax.vmap``) gets the traceable one (``mpicoll.jax``).
Imports nothing: a framework that is not imported cannot have made the input.
"""

from __future__ import annotations

import sys
from typing import Any


def face(x: Any) -> Any:
    """The module whose function of the same name serves ``x``, or None (functional's
    own path, ``mpicoll._new_arrays``). ``x`` may be a list of tensors (list forms)."""
    if isinstance(x, (list, tuple)):
        for item in x:
            served = face(item)
            if served is not None:
                return served
        return None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.requires_grad and torch.is_grad_enabled():
            # lazy: _autograd imports torch; it loads when a tensor that requires grad first comes
            from . import _autograd

            return _autograd
        return None
    jax_core = sys.modules.get("jax.core")
    if jax_core is not None and isinstance(x, jax_core.Tracer):
        # lazy: mpicoll.jax imports jax; it loads when a JAX tracer first comes
        from . import jax as _jax

        return _jax
    return None
