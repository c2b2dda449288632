"""[3] One JAX primitive for every collective: abstract shapes, eager run, vmap, lowering.

Inside ``jax.jit`` a collective becomes a host callback with JAX's *ordered* IO
effect, so XLA runs the collectives of a program one after another, in program
order, on every rank. Three lowerings carry the callback (``mechanism()``):

- ``"ffi"`` (CPU, where the compiled core's XLA handler is built): a typed XLA FFI
  custom call, ``mpicoll_host`` (mpicoll/_jax_ffi.c), with a side effect and the
  ordered-effect token in and out. The handler puts numpy arrays over XLA's input and
  output buffers and calls the collective's host function: no copy, and none of the
  Python callback's machinery.
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
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import batching, mlir

from .. import _core_loader
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
            if not lean(src, out, True):  # (new arrays each call)
                _host.run(kind, spec, twin, src, out)
            return out

        return [io_callback(host, result, x, ordered=True)]

    return mlir.lower_fun(call, multiple_results=True)


def _no_lean(src: Any, out: Any, fresh: bool = False) -> bool:  # (no lean form: run's path)
    return False


_lower_io = _io_lowering()


def _host_function(kind: str, spec: tuple, twin: _host.Twin, aval: Any, out_aval: Any,
                   copied: bool = False) -> Callable[..., Any]:
    """What the CPU lowerings run: (input, output) numpy arrays over XLA's buffers, and
    whether they are fresh (the FFI handler's: not the buffers of its last calls).
    ``copied``: the FFI handler has copied the input into the output, and passes the
    output as both (an in-place site)."""
    lean = _host.lean(kind, spec, twin, aval.dtype, tuple(aval.shape), tuple(out_aval.shape),
                      True if copied or _ALIASED == [True] else None)
    if lean is not None:  # (a lean form always makes the call: no frame around it)
        return lean
    run = _host.run

    def host(src: np.ndarray, out: np.ndarray, fresh: bool = False) -> None:
        run(kind, spec, twin, src, out)

    return host


# the FFI handler's sites: one a distinct compiled collective, registered once
_sites: dict[tuple, int] = {}
_TARGET = "mpicoll_host"


def _site(kind: str, spec: tuple, twin: _host.Twin, aval: Any, out_aval: Any) -> int:
    # (everything _host_function builds the host function from)
    key = (kind, spec, twin, aval.dtype, tuple(aval.shape), tuple(out_aval.shape),
           tuple(_ALIASED), _host.lean, _host.run)
    index = _sites.get(key)
    if index is None:
        # (in place: the handler copies the input into the output where they differ; not
        # the probe's, which looks at whether XLA aliased them)
        in_place = kind in _IN_PLACE and kind != "_probe"
        host = _host_function(kind, spec, twin, aval, out_aval, in_place)
        index = _sites[key] = _registered[0].add_site(
            host, aval.dtype, out_aval.dtype, _nbytes(aval), _nbytes(out_aval), in_place)
    return index


def _nbytes(aval: Any) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def _lower_cpu(ctx: Any, x: Any, *, kind: str, spec: tuple, twin: _host.Twin,
               via: str) -> Any:
    """A custom call on XLA's CPU with the ordered-effect token in and out: mpicoll's FFI
    handler (``ffi``) or XLA's Python buffer callback (``buffer``)."""
    if via not in ("ffi", "buffer"):
        return _lower_io(ctx, x, kind=kind, spec=spec, twin=twin, via=via)
    from jax._src import core as _core  # the token's abstract value (no public name)

    effect = ordered_effect()

    (aval,), (out_aval,) = ctx.avals_in, ctx.avals_out
    # reductions and broadcasts work in place: XLA hands the input's buffer over as the
    # output (operand 1 -> result 1, after the tokens); the probe saw it (else: asked)
    aliases = {1: 1} if kind in _IN_PLACE else {}
    if via == "ffi":
        target, attrs = _TARGET, {"site": np.int64(_site(kind, spec, twin, aval, out_aval))}
    else:
        host, asarray = _host_function(kind, spec, twin, aval, out_aval), np.asarray

        def callback(exec_ctx: Any, token_in: Any, src: Any, token_out: Any,
                     out: Any) -> tuple:
            host(asarray(src), asarray(out))
            return ()

        ctx.module_context.add_host_callback(callback)
        index = np.uint64(len(ctx.module_context.host_callbacks) - 1)
        target, attrs = "xla_buffer_python_cpu_callback", {"index": index}
    token = ctx.tokens_in.get(effect)
    inner = ctx.replace(avals_in=[_core.abstract_token, *ctx.avals_in],
                        avals_out=[_core.abstract_token, *ctx.avals_out])
    rule = jax.ffi.ffi_lowering(target, has_side_effect=True, operand_output_aliases=aliases)
    token, *results = rule(inner, token, x, **attrs)
    ctx.set_tokens_out(ctx.tokens_in.update_tokens(mlir.TokenSet({effect: token})))
    return results


mlir.register_lowering(mpi_p, _lower_io, cacheable=False)
mlir.register_lowering(mpi_p, _lower_cpu, platform="cpu", cacheable=False)


# -- which lowering ---------------------------------------------------------------------

_CHOICES = ("ffi", "buffer", "io_callback")
_chosen: list[str] = []
_registered: list[Any] = []  # the handler's module, registered with XLA (or None)


def mechanism() -> str:
    """The lowering of collectives compiled for the CPU: ``MPICOLL_JAX_CALLBACK``
    (``ffi``, ``buffer`` or ``io_callback``), else the first of ``ffi`` (where the
    handler is built) and ``buffer`` that a one-time probe shows to work, else
    ``io_callback``. Other platforms (GPU) always use ``io_callback``."""
    if _chosen:
        return _chosen[0]
    raw = os.environ.get("MPICOLL_JAX_CALLBACK", "").strip().lower()
    if raw and raw not in _CHOICES:
        raise ValueError(f"environment variable MPICOLL_JAX_CALLBACK={raw!r}: expected "
                         f"one of {', '.join(_CHOICES)}")
    if raw == "ffi" and not ffi_available():
        raise ValueError("environment variable MPICOLL_JAX_CALLBACK=ffi: mpicoll's XLA "
                         f"handler is {_core_loader.jax_handler()[1]}")
    _chosen.append(raw or next((via for via in ("ffi", "buffer") if _works(via)),
                               "io_callback"))
    return _chosen[0]


def ffi_available() -> bool:
    """Whether mpicoll's XLA FFI handler is built and registered with XLA here."""
    if not _registered:
        handler, _ = _core_loader.jax_handler()
        if handler is not None:
            try:
                jax.ffi.register_ffi_target(_TARGET, handler.handler(), platform="cpu",
                                            api_version=1)
            except Exception:  # (an XLA that refuses it: the buffer callback instead)
                handler = None
        _registered.append(handler)
    return _registered[0] is not None


def use(via: str | None) -> None:
    """Force a lowering for calls traced from now on (None: choose again); for tests."""
    if via is not None and via not in _CHOICES:
        raise ValueError(f"mechanism must be one of {_CHOICES}, got {via!r}")
    if via == "ffi" and not ffi_available():
        raise ValueError(f"mechanism 'ffi': mpicoll's XLA handler is "
                         f"{_core_loader.jax_handler()[1]}")
    _chosen[:] = [] if via is None else [via]


def _works(via: str) -> bool:
    """Whether the lowering ``via`` compiles and runs here (JAX internals may change;
    the FFI handler may not be built).

    The probe runs on a thread of its own: the first collective is usually met while
    tracing, and JAX's trace state is per thread, so there the probe's jitted call
    would be traced into the caller's program instead of running.
    """
    if via == "ffi" and not ffi_available():
        return False
    got: list[Any] = []
    del _host.PROBED[:]

    def probe() -> None:
        try:  # on the CPU, where these lowerings apply (others use io_callback)
            x = jax.device_put(np.arange(3, dtype=np.float32), jax.devices("cpu")[0])
            fn = jax.jit(lambda a: mpi_p.bind(a, kind="_probe", spec=(),
                                              twin=_host.NO_GROUP, via=via)[0])
            got.append(np.asarray(fn(x)))
        except Exception:  # any failure of JAX internals: the next lowering instead
            pass

    thread = threading.Thread(target=probe, name="mpicoll.jax probe")
    thread.start()
    thread.join()
    _ALIASED[:] = [bool(_host.PROBED) and all(_host.PROBED)]
    return bool(got) and bool(np.array_equal(got[0], [1.0, 2.0, 3.0]))
