"""[3] One JAX primitive for every collective: abstract shapes, eager run, vmap, lowering.

Inside ``jax.jit`` a collective becomes a host callback with JAX's *ordered* IO
effect, so XLA runs the collectives of a program one after another, in program
order, on every rank. Two lowerings carry the callback (``mechanism()``):

- ``"buffer"`` (CPU): XLA's in-place buffer callback target, the one
  ``jax.experimental.buffer_callback`` uses, threaded with the ordered-effect
  token. MPI reads XLA's input buffer and writes XLA's output buffer: no copy.
  This relies on JAX internals, so it is probed once and replaced by the other
  lowering if anything differs.
- ``"io_callback"`` (any platform, public API): ``jax.experimental.io_callback(...,
  ordered=True)``; JAX copies the operands to the host and the results back.

Outside any transformation the primitive runs directly on the host: after
``jax.effects_barrier()`` (so every collective of earlier jitted calls has run),
on the caller's thread.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import batching, mlir

from . import _host

try:
    from jax.extend.core import Primitive
except ImportError:  # older JAX
    from jax.core import Primitive  # type: ignore[no-redef,attr-defined]

# collectives whose result has the input's shape, element by element
ELEMENTWISE = frozenset({"all_reduce", "broadcast", "reduce", "sendrecv", "_probe"})

# collectives that may write their result over their input (the probe: to see XLA do it)
_IN_PLACE = frozenset({"all_reduce", "broadcast", "reduce", "_probe"})
_ALIASED: list[bool] = []  # whether the probe's output was its input's buffer

mpi_p = Primitive("mpicoll")
mpi_p.multiple_results = True


def bind(x: Any, kind: str, spec: tuple, twin: _host.Twin) -> Any:
    """Run collective ``kind`` on ``x`` (under any JAX transformation, or eagerly)."""
    return mpi_p.bind(x, kind=kind, spec=spec, twin=twin, via=mechanism())[0]


def out_shape(kind: str, spec: tuple, twin: _host.Twin, shape: tuple[int, ...]) -> tuple:
    """The result's shape; row collectives change dim 0 only."""
    if kind in ELEMENTWISE:
        return shape
    rows, rest = shape[0], shape[1:]
    if kind == "all_gather":
        counts = spec[0]
        return (rows * twin.size if counts is None else sum(counts), *rest)
    if kind == "reduce_scatter":
        counts = spec[0]
        return (rows // twin.size if counts is None else counts[twin.rank], *rest)
    if kind == "all_to_all":
        rcounts = spec[1]
        return (rows if rcounts is None else sum(rcounts), *rest)
    raise AssertionError(kind)


# -- abstract evaluation ------------------------------------------------------------


_EFFECT: list[Any] = []


def ordered_effect() -> Any:
    """JAX's ordered IO effect (the one ``io_callback(ordered=True)`` declares), found
    through the public API: every collective shares its token, hence its order."""
    if not _EFFECT:
        from jax.experimental import io_callback

        def probe() -> Any:
            return io_callback(lambda: np.zeros((), np.float32),
                               jax.ShapeDtypeStruct((), np.float32), ordered=True)

        (effect,) = jax.make_jaxpr(probe)().effects
        _EFFECT.append(effect)
    return _EFFECT[0]


def _abstract(x: Any, *, kind: str, spec: tuple, twin: _host.Twin, via: str) -> Any:
    shape = out_shape(kind, spec, twin, tuple(x.shape))
    return [jax.core.ShapedArray(shape, x.dtype)], {ordered_effect()}


mpi_p.def_effectful_abstract_eval(_abstract)


# -- eager: on the caller's thread ---------------------------------------------------


def _impl(x: Any, *, kind: str, spec: tuple, twin: _host.Twin, via: str) -> Any:
    jax.effects_barrier()  # collectives of jitted calls still in flight come first
    src = np.asarray(x)  # zero-copy on the CPU; a device array is copied to the host
    out = np.empty(out_shape(kind, spec, twin, src.shape), src.dtype)
    _host.run(kind, spec, twin, src, out)
    devices = x.devices() if hasattr(x, "devices") else ()
    return [jax.device_put(out, next(iter(devices))) if devices else jnp.asarray(out)]


mpi_p.def_impl(_impl)


# -- vmap: one collective for the whole batch -----------------------------------------


def _batch(args: Any, dims: Any, *, kind: str, spec: tuple, twin: _host.Twin,
           via: str) -> Any:
    (x,), (d,) = args, dims
    params = {"kind": kind, "spec": spec, "twin": twin, "via": via}
    if d is None or kind in ELEMENTWISE:
        return mpi_p.bind(x, **params), [d]
    # row collectives work on dim 0: the batch goes next to it, rows keep their counts
    return mpi_p.bind(jnp.moveaxis(x, d, 1), **params), [1]


batching.primitive_batchers[mpi_p] = _batch


# -- lowering ---------------------------------------------------------------------------


def _io_lowering() -> Any:
    from jax.experimental import io_callback

    def call(x: Any, *, kind: str, spec: tuple, twin: _host.Twin, via: str) -> Any:
        shape = out_shape(kind, spec, twin, tuple(x.shape))
        result = jax.ShapeDtypeStruct(shape, x.dtype)

        lean = _host.lean(kind, spec, twin, x.dtype, tuple(x.shape), shape, False) or _no_lean

        def host(a: Any) -> np.ndarray:
            src = np.asarray(a)
            out = np.empty(shape, src.dtype)
            if not lean(src, out):
                _host.run(kind, spec, twin, src, out)
            return out

        return [io_callback(host, result, x, ordered=True)]

    return mlir.lower_fun(call, multiple_results=True)


def _no_lean(src: Any, out: Any) -> bool:  # a collective with no lean form: run each call
    return False


_lower_io = _io_lowering()


def _lower_buffer(ctx: Any, x: Any, *, kind: str, spec: tuple, twin: _host.Twin,
                  via: str) -> Any:
    """XLA's buffer-callback target with the ordered-effect token in and out."""
    if via != "buffer":
        return _lower_io(ctx, x, kind=kind, spec=spec, twin=twin, via=via)
    from jax._src import core as _core  # the token's abstract value (no public name)

    effect = ordered_effect()

    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    # reductions and broadcasts work in place: XLA hands the input's buffer over as the
    # output (operand 1 -> result 1, after the tokens); the probe saw it (else: asked)
    aliases = {1: 1} if kind in _IN_PLACE else {}
    lean = _host.lean(kind, spec, twin, aval.dtype, tuple(aval.shape), tuple(out_aval.shape),
                      True if _ALIASED == [True] else None) or _no_lean
    run, asarray = _host.run, np.asarray

    def host(exec_ctx: Any, token_in: Any, src: Any, token_out: Any, out: Any) -> tuple:
        a, b = asarray(src), asarray(out)
        if not lean(a, b):
            run(kind, spec, twin, a, b)
        return ()

    ctx.module_context.add_host_callback(host)
    index = np.uint64(len(ctx.module_context.host_callbacks) - 1)
    token = ctx.tokens_in.get(effect)
    inner = ctx.replace(avals_in=[_core.abstract_token, *ctx.avals_in],
                        avals_out=[_core.abstract_token, *ctx.avals_out])
    rule = jax.ffi.ffi_lowering("xla_buffer_python_cpu_callback", has_side_effect=True,
                                operand_output_aliases=aliases)
    token, *results = rule(inner, token, x, index=index)
    ctx.set_tokens_out(ctx.tokens_in.update_tokens(mlir.TokenSet({effect: token})))
    return results


mlir.register_lowering(mpi_p, _lower_io, cacheable=False)
mlir.register_lowering(mpi_p, _lower_buffer, platform="cpu", cacheable=False)


# -- which lowering ---------------------------------------------------------------------

_CHOICES = ("buffer", "io_callback")
_chosen: list[str] = []


def mechanism() -> str:
    """The lowering of collectives compiled for the CPU: ``MPICOLL_JAX_CALLBACK``
    (``buffer`` or ``io_callback``), else ``buffer`` where a one-time probe shows that
    it works, else ``io_callback``. Other platforms (GPU) always use ``io_callback``."""
    if _chosen:
        return _chosen[0]
    raw = os.environ.get("MPICOLL_JAX_CALLBACK", "").strip().lower()
    if raw and raw not in _CHOICES:
        raise ValueError(f"environment variable MPICOLL_JAX_CALLBACK={raw!r}: expected "
                         f"one of {', '.join(_CHOICES)}")
    _chosen.append(raw or ("buffer" if _buffer_works() else "io_callback"))
    return _chosen[0]


def use(via: str | None) -> None:
    """Force a lowering for calls traced from now on (None: choose again); for tests."""
    if via is not None and via not in _CHOICES:
        raise ValueError(f"mechanism must be one of {_CHOICES}, got {via!r}")
    _chosen[:] = [] if via is None else [via]


def _buffer_works() -> bool:
    """Whether the buffer lowering compiles and runs here (JAX internals may change).

    The probe runs on a thread of its own: the first collective is usually met while
    tracing, and JAX's trace state is per thread, so there the probe's jitted call
    would be traced into the caller's program instead of running.
    """
    got: list[Any] = []

    def probe() -> None:
        try:  # on the CPU, where the buffer lowering applies (others use io_callback)
            x = jax.device_put(np.arange(3, dtype=np.float32), jax.devices("cpu")[0])
            fn = jax.jit(lambda a: mpi_p.bind(a, kind="_probe", spec=(),
                                              twin=_host.NO_GROUP, via="buffer")[0])
            got.append(np.asarray(fn(x)))
        except Exception:  # any failure of JAX internals: the public lowering instead
            pass

    thread = threading.Thread(target=probe, name="mpicoll.jax probe")
    thread.start()
    thread.join()
    _ALIASED[:] = [bool(_host.PROBED) and all(_host.PROBED)]
    return bool(got) and bool(np.array_equal(got[0], [1.0, 2.0, 3.0]))
