"""mpicoll: framework-agnostic collective communication over MPI.

``import mpicoll as dist`` gives torch.distributed's API (names, parameters,
defaults) for numpy, torch and any DLPack tensor, over mpi4py.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

# Open MPI 5's AVX reduction kernels saturate 8- and 16-bit integer sums (100 + 100
# gives 127) where C, numpy, torch and MPICH wrap (-56). If MPI is not started yet
# and the user has not chosen, leave that component out (an Open MPI setting that
# other MPIs ignore); otherwise mpicoll sums those dtypes in 32 bits instead.
if "mpi4py.MPI" not in sys.modules and "OMPI_MCA_op" not in os.environ:
    os.environ["OMPI_MCA_op"] = "^avx"

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
    "ReduceOp": "._collectives.reduce_op",
    **dict.fromkeys(["reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor"],
                    "._collectives.reduce_scatter"),
    **dict.fromkeys(["broadcast", "gather", "reduce", "scatter"], "._collectives.rooted"),
    **dict.fromkeys(["GroupMember", "ProcessGroup", "destroy_process_group", "get_backend",
                     "get_global_rank", "get_group_rank", "get_process_group_ranks",
                     "get_rank", "get_world_size", "group", "init_process_group",
                     "is_initialized", "new_group", "new_subgroups",
                     "new_subgroups_by_enumeration"], "._group"),
    "Work": "._work",
}

__version__ = "0.1.0"

__all__ = [
    "GroupMember",
    "P2POp",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_single",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
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
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
]




def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mpicoll' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*__all__, "__version__"]
