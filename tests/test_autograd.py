"""Gradients through collectives (mpicoll.jax under jax.grad, mpicoll.functional under
torch autograd), checked against one process that computes every rank's part.

Each rank r computes a loss f_r from its outputs; the objective is sum_r f_r (the
convention of torch.distributed.nn). The reference builds every rank's inputs,
applies the collective's definition to all of them, sums every rank's loss and
differentiates with respect to this rank's inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import mpicoll as dist
import mpicoll.functional as F

OP = dist.ReduceOp


def _inputs(rank, size, case):
    """This rank's inputs for ``case`` (a list of numpy arrays), from the rank alone."""
    rng = np.random.default_rng(100 * rank + 7)
    if case.startswith("all_reduce:M"):  # MIN/MAX: element 0 ties on every rank
        x = rng.standard_normal(5).astype(np.float32)
        x[0] = 0.5
        return [x]
    if case == "all_gather_uneven":
        return [rng.standard_normal((rank % 3 + 1, 2)).astype(np.float32)]
    if case in ("reduce_scatter_tensor", "reduce_scatter_tensor:AVG"):
        return [rng.standard_normal((2 * size, 3)).astype(np.float32)]
    if case == "reduce_scatter_list":
        return [rng.standard_normal((j + 1, 2)).astype(np.float32) for j in range(size)]
    if case == "all_to_all_single":
        return [rng.standard_normal((sum(_split(rank, j) for j in range(size)), 2))
                .astype(np.float32)]
    if case == "all_to_all_list":
        return [rng.standard_normal((_split(rank, j) + 1,)).astype(np.float32)
                for j in range(size)]
    return [rng.standard_normal((3, 2)).astype(np.float32)]


def _split(i, j):
    return (i + 2 * j) % 3  # rows rank i sends rank j


def _reference(case, xs, size, xp):
    """Every rank's outputs (a list per rank) from every rank's inputs ``xs``."""
    cat, stack = xp["cat"], xp["stack"]
    one = [x[0] for x in xs]
    total = sum(one) if case.startswith(("all_reduce", "reduce")) else None
    if case == "all_reduce:SUM":
        return [[total]] * size
    if case == "all_reduce:AVG":
        return [[total / size]] * size
    if case == "all_reduce:PREMUL":
        return [[2.5 * total]] * size
    if case in ("all_reduce:MAX", "all_reduce:MIN"):
        return [[xp["max" if case.endswith("MAX") else "min"](stack(one))]] * size
    if case == "broadcast":
        return [[one[size - 1]]] * size
    if case in ("reduce", "reduce:AVG"):
        c = 1 if case == "reduce" else 1 / size
        return [[c * total if r == 0 else one[r]] for r in range(size)]
    if case == "all_gather_into_tensor":
        return [[cat(one)]] * size
    if case == "all_gather_stacked":
        return [[stack(one)]] * size
    if case == "all_gather_uneven":
        return [list(one)] * size
    if case.startswith("reduce_scatter_tensor"):
        c = 1 / size if case.endswith("AVG") else 1
        k = one[0].shape[0] // size
        return [[c * total[r * k:(r + 1) * k]] for r in range(size)]
    if case == "reduce_scatter_list":
        return [[sum(xs[s][r] for s in range(size))] for r in range(size)]
    if case == "all_to_all_single":
        pieces = []
        for s in range(size):
            edges = np.cumsum([0, *[_split(s, j) for j in range(size)]])
            pieces.append([one[s][edges[j]:edges[j + 1]] for j in range(size)])
        return [[cat([pieces[s][r] for s in range(size)])] for r in range(size)]
    if case == "all_to_all_list":
        return [[xs[s][r] for s in range(size)] for r in range(size)]
    if case == "sendrecv":
        return [[one[(r - 1) % size]] for r in range(size)]
    raise AssertionError(case)


def _loss(outs, rank, xp):
    """f_r: a nonlinear, rank-dependent function of this rank's outputs."""
    total = 0.0
    for i, y in enumerate(outs):
        n = int(np.prod(y.shape))
        w = np.cos(np.arange(n) * 0.3 + rank + 0.7 * i).reshape(y.shape).astype(np.float32)
        total = total + xp["sum"](xp["sin"](y) * xp["const"](w))
    return total


CASES = ["all_reduce:SUM", "all_reduce:AVG", "all_reduce:PREMUL", "all_reduce:MAX",
         "all_reduce:MIN", "broadcast", "reduce", "reduce:AVG", "all_gather_into_tensor",
         "all_gather_stacked", "all_gather_uneven", "reduce_scatter_tensor",
         "reduce_scatter_tensor:AVG", "reduce_scatter_list", "all_to_all_single",
         "all_to_all_list", "sendrecv"]


# -- JAX ------------------------------------------------------------------------------


def _jax_collective(case, xs, rank, size):
    import mpicoll.jax as mj

    x = xs[0]
    send = [_split(rank, j) for j in range(size)]
    recv = [_split(i, rank) for i in range(size)]
    calls = {
        "all_reduce:SUM": lambda: [mj.all_reduce(x)],
        "all_reduce:AVG": lambda: [mj.all_reduce(x, op=OP.AVG)],
        "all_reduce:PREMUL": lambda: [mj.all_reduce(x, op=OP.premul_sum(2.5))],
        "all_reduce:MAX": lambda: [mj.all_reduce(x, op=OP.MAX)],
        "all_reduce:MIN": lambda: [mj.all_reduce(x, op=OP.MIN)],
        "broadcast": lambda: [mj.broadcast(x, src=size - 1)],
        "reduce": lambda: [mj.reduce(x, dst=0)],
        "reduce:AVG": lambda: [mj.reduce(x, dst=0, op=OP.AVG)],
        "all_gather_into_tensor": lambda: [mj.all_gather_into_tensor(x)],
        "all_gather_stacked": lambda: [mj.all_gather_into_tensor(x, stacked=True)],
        "all_gather_uneven": lambda: mj.all_gather(x, sizes=[r % 3 + 1 for r in range(size)]),
        "reduce_scatter_tensor": lambda: [mj.reduce_scatter_tensor(x)],
        "reduce_scatter_tensor:AVG": lambda: [mj.reduce_scatter_tensor(x, op=OP.AVG)],
        "reduce_scatter_list": lambda: [mj.reduce_scatter(list(xs))],
        "all_to_all_single": lambda: [mj.all_to_all_single(x, recv, send)],
        "all_to_all_list": lambda: mj.all_to_all(
            list(xs), output_shapes=[(_split(i, rank) + 1,) for i in range(size)]),
        "sendrecv": lambda: [mj.sendrecv(x, dst=(rank + 1) % size, src=(rank - 1) % size)],
    }
    return calls[case]()


def _jax_ops():
    import jax.numpy as jnp

    return {"cat": jnp.concatenate, "stack": jnp.stack, "sum": jnp.sum, "sin": jnp.sin,
            "max": lambda a: jnp.max(a, axis=0), "min": lambda a: jnp.min(a, axis=0),
            "const": jnp.asarray}


# eagerly, JAX compiles every small operation on its own: a few cases suffice there
EAGER = ["all_reduce:SUM", "all_reduce:MAX", "broadcast", "all_gather_uneven",
         "all_to_all_single"]


@pytest.mark.parametrize(("case", "jit"), [(c, True) for c in CASES] +
                         [(c, False) for c in EAGER],
                         ids=[f"{c}-jit" for c in CASES] + [f"{c}-eager" for c in EAGER])
def test_jax_grad_matches_one_process(case, jit, rank, size):
    import jax
    import jax.numpy as jnp

    ops = _jax_ops()
    mine = [jnp.asarray(a) for a in _inputs(rank, size, case)]

    def objective(xs):
        return _loss(_jax_collective(case, xs, rank, size), rank, ops)

    grad = jax.grad(objective)
    got = (jax.jit(grad) if jit else grad)(mine)

    every = [[jnp.asarray(a) for a in _inputs(r, size, case)] for r in range(size)]

    def total(all_xs):
        outs = _reference(case, all_xs, size, ops)
        return sum(_loss(outs[r], r, ops) for r in range(size))

    want = jax.jit(jax.grad(total))(every)[rank]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_jax_second_order_and_vmap_of_grad(rank, size):
    import jax
    import jax.numpy as jnp

    import mpicoll.jax as mj

    x = jnp.arange(3.0) + rank
    # d2/dx2 of sum_r sum(all_reduce(x)^3 / 6) = P * all_reduce(x) on every rank
    hess_diag = jax.grad(lambda a: jnp.sum(jax.grad(
        lambda b: jnp.sum(mj.all_reduce(b) ** 3) / 6)(a)))(x)
    s = sum(np.arange(3.0) + r for r in range(size))
    np.testing.assert_allclose(np.asarray(hess_diag), size * size * s, rtol=1e-5)
    # per-example gradients of a loss with a collective inside: vmap over grad
    xb = jnp.stack([x, 2 * x])
    per_example = jax.jit(jax.vmap(jax.grad(lambda b: jnp.sum(jnp.sin(mj.all_reduce(b))))))(xb)
    for i in range(2):
        total = sum((i + 1) * (np.arange(3.0) + r) for r in range(size))
        np.testing.assert_allclose(np.asarray(per_example[i]), size * np.cos(total), rtol=1e-5)


def test_jax_grad_refuses_ops_without_a_gradient(rank, size):
    import jax
    import jax.numpy as jnp

    import mpicoll.jax as mj

    with pytest.raises(NotImplementedError, match=r"jax.grad is defined for op SUM.*not PRODUCT"):
        jax.grad(lambda a: jnp.sum(mj.all_reduce(a, op=OP.PRODUCT)))(jnp.ones(2))


# -- torch ------------------------------------------------------------------------------


def _torch_collective(case, xs, rank, size):
    x = xs[0]
    send = [_split(rank, j) for j in range(size)]
    calls = {
        "all_reduce:SUM": lambda: [F.all_reduce(x)],
        "all_reduce:AVG": lambda: [F.all_reduce(x, op=OP.AVG)],
        "all_reduce:PREMUL": lambda: [F.all_reduce(x, op=OP.premul_sum(2.5))],
        "all_reduce:MAX": lambda: [F.all_reduce(x, op=OP.MAX)],
        "all_reduce:MIN": lambda: [F.all_reduce(x, op=OP.MIN)],
        "broadcast": lambda: [F.broadcast(x, src=size - 1)],
        "reduce": lambda: [F.reduce(x, dst=0)],
        "reduce:AVG": lambda: [F.reduce(x, dst=0, op=OP.AVG)],
        "all_gather_into_tensor": lambda: [F.all_gather_into_tensor(x)],
        "all_gather_stacked": lambda: [F.all_gather_into_tensor(x, stacked=True)],
        "all_gather_uneven": lambda: F.all_gather(x),  # shapes negotiated
        "reduce_scatter_tensor": lambda: [F.reduce_scatter_tensor(x)],
        "reduce_scatter_tensor:AVG": lambda: [F.reduce_scatter_tensor(x, op=OP.AVG)],
        "reduce_scatter_list": lambda: [F.reduce_scatter(list(xs))],
        "all_to_all_single": lambda: [F.all_to_all_single(x, input_split_sizes=send)[0]],
        "all_to_all_list": lambda: F.all_to_all(list(xs)),
    }
    return calls[case]()


def _torch_ops():
    import torch

    return {"cat": torch.cat, "stack": torch.stack, "sum": torch.sum, "sin": torch.sin,
            "max": lambda a: torch.amax(a, dim=0), "min": lambda a: torch.amin(a, dim=0),
            "const": torch.from_numpy}


@pytest.mark.parametrize("case", [c for c in CASES if c != "sendrecv"])
def test_torch_autograd_matches_one_process(case, rank, size):
    import torch
    ops = _torch_ops()
    mine = [torch.from_numpy(a).requires_grad_() for a in _inputs(rank, size, case)]
    _loss(_torch_collective(case, mine, rank, size), rank, ops).backward()

    every = [[torch.from_numpy(a).requires_grad_() for a in _inputs(r, size, case)]
             for r in range(size)]
    outs = _reference(case, every, size, ops)
    sum(_loss(outs[r], r, ops) for r in range(size)).backward()
    for got, want in zip(mine, every[rank], strict=True):
        expected = torch.zeros_like(want) if want.grad is None else want.grad  # unused input
        torch.testing.assert_close(got.grad, expected, rtol=1e-5, atol=1e-6)


def test_torch_without_grad_takes_functional_path(rank, size):
    import torch
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        y = F.all_reduce(x)
    assert not y.requires_grad and y.grad_fn is None
    z = F.all_reduce(x)
    assert z.requires_grad and type(z.grad_fn).__name__ == "_AllReduceBackward"


def test_torch_list_outputs_may_be_changed_in_place(rank, size):
    import torch
    x = torch.ones(3, requires_grad=True)
    outs = F.all_gather(x * 2)  # as torch's: separate tensors, not views of one buffer
    outs[rank].mul_(3)
    outs[rank].sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 6.0))  # only rank r used its own


def test_torch_backward_refuses_ops_without_a_gradient(rank, size):
    import torch
    y = F.all_reduce(torch.ones(2, requires_grad=True), op=OP.PRODUCT)  # forward runs
    np.testing.assert_array_equal(y.detach().numpy(), np.ones(2))
    with pytest.raises(RuntimeError, match=r"backward is defined for op SUM.*not PRODUCT"):
        y.sum().backward()


def test_torch_tensor_parallel_layer_trains_like_one_process(rank, size):
    """A column-parallel linear layer: each rank holds a slice of W's columns, computes
    its slice of the features, and all_gather joins them for the rest of the model.
    Each rank scores its own half of the batch; the summed loss is the one process's."""
    import torch
    gen = torch.Generator().manual_seed(0)
    w_full = torch.randn(4, 2 * size, generator=gen)
    head = torch.randn(2 * size, 1, generator=gen)
    x = torch.randn(6, 4, generator=gen)
    target = torch.randn(6, 1, generator=gen)

    w = w_full[:, 2 * rank:2 * rank + 2].clone().requires_grad_()  # this rank's columns
    h = head.clone().requires_grad_()
    feats = torch.cat(F.all_gather(torch.tanh(x @ w).t().contiguous()), dim=0).t()
    rows = slice(rank * 6 // size, (rank + 1) * 6 // size)
    loss = ((feats[rows] @ h - target[rows]) ** 2).sum()
    loss.backward()

    ref_w, ref_h = w_full.clone().requires_grad_(), head.clone().requires_grad_()
    ((torch.tanh(x @ ref_w) @ ref_h - target) ** 2).sum().backward()
    torch.testing.assert_close(w.grad, ref_w.grad[:, 2 * rank:2 * rank + 2])
    # the replicated head's gradient is the sum of every rank's part
    torch.testing.assert_close(F.all_reduce(h.grad), ref_h.grad)
