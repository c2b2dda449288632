"""Persistent collectives (*_init): results against numpy references over many restarts,
both MPI paths (the library's MPI_*_init and the fallback to the ordinary call), async
starts, staging, checked mode, and misuse (reallocated tensors, pending starts, free)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from _reference import block, reduce_ref, round_to, split, values
from mpi4py import MPI

import mpicoll as dist
from mpicoll._checkmode import verify
from mpicoll._collectives import _call, _persistent
from mpicoll._env import settings
from mpicoll.errors import SignatureMismatch, SizeMismatch

FRAMEWORKS = ["numpy", "torch", "paddle"]
COLS = 3


@pytest.fixture(params=FRAMEWORKS)
def fw(request):
    return request.param


@pytest.fixture(params=["native", "fallback"])
def path(request, monkeypatch):
    """Each case runs on MPI's persistent collectives (forced, as MPICOLL_PERSISTENT=1
    does; both pip MPIs have MPI_*_init) and on the fallback (MPICOLL_PERSISTENT=0)."""
    use = request.param == "native"
    monkeypatch.setattr(_persistent, "_choice", (use, "set by the test"))
    return use


# -- tensors of each framework -------------------------------------------------------


def make(fw, a, dtype):
    """A new tensor of ``fw`` holding numpy ``a`` as ``dtype``."""
    a = np.asarray(a)
    if fw == "numpy":
        return np.array(a, dtype=dtype)
    held = a.astype(np.float32 if dtype == "bfloat16" else dtype)
    if fw == "torch":
        torch = importlib.import_module("torch")
        return torch.from_numpy(np.ascontiguousarray(held)).to(getattr(torch, dtype))
    paddle = importlib.import_module("paddle")
    t = paddle.to_tensor(np.ascontiguousarray(held))
    return t.astype("bfloat16") if dtype == "bfloat16" else t


def assign(fw, t, a, dtype):
    """Write ``a`` into ``t`` in place (its memory stays where it is)."""
    if fw == "numpy":
        t[...] = np.asarray(a).astype(dtype)
    elif fw == "torch":
        t.copy_(make("torch", a, dtype).reshape(t.shape))
    else:
        importlib.import_module("paddle").assign(make("paddle", a, dtype).reshape(t.shape),
                                                 output=t)


def back(t):
    """Any test tensor as numpy (bfloat16 widened to float32)."""
    if isinstance(t, np.ndarray):
        return t.copy()
    if "bfloat16" in str(t.dtype):
        return back(t.astype("float32") if hasattr(t, "astype") else t.float())
    return t.numpy().copy()


def check(t, expected, dtype, approx=False):
    got = back(t)
    e = np.asarray(expected)
    if dtype in ("float16", "bfloat16"):
        e = round_to(e, dtype).astype(np.float32)
    assert got.shape == e.shape, (got.shape, e.shape)
    if approx:
        np.testing.assert_allclose(got, e.astype(got.dtype), rtol=1e-5)
    else:
        np.testing.assert_array_equal(got, e.astype(got.dtype))


def skip_missing(fw, dtype):
    if fw == "numpy" and dtype == "bfloat16":
        pytest.skip("numpy has no bfloat16")


# -- results over restarts ------------------------------------------------------------

AR_CASES = [("float32", "SUM"), ("int32", "MAX"), ("float64", "AVG"), ("float16", "SUM"),
            ("bfloat16", "SUM"), ("bfloat16", "AVG"), ("bool", "BOR"), ("complex64", "SUM"),
            ("int8", "SUM"), ("int64", "PRODUCT")]


@pytest.mark.parametrize(("dtype", "op"), AR_CASES)
def test_all_reduce_init_restarts(fw, path, dtype, op, rank, size):
    skip_missing(fw, dtype)
    shape = (3, 5)
    t = make(fw, values(dtype, shape, rank), dtype)
    coll = dist.all_reduce_init(t, op=getattr(dist.ReduceOp, op))
    assert coll.persistent is path
    for i in range(3):  # new values in place, then a restart: the new result
        assign(fw, t, values(dtype, shape, rank, salt=i), dtype)
        coll()
        expected = reduce_ref([values(dtype, shape, r, salt=i) for r in range(size)], op,
                              dtype)
        check(t, expected, dtype, approx=op == "AVG" and "float16" not in dtype)
    coll.free()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_all_reduce_init_premul_sum(fw, path, dtype, rank, size):
    skip_missing(fw, dtype)
    x = values(dtype, (7,), rank)
    t = make(fw, x, dtype)
    with dist.all_reduce_init(t, op=dist.ReduceOp.premul_sum(2.5)) as coll:
        for i in range(2):
            x = values(dtype, (7,), rank, salt=i)
            assign(fw, t, x, dtype)
            coll()
            ref = sum(round_to(values(dtype, (7,), r, salt=i), dtype).astype(np.float64) * 2.5
                      for r in range(size))
            tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
            np.testing.assert_allclose(back(t), ref, rtol=tol)


@pytest.mark.parametrize("op", ["MIN", "MAX"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_all_reduce_init_keeps_nan(fw, path, op, dtype, rank, size):
    skip_missing(fw, dtype)

    def inputs(r, i):
        x = ((np.arange(6) * 7 + 3 * r + i) % 11 - 5).astype(np.float32)
        x[(r + i) % 6] = np.nan
        return x

    t = make(fw, inputs(rank, 0), dtype)
    with dist.all_reduce_init(t, op=getattr(dist.ReduceOp, op)) as coll:
        for i in range(3):
            assign(fw, t, inputs(rank, i), dtype)
            coll()
            ufunc = np.maximum if op == "MAX" else np.minimum
            expected = ufunc.reduce(np.stack([round_to(inputs(r, i), dtype).astype(np.float32)
                                              for r in range(size)]), axis=0)
            np.testing.assert_array_equal(back(t), expected)


@pytest.mark.parametrize("group_src", [False, True])
def test_broadcast_init_restarts(fw, path, group_src, rank, size):
    root = size - 1
    t = make(fw, values("float32", (4, 2), rank), "float32")
    kw = {"group_src": root} if group_src else {"src": root}
    with dist.broadcast_init(t, **kw) as coll:
        for i in range(3):
            assign(fw, t, values("float32", (4, 2), rank, salt=i), "float32")
            coll()
            check(t, values("float32", (4, 2), root, salt=i), "float32")


def _a2a_input(rank, size, dtype, salt):
    return np.concatenate([block(rank, j, split(rank, j), COLS, dtype) + salt
                           for j in range(size)])


def _a2a_expected(rank, size, dtype, salt):
    return np.concatenate([block(j, rank, split(j, rank), COLS, dtype) + salt
                           for j in range(size)])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_all_to_all_single_init_uneven(fw, path, dtype, rank, size):
    skip_missing(fw, dtype)
    inp = make(fw, _a2a_input(rank, size, dtype, 0), dtype)
    out = make(fw, np.full(_a2a_expected(rank, size, dtype, 0).shape, 99), dtype)
    coll = dist.all_to_all_single_init(out, inp, [split(j, rank) for j in range(size)],
                                       [split(rank, j) for j in range(size)])
    for salt in range(3):
        assign(fw, inp, _a2a_input(rank, size, dtype, salt), dtype)
        coll()
        check(out, _a2a_expected(rank, size, dtype, salt), dtype)
    coll.free()


def test_all_to_all_single_init_even(fw, path, rank, size):
    n = 2 * size
    inp = make(fw, np.arange(n * COLS).reshape(n, COLS) + 100 * rank, "float64")
    out = make(fw, np.zeros((n, COLS)), "float64")
    with dist.all_to_all_single_init(out, inp) as coll:
        for i in range(3):
            assign(fw, inp, np.arange(n * COLS).reshape(n, COLS) + 100 * rank + i, "float64")
            coll()
            expected = np.concatenate([(np.arange(n * COLS).reshape(n, COLS) + 100 * j + i)
                                       [2 * rank:2 * rank + 2] for j in range(size)])
            check(out, expected, "float64")


@pytest.mark.parametrize("stacked", [False, True])
def test_all_gather_into_tensor_init(fw, path, stacked, rank, size):
    inp = make(fw, values("float32", (2, 3), rank), "float32")
    shape = (size, 2, 3) if stacked else (2 * size, 3)
    out = make(fw, np.zeros(shape), "float32")
    with dist.all_gather_into_tensor_init(out, inp) as coll:
        for i in range(3):
            assign(fw, inp, values("float32", (2, 3), rank, salt=i), "float32")
            coll()
            expected = np.stack([values("float32", (2, 3), r, salt=i) for r in range(size)])
            check(out, expected.reshape(shape), "float32")


def test_all_gather_into_tensor_init_in_place(path, rank, size):
    out = np.zeros((size, 4), np.int64)
    mine = out[rank]  # this rank's chunk of the output: gathered with MPI.IN_PLACE
    with dist.all_gather_into_tensor_init(out, mine) as coll:
        for i in range(3):
            mine[...] = np.arange(4) + 10 * rank + i
            coll()
            np.testing.assert_array_equal(
                out, [np.arange(4) + 10 * r + i for r in range(size)])


@pytest.mark.parametrize(("dtype", "op"), [("float32", "SUM"), ("float64", "AVG"),
                                           ("bfloat16", "SUM"), ("int32", "MIN")])
def test_reduce_scatter_tensor_init(fw, path, dtype, op, rank, size):
    skip_missing(fw, dtype)
    inp = make(fw, values(dtype, (size * 2, 3), rank), dtype)
    out = make(fw, np.zeros((2, 3)), dtype)
    with dist.reduce_scatter_tensor_init(out, inp, op=getattr(dist.ReduceOp, op)) as coll:
        for i in range(3):
            x = values(dtype, (size * 2, 3), rank, salt=i)
            assign(fw, inp, x, dtype)
            coll()
            full = reduce_ref([values(dtype, (size * 2, 3), r, salt=i) for r in range(size)],
                              op, dtype)
            check(out, full[2 * rank:2 * rank + 2], dtype, approx=op == "AVG")
            check(inp, x, dtype)  # the input is never modified


def test_many_restarts(fw, path, rank, size):
    t = make(fw, np.zeros(4), "float64")
    with dist.all_reduce_init(t) as coll:
        for i in range(300):
            assign(fw, t, np.full(4, rank + i), "float64")
            coll()
            assert back(t).tolist() == [size * i + size * (size - 1) / 2] * 4


# -- async starts ---------------------------------------------------------------------


def test_async_start(fw, path, rank, size):
    a = make(fw, np.full(3, rank + 1.0), "float32")
    b = make(fw, np.zeros(2 * size), "float32")
    c = make(fw, np.arange(2.0) + rank, "float32")
    with dist.all_reduce_init(a) as ar, dist.all_gather_into_tensor_init(b, c) as ag:
        for i in range(3):
            assign(fw, a, np.full(3, rank + 1.0 + i), "float32")
            w1 = ar.start(async_op=True)
            w2 = ag.start(async_op=True)
            assert isinstance(w1, dist.Work)
            assert w2.wait() is True
            w1.wait()
            assert w1.is_completed() and w1.is_success() and w1.exception() is None
            assert back(a).tolist() == [size * (size + 1) / 2 + size * i] * 3
            expected = np.concatenate([np.arange(2.0) + r for r in range(size)])
            np.testing.assert_array_equal(back(b), expected)


def test_async_wait_timeout(path, rank, size):
    t = np.ones(3)
    with dist.all_reduce_init(t) as coll:
        work = coll.start(async_op=True)
        assert work.wait(timeout=60)
        assert t.tolist() == [size] * 3


def test_mixed_with_ordinary_collectives(path, rank, size):
    t = np.ones(2)
    u = np.ones(2)
    with dist.all_reduce_init(t) as coll:
        for _ in range(3):
            t[...] = 1
            u[...] = 2
            w = coll.start(async_op=True)
            dist.all_reduce(u)
            w.wait()
            assert t.tolist() == [size] * 2 and u.tolist() == [2 * size] * 2


# -- staging: non-contiguous and lazily transformed tensors ---------------------------


def test_non_contiguous_tensors(path, rank, size):
    torch = importlib.import_module("torch")
    base = torch.zeros(4, 6)
    t = base.t()[::2]  # (3, 4), strided

    def a2a_input(r, i):
        return np.arange(2.0 * size * 3).reshape(2 * size, 3) + 100 * r + i

    inp = torch.from_numpy(a2a_input(rank, 0).T.copy()).t()  # (2P, 3), strided
    out = np.zeros((3, 2 * size)).T  # numpy, strided
    with dist.all_reduce_init(t) as ar, dist.all_to_all_single_init(out, inp.numpy()) as a2a:
        for i in range(3):
            t.copy_(torch.full((3, 4), rank + i * 10.0))
            ar()
            assert (t == size * i * 10.0 + size * (size - 1) / 2).all()
            assert base.t()[1::2].eq(0).all()  # the rest of base is untouched
            inp.copy_(torch.from_numpy(a2a_input(rank, i)))
            a2a()
            assert not out.flags.c_contiguous
            expected = np.concatenate([a2a_input(j, i)[2 * rank:2 * rank + 2]
                                       for j in range(size)])
            np.testing.assert_array_equal(out, expected)


def test_conjugated_view(path, rank, size):
    torch = importlib.import_module("torch")
    src = torch.tensor([1 + 1j, 2 - 1j]) * (rank + 1)
    out = torch.zeros(2 * size, dtype=torch.complex64)
    with dist.all_gather_into_tensor_init(out, src.conj()) as coll:
        for i in range(2):
            if i:
                src.mul_(2)
            coll()
            expected = np.concatenate([np.conj(np.array([1 + 1j, 2 - 1j]) * (r + 1) * 2 ** i)
                                       for r in range(size)])
            np.testing.assert_allclose(out.numpy(), expected)


def test_aliased_all_to_all(path, rank, size):
    original = np.arange(size * 2.0) + 10 * rank
    swapped = np.concatenate([np.arange(2.0 * rank, 2.0 * rank + 2) + 10 * j
                              for j in range(size)])
    a = original.copy()
    with dist.all_to_all_single_init(a, a) as coll:
        for i in range(4):
            coll()  # block j <- rank j's block r, as a held when this start began
            np.testing.assert_array_equal(a, swapped if i % 2 == 0 else original)


# -- the protections ordinary collectives have ---------------------------------------


def test_each_start_is_a_numbered_collective(path, rank, size):
    pg = dist.group.WORLD
    t = np.ones(2)
    s0 = pg.seq
    coll = dist.all_reduce_init(t)
    assert pg.seq == s0 + 1  # set-up is ordered with the other collectives
    coll()
    work = coll.start(async_op=True)
    assert work.seq == pg.seq == s0 + 3
    work.wait()
    coll.free()


def test_checked_mode_verifies_init_and_each_start(path, monkeypatch, rank, size):
    calls = []

    def spy(op, group, sig):
        calls.append(op)
        verify(op, group, sig)

    monkeypatch.setattr(settings(), "check", True)
    monkeypatch.setattr(_persistent, "verify", spy)
    monkeypatch.setattr(_call, "verify", spy)  # the fallback's starts go through issue()
    t = np.ones(2)
    with dist.all_reduce_init(t) as coll:
        coll()
        coll()
    assert calls == ["all_reduce_init", "persistent all_reduce", "persistent all_reduce"]
    assert t.tolist() == [size ** 2] * 2


def test_checked_mode_catches_disagreeing_sizes(path, monkeypatch, rank, size):
    if size == 1:
        pytest.skip("needs ranks that disagree")
    monkeypatch.setattr(settings(), "check", True)
    t = np.ones(rank + 1)
    with pytest.raises(SignatureMismatch, match="numel differs"):
        dist.all_reduce_init(t)


def test_default_choice_and_info(monkeypatch):
    monkeypatch.setattr(_persistent, "_choice", None)
    monkeypatch.delenv("MPICOLL_PERSISTENT", raising=False)
    use, why = _persistent.available()
    assert use is (MPI.Get_version() >= (4, 0))
    coll = dist.all_reduce_init(np.zeros(1))
    assert coll.persistent is use
    coll.free()
    from mpicoll.__main__ import info

    rows = dict(info(verbose=True))
    assert rows["persistent"] == f"{'yes' if use else 'no'} ({why})"
    monkeypatch.setattr(_persistent, "_choice", None)
    monkeypatch.setenv("MPICOLL_PERSISTENT", "0")
    assert _persistent.available()[0] is False
    monkeypatch.setattr(_persistent, "_choice", None)
    monkeypatch.setenv("MPICOLL_PERSISTENT", "1")
    assert _persistent.available() == (True, "forced by MPICOLL_PERSISTENT=1; MPI {}.{}"
                                       .format(*MPI.Get_version()))


def test_non_member_rank(path, rank, size):
    g = dist.new_group([0])
    t = np.full(2, rank + 1.0)
    with dist.all_reduce_init(t, group=g) as coll:
        assert coll() is None
        if rank == 0:
            assert coll.persistent is path
        else:
            assert coll.persistent is False and coll.group is None
            assert coll.start(async_op=True).wait()
    assert t.tolist() == [rank + 1.0] * 2
    dist.destroy_process_group(g)


# -- misuse ---------------------------------------------------------------------------


def test_reallocated_numpy_buffer(path, rank, size):
    a = np.ones(4)
    coll = dist.all_reduce_init(a)
    coll()
    seq = dist.group.WORLD.seq
    a.resize((6,), refcheck=False)  # new memory, new shape
    with pytest.raises(ValueError, match=r"persistent all_reduce: tensor was reallocated, "
                                         r"resized or changed dtype since all_reduce_init "
                                         r"\((data pointer, )?shape changed\)"):
        coll()
    a.resize((4,), refcheck=False)
    b = np.ones(6)
    b.shape = (2, 3)
    with dist.all_reduce_init(b) as c2:
        b.shape = (3, 2)  # the same memory seen as another shape: refused too
        with pytest.raises(ValueError, match=r"tensor .*\(shape, strides changed\)"):
            c2()
        b.dtype = np.int64
        with pytest.raises(ValueError, match=r"\(shape, strides, dtype changed\)"):
            c2()
    assert dist.group.WORLD.seq == seq + 1  # nothing was communicated (c2's set-up only)
    coll.free()


def test_reallocated_torch_tensor(path, rank, size):
    torch = importlib.import_module("torch")
    inp = torch.ones(2 * size)
    out = torch.zeros(2 * size)
    with dist.all_to_all_single_init(out, inp) as coll:
        coll()
        inp.data = torch.ones(2 * size)  # same shape, new memory
        with pytest.raises(ValueError, match=r"input was reallocated.*\(data pointer changed\)"):
            coll()
        with pytest.raises(ValueError) as info:
            coll()
        assert info.value.arg == "input" and info.value.reason == "reallocated"
    out2 = torch.zeros(3)
    with dist.all_reduce_init(out2) as coll:
        out2.set_(torch.zeros(5))
        with pytest.raises(ValueError, match=r"tensor was reallocated.*\(data pointer, "
                                             r"shape changed\)"):
            coll()


def test_resized_paddle_tensor(path, rank, size):
    paddle = importlib.import_module("paddle")
    t = paddle.ones([4])
    with dist.broadcast_init(t, src=0) as coll:
        coll()
        t.reshape_([2, 2])
        with pytest.raises(ValueError, match=r"tensor was reallocated.*\(shape, strides "
                                             r"changed\)"):
            coll()


def test_start_while_pending(path, rank, size):
    if size == 1:
        pytest.skip("a start completes at once with one rank")
    if settings().check:
        pytest.skip("checked mode: a start first exchanges signatures with its peers, "
                    "blocking, so it cannot be left pending")
    comm = MPI.COMM_WORLD
    t = np.ones(2)
    with dist.all_reduce_init(t) as coll:
        if rank == 0:
            work = coll.start(async_op=True)  # the others have not started: pending
            with pytest.raises(RuntimeError, match="persistent all_reduce: started while the "
                                                   "previous start is still pending"):
                coll.start()
            with pytest.raises(RuntimeError, match="still pending"):
                coll.free()
            for r in range(1, size):
                comm.send(None, dest=r, tag=4242)
            work.wait()
        else:
            comm.recv(source=0, tag=4242)
            coll.start(async_op=True).wait()
        assert t.tolist() == [size] * 2
        coll()  # usable again once completed
        assert t.tolist() == [size * size] * 2


def test_exit_waits_for_a_pending_start(path, rank, size):
    t = np.ones(2)
    with dist.all_reduce_init(t) as coll:
        coll.start(async_op=True)
    assert t.tolist() == [size] * 2
    with pytest.raises(RuntimeError, match="used after free"):
        coll.start()


def test_use_after_free(path):
    coll = dist.broadcast_init(np.ones(2), src=0)
    coll.free()
    coll.free()  # twice is harmless
    with pytest.raises(RuntimeError, match=r"persistent broadcast: used after free\(\)"):
        coll()
    assert "freed" in repr(coll)


def _message(fn, *args, **kwargs):
    with pytest.raises((ValueError, TypeError, BufferError)) as info:
        fn(*args, **kwargs)
    return info.type, str(info.value)


def _bad_cases(size):
    f = np.ones(2 * size, np.float32)
    ro = np.zeros(2 * size, np.float32)
    ro.flags.writeable = False
    return [
        ("all_reduce", (np.ones(3),), {"op": dist.ReduceOp.BAND}),
        ("all_reduce", (ro,), {}),
        ("broadcast", (f,), {"src": size + 5}),
        ("broadcast", (f,), {"src": 0, "group_src": 0}),
        ("all_to_all_single", (np.zeros(2 * size, np.float32), f), {
            "output_split_sizes": [2] * size, "input_split_sizes": [1] * size}),
        ("all_to_all_single", (np.zeros(2 * size, np.float32), f), {
            "input_split_sizes": [2 * size] + [0] * size}),
        ("all_to_all_single", (np.zeros(2 * size, np.float64), f), {}),
        ("all_to_all_single", (np.zeros(2 * size + 1, np.float32), f), {}),
        ("all_gather_into_tensor", (np.zeros(3 * size, np.float32), f), {}),
        ("reduce_scatter_tensor", (np.zeros(2, np.int32), f), {}),
        ("reduce_scatter_tensor", (np.zeros(3, np.float32), f), {}),
        ("reduce_scatter_tensor", (np.zeros(2, np.float32), f), {"op": dist.ReduceOp.BOR}),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases(1))))
def test_bad_arguments_as_the_ordinary_call(path, case, rank, size):
    name, args, kwargs = _bad_cases(size)[case]
    seq = dist.group.WORLD.seq
    before = [np.array(a, copy=True) for a in args]
    kind, ordinary = _message(getattr(dist, name), *args, **kwargs)
    kind2, persistent = _message(getattr(dist, f"{name}_init"), *args, **kwargs)
    assert kind2 is kind
    assert persistent == ordinary.replace(f"{name}:", f"{name}_init:", 1)
    assert dist.group.WORLD.seq == seq  # raised before any communication
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)  # outputs untouched


def test_jax_arrays_are_refused(path):
    jnp = importlib.import_module("jax.numpy")
    x = jnp.ones(3)
    with pytest.raises(BufferError, match=r"all_reduce_init: tensor is a JAX array, which is "
                                          r"immutable.*mpicoll\.functional"):
        dist.all_reduce_init(x)
    with pytest.raises(BufferError, match="all_gather_into_tensor_init: input_tensor is a JAX"):
        dist.all_gather_into_tensor_init(np.zeros(3 * dist.get_world_size()), x)


@pytest.mark.spawn
@pytest.mark.parametrize(("persistent", "how"), [("1", "blocking"), ("1", "async"),
                                                 ("0", "blocking")])
def test_stuck_start_is_reported_by_the_watchdog(persistent, how):
    from _launch import run

    p = run(3, ["tests/scripts/persistent_skip.py", how], timeout=90, MPICOLL_TIMEOUT="8",
            MPICOLL_PERSISTENT=persistent)
    assert p.returncode != 0
    assert "unreachable" not in p.stdout
    # barrier #1, all_reduce_init #2, the first start #3, the second #4
    assert "(timeout 8 s) in persistent all_reduce #4 on group '0' (global ranks [0, 1, 2]), " \
           "args: float32[16]" in p.stderr, p.stderr
    assert "ranks of the group: not arrived: global rank 1 (issued 3 collective(s) on " \
           "this group)" in p.stderr, p.stderr


# -- set-ups that differ across ranks, by default (no MPICOLL_CHECK) --------------------


def _every_rank_refuses(make, *said):
    with pytest.raises(SignatureMismatch) as e:
        make()
    for s in said:
        assert s in str(e.value), str(e.value)
    assert "Nothing was set up" in str(e.value)


@pytest.fixture
def _checks_by_default(size):
    if size == 1:
        pytest.skip("needs ranks that disagree")
    if settings().check or not settings().sizes:
        pytest.skip("the default checks: neither MPICOLL_CHECK=1 nor MPICOLL_CHECK=0")


def test_an_all_reduce_set_up_of_another_dtype_raises_on_every_rank(
        path, _checks_by_default, rank, size):
    """MPI's persistent collectives carry no tag: a float32 all_reduce_init against a
    float64 one returned garbage at every start, silently. The set-up now compares what
    it fixes, once, and every rank raises before anything is set up; the group goes on."""
    dt = np.float32 if rank == 0 else np.float64
    other = ("'float64' there, 'float32' here" if rank == 0 else
             "'float32' there, 'float64' here")
    _every_rank_refuses(lambda: dist.all_reduce_init(np.ones(4, dt)),
                        "all_reduce_init #", "set up different persistent collectives",
                        f"dtype: {other}")
    t = np.full(4, rank + 1.0)  # (nothing left behind: the next set-up runs right)
    with dist.all_reduce_init(t) as coll:
        coll()
    np.testing.assert_array_equal(t, np.full(4, size * (size + 1) / 2))


def test_set_ups_that_differ_in_op_root_size_or_collective_raise_on_every_rank(
        path, _checks_by_default, rank, size):
    x = np.ones(4)
    _every_rank_refuses(lambda: dist.all_reduce_init(
        x, op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX), "reduce op: ")
    _every_rank_refuses(lambda: dist.broadcast_init(x, src=0 if rank == 0 else 1),
                        "broadcast_init #", "root: group rank ")
    _every_rank_refuses(lambda: dist.all_reduce_init(np.ones(4 + (rank == 0))),
                        "size: from 4 to 5 elements")
    # (another collective: its root, -1 for an all_reduce, is not worded as a group rank)
    with pytest.raises(SignatureMismatch) as e:
        dist.all_reduce_init(x) if rank == 0 else dist.broadcast_init(x, src=0)
    theirs, mine = ("broadcast", "all_reduce") if rank == 0 else ("all_reduce", "broadcast")
    assert f"different persistent collectives: collective: '{theirs}' there, '{mine}' " \
        "here. Nothing was set up" in str(e.value), str(e.value)
    out2, in2 = np.zeros(2 * size, np.int32 if rank == 0 else np.float32), \
        np.ones(2 * size, np.int32 if rank == 0 else np.float32)
    _every_rank_refuses(lambda: dist.all_to_all_single_init(out2, in2), "dtype: ")


def test_all_to_all_single_set_ups_whose_split_sizes_do_not_pair_up_raise_on_every_rank(
        path, _checks_by_default, rank, size):
    """all_to_all_single_init's split sizes differ by rank: they must pair up. Rank 1
    expecting 3 rows from rank 0, which sends it 2, found its third row unwritten at
    every start, silently; and ranks that set up MPI's Alltoall (no split sizes) against
    another's Alltoallv (split sizes, even ones) made calls MPI cannot match."""
    rows = [2] * size
    inp = np.arange(2.0 * size * 3).reshape(2 * size, 3) + 100 * rank
    expect = [3 if (rank, j) == (1, 0) else 2 for j in range(size)]
    out = np.full((sum(expect), 3), -1.0)
    with pytest.raises(SizeMismatch) as e:
        dist.all_to_all_single_init(out, inp, output_split_sizes=expect,
                                    input_split_sizes=rows)
    said = str(e.value)
    assert said.startswith("all_to_all_single_init #") and "Nothing was set up" in said, said
    assert ("group rank 0 sends this rank 6 element(s), where this rank's output split "
            "sizes expect 9" if rank == 1 else "the split sizes of other ranks do not pair "
            "up") in said, said
    assert (out == -1).all()
    out = np.full((2 * size, 3), -1.0)
    with pytest.raises(SizeMismatch) as e:
        dist.all_to_all_single_init(out, inp, output_split_sizes=rows if rank == 0 else None,
                                    input_split_sizes=rows if rank == 0 else None)
    said = str(e.value)
    assert ("set it up without split sizes (MPI's Alltoall), this rank with them"
            if rank == 0 else "group rank 0 set it up with split sizes (MPI's Alltoallv), "
            "this rank without them") in said, said
    # (the group goes on: a set-up that pairs up runs)
    with dist.all_to_all_single_init(out, inp, output_split_sizes=rows,
                                     input_split_sizes=rows) as coll:
        coll()
    want = np.concatenate([(np.arange(2.0 * size * 3).reshape(2 * size, 3) + 100 * j)
                           [2 * rank:2 * rank + 2] for j in range(size)])
    np.testing.assert_array_equal(out, want)
