"""paddle.distributed's API (Paddle 3.x) over mpicoll.

``import mpicoll.paddle as dist`` gives the names, parameter names, parameter
order and defaults of ``paddle.distributed``'s communication calls in Paddle 3.x
(checked against the installed Paddle by introspection), for Paddle, numpy,
torch and any DLPack tensor, over MPI; ``mpicoll.paddle.stream`` is
``paddle.distributed.stream``::

    import paddle
    import mpicoll.paddle as dist

    dist.init_parallel_env()
    out = paddle.empty([4], dtype="int64")
    dist.alltoall_single(out, paddle.arange(4) + 4 * dist.get_rank())

Every function translates names, argument order and return idioms, then calls
mpicoll's torch.distributed-style function (``alltoall_single`` ->
:func:`mpicoll.all_to_all_single`, ...):

- ``sync_op=True`` (the default) returns a completed task; ``sync_op=False``
  returns a :class:`mpicoll.Work` (``wait()``, ``is_completed()``), backed by MPI
  nonblocking operations.
- ``src``/``dst``/``peer`` are global ranks, as in Paddle.
- An empty output list given to :func:`alltoall`, :func:`all_gather` or (on the
  destination) :func:`gather` is filled by appending new tensors of the input's
  framework, as Paddle does.
- :func:`new_group` returns a :class:`Group` (Paddle's ``rank``, ``nranks``,
  ``ranks``, ``id``, ``world_size``, ``is_member()``); ``group=`` accepts it, an
  mpicoll ProcessGroup or an mpi4py communicator.
- ``ReduceOp`` holds Paddle's integer values (SUM=0, MAX=1, MIN=2, PROD=3, AVG=4).

Paddle's order of the tensors of :func:`alltoall_single` and :func:`alltoall`
changed between 2.x (``in_tensor, out_tensor``) and 3.x (``out_tensor,
in_tensor``). This module follows 3.x; :mod:`mpicoll.paddle.v2` follows 2.x.
Keyword arguments mean what their names say in both. When split sizes
contradict the shapes, the error says that the tensors may be in the other
order. A swap that no shape reveals (equal splits, tensors of one shape) cannot
be detected: the data then lands in the tensor passed as output.

What is not provided, and why, is listed in :data:`NOT_PROVIDED`.

Where this module differs from Paddle: it runs at any world size including 1
(Paddle's ``init_parallel_env`` does nothing below 2 ranks, and its groups of
one rank are not members of themselves); ``irecv``/``recv`` accept
``src=None`` (any source); ``backend``, ``nccl_comm_init_option`` and
``nccl_config`` are accepted and unused.
"""

from __future__ import annotations

from . import stream
from ._alltoall import alltoall, alltoall_single
from ._collectives import (
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    scatter,
    wait,
)
from ._face import ReduceOp
from ._groups import (
    Group,
    destroy_process_group,
    get_backend,
    get_group,
    get_rank,
    get_world_size,
    init_parallel_env,
    is_available,
    is_initialized,
    new_group,
)
from ._objects import (
    all_gather_object,
    broadcast_object_list,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from ._p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from ._process import ParallelEnv, gloo_barrier, gloo_init_parallel_env, gloo_release

__all__ = [
    "Group",
    "P2POp",
    "ParallelEnv",
    "ReduceOp",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "alltoall",
    "alltoall_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_group",
    "get_rank",
    "get_world_size",
    "gloo_barrier",
    "gloo_init_parallel_env",
    "gloo_release",
    "init_parallel_env",
    "irecv",
    "is_available",
    "is_initialized",
    "isend",
    "new_group",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "stream",
    "wait",
]

# paddle.distributed's communication-layer names that this face leaves out, and why.
NOT_PROVIDED: dict[str, str] = {
    "DataParallel": "a model wrapper bound to Paddle's own process groups and reducer; "
                    "all-reduce the gradients with all_reduce (see the DDP guide)",
    "shutdown_process_group": "suspends and resumes NCCL communicators for fault tolerance; "
                              "an MPI communicator cannot be restarted",
    "restart_process_group": "see shutdown_process_group",
    "split": "model-parallel layers (linear, embedding), not communication",
    "spawn": "starts processes; mpicoll's processes are started by mpiexec/srun",
    "launch": "Paddle's launcher; use mpiexec/srun",
}


def __dir__() -> list[str]:
    return list(__all__)
