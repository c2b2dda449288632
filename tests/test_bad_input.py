"""Bad input: a clear exception naming the argument, before communicating, outputs untouched.

Every rank passes the same bad input, so every rank raises and no peer waits.
"""

from __future__ import annotations

import re

import _frameworks as frameworks
import numpy as np
import pytest
from _reference import to_np

import mpicoll as dist
from mpicoll.errors import ArgumentTypeError


def _untouched(out, fill=7):
    np.testing.assert_array_equal(to_np(out), np.full(to_np(out).shape, fill))


def _out(xp, shape, dtype="float32", fill=7):
    return xp.full(shape, fill, dtype)


def test_split_sum_mismatch(xin, size, group):
    xo = xin.output()
    out = _out(xo, (size,))
    with pytest.raises(ValueError, match=r"input_split_sizes must sum to dim 0 of input: "
                                         rf"expected {size + 1}, got sum"):
        dist.all_to_all_single(out, _out(xin, (size + 1,)), None, [1] * size, group=group)
    with pytest.raises(ValueError, match="output_split_sizes must sum to dim 0 of output"):
        dist.all_to_all_single(out, _out(xin, (size,)), [2] * size, [1] * size, group=group)
    _untouched(out)


def test_split_negative_noninteger_and_length(xp, size, group):
    out = _out(xp, (size,))
    inp = _out(xp, (size,), fill=1)
    bad = [1] * size
    bad[0] = -1
    with pytest.raises(ValueError, match="input_split_sizes must be non-negative"):
        dist.all_to_all_single(out, inp, None, bad, group=group)
    with pytest.raises(TypeError, match="input_split_sizes must contain integers, got 1.5"):
        dist.all_to_all_single(out, inp, None, [1.5] + [1] * (size - 1), group=group)
    # floats are refused even where they hold whole numbers, as torch refuses them
    with pytest.raises(TypeError, match="input_split_sizes must contain integers, got 1.0"):
        dist.all_to_all_single(out, inp, None, [1.0] * size, group=group)
    entries = "entry" if size == 1 else "entries"
    with pytest.raises(ValueError, match=rf"input_split_sizes must have one entry per rank: "
                                         rf"expected {size} {entries}, got {size + 1}") as e:
        dist.all_to_all_single(out, inp, None, [1] * size + [0], group=group)
    # a job of one process (no launcher) says so, naming the command to run instead
    alone = size == 1 and dist.get_world_size() == 1
    assert ("The job has 1 process: was the script started without an MPI launcher? Run it "
            "as `mpiexec -n 2 python script.py`" in str(e.value)) == alone, str(e.value)
    _untouched(out)


@pytest.mark.mpi(min_size=2)
def test_dim0_not_divisible(xp, size, group):
    out = _out(xp, (size * 2 + 1,))
    with pytest.raises(ValueError, match=rf"dim 0 of input must be divisible by the group "
                                         rf"size {size}.*got {size * 2 + 1}"):
        dist.all_to_all_single(out, _out(xp, (size * 2 + 1,), fill=1), group=group)
    _untouched(out)


def test_output_wrong_size_and_dtype(xin, size, group):
    xo = xin.output()
    out = _out(xo, (size * 2 + 1,))
    with pytest.raises(ValueError, match=rf"output_tensor must hold group size x input_tensor: "
                                         rf"expected shape \({size * 2},\) or \({size}, 2\)"):
        dist.all_gather_into_tensor(out, _out(xin, (2,), fill=1), group=group)
    _untouched(out)
    out = _out(xo, (size,), dtype="int32")
    with pytest.raises(ValueError, match="output and input must have the same dtype: "
                                         "output is int32, input is float32"):
        dist.all_to_all_single(out, _out(xin, (size,), fill=1), group=group)
    _untouched(out)
    with pytest.raises(ValueError, match="output and input must have the same dtype"):
        dist.reduce_scatter_tensor(out, _out(xin, (size * size,), "float16", fill=1),
                                   group=group)
    _untouched(out)


def test_list_wrong_length_and_mixed_dtypes(xp, size, group):
    outs = [_out(xp, (1,)) for _ in range(size + 1)]
    ins = [_out(xp, (1,), fill=1) for _ in range(size)]
    with pytest.raises(ValueError, match=rf"output_tensor_list must have one tensor per rank: "
                                         rf"expected {size} tensors, got {size + 1}"):
        dist.all_to_all(outs, ins, group=group)
    mixed = [_out(xp, (1,), "float32")] + [_out(xp, (1,), "float64") for _ in range(size - 1)]
    if size > 1:
        with pytest.raises(ValueError, match=r"tensor_list must have one dtype: tensor_list\[0\] "
                                             r"is float32, tensor_list\[1\] is float64"):
            dist.all_gather(mixed, _out(xp, (1,)), group=group)
    with pytest.raises(TypeError, match="input_tensor_list must be a list of tensors"):
        dist.all_to_all(outs[:size], _out(xp, (size,)), group=group)
    for o in outs:
        _untouched(o)


def _numpy_read_only():
    a = np.full(4, 7.0)
    view = a[:]
    view.flags.writeable = False
    return view, "tensor is read-only"


def _torch_expanded():
    import torch

    # 4 elements over 1 in memory
    return torch.full((1,), 7.0).expand(4), "tensor has overlapping memory"


def _jax_array():
    import jax.numpy as jnp

    return jnp.full(4, 7.0), "tensor is a JAX array, which is immutable and cannot receive data"


@pytest.mark.parametrize("make", [_numpy_read_only, _torch_expanded, _jax_array],
                         ids=["numpy-read-only", "torch-expanded", "jax"])
def test_read_only_output(make, rank, size, group):
    t, msg = make()
    with pytest.raises(BufferError, match=f"all_reduce: {msg}"):
        dist.all_reduce(t, group=group)
    if rank != 0:  # the source only reads: a read-only source is fine (test_rooted)
        with pytest.raises(BufferError, match=f"broadcast: {msg}"):
            dist.broadcast(t, src=0, group=group)
    np.testing.assert_array_equal(to_np(t), np.full(4, 7.0))


def test_jax_output_names_the_functional_form(xp, size, group):
    # an immutable output, whatever framework the input comes from: the fix is named
    out = frameworks.get("jax").full((size,), 7, "float32")
    with pytest.raises(BufferError, match=r"all_to_all_single: output is a JAX array.*use "
                                          r"mpicoll\.functional\.all_to_all_single"):
        dist.all_to_all_single(out, _out(xp, (size,), fill=1), group=group)
    _untouched(out)


@pytest.mark.parametrize(("dtype", "op", "msg"), [
    ("float32", "BAND", "op BAND needs an integer or bool dtype, got float32"),
    ("complex64", "MAX", "op MAX is not defined for complex dtype complex64"),
    ("bool", "AVG", "op AVG needs a numeric dtype, got bool"),
    ("int64", "PREMUL_SUM", "op PREMUL_SUM needs a factor"),
])
def test_invalid_op_for_dtype(xp, dtype, op, msg, group):
    fill = dtype != "bool" and 7  # (a bool tensor holds True)
    t = _out(xp, (3,), dtype, fill=fill)
    with pytest.raises(ValueError, match=msg):
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=group)
    _untouched(t, fill)


@pytest.mark.parametrize(("xp", "dtype"), frameworks.cross(frameworks.FLOAT8))
def test_float8_opaque_reduce_refused(xp, dtype, group):
    # float8 moves as opaque bytes; reducing it has no meaning MPI could give
    t = _out(xp, (3,), dtype)
    with pytest.raises(ValueError, match=f"not supported for dtype {dtype}"):
        dist.all_reduce(t, group=group)
    _untouched(t)


def test_rank_outside_group(xp, size, group):
    t = _out(xp, (2,))
    with pytest.raises(ValueError, match=rf"reduce: dst {size} is not a rank of the group"):
        dist.reduce(t, dst=size, group=group)
    with pytest.raises(ValueError, match="send: dst -1 is not a rank"):
        dist.send(t, dst=-1, group=group)
    with pytest.raises(ValueError, match="recv: group_src must be in"):
        dist.recv(t, group_src=size + 3, group=group)
    with pytest.raises(ValueError, match="give either src or group_src"):
        dist.broadcast(t, src=0, group_src=0, group=group)
    with pytest.raises(ValueError, match="src .a global rank. or group_src must be given"):
        dist.broadcast(t, group=group)
    with pytest.raises(ValueError, match="must be another rank"):
        dist.send(t, dst=dist.get_rank(), group=group)
    with pytest.raises(ValueError, match=rf"reduce: dst {size} is not a rank of the group"):
        dist.reduce(t, dst=size)  # WORLD's check, too
    _untouched(t)


def test_unsupported_objects(size):
    with pytest.raises(TypeError, match="all_reduce: tensor of type list is not a supported"):
        dist.all_reduce([1, 2, 3])
    with pytest.raises(TypeError, match="group must be a ProcessGroup"):
        dist.all_reduce(np.ones(1), group="world")
    with pytest.raises(ValueError, match="op 'max' is not a ReduceOp"):
        dist.all_reduce(np.ones(1), op="max")
    with pytest.raises(TypeError, match="P2POp|batch_isend_irecv"):
        dist.batch_isend_irecv([1])


@pytest.mark.parametrize("bad", [np.array([1, None] * 4, dtype=object),
                                 np.array(["ab", "cd"] * 4),
                                 np.arange(8).astype("datetime64[s]")],
                         ids=["object", "str", "datetime"])
def test_unsupported_numpy_dtypes_name_the_argument(bad, size):
    out = np.full(bad.shape, 7.0)
    with pytest.raises(ArgumentTypeError,
                       match=rf"^all_reduce: tensor has dtype {re.escape(str(bad.dtype))}, "):
        dist.all_reduce(bad)
    with pytest.raises(ArgumentTypeError, match=r"^broadcast: tensor has dtype"):
        dist.broadcast(bad, src=0)
    with pytest.raises(ArgumentTypeError, match=r"^all_gather: tensor has dtype"):
        dist.all_gather([out] * size, bad)
    np.testing.assert_array_equal(out, 7.0)


def test_non_cpu_torch_tensor():
    import torch

    t = torch.empty(3, device="meta")
    with pytest.raises(ValueError, match="tensor is on device meta"):
        dist.all_reduce(t)


@pytest.mark.mpi(min_size=2)
def test_gather_list_on_non_destination(xin, rank, size, group):
    xo = xin.output()
    outs = [_out(xo, (1,)) for _ in range(size)]
    if rank != 0:
        with pytest.raises(ValueError, match="gather_list must be given on the destination "
                                             "rank only"):
            dist.gather(_out(xin, (1,), fill=1), outs, dst=0, group=group)
        for o in outs:
            _untouched(o)
    dist.barrier(group=group)


def test_input_and_output_on_different_devices():
    import torch

    out = torch.full((2 * dist.get_world_size(),), 7.0)
    inp = torch.empty(2, device="meta")
    # the device check comes first for meta tensors (they have no memory at all);
    # a CUDA/CPU mix gets the same-device error, checked where a GPU exists
    with pytest.raises(ValueError, match="device meta"):
        dist.all_gather_into_tensor(out, inp)
    _untouched(out)
    from mpicoll._adapter import as_buffer
    from mpicoll._collectives._validate import same_dtype

    a, b = as_buffer(torch.ones(1)), as_buffer(np.ones(1, np.float32))
    same_dtype("op", a, b, "output", "input")  # numpy and torch CPU tensors mix freely


class _OnDevice:
    """A DLPack producer that reports a CUDA device (for the device check alone)."""

    def __dlpack_device__(self):
        return (2, 0)


def test_device_mismatch_message():
    from mpicoll._adapter.buffer import Buffer
    from mpicoll._adapter.detect import device_of
    from mpicoll._collectives._validate import same_dtype

    host = Buffer(np.ones(2), np.ones(2), "float64")
    gpu = Buffer(_OnDevice(), np.ones(2), "float64", device=device_of(_OnDevice()))
    with pytest.raises(ValueError, match="all_gather_into_tensor: output_tensor and "
                                         "input_tensor must be on the same device: "
                                         "output_tensor is on dlpack-device-2:0, "
                                         "input_tensor is on cpu"):
        same_dtype("all_gather_into_tensor", gpu, host, "output_tensor", "input_tensor")
