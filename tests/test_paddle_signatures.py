"""mpicoll.paddle has paddle.distributed's signatures (Paddle 3.x); v2 has 2.x's alltoall."""

from __future__ import annotations

import inspect
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Paddle warns on import that ccache is missing
    import paddle.distributed as paddle_dist  # installed with the suite: never skipped

import mpicoll.paddle as dist
import mpicoll.paddle.v2 as dist2

NAMES = """alltoall alltoall_single reduce_scatter all_gather all_reduce broadcast reduce scatter
gather barrier send recv isend irecv batch_isend_irecv all_gather_object broadcast_object_list
scatter_object_list new_group get_rank get_world_size init_parallel_env
is_initialized""".split()


def _shape(fn):
    """(name, kind, default) per parameter; a ReduceOp default compares by its value."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if p.name == "op" and default is not inspect.Parameter.empty:
            default = ("ReduceOp", int(default))
        out.append((p.name, p.kind, default))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_paddle(name):
    assert _shape(getattr(dist, name)) == _shape(getattr(paddle_dist, name))


def test_p2pop_signature_matches_paddle():
    assert _shape(dist.P2POp.__init__) == _shape(paddle_dist.P2POp.__init__)


def test_reduce_op_values_match_paddle():
    for name in ("SUM", "MAX", "MIN", "PROD", "AVG"):
        assert getattr(dist.ReduceOp, name) == getattr(paddle_dist.ReduceOp, name)


def test_all_names_exist():
    for name in [*NAMES, "P2POp", "ReduceOp"]:
        assert name in dist.__all__ and name in dist2.__all__


def _two_x(fn):
    """Paddle 3.x's parameters with the two tensors swapped back to 2.x's order."""
    params = _shape(fn)
    return [params[1], params[0], *params[2:]]


def test_v2_alltoall_has_the_2x_order():
    assert [p[0] for p in _shape(dist2.alltoall)] == [
        "in_tensor_list", "out_tensor_list", "group", "sync_op"]
    assert _shape(dist2.alltoall) == _two_x(paddle_dist.alltoall)


def test_v2_alltoall_single_has_the_2x_order():
    assert [(p[0], p[2]) for p in _shape(dist2.alltoall_single)] == [
        ("in_tensor", inspect.Parameter.empty), ("out_tensor", inspect.Parameter.empty),
        ("in_split_sizes", None), ("out_split_sizes", None), ("group", None), ("sync_op", True)]
    assert _shape(dist2.alltoall_single) == _two_x(paddle_dist.alltoall_single)


def test_v2_reexports_everything_else():
    for name in dist2.__all__:
        if name not in ("alltoall", "alltoall_single"):
            assert getattr(dist2, name) is getattr(dist, name), name
