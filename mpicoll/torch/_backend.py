"""The "mpicoll" torch.distributed backend: a Python ProcessGroup over mpicoll.

Every method translates torch's (tensors, options) calling convention into one
mpicoll collective on this group's communicator, so there is one implementation
of the semantics. Method names are the ones torch 2.13 calls (docs/guides/torch-backend.md
lists them); the legacy names are aliases.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

import mpicoll

from .._process_group import ProcessGroup as _Group
from ._arguments import DONE as _DONE
from ._arguments import flat as _flat
from ._arguments import is_async as _async
from ._arguments import paired as _paired
from ._arguments import reduce_op as _op
from ._arguments import single as _single
from ._arguments import started as _started
from ._arguments import tensors as _tensors
from ._arguments import timeout as _timeout
from ._names import GroupNames
from ._shrinking import Shrinking
from ._work import TorchWork


class Collectives(GroupNames, Shrinking):
    """The backend's collectives, under the names torch's trampolines call: those of a
    Python ProcessGroup (2.13 on) and of a Python c10d Backend (2.15), which are alike."""

    def __init__(self, group: _Group, store: Any = None) -> None:
        super().__init__(group.rank(), group.size())
        self._group = group
        self._store = store
        self._name = ""
        self._desc = ""

    # -- metadata (the names: GroupNames) ----------------------------------------

    @property
    def comm(self) -> Any:
        """The group's (duplicated) mpi4py communicator."""
        return self._group.comm

    def _run(self, calls: list[tuple[Any, tuple, dict]], outputs: list[Any], opts: Any,
             ranks: bool = False) -> Any:
        timeout = _timeout(opts)
        if not _async(opts) and timeout is None:
            for fn, args, kw in calls:
                fn(*args, group=self._group, **kw)
            return _DONE
        works = [fn(*args, group=self._group, async_op=True, **kw) for fn, args, kw in calls]
        return _started(TorchWork([w for w in works if w is not None], outputs,
                                  self._group.ranks if ranks else None, timeout), opts)

    def _one(self, fn: Any, args: tuple, outputs: list[Any], opts: Any, **kw: Any) -> Any:
        """``_run`` of one call (the common case): no list of calls to build and walk."""
        timeout = _timeout(opts)
        if not _async(opts) and timeout is None:
            fn(*args, group=self._group, **kw)
            return _DONE
        w = fn(*args, group=self._group, async_op=True, **kw)
        return _started(TorchWork([w] if w is not None else [], outputs, None, timeout), opts)

    # -- collectives ---------------------------------------------------------------

    def allreduce(self, tensors: Any, opts: Any = None) -> Any:
        ts = _tensors(tensors)
        t = ts[0] if len(ts) == 1 else _single("allreduce", ts, None)  # (the latter raises)
        return self._one(mpicoll.all_reduce, (t, _op(opts)), ts, opts)

    def allreduce_coalesced(self, tensors: Any, opts: Any = None) -> Any:
        ts = _tensors(tensors)
        op = _op(opts)
        return self._run([(mpicoll.all_reduce, (t, op), {}) for t in ts], ts, opts)

    def broadcast(self, tensors: Any, opts: Any = None) -> Any:
        ts = _tensors(tensors)
        root = opts if isinstance(opts, int) else (opts.rootRank if opts is not None else 0)
        opts = None if isinstance(opts, int) else opts
        return self._one(mpicoll.broadcast, (_single("broadcast", ts, opts),), ts, opts,
                         group_src=root)

    def reduce(self, tensors: Any, opts: Any = None, op: Any = None) -> Any:
        ts = _tensors(tensors)
        if isinstance(opts, int):  # pg.reduce(tensor, root, op)
            root, rop, opts = opts, (op if op is not None else mpicoll.ReduceOp.SUM), None
        else:
            root, rop = (opts.rootRank if opts is not None else 0), _op(opts)
        return self._one(mpicoll.reduce, (_single("reduce", ts, opts),), ts, opts,
                         group_dst=root, op=rop)

    def allgather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        ins = _tensors(input_tensors)
        outs = [output_tensors] if isinstance(input_tensors, torch.Tensor) else output_tensors
        calls = [(mpicoll.all_gather, (list(o), i), {}) for o, i in _paired("allgather", outs, ins)]
        return self._run(calls, _flat(outs), opts)

    def all_gather_single(self, output: Any, input: Any, opts: Any = None) -> Any:
        return self._one(mpicoll.all_gather_into_tensor, (output, input), [output], opts)

    _allgather_base = all_gather_single

    def allgather_coalesced(self, output_lists: Any, input_list: Any, opts: Any = None) -> Any:
        # output_lists[rank][tensor]: transpose into one all_gather per input tensor
        for r, per_rank in enumerate(output_lists):
            _paired("allgather_coalesced", per_rank, input_list, f"output_lists[{r}]",
                    "input_list")
        calls = [(mpicoll.all_gather, ([per_rank[i] for per_rank in output_lists], t), {})
                 for i, t in enumerate(input_list)]
        return self._run(calls, list(output_lists), opts)

    def all_gather_single_coalesced(self, outputs: Any, inputs: Any, opts: Any = None) -> Any:
        calls = [(mpicoll.all_gather_into_tensor, (o, i), {})
                 for o, i in _paired("allgather_into_tensor_coalesced", outputs, inputs,
                                     "outputs", "inputs")]
        return self._run(calls, list(outputs), opts)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        ins = _tensors(input_tensors)
        root = opts.rootRank if opts is not None else 0
        outs = output_tensors if self._group.rank() == root else [None] * len(ins)
        pairs = _paired("gather", outs, ins)
        if len(pairs) == 1:
            o, i = pairs[0]
            return self._one(mpicoll.gather, (i, list(o) if o is not None else None),
                             _flat(output_tensors), opts, group_dst=root)
        calls = [(mpicoll.gather, (i, list(o) if o is not None else None),
                  {"group_dst": root}) for o, i in pairs]
        return self._run(calls, _flat(output_tensors), opts)

    def _get_backend(self, device: Any) -> Any:
        """torch 2.15's batch_isend_irecv asks the group for its device's backend (to see
        whether it coalesces): this group is its own backend, for every device."""
        return self

    supports_coalescing = False
    supports_splitting = False

    def gather_single(self, output: Any, input: Any, opts: Any = None) -> Any:
        """torch 2.15's gather_single: ``output`` is an empty placeholder off the root."""
        root = opts.rootRank if opts is not None else 0
        out = output if self._group.rank() == root else None
        return self._one(mpicoll.gather_single, (input, out), [output], opts, group_dst=root)

    def set_timeout(self, timeout: Any) -> None:
        """torch 2.15's ``set_timeout(timeout, group)`` lands here."""
        mpicoll.set_timeout(timeout, self._group)

    def scatter(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        outs = _tensors(output_tensors)
        root = opts.rootRank if opts is not None else 0
        ins = input_tensors if self._group.rank() == root else [None] * len(outs)
        pairs = _paired("scatter", outs, ins)
        if len(pairs) == 1:
            o, i = pairs[0]
            return self._one(mpicoll.scatter, (o, list(i) if i is not None else None),
                             outs, opts, group_src=root)
        calls = [(mpicoll.scatter, (o, list(i) if i is not None else None),
                  {"group_src": root}) for o, i in pairs]
        return self._run(calls, outs, opts)

    def reduce_scatter(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        outs = _tensors(output_tensors)
        ins = [input_tensors] if isinstance(output_tensors, torch.Tensor) else input_tensors
        op = _op(opts)
        calls = [(mpicoll.reduce_scatter, (o, list(i), op), {})
                 for o, i in _paired("reduce_scatter", outs, ins)]
        return self._run(calls, outs, opts)

    def reduce_scatter_single(self, output: Any, input: Any, opts: Any = None) -> Any:
        return self._one(mpicoll.reduce_scatter_tensor, (output, input, _op(opts)), [output],
                         opts)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs: Any, inputs: Any, opts: Any = None) -> Any:
        op = _op(opts)
        calls = [(mpicoll.reduce_scatter_tensor, (o, i, op), {})
                 for o, i in _paired("reduce_scatter_tensor_coalesced", outputs, inputs,
                                     "outputs", "inputs")]
        return self._run(calls, list(outputs), opts)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def all_to_all_single(self, output: Any, input: Any, output_split_sizes: Any = None,
                          input_split_sizes: Any = None, opts: Any = None) -> Any:
        # torch gives [] for equal splits, else a list of ints (mpicoll's quick path)
        return self._one(mpicoll.all_to_all_single,
                         (output, input, list(output_split_sizes) if output_split_sizes else None,
                          list(input_split_sizes) if input_split_sizes else None), [output], opts)

    alltoall_base = all_to_all_single

    def alltoall(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> Any:
        return self._one(mpicoll.all_to_all, (list(output_tensors), list(input_tensors)),
                         list(output_tensors), opts)

    def barrier(self, opts: Any = None) -> Any:
        return self._run([(mpicoll.barrier, (), {})], [], opts)

    def monitored_barrier(self, timeout: Any = None, wait_all_ranks: bool = False) -> None:
        mpicoll.monitored_barrier(self._group, timeout, wait_all_ranks)

    # -- point to point (always nonblocking: a blocking Send could deadlock pairs) --

    def send(self, tensors: Any, dstRank: int, tag: int = 0) -> Any:
        ts = _tensors(tensors)
        works = [mpicoll.isend(t, group=self._group, tag=tag, group_dst=dstRank) for t in ts]
        return TorchWork(works, ts)

    def recv(self, tensors: Any, srcRank: int, tag: int = 0) -> Any:
        ts = _tensors(tensors)
        works = [mpicoll.irecv(t, group=self._group, tag=tag, group_src=srcRank) for t in ts]
        return TorchWork(works, ts, self._group.ranks)

    def recv_anysource(self, tensors: Any, tag: int = 0) -> Any:
        ts = _tensors(tensors)
        works = [mpicoll.irecv(t, group=self._group, tag=tag) for t in ts]
        return TorchWork(works, ts, self._group.ranks)

    # -- lifecycle -----------------------------------------------------------------

    def shutdown(self) -> None:
        if self._group.comm is not None:
            mpicoll.destroy_process_group(self._group)

    def abort(self) -> None:
        # lazy: importing mpicoll._mpi starts MPI; mpicoll.torch imports this module before MPI
        from .._mpi import MPI

        MPI.COMM_WORLD.Abort(1)


class MpicollProcessGroup(Collectives, dist.ProcessGroup):
    """torch.distributed ProcessGroup whose collectives run over MPI via mpicoll: the whole
    group, every device (device tensors staged through the host or GPU-aware MPI)."""

    @property
    def _device_types(self) -> list[torch.device]:
        """The devices this group serves, as gloo lists its own. torch fills the C++ list
        only for the c10d Backends it registers, and a Python group is none of them; its
        Python helpers read this name (checkpointing's ``broadcast_from_rank0`` indexes
        it, ``dcp.async_save`` looks for the CPU in it, object collectives pick by it)."""
        return [torch.device("cuda"), torch.device("cpu")]

