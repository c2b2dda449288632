"""[2] all_gather (list) -> Allgather / Allgatherv; all_gather_into_tensor -> Allgather
(both -> Alltoallv where _choices says so; on groups of up to 8 ranks, point-to-point
messages: _all_gather_direct)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._adapter.views import PLAIN
from .._mpi import MPI
from .._process_group import _State, resolve
from .._start import is_mpich
from .._work import Work
from ..errors import ArgumentValueError as _Value
from . import _all_gather_direct, _direct, _pack, _validate
from ._call import (
    SAME_SHAPE,
    WRITES_LIST,
    exchange_key,
    issue,
    quick,
    quick_exchange,
    quick_listed,
    quick_then_copy,
)
from ._choices import gather_by_alltoallv
from ._entries import Exchange, Listed, Messages
from ._large import INT_MAX
from ._layout import Layout, apart, area, displs
from ._own_block import own_copy, then
from ._sizes import agreed
from ._table import Table


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor`` on every rank.

    Call on every rank of ``group``. ``output_tensor`` is written in place and
    may be concatenated, shape ``(P * n, ...)``, or stacked, ``(P, n, ...)``,
    for inputs of shape ``(n, ...)``. An input that is this rank's chunk of
    the output is gathered in place (``MPI.IN_PLACE``).
    """
    name = "all_gather_into_tensor"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    # the common call, on shapes an earlier call of the general path validated
    if not async_op and quick_exchange(name, pg, output_tensor, input_tensor, _QUICK,
                                       pg._rank):
        return None
    return _into_tensor(name, pg, output_tensor, input_tensor, async_op)


def _into_tensor(name: str, pg: Any, output_tensor: Any, input_tensor: Any,
                 async_op: bool) -> Work | None:
    """all_gather_into_tensor's general path: any tensors, validated, its quick entry
    stored."""
    n = pg._size
    src = as_buffer(input_tensor, op=name, name="input_tensor")
    dst = as_buffer(output_tensor, writable=True, op=name, name="output_tensor")
    _validate.same_dtype(name, dst, src, "output_tensor", "input_tensor")
    _validate.stacked_or_concat(name, dst, src, n, "output_tensor", "input_tensor")
    rarr = dst.array
    count = src.numel
    dt = mpi_datatype(rarr.dtype)
    if _direct.chosen(pg):  # (the group's size alone decides: alike on every rank)
        return _all_gather_direct.into_tensor(pg, src, dst, output_tensor, count, dt,
                                                async_op, _QUICK)
    # the counts beside the data, every rank comparing (MPI relays blocks between ranks)
    sizes = agreed(name, pg, [count], "input_tensor", src.dtype)
    by_a2a = _by_alltoallv(pg.my_rank, count, [count] * n, rarr.nbytes)
    if src.dtype in PLAIN and rarr.size <= INT_MAX:
        _QUICK[exchange_key(rarr, src.array, pg, pg.my_rank)] = \
            Exchange("Iallgather", count, count, dt, None, None, sizes) if by_a2a is None \
            else Exchange("Ialltoallv", by_a2a[0], by_a2a[1], dt, None, by_a2a[2], sizes)
    sendspec: Any = [src.array, count, dt]
    if count and np.may_share_memory(src.view, dst.view):
        mine = rarr.reshape(-1)[pg.my_rank * count:(pg.my_rank + 1) * count]
        if not dst.staged and src.array.ctypes.data == mine.ctypes.data:
            sendspec = MPI.IN_PLACE
        else:
            src.detach_input()
            sendspec = [src.array, count, dt]
    method, args, finish = "Allgather", (sendspec, [rarr, count, dt]), dst.commit_hook
    if by_a2a is not None:  # the same call on every rank, in place or not
        send = src.array if sendspec is not MPI.IN_PLACE else src.array.copy()
        method, args = "Alltoallv", ([send, by_a2a[0], dt], [rarr, by_a2a[1], dt])
        finish = then(own_copy(send, rarr, by_a2a[2]), finish)
    return issue(name, pg, method, args, finish, async_op, [output_tensor],
                 sig=lambda: {"dtype": src.dtype, "numel": count}, sizes=sizes)


def _by_alltoallv(me: int, count: int, counts: list[int],
                  nbytes: int) -> tuple[tuple, tuple, Any] | None:
    """The all_gather of ``counts`` (``count`` from this rank, ``nbytes`` in all) as
    Alltoallv where :func:`gather_by_alltoallv` chooses it: (send counts and
    displacements, receive counts and displacements, this rank's own block to copy
    locally or None, as :func:`_own_block.alltoallv_args`); None: Allgather(v). Every
    rank sends its one block, at displacement 0, to every rank."""
    n = len(counts)
    if not gather_by_alltoallv(nbytes, n):
        return None
    scounts, rcounts, rdispls = [count] * n, list(counts), _pack.displs(counts)
    own = None
    if is_mpich():  # (its Alltoallv sends the own block through its message path)
        own = 0, rdispls[me], count
        scounts[me] = rcounts[me] = 0
    return (scounts, [0] * n), (rcounts, rdispls), own


# quick_exchange's table for all_gather_into_tensor: the calls the general path validated
_QUICK: dict[tuple, Exchange | Messages] = Table()

# all_gather's quick path: (dtype, size of tensor, group rank, sizes of the list) -> its
# call (as Ialltoallv where _by_alltoallv says so)
_QUICK_LISTS: dict[tuple, Listed | Messages] = Table()

all_gather_single = all_gather_into_tensor


def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Gather every rank's ``tensor`` into ``tensor_list`` on every rank.

    Call on every rank of ``group``. ``tensor_list[j]`` receives rank j's
    tensor and is written in place; sizes may differ per rank (Allgatherv),
    as long as ``tensor_list[j]`` has rank j's size on every rank.
    """
    name = "all_gather"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if not async_op:
        # a list of sizes an earlier call of the general path validated, where it lies:
        # adjacent views as one buffer (a kept Plan run in C), separate tensors by their
        # displacements
        found = quick_listed(name, pg, tensor, tensor_list, WRITES_LIST | SAME_SHAPE,
                             _QUICK_LISTS, (pg._rank,))
        if found is True or (found is not False and _listed(name, pg, tensor, tensor_list,
                                                            *found)):
            return None
    return _all_gather(name, pg, tensor_list, tensor, async_op)


def _all_gather(name: str, pg: Any, tensor_list: Any, tensor: Any,
                async_op: bool) -> Work | None:
    """all_gather's general path: any tensors, validated, its quick entry stored."""
    n = pg._size
    src = as_buffer(tensor, op=name, name="tensor")
    outs = _validate.tensor_list(name, tensor_list, n, "tensor_list", writable=True,
                                 distinct=False)
    _validate.same_dtype(name, outs[0], src, "tensor_list", "tensor")
    counts = [b.numel for b in outs]
    if counts[pg.my_rank] != src.numel:
        raise _Value(name, "numel_mismatch", "{arg} must have the size of {t} on this rank: "
                     "expected {expected} elements, got {got}",
                     {"arg": f"tensor_list[{pg.my_rank}]", "t": "tensor"},
                     expected=src.numel, got=counts[pg.my_rank])
    if tuple(outs[pg.my_rank].shape) != tuple(src.shape):  # as gloo: no silent reshape
        raise _Value(name, "shape_mismatch", "{arg} must have the shape of {t} on this "
                     "rank: expected {expected}, got {got}",
                     {"arg": f"tensor_list[{pg.my_rank}]", "t": "tensor"},
                     expected=tuple(src.shape), got=tuple(outs[pg.my_rank].shape))
    recv, staged = _pack.receive_area(outs, sum(counts))
    if staged:  # adjacent outputs are distinct by construction
        _validate.distinct_outputs(name, outs, "tensor_list")
    dt = mpi_datatype(recv.dtype)
    mine = recv[sum(counts[:pg.my_rank]):sum(counts[:pg.my_rank + 1])]
    sendspec: Any = [src.array, src.numel, dt]
    if src.numel and np.may_share_memory(src.view, recv):
        if not staged and src.array.ctypes.data == mine.ctypes.data:
            sendspec = MPI.IN_PLACE
        else:
            src.detach_input()
            sendspec = [src.array, src.numel, dt]
    if _direct.chosen(pg):  # (the group's size alone decides: alike on every rank)
        return _all_gather_direct.listed(pg, src, sendspec, recv, staged, counts, outs,
                                         tensor_list, async_op, _QUICK_LISTS)
    sizes = agreed(name, pg, counts, "tensor_list[{peer}] (rank {peer}'s tensor)", src.dtype)
    by_a2a = _by_alltoallv(pg.my_rank, src.numel, counts, recv.nbytes)
    # with sizes: Allgatherv even for equal counts, so that ranks whose counts disagree
    # still make one call (unless the disagreement moves one of them across the
    # Alltoallv threshold, which the watchdog then ends: docs/errors.md)
    if sizes is None and min(counts) == max(counts):
        method, recvspec = "Allgather", [recv, counts[0], dt]
    else:
        method, recvspec = "Allgatherv", [recv, (counts, _pack.displs(counts)), dt]
    if src.dtype in PLAIN:
        _QUICK_LISTS[(recv.dtype, src.numel, pg.my_rank, *counts)] = (
            Listed("I" + method[0].lower() + method[1:], None, recvspec[1], dt, None, sizes)
            if by_a2a is None else Listed("Ialltoallv", by_a2a[0], by_a2a[1], dt, by_a2a[2],
                                          sizes))
    own = None
    if by_a2a is not None:  # the same call on every rank, in place or not (a send block
        # may not lie in the receive buffer: in place, it is sent from a copy)
        send = sendspec[0] if sendspec is not MPI.IN_PLACE else mine.copy()
        method, own = "Alltoallv", own_copy(send, recv, by_a2a[2])
        sendspec, recvspec = [send, by_a2a[0], dt], [recv, by_a2a[1], dt]

    def finish() -> None:
        if own is not None:
            own()
        if staged:
            _pack.unpack(recv, outs)

    return issue(name, pg, method, (sendspec, recvspec), finish, async_op,
                 list(tensor_list), keep=outs, sig=lambda: {"dtype": src.dtype, "counts": counts},
                 sizes=sizes)


def _listed(name: str, pg: Any, tensor: Any, tensor_list: Any, hit: Listed | Messages,
            a: Any, out: Layout) -> bool:
    """all_gather's quick call of entry ``hit`` from the array ``a`` into the list of
    layout ``out``, whose kept Plan (if any) the core did not run: made here. False: the
    general path's (the tensor and the list share memory)."""
    if not apart(out, a):
        return False
    adjacent = out.end_to_end
    if hit.method == "direct":
        d, me, dt = hit.direct, pg._rank, hit.datatype
        rd = hit.displacements if adjacent else displs(out)
        # (the messages kept by where the tensor and the list lie, made with their
        # arguments where the group keeps none there; the list kept alive by the Work an
        # interrupt leaves)
        _direct.started(name, pg, d,
                        lambda: _direct.over(d, _direct.span(a, True), d.zeros, area(out),
                                             rd, dt),
                        (out.arrays[me], Ellipsis, a) if a.size else None,
                        keep=(tuple(tensor_list), tensor), hit=hit,
                        key=_direct.plan_key(hit, a, _direct.where(out)), depth=5)
        return True
    method, sc, rc, dt, own, sizes = hit
    buf = area(out)
    if sc is not None:  # as Alltoallv (_by_alltoallv)
        recv = [buf, rc if adjacent else (rc[0], displs(out)), dt]
        args = ([a, sc, dt], recv)
        if own is None:
            quick(name, pg, method, args, sizes, 4)
        else:
            quick_then_copy(name, pg, method, args,
                            (out.arrays[pg._rank].reshape(-1), a.reshape(-1)), sizes, 4)
        return True
    recv = [buf, rc, dt] if adjacent else [buf, (out.counts, displs(out)), dt]
    quick(name, pg, method if adjacent else "Iallgatherv", ([a, a.size, dt], recv), sizes,
          4)
    return True
