"""The GPU path on a real CUDA device: torch CUDA tensors and CuPy arrays (staged through
host memory, or straight to a GPU-aware MPI), the producer's stream, DDP on CUDA, JAX
arrays on the GPU eagerly and inside ``jax.jit``.

Every expectation is the same call on CPU tensors (or a numpy reference). Skipped,
visibly, where no CUDA device is visible; the collective test modules also run on
``torch-cuda`` and ``cupy`` there (tests/_frameworks.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import mpicoll as dist

pytestmark = pytest.mark.gpu


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    return torch


def _cupy():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no driver
        pass
    pytest.skip("no CUDA device on this machine")


def _data(torch, rank, n, dtype="float32"):
    g = torch.Generator().manual_seed(1000 + rank)
    return (torch.randn(n, generator=g) * 8).round().to(getattr(torch, dtype))


def _calls(torch, rank, size, device):
    """Each collective of torch's API on ``device``; returns the outputs, on the CPU."""
    out = {}
    t = _data(torch, rank, 1000).to(device)
    dist.all_reduce(t)
    out["all_reduce"] = t
    t = _data(torch, rank, 1000, "int64").to(device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out["all_reduce_max_int64"] = t
    t = _data(torch, rank, 17).to(device)
    dist.broadcast(t, src=size - 1)
    out["broadcast"] = t
    x = _data(torch, rank, 5).to(device)
    gathered = torch.empty(size * 5, device=device)
    dist.all_gather_into_tensor(gathered, x)
    out["all_gather_into_tensor"] = gathered
    stacked = torch.empty(size, 5, device=device)
    dist.all_gather_into_tensor(stacked, x)
    out["all_gather_stacked"] = stacked
    x = _data(torch, rank, size * 6).to(device)
    scattered = torch.empty(6, device=device)
    dist.reduce_scatter_tensor(scattered, x)
    out["reduce_scatter_tensor"] = scattered
    # uneven: rank r sends (r + j) % 3 + 1 rows of 2 to rank j
    send = [(rank + j) % 3 + 1 for j in range(size)]
    recv = [(j + rank) % 3 + 1 for j in range(size)]
    x = _data(torch, rank, sum(send) * 2).reshape(-1, 2).to(device)
    y = torch.full((sum(recv), 2), -1.0, device=device)
    dist.all_to_all_single(y, x, output_split_sizes=recv, input_split_sizes=send)
    out["all_to_all_single_uneven"] = y
    ins = [_data(torch, 10 * rank + j, send[j]).to(device) for j in range(size)]
    outs = [torch.full((recv[j],), -1.0, device=device) for j in range(size)]
    dist.all_to_all(outs, ins)
    out["all_to_all_lists"] = torch.cat(outs)
    lst = [torch.empty(3, device=device) for _ in range(size)]
    dist.all_gather(lst, _data(torch, rank, 3).to(device))
    out["all_gather_list"] = torch.cat(lst)
    work = dist.all_reduce(t := _data(torch, rank, 64).to(device), async_op=True)
    work.wait()
    out["all_reduce_async"] = t
    for name, value in out.items():
        assert value.device.type == torch.device(device).type, name
    return {k: v.cpu() for k, v in out.items()}


def test_torch_cuda_collectives_match_cpu(rank, size):
    torch = _torch()
    on_gpu = _calls(torch, rank, size, "cuda")
    on_cpu = _calls(torch, rank, size, "cpu")
    assert on_gpu.keys() == on_cpu.keys()
    for name in on_cpu:
        assert torch.equal(on_gpu[name], on_cpu[name]), name
    # and one independent reference: the sum over every rank's data
    every = sum(_data(torch, r, 1000) for r in range(size))
    assert torch.equal(on_gpu["all_reduce"], every)


def test_cupy_collectives_match_numpy(rank, size):
    cupy = _cupy()
    x = np.arange(size * 4, dtype=np.float64) + 100 * rank
    y = cupy.empty(size * 4)
    dist.all_to_all_single(y, cupy.asarray(x))
    want = np.concatenate([np.arange(rank * 4, rank * 4 + 4) + 100 * j for j in range(size)])
    np.testing.assert_array_equal(cupy.asnumpy(y), want)
    t = cupy.full(300, rank + 1, dtype=cupy.int32)
    dist.all_reduce(t)
    assert int(t[0]) == size * (size + 1) // 2 and bool((t == t[0]).all())
    g = cupy.empty((size, 3), dtype=cupy.float32)
    dist.all_gather_into_tensor(g, cupy.full(3, rank, dtype=cupy.float32))
    np.testing.assert_array_equal(cupy.asnumpy(g), np.repeat(np.arange(size), 3).reshape(size, 3))


def test_torch_input_written_by_a_long_kernel_on_another_stream(rank, size):
    """A kernel still running on the caller's (non-default) stream writes the input just
    before the call: MPI must see what it wrote, and the result must be in place when the
    call returns, to the host and to later kernels on that stream. (Staged, the copy to
    the host is queued behind the kernel anyway; a GPU-aware MPI reading the memory
    directly relies on mpicoll's synchronisation of the stream.)"""
    torch = _torch()
    n = 1 << 20
    s = torch.cuda.Stream()
    for _ in range(3):
        x = torch.zeros(n, device="cuda")
        with torch.cuda.stream(s):
            torch.cuda._sleep(20_000_000)  # some ms of GPU time before the write
            x.fill_(rank + 1)
            dist.all_reduce(x)
            y = x * 2  # queued after the call, on the same stream
        s.synchronize()
        total = size * (size + 1) // 2
        assert torch.all(x == total).item()
        assert torch.all(y == 2 * total).item()
        # the async form: the result is there once wait() returns
        with torch.cuda.stream(s):
            torch.cuda._sleep(20_000_000)
            x.fill_(rank + 2)
            work = dist.all_reduce(x, async_op=True)
            work.wait()
            z = x + 1
        s.synchronize()
        assert torch.all(z == total + size + 1).item()


def test_cupy_input_written_by_a_long_kernel_on_another_stream(rank, size):
    cupy = _cupy()
    spin = cupy.RawKernel(r"""
    extern "C" __global__ void spin_then_fill(float* x, int n, float v, long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
        for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = v;
    }""", "spin_then_fill")
    n = 1 << 18
    s = cupy.cuda.Stream(non_blocking=True)
    for _ in range(3):
        x = cupy.zeros(n, dtype=cupy.float32)
        cupy.cuda.Device().synchronize()
        with s:
            spin((1,), (256,), (x, np.int32(n), np.float32(rank + 1), np.int64(20_000_000)))
            dist.all_reduce(x)
            y = x * 2
        s.synchronize()
        total = size * (size + 1) // 2
        assert bool((x == total).all()) and bool((y == 2 * total).all())


def test_ddp_on_cuda_matches_single_process_training(rank, size):
    torch = _torch()
    import _ddp
    import torch.distributed as tdist

    import mpicoll.torch  # noqa: F401  (registers the backend)

    tdist.init_process_group("mpicoll", init_method="mpi://")
    try:
        _ddp.matches_single_process_training(rank, size, f"cuda:{torch.cuda.current_device()}")
    finally:
        tdist.destroy_process_group()


def _jax_gpu():
    jax = pytest.importorskip("jax")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("JAX sees no GPU on this machine")
    return jax, gpus[0]


def test_jax_gpu_arrays_eagerly_and_in_jit(rank, size):
    jax, gpu = _jax_gpu()
    import jax.numpy as jnp

    import mpicoll.jax as mj

    host = np.arange(12, dtype=np.float32).reshape(3, 4) + rank
    total = sum(np.arange(12, dtype=np.float32).reshape(3, 4) + r for r in range(size))
    x = jax.device_put(jnp.asarray(host), gpu)
    for y in (mj.all_reduce(x), jax.jit(mj.all_reduce)(x)):
        assert next(iter(y.devices())).platform == "gpu"
        np.testing.assert_array_equal(np.asarray(y), total)
    gathered = jax.jit(lambda a: mj.all_gather_into_tensor(a * 2))(x)
    assert next(iter(gathered.devices())).platform == "gpu"
    np.testing.assert_array_equal(
        np.asarray(gathered),
        np.concatenate([2 * (np.arange(12, dtype=np.float32).reshape(3, 4) + r)
                        for r in range(size)]))

    def loss(w):  # the gradient of an all_reduce is an all_reduce of the gradient
        return jnp.sum(mj.all_reduce(w * w))

    g = jax.jit(jax.grad(loss))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * host * size, rtol=1e-6)
