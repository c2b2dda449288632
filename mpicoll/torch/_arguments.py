"""torch's calling convention in mpicoll's terms: tensor lists, reduce op, root, async, timeout."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

import mpicoll

from ..errors import ArgumentValueError
from ._work import CompletedWork, TorchWork

DONE = CompletedWork()
_OPS = list(mpicoll.ReduceOp)  # torch's RedOpType values index mpicoll's ReduceOp
_UNSET = dist.AllreduceOptions().timeout  # kUnsetTimeout (-1 ms)


def tensors(x: Any) -> list[Any]:
    """The list of tensors torch passes, or a lone tensor (a direct call) as a list."""
    if type(x) is list:  # what torch passes (isinstance on torch.Tensor costs ~1,500 instructions)
        return x
    return [x] if isinstance(x, torch.Tensor) else list(x)


def paired(op: str, outs: Any, ins: Any, oname: str = "output_tensors",
           iname: str = "input_tensors") -> list[tuple[Any, Any]]:
    """The pairs of ``outs`` and ``ins``, which must be of one length (torch's callers
    pass one output per input; a direct call may not, and a zip would drop the rest)."""
    if len(outs) != len(ins):
        raise ArgumentValueError(op, "list_length", "{arg} must hold one entry per tensor of "
                                 "{other}: expected {expected}, got {got}",
                                 {"arg": oname, "other": iname}, expected=len(ins),
                                 got=len(outs))
    return list(zip(outs, ins, strict=True))


def single(op: str, ts: list[Any], opts: Any) -> Any:
    """The one tensor of a call that takes one (allreduce, broadcast, reduce). torch's own
    callers pass one; gloo's older form (several tensors combined across the list, with
    ``rootTensor`` choosing the root's) is refused rather than run per tensor, which would
    give other values. ``allreduce_coalesced`` is the call for several tensors."""
    if len(ts) != 1:
        raise ArgumentValueError(op, "one_tensor", "{arg} must hold one tensor: expected "
                                 "{expected}, got {got} (for several tensors, use "
                                 "allreduce_coalesced or one call each)", {"arg": "tensors"},
                                 expected=1, got=len(ts))
    root_tensor = getattr(opts, "rootTensor", 0)
    if root_tensor != 0:
        raise ArgumentValueError(op, "root_tensor", "{arg} must index the one tensor: "
                                 "expected {expected}, got {got}", {"arg": "rootTensor"},
                                 expected=0, got=root_tensor)
    return ts[0]


def flat(lists: Any) -> list[Any]:
    """The tensors of a list of lists: what a gather's Work gives as its result (gloo's
    form)."""
    return [t for ts in lists for t in ts]


def is_async(opts: Any) -> bool:
    """Whether the call is asynchronous (``opts.asyncOp``; True when the options lack it)."""
    return bool(getattr(opts, "asyncOp", True))


def timeout(opts: Any) -> float | None:
    """The call's own timeout in seconds (``opts.timeout``, which ``dist.barrier(timeout=)``
    sets), or None: torch's unset value is negative."""
    t = getattr(opts, "timeout", None)
    if t is None or t == _UNSET:
        return None
    s = t.total_seconds()
    return s if s > 0 else None


def started(work: TorchWork, opts: Any) -> TorchWork | CompletedWork:
    """``work`` for an async call; for a blocking one with a timeout of its own, waited on
    with it (raising CollectiveTimeout, the operation left pending, as gloo raises)."""
    if is_async(opts):
        return work
    work.wait()
    return DONE


def reduce_op(opts: Any) -> Any:
    """The ReduceOp carried by options, a bare ReduceOp/RedOpType, or SUM."""
    if opts is None:
        return mpicoll.ReduceOp.SUM
    op = getattr(opts, "reduceOp", opts)
    kind = int(getattr(op, "op", op))  # torch ReduceOp -> RedOpType -> int, as mpicoll's
    if kind == 8:  # PREMUL_SUM carries its factor
        return mpicoll.ReduceOp.premul_sum(op.factor)
    return _OPS[kind]
