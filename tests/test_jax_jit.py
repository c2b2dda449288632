"""mpicoll.jax: collectives inside jax.jit (both lowerings), in order, under vmap; a
data-parallel training step compiled with its gradient all-reduce."""

from __future__ import annotations

# jax is installed with the test extras: an import that fails is a failure, never a skip
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mpicoll as dist
import mpicoll.functional as F
import mpicoll.jax as mj
from mpicoll import _core_loader
from mpicoll._env import flag
from mpicoll.jax import _primitive

OP = dist.ReduceOp


@pytest.fixture(params=["ffi", "buffer", "io_callback"])
def via(request):
    """Trace with one lowering, then choose again (functions are jitted afresh per test,
    so nothing compiled with one lowering is reused with the other). ``ffi``, mpicoll's
    XLA handler, is part of the compiled core: not there on its Python path."""
    if request.param == "ffi" and not _primitive.ffi_available():
        assert not flag("MPICOLL_CORE", True), \
            f"the XLA handler is {_core_loader.jax_handler()[1]}"
        pytest.skip("MPICOLL_CORE=0: the compiled core's XLA handler is off")
    _primitive.use(request.param)
    yield request.param
    _primitive.use(None)


def _data(rank, shape, dtype="float32", salt=0):
    rng = np.random.default_rng(1000 * salt + rank)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(1, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _jit(fn):
    return jax.jit(lambda *a: fn(*a))  # a new function: traced with the current lowering


def test_the_torch_style_call_on_a_tracer_names_the_call_that_runs_inside_jit():
    with pytest.raises(TypeError, match=r"all_reduce: tensor of type \w*Tracer is not a "
                                        r"supported tensor type: it is a JAX tracer .*inside "
                                        r"jit, call mpicoll.jax.all_reduce \(or "
                                        r"mpicoll.functional.all_reduce\)"):
        jax.jit(lambda a: dist.all_reduce(a))(jnp.ones(3))
    with pytest.raises(TypeError, match=r"all_to_all_single: (in|out)put of type \w*Tracer .*"
                                        r"mpicoll.jax.all_to_all_single"):
        jax.jit(lambda a: dist.all_to_all_single(a, a))(jnp.ones(4))


@pytest.mark.mpi(min_size=2)
def test_all_gather_of_sizes_that_differ_without_sizes_says_to_pass_them(rank, size):
    with pytest.raises(Exception, match=r"SizeMismatch: mpicoll.jax.all_gather \(or "
                                        r"all_gather_into_tensor\) under a transformation: "
                                        r"the ranks' inputs differ in size.*pass sizes="):
        jax.block_until_ready(jax.jit(mj.all_gather)(jnp.ones(2 + rank)))
    if jax.default_backend() != "cpu":
        # on a GPU, JAX keeps the failed callback's error in its ordered-effect token
        # and raises it again at this rank's next ordered call, before that call runs
        # (docs/gpu.md): the other ranks would wait for it there. Every rank raised
        # here, so each drops its spent token (JAX's own, not public) and goes on
        from jax._src import dispatch
        dispatch.runtime_tokens.clear()
    # the same call with sizes= is right, and the group goes on
    got = jax.jit(functools.partial(mj.all_gather, sizes=[2 + r for r in range(size)]))(
        jnp.full(2 + rank, float(rank)))
    assert [np.asarray(g).tolist() for g in got] == [[float(r)] * (2 + r) for r in range(size)]


def test_mechanism_is_the_handler_where_the_core_is_built():
    # the handler is built with the core wherever the suite runs (make core), and off
    # with it on the Python path
    on = flag("MPICOLL_CORE", True)
    assert mj.mechanism() == ("ffi" if on else "buffer")
    assert _primitive.ffi_available() is on


@pytest.mark.parametrize("lowering", ["ffi", "buffer"])
def test_the_probe_answers_the_same_inside_a_trace(lowering):
    """The lowering is chosen at the first collective, usually met while tracing: the
    probe must not be traced into the caller's program (and so fail) there."""
    outside = _primitive._works(lowering)
    inside = []
    jax.jit(lambda a: (inside.append(_primitive._works(lowering)), a)[1])(jnp.ones(1))
    assert inside == [outside]
    assert outside is (lowering == "buffer" or _primitive.ffi_available())


REDUCTIONS = [("SUM", "float32"), ("AVG", "float32"), ("PRODUCT", "float32"),
              ("MIN", "float32"), ("MAX", "float16"), ("SUM", "int32"), ("BAND", "int32"),
              ("BOR", "int16"), ("BXOR", "uint8"), ("SUM", "bool"), ("MAX", "bool"),
              ("PREMUL_SUM", "float32"), ("SUM", "complex64"), ("SUM", "bfloat16")]

_NP = {"SUM": np.add, "PREMUL_SUM": np.add, "AVG": np.add, "PRODUCT": np.multiply,
       "MIN": np.minimum, "MAX": np.maximum, "BAND": np.bitwise_and, "BOR": np.bitwise_or,
       "BXOR": np.bitwise_xor}


def _reduce_np(arrays, name, dtype):
    """The reduction of every rank's array, computed here with numpy (low precision and
    bool as mpicoll defines them: float32 accumulation, logical ops)."""
    if dtype == "bool":
        fold = np.logical_or if name in ("SUM", "MAX", "BOR") else _NP[name]
        return functools.reduce(fold, arrays)
    low = dtype in ("float16", "bfloat16")
    xs = [np.asarray(a, np.float32) if low else np.asarray(a) for a in arrays]
    acc = functools.reduce(_NP[name], xs)
    if name == "AVG":
        acc = acc / len(xs)
    if name == "PREMUL_SUM":
        acc = acc * 2.5
    return np.asarray(acc.astype(dtype) if not low else jnp.asarray(acc, dtype))


@pytest.mark.parametrize(("name", "dtype"), REDUCTIONS)
def test_all_reduce_jit_equals_eager(via, rank, size, name, dtype):
    op = OP.premul_sum(2.5) if name == "PREMUL_SUM" else OP[name]

    def data(r):
        return jnp.asarray(_data(r, (3, 5), "float32" if dtype == "bfloat16" else dtype),
                           dtype=dtype)

    x = data(rank)
    jitted = _jit(lambda a: mj.all_reduce(a, op=op))(x)
    eager = mj.all_reduce(x, op=op)
    assert jitted.dtype == x.dtype and jitted.shape == x.shape
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))
    want = _reduce_np([np.asarray(data(r)) for r in range(size)], name, dtype)
    got = np.asarray(jitted)
    if dtype in ("float16", "bfloat16", "float32", "complex64"):
        # the MPI library may add in another order: a rounding step apart at most
        tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-5)
        wide = np.complex128 if dtype == "complex64" else np.float64
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def _every(shape, dtype="float32", salt=0, size=1):
    """Every rank's ``_data``: what the reference computes from."""
    return [_data(r, shape, dtype, salt) for r in range(size)]


def _same(jitted, eager, want, exact=True):
    """The jitted result equals the eager one exactly, and both the numpy reference."""
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))
    if exact:
        np.testing.assert_array_equal(np.asarray(jitted), want)
    else:  # a sum: the MPI library may add in another order
        np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-5, atol=1e-6)


def test_inputs_are_never_modified(via, rank, size):
    """Reductions may write over XLA's input buffer (aliased): only where XLA allows it."""
    host = _data(rank, (64,))
    x = jnp.asarray(host)
    total = sum(_every((64,), size=size))
    wants = [total, _data(0, (64,)), total if rank == 0 else host, total + host]
    for fn, want in zip((lambda a: mj.all_reduce(a), lambda a: mj.broadcast(a, src=0),
                         lambda a: mj.reduce(a, dst=0), lambda a: mj.all_reduce(a) + a),
                        wants, strict=True):
        y = _jit(fn)(x)
        np.testing.assert_array_equal(np.asarray(x), host)
        _same(y, fn(x), want, exact=False)
    donated = jax.jit(lambda a: mj.all_reduce(a * 2.0), donate_argnums=0)(jnp.asarray(host))
    np.testing.assert_allclose(np.asarray(donated), 2 * total, rtol=1e-5, atol=1e-6)


def test_broadcast_and_reduce(via, rank, size):
    x = jnp.asarray(_data(rank, (4,)))
    every = _every((4,), size=size)
    root = size - 1
    fn = lambda a: mj.broadcast(a, src=root)  # noqa: E731
    _same(_jit(fn)(x), fn(x), every[root])
    fn = lambda a: mj.reduce(a, dst=0, op=OP.MAX)  # noqa: E731
    _same(_jit(fn)(x), fn(x), np.max(every, axis=0) if rank == 0 else every[rank])
    fn = lambda a: mj.broadcast(a, group_src=0)  # noqa: E731
    _same(_jit(fn)(x), fn(x), every[0])


@pytest.mark.parametrize("stacked", [False, True])
def test_all_gather_into_tensor(via, rank, size, stacked):
    x = jnp.asarray(_data(rank, (2, 3)))
    fn = lambda a: mj.all_gather_into_tensor(a, stacked=stacked)  # noqa: E731
    join = np.stack if stacked else np.concatenate
    _same(_jit(fn)(x), fn(x), join(_every((2, 3), size=size)))
    scalar = _jit(mj.all_gather_into_tensor)(jnp.float32(rank))
    np.testing.assert_array_equal(np.asarray(scalar), np.arange(size, dtype=np.float32))


def test_all_gather_uneven_static_sizes(via, rank, size):
    sizes = [r % 3 + 1 for r in range(size)]
    x = jnp.asarray(_data(rank, (sizes[rank], 2)))
    parts = _jit(lambda a: mj.all_gather(a, sizes=sizes))(x)
    eager = mj.all_gather(x, sizes=sizes)
    negotiated = mj.all_gather(x)  # eagerly, sizes may be left to negotiate
    assert len(parts) == len(eager) == len(negotiated) == size
    for r in range(size):
        _same(parts[r], eager[r], _data(r, (sizes[r], 2)))
        _same(parts[r], negotiated[r], _data(r, (sizes[r], 2)))
    even = _jit(mj.all_gather)(x[:1])  # no sizes under jit: every rank has this shape
    for r, p in enumerate(even):
        np.testing.assert_array_equal(np.asarray(p), _data(r, (sizes[r], 2))[:1])


def test_all_gather_eager_negotiates(rank, size):
    parts = mj.all_gather(jnp.full((rank + 1,), rank))
    assert [p.tolist() for p in parts] == [[r] * (r + 1) for r in range(size)]


def test_reduce_scatter(via, rank, size):
    x = jnp.asarray(_data(rank, (2 * size, 3)))
    fn = lambda a: mj.reduce_scatter_tensor(a, op=OP.AVG)  # noqa: E731
    mean = sum(_every((2 * size, 3), size=size)) / size
    _same(_jit(fn)(x), fn(x), mean[2 * rank:2 * rank + 2], exact=False)
    xs = [jnp.asarray(_data(rank, (j + 1, 2), salt=j)) for j in range(size)]
    got = _jit(lambda *a: mj.reduce_scatter(list(a)))(*xs)
    assert got.shape == (rank + 1, 2)
    want = sum(_data(r, (rank + 1, 2), salt=rank) for r in range(size))  # entry `rank`
    _same(got, mj.reduce_scatter(xs), want, exact=False)


def _splits(i, j):
    return (i + 2 * j) % 3  # rows rank i sends to rank j (zeros included)


def _received(rank, size, rows_of, shape_rest=(2,)):
    """What ``rank`` receives in an all_to_all_single where rank i's input has
    ``rows_of(i, j)`` rows for rank j: the blocks of every rank's ``_data``."""
    blocks = []
    for i in range(size):
        sends = [rows_of(i, j) for j in range(size)]
        src = _data(i, (sum(sends), *shape_rest))
        start = sum(sends[:rank])
        blocks.append(src[start:start + sends[rank]])
    return np.concatenate(blocks)


def test_all_to_all_single(via, rank, size):
    x = jnp.asarray(_data(rank, (2 * size, 3)))
    _same(_jit(mj.all_to_all_single)(x), mj.all_to_all_single(x),
          _received(rank, size, lambda i, j: 2, (3,)))
    send = [_splits(rank, j) for j in range(size)]
    recv = [_splits(i, rank) for i in range(size)]
    y = jnp.asarray(_data(rank, (sum(send), 2)))
    got = _jit(lambda a: mj.all_to_all_single(a, recv, send))(y)
    _same(got, mj.all_to_all_single(y, recv, send), _received(rank, size, _splits))
    eager, sizes = mj.all_to_all_single(y, input_split_sizes=send)  # negotiated
    assert sizes == recv
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(got))


def test_all_to_all_list(via, rank, size):
    xs = [jnp.asarray(_data(rank, (_splits(rank, j), 2), salt=j)) for j in range(size)]
    shapes = [(_splits(i, rank), 2) for i in range(size)]
    got = _jit(lambda *a: mj.all_to_all(list(a), output_shapes=shapes))(*xs)
    eager = mj.all_to_all(xs)  # shapes negotiated
    assert [g.shape for g in got] == shapes
    for i, (g, e) in enumerate(zip(got, eager, strict=True)):
        _same(g, e, _data(i, (_splits(i, rank), 2), salt=rank))
    same = [jnp.full((2,), 10 * rank + j) for j in range(size)]
    got = _jit(lambda *a: mj.all_to_all(list(a)))(*same)
    assert [g.tolist() for g in got] == [[10 * i + rank] * 2 for i in range(size)]


def test_sendrecv_ring_and_open_ends(via, rank, size):
    x = jnp.asarray(_data(rank, (3,)))
    right, left = (rank + 1) % size, (rank - 1) % size
    fn = lambda a: mj.sendrecv(a, dst=right, src=left)  # noqa: E731
    _same(_jit(fn)(x), fn(x), _data(left, (3,)))
    # a non-periodic shift: the last rank sends nothing, the first receives zeros
    fn = lambda a: mj.sendrecv(a, dst=rank + 1 if rank + 1 < size else None,  # noqa: E731
                               src=rank - 1 if rank > 0 else None)
    _same(_jit(fn)(x), fn(x), np.zeros(3, np.float32) if rank == 0 else _data(rank - 1, (3,)))


def test_program_order_is_kept(via, rank, size):
    """Many collectives of different kinds and sizes in one program, in loops and
    branches: every rank runs them in one order, so each gets its own peers' data."""

    def program(x):
        outs = []
        for k in range(6):
            y = x[: k + 1] * (k + 1)
            outs.append(mj.all_reduce(y) if k % 2 else mj.all_gather_into_tensor(y))
        carry, seq = jax.lax.scan(lambda c, _: (mj.all_reduce(c) / size, mj.broadcast(c, src=0)),
                                  x, None, length=3)
        branch = jax.lax.cond(x.sum() > -1e9, lambda a: mj.all_reduce(a, op=OP.MAX),
                              lambda a: mj.all_reduce(a, op=OP.MIN), x)
        return outs, carry, seq, branch

    x = jnp.asarray(_data(rank, (6,)))
    got = jax.tree.leaves(_jit(program)(x))
    want = jax.tree.leaves(program(x))  # eagerly: the same calls one by one
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_collectives_carry_the_ordered_effect(via, rank, size, monkeypatch):
    """What keeps the order: each collective declares JAX's ordered effect, so the
    compiled program threads one token through all of them (in program order) and keeps
    even a collective whose result is unused. XLA on the CPU happens to run independent
    callbacks in program order anyway; this checks the guarantee itself."""
    x = jnp.asarray(_data(rank, (4,)))

    def program(a):
        mj.all_gather_into_tensor(a)  # result unused: must run all the same
        return mj.all_reduce(a) + mj.broadcast(a, src=0)

    assert _primitive.ordered_effect() in jax.make_jaxpr(program)(x).effects
    assert "token" in _jit(program).lower(x).as_text()
    ran = []
    run = _primitive._host.run
    monkeypatch.setattr(_primitive._host, "lean", lambda *a: None)  # every call through run
    monkeypatch.setattr(_primitive._host, "run",
                        lambda kind, *rest: (ran.append(kind), run(kind, *rest))[1])
    y = _jit(program)(x)
    jax.effects_barrier()
    assert ran == ["all_gather", "all_reduce", "broadcast"]
    np.testing.assert_allclose(np.asarray(y), sum(_every((4,), size=size)) + _data(0, (4,)),
                               rtol=1e-5, atol=1e-6)


def test_repeated_calls_take_the_lean_path_and_stay_right(via, rank, size, monkeypatch):
    """A compiled step repeats its collectives: the first call of each goes through
    ``_host.run`` (the general path, which validates and stores the MPI call), the later
    ones through the lean form built at lowering. Every call, fresh values each time,
    equals the numpy reference; all_reduce both in place (XLA aliases the buffer) and
    not (io_callback's fresh output)."""
    ran = []
    run = _primitive._host.run
    monkeypatch.setattr(_primitive._host, "run",
                        lambda kind, *rest: (ran.append(kind), run(kind, *rest))[1])
    shape = (2 * size, 3)
    forms = {
        "all_reduce": (lambda a: mj.all_reduce(a, op=OP.MAX),
                       lambda xs: functools.reduce(np.maximum, xs)),
        "all_gather": (mj.all_gather_into_tensor, np.concatenate),
        "reduce_scatter": (mj.reduce_scatter_tensor,
                           lambda xs: sum(xs)[2 * rank:2 * rank + 2]),
        "all_to_all": (mj.all_to_all_single,
                       lambda xs: np.concatenate([x[2 * rank:2 * rank + 2] for x in xs])),
    }
    for fn, reference in forms.values():
        step = _jit(fn)
        for salt in range(4):
            xs = _every(shape, salt=salt + 7, size=size)
            got = np.asarray(step(jnp.asarray(xs[rank])))
            np.testing.assert_allclose(got, reference(xs), rtol=1e-5, atol=1e-6)
    # each at most once through run (not at all where an earlier test stored the call),
    # though each ran 4 times
    assert sorted(set(ran)) == sorted(ran) and set(ran) <= set(forms), ran


def test_chained_small_collectives_on_fresh_buffers_stay_right(via, rank, size,
                                                                 monkeypatch):
    """XLA may hand a compiled collective new buffers on each call. The FFI handler says
    so (``fresh``: not the buffers of the site's last two calls), and the lean forms then
    copy small ones through arrays of their own (``_host.STAGED``), where the group
    keeps their messages. Chained, called again with new values, every form equals
    numpy; under the handler, some calls were fresh."""
    said = []
    lean = _primitive._host.lean

    def watched(*a, **k):
        f = lean(*a, **k)
        if f is None:
            return None
        return lambda src, out, fresh=False: (said.append(fresh), f(src, out, fresh))[1]

    monkeypatch.setattr(_primitive._host, "lean", watched)
    shape = (size, 2)  # (a few bytes a rank)

    def program(a):
        for _ in range(3):
            a = mj.all_to_all_single(a)
            a = mj.all_reduce(a, op=OP.MAX)
            a = mj.reduce_scatter_tensor(mj.all_gather_into_tensor(a), op=OP.SUM) / size
        return a

    def reference(xs):
        for _ in range(3):
            xs = [np.concatenate([x[r:r + 1] for x in xs]) for r in range(size)]
            xs = [functools.reduce(np.maximum, xs)] * size
            xs = [sum(np.concatenate(xs)[r * size:(r + 1) * size] for _ in range(size)) / size
                  for r in range(size)]
        return xs[rank]

    step = _jit(program)
    for salt in range(3):
        xs = _every(shape, salt=salt + 11, size=size)
        got = np.asarray(step(jnp.asarray(xs[rank])))
        np.testing.assert_allclose(got, reference(xs), rtol=1e-5, atol=1e-6)
    if via == "ffi" and size > 1:
        assert True in said, said  # (the handler told the lean forms which were fresh)


def test_jitted_calls_in_flight_do_not_mix_with_eager_ones(via, rank, size):
    """JAX dispatches asynchronously: the compiled collectives may still run on XLA's
    thread while the main thread calls mpicoll eagerly. Different communicators keep
    them apart."""
    step = _jit(lambda a: mj.all_reduce(mj.all_reduce(a) + 1.0))
    x = jnp.asarray(_data(rank, (1000,)))
    pending = []
    for i in range(5):
        pending.append(step(x))  # not waited for
        host = F.all_reduce(np.full(1000, float(rank + i)))  # main thread, meanwhile
        np.testing.assert_array_equal(host, np.full(1000, sum(r + i for r in range(size))))
    total = sum(_data(r, (1000,)) for r in range(size))
    for y in pending:
        np.testing.assert_allclose(np.asarray(y), size * (total + 1.0), rtol=1e-5, atol=1e-4)


def test_vmap_batches_into_one_collective(via, rank, size):
    xb = jnp.asarray(_data(rank, (5, 2 * size, 3)))  # 5 examples
    checks = [
        (lambda a: mj.all_reduce(a), 0),
        (lambda a: mj.all_gather_into_tensor(a), 0),
        (lambda a: mj.reduce_scatter_tensor(a), 0),
        (lambda a: mj.all_to_all_single(a), 0),
        (lambda a: mj.broadcast(a, src=size - 1), 0),
        (lambda a: mj.all_to_all_single(a), 1),  # the batch in another axis
    ]
    for fn, axis in checks:
        batched = jnp.moveaxis(xb, 0, axis)
        got = _jit(jax.vmap(fn, in_axes=axis))(batched)
        want = jnp.stack([fn(xb[i]) for i in range(5)])
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_functional_routes_tracers_to_mpicoll_jax(rank, size):
    x = jnp.asarray(_data(rank, (4,)))
    got = jax.jit(lambda a: F.all_reduce(a) + F.all_gather_into_tensor(a)[:4])(x)
    total = sum(_data(r, (4,)) for r in range(size))
    np.testing.assert_allclose(np.asarray(got), total + _data(0, (4,)), rtol=1e-6)


def test_static_checks_raise_before_communicating(rank, size):
    x = jnp.ones((2 * size, 2))
    with pytest.raises(ValueError, match="output_split_sizes must be given"):
        jax.jit(lambda a: mj.all_to_all_single(a, input_split_sizes=[2] * size))(x)
    with pytest.raises(ValueError, match="input_split_sizes must sum to dim 0"):
        jax.jit(lambda a: mj.all_to_all_single(a, [2] * size, [1] * size))(x)
    with pytest.raises(ValueError, match=r"sizes\[\d+\] must be dim 0"):
        jax.jit(lambda a: mj.all_gather(a, sizes=[1] * size))(x)
    with pytest.raises(ValueError, match="needs an integer"):
        jax.jit(lambda a: mj.all_reduce(a, op=OP.BAND))(x)
    if size > 1:  # at one rank every size divides; arrays of different shapes need
        with pytest.raises(ValueError, match="divisible by the group size"):  # output_shapes
            jax.jit(mj.reduce_scatter_tensor)(jnp.ones((2 * size + 1,)))
        with pytest.raises(ValueError, match="output_shapes must be given"):
            jax.jit(lambda *a: mj.all_to_all(list(a)))(*[jnp.ones(j + 1) for j in range(size)])
    with pytest.raises(TypeError, match="must be a Python number"):
        jax.jit(lambda a, f: mj.all_reduce(a, op=OP.premul_sum(f)))(x, 2.0)


def test_forward_mode_autodiff_is_refused_clearly(rank, size):
    with pytest.raises(TypeError, match=r"jvp.*custom_vjp"):
        jax.jvp(mj.all_reduce, (jnp.ones(3),), (jnp.ones(3),))


# -- a data-parallel training step, compiled with its gradient all-reduce --------------


def _mlp(params, x):
    (w1, b1), (w2, b2) = params
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


def _loss(params, x, y):
    return jnp.mean((_mlp(params, x) - y) ** 2)


def _init():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    return [(jax.random.normal(k1, (4, 8)) * 0.5, jnp.zeros(8)),
            (jax.random.normal(k2, (8, 1)) * 0.5, jnp.zeros(1))]


def test_data_parallel_training_step_under_jit(rank, size):
    data = np.random.default_rng(7)
    n = 4 * size  # the whole batch: equal shards, so the mean of means is the mean
    xs = jnp.asarray(data.standard_normal((n, 4)), jnp.float32)
    ys = jnp.asarray(data.standard_normal((n, 1)), jnp.float32)
    lo, hi = 4 * rank, 4 * rank + 4  # this rank's shard
    lr = 0.1

    @jax.jit
    def step(params, x, y):
        grads = jax.grad(_loss)(params, x, y)
        grads = jax.tree.map(lambda g: mj.all_reduce(g, op=OP.AVG), grads)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    @jax.jit
    def one_process_step(params, x, y):
        grads = jax.grad(_loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    params, reference = _init(), _init()
    for _ in range(5):
        params = step(params, xs[lo:hi], ys[lo:hi])
        reference = one_process_step(reference, xs, ys)
    flat = np.concatenate([np.asarray(p).ravel() for p in jax.tree.leaves(params)])
    every = F.all_gather_into_tensor(flat, stacked=True)
    for r in range(size):  # the same parameters on every rank, bit for bit
        np.testing.assert_array_equal(every[r], flat)
    for p, q in zip(jax.tree.leaves(params), jax.tree.leaves(reference), strict=True):
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=2e-5, atol=1e-6)
