"""``mpicoll`` has torch.distributed's public names, with torch's signatures.

The names are found by introspection of the installed torch, not listed by hand:
every name of ``torch.distributed.distributed_c10d.__all__`` plus ``is_available``.
Each must exist in ``mpicoll`` — a function with the same signature (parameter names,
kinds, order and defaults), a class as a class, ``default_pg_timeout`` with torch's
value — or be a key of ``mpicoll.NOT_PROVIDED`` with a reason. A torch release that
adds a call therefore fails here until mpicoll provides it or says why not.
"""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.distributed as torch_dist
import torch.distributed.distributed_c10d as c10d

import mpicoll as dist

TORCH_NAMES = sorted({*c10d.__all__, "is_available"})

# what torch 2.13 has: the 80 names of distributed_c10d.__all__, plus is_available
_COUNT_IN_2_13 = 81

# names that were checked by hand before the list was found by introspection: a floor,
# so a change in torch's packaging that hides names from the introspection shows up
_KNOWN = """all_to_all all_to_all_single reduce_scatter reduce_scatter_tensor all_gather
all_gather_into_tensor all_gather_single reduce_scatter_single all_reduce broadcast reduce
gather scatter barrier monitored_barrier send recv isend irecv batch_isend_irecv
all_gather_object broadcast_object_list gather_object scatter_object_list send_object_list
recv_object_list init_process_group is_initialized destroy_process_group get_rank
get_world_size new_group new_subgroups new_subgroups_by_enumeration get_process_group_ranks
get_group_rank get_global_rank is_available""".split()


def _shape(fn):
    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if type(default).__name__ in ("RedOpType", "ReduceOp"):
            default = ("ReduceOp", default.name)
        out.append((p.name, p.kind, default))
    return out


def _theirs(name):
    # ``is_available`` lives in torch.distributed itself, the rest in distributed_c10d
    return getattr(torch_dist if name == "is_available" else c10d, name)


def test_names_are_found_by_introspection():
    print(f"\n{len(TORCH_NAMES)} torch.distributed names checked against torch "
          f"{torch.__version__}")
    missing = sorted(set(_KNOWN) - set(TORCH_NAMES))
    assert not missing, f"introspection no longer finds {missing}"
    if torch.__version__.split("+")[0] == "2.13.0":
        assert len(TORCH_NAMES) == _COUNT_IN_2_13, TORCH_NAMES


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_torch_name_is_provided_with_its_signature_or_declared_missing(name):
    if name in dist.NOT_PROVIDED:
        reason = dist.NOT_PROVIDED[name]
        assert isinstance(reason, str) and reason.strip(), name
        assert not hasattr(dist, name), f"{name} is provided and listed in NOT_PROVIDED"
        assert name not in dist.__all__, name
        return
    assert hasattr(dist, name), (f"torch.distributed.{name} is neither in mpicoll nor in "
                                 "mpicoll.NOT_PROVIDED")
    assert name in dist.__all__, f"{name} is provided but not exported in mpicoll.__all__"
    theirs, ours = _theirs(name), getattr(dist, name)
    if inspect.isclass(theirs):
        assert inspect.isclass(ours), f"{name}: torch's is a class, mpicoll's {ours!r}"
    elif inspect.isroutine(theirs):
        assert callable(ours), name
        # equal, or torch's followed by parameters that a newer torch added (mpicoll
        # follows the newest torch; the newest-torch lane checks those exactly)
        mine, torchs = _shape(ours), _shape(theirs)
        assert mine[:len(torchs)] == torchs, name
        assert {p[0] for p in mine[len(torchs):]} <= _NEWER_PARAMETERS, name
    else:  # a constant (default_pg_timeout)
        assert ours == theirs, f"{name}: expected torch's {theirs!r}, got {ours!r}"


# what torch 2.15 added that an older torch lacks
_NEWER_PARAMETERS = {"weights_only", "enable_reconfigure"}
_NEWER_NAMES = {"get_backend_impl", "ProcessGroupNCCL", "ProcessGroupNCCL2",
                "ProcessGroupNCCLLazy"}


def test_not_provided_names_are_torchs():
    assert dist.NOT_PROVIDED, "NOT_PROVIDED is empty"
    stale = sorted(set(dist.NOT_PROVIDED) - set(TORCH_NAMES) - _NEWER_NAMES)
    assert not stale, f"NOT_PROVIDED lists names torch does not have: {stale}"


def test_p2pop_signature_matches_torch():
    assert _shape(dist.P2POp.__init__) == _shape(torch_dist.P2POp.__init__)


def test_reduce_op_members_match_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        assert int(getattr(dist.ReduceOp, name)) == int(getattr(torch_dist.ReduceOp, name))
