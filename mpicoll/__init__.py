"""mpicoll: framework-agnostic collective communication over MPI.

``import mpicoll as dist`` gives torch.distributed's API (names, parameters,
defaults) for numpy, torch and any DLPack tensor, over mpi4py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# the runtime's top layer registers its start-up and exit hooks with the layers below
# (it starts no MPI and imports no framework or numpy)
from . import (
    _lifecycle,  # noqa: F401
    _record_dump,
)
from ._trace import torch_format as _torch_format

# the flight recorder's dumps also carry torch's format, for torch's own analyzer
_record_dump.formats.append(_torch_format.to_torch)

# Public name -> module that defines it. Modules load on first attribute
# access, so ``import mpicoll`` neither initialises MPI nor imports numpy.
_LAZY = {
    **dict.fromkeys(["all_gather", "all_gather_into_tensor", "all_gather_single"],
                    "._collectives.all_gather"),
    "all_reduce": "._collectives.all_reduce",
    **dict.fromkeys(["all_to_all", "all_to_all_single"], "._collectives.all_to_all"),
    **dict.fromkeys(["barrier", "monitored_barrier"], "._collectives.barrier"),
    **dict.fromkeys(["all_gather_object", "broadcast_object_list", "gather_object",
                     "recv_object_list", "scatter_object_list", "send_object_list"],
                    "._collectives.objects"),
    **dict.fromkeys(["P2POp", "batch_isend_irecv", "irecv", "isend", "recv", "send"],
                    "._collectives.p2p"),
    **dict.fromkeys(["ReduceOp", "supports_complex"], "._collectives.reduce_op"),
    **dict.fromkeys(["reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor"],
                    "._collectives.reduce_scatter"),
    **dict.fromkeys(["broadcast", "gather", "reduce", "scatter"], "._collectives.rooted"),
    **dict.fromkeys(["gather_into_tensor", "gather_single"], "._collectives.gather_single"),
    **dict.fromkeys(["GroupMember", "ProcessGroup", "group"], "._process_group"),
    **dict.fromkeys(["default_pg_timeout", "get_node_local_rank", "is_available"],
                    "._process"),
    **dict.fromkeys(["destroy_process_group", "get_backend", "get_global_rank",
                     "get_group_rank", "get_process_group_ranks", "get_rank",
                     "get_world_size", "init_process_group", "is_initialized", "set_timeout"],
                    "._group_calls"),
    **dict.fromkeys(["SHRINK_ABORT", "SHRINK_DEFAULT", "shrink_group"], "._new_groups"),
    **dict.fromkeys(["get_pg_count", "new_group", "new_subgroups",
                     "new_subgroups_by_enumeration", "split_group"], "._new_groups"),
    **dict.fromkeys(["all_gather_coalesced", "all_reduce_coalesced"],
                    "._collectives.coalesced"),
    "Work": "._work",
    "dump_trace": "._record_dump",
    **dict.fromkeys(["PersistentCollective", "all_gather_into_tensor_init", "all_reduce_init",
                     "all_to_all_single_init", "broadcast_init", "reduce_scatter_tensor_init"],
                    "._collectives.persistent"),
}

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and readers
    from ._collectives.all_gather import all_gather, all_gather_into_tensor, all_gather_single
    from ._collectives.all_reduce import all_reduce
    from ._collectives.all_to_all import all_to_all, all_to_all_single
    from ._collectives.barrier import barrier, monitored_barrier
    from ._collectives.coalesced import all_gather_coalesced, all_reduce_coalesced
    from ._collectives.objects import (
        all_gather_object,
        broadcast_object_list,
        gather_object,
        recv_object_list,
        scatter_object_list,
        send_object_list,
    )
    from ._collectives.p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
    from ._collectives.persistent import (
        PersistentCollective,
        all_gather_into_tensor_init,
        all_reduce_init,
        all_to_all_single_init,
        broadcast_init,
        reduce_scatter_tensor_init,
    )
    from ._collectives.reduce_op import ReduceOp, supports_complex
    from ._collectives.reduce_scatter import (
        reduce_scatter,
        reduce_scatter_single,
        reduce_scatter_tensor,
    )
    from ._collectives.rooted import broadcast, gather, reduce, scatter
    from ._group_calls import (
        destroy_process_group,
        get_backend,
        get_global_rank,
        get_group_rank,
        get_process_group_ranks,
        get_rank,
        get_world_size,
        init_process_group,
        is_initialized,
    )
    from ._new_groups import (
        get_pg_count,
        new_group,
        new_subgroups,
        new_subgroups_by_enumeration,
        split_group,
    )
    from ._process import default_pg_timeout, get_node_local_rank, is_available
    from ._process_group import GroupMember, ProcessGroup, group
    from ._record_dump import dump_trace
    from ._work import Work

__version__ = "0.1.0"

__all__ = [
    "GroupMember",
    "P2POp",
    "PersistentCollective",
    "ProcessGroup",
    "ReduceOp",
    "SHRINK_ABORT",
    "SHRINK_DEFAULT",
    "Work",
    "all_gather",
    "all_gather_coalesced",
    "all_gather_into_tensor",
    "all_gather_into_tensor_init",
    "all_gather_object",
    "all_gather_single",
    "all_reduce",
    "all_reduce_coalesced",
    "all_reduce_init",
    "all_to_all",
    "all_to_all_single",
    "all_to_all_single_init",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_init",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "dump_trace",
    "gather",
    "gather_into_tensor",
    "gather_object",
    "gather_single",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_pg_count",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "isend",
    "monitored_barrier",
    "new_group",
    "new_subgroups",
    "new_subgroups_by_enumeration",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "reduce_scatter_tensor_init",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "set_timeout",
    "shrink_group",
    "split_group",
    "supports_complex",
]


# torch.distributed's public names (distributed_c10d.__all__) that mpicoll leaves out, and
# why; tests/test_torch_complete.py checks that every other one exists here with torch's
# signature.
_PLUMBING = ("torch's backend plumbing (process-group options, stores, backend registry): "
             "to run torch.distributed itself over MPI, use the mpicoll.torch backend")
_AVAILABILITY = ("asks which backends this torch build has; torch answers it, and "
                 "torch.distributed.is_backend_available('mpicoll') once mpicoll.torch is "
                 "imported")
NOT_PROVIDED: dict[str, str] = {
    **dict.fromkeys(["AllToAllOptions", "AllreduceCoalescedOptions", "AllreduceOptions",
                     "Backend", "BackendConfig", "BarrierOptions", "BroadcastOptions",
                     "GatherOptions", "GroupName", "PrefixStore", "ProcessGroupGloo",
                     "ReduceOptions", "ReduceScatterOptions", "ScatterOptions", "Store",
                     "get_backend_config", "get_default_backend_for_device",
                     "get_backend_impl", "ProcessGroupNCCL", "ProcessGroupNCCL2",
                     "ProcessGroupNCCLLazy"], _PLUMBING),
    **dict.fromkeys(["is_backend_available", "is_gloo_available", "is_mpi_available",
                     "is_nccl_available", "is_ucc_available", "is_xccl_available"],
                    _AVAILABILITY),
    "is_torchelastic_launched": "tells whether torchrun started the process; mpicoll's "
                                "processes are started by mpiexec or srun",
    "DebugLevel": "torch's TORCH_DISTRIBUTED_DEBUG levels; mpicoll's equivalent of DETAIL's "
                  "collective checks is MPICOLL_CHECK=1",
    "get_debug_level": "see DebugLevel",
    "reduce_op": "deprecated by torch since 1.x in favour of ReduceOp, which mpicoll has",
    "record_comm": "a torch profiling hook for its own backends' communication",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mpicoll' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*__all__, "__version__"]
