"""Every public function has torch.distributed's signature (names, order, defaults)."""

from __future__ import annotations

import inspect

import pytest
import torch.distributed as torch_dist

import mpicoll as dist

NAMES = """all_to_all all_to_all_single reduce_scatter reduce_scatter_tensor all_gather
all_gather_into_tensor all_gather_single reduce_scatter_single all_reduce broadcast reduce
gather scatter barrier monitored_barrier send recv isend irecv batch_isend_irecv
all_gather_object broadcast_object_list gather_object scatter_object_list send_object_list
recv_object_list init_process_group is_initialized destroy_process_group get_rank
get_world_size new_group new_subgroups new_subgroups_by_enumeration get_process_group_ranks
get_group_rank get_global_rank""".split()


def _shape(fn):
    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if type(default).__name__ in ("RedOpType", "ReduceOp"):
            default = ("ReduceOp", default.name)
        out.append((p.name, p.kind, default))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_torch(name):
    ours, theirs = getattr(dist, name), getattr(torch_dist, name)
    assert _shape(ours) == _shape(theirs)


def test_p2pop_signature_matches_torch():
    assert _shape(dist.P2POp.__init__) == _shape(torch_dist.P2POp.__init__)


def test_reduce_op_members_match_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        assert int(getattr(dist.ReduceOp, name)) == int(getattr(torch_dist.ReduceOp, name))
