"""[2] all_to_all_single -> Alltoall / Alltoallv; all_to_all (lists) -> Alltoallv."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .. import _core_loader, _departed, _polling
from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._adapter.views import PLAIN, QUICKERS
from .._process_group import _State, resolve
from .._work import Work
from . import _direct, _pack, _validate
from ._call import (
    core_failed,
    exchange_key,
    issue,
    quick,
    quick_allowed,
    quick_exchange,
    quick_then_copy,
)
from ._entries import Exchange, Listed, Messages
from ._large import INT_MAX
from ._layout import Layout, area, displs, layout, lists_apart
from ._own_block import alltoallv_args, own_block_copy, own_blocks, own_copy, then
from ._signature import signature
from ._sizes import exchange as exchange_sizes
from ._table import Table


def all_to_all_single(output: Any, input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None,
                      async_op: bool = False) -> Work | None:
    """Split ``input`` along dim 0, send part j to rank j, gather into ``output``.

    Call on every rank of ``group``. ``output`` is written in place.

    Args:
        output: receives, in rank order, the parts every rank sent to this one.
        input: sent; rows ``input_split_sizes[j]`` go to rank j.
        output_split_sizes: rows received from each rank (None: equal split).
        input_split_sizes: rows sent to each rank (None: equal split).
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        async_op: return a :class:`Work` instead of blocking.

    Equal splits (both lists omitted) map to ``Alltoall``; explicit split
    sizes map to ``Alltoallv``, since one rank cannot know that its peers'
    splits are equal too.
    """
    name = "all_to_all_single"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    # the common call, on shapes and split sizes an earlier call of the general path
    # validated (extra: this rank's place for equal splits (a direct call's messages
    # depend on it), else with the split sizes; False: other forms)
    extra = pg._rank if output_split_sizes is None and input_split_sizes is None else \
        _splits(pg, output_split_sizes, input_split_sizes)
    if not async_op and extra is not False and \
            quick_exchange(name, pg, output, input, _QUICK, extra):
        return None
    return _single(name, pg, output, input, output_split_sizes, input_split_sizes, extra,
                   async_op)


def _single(name: str, pg: Any, output: Any, input: Any, output_split_sizes: Any,
            input_split_sizes: Any, extra: Any, async_op: bool) -> Work | None:
    """all_to_all_single's general path: any tensors and split sizes, validated, its quick
    entry stored (``extra``: its key's part, or False)."""
    n = pg._size
    src = as_buffer(input, op=name, name="input")
    dst = as_buffer(output, writable=True, op=name, name="output")
    _validate.same_dtype(name, dst, src, "output", "input")
    row = _validate.row_elems(name, src, dst, "input", "output")
    scounts = _validate.split_sizes(name, input_split_sizes, n, src.shape[0],
                                    "input_split_sizes", "input")
    rcounts = _validate.split_sizes(name, output_split_sizes, n, dst.shape[0],
                                    "output_split_sizes", "output")
    # rows match (row_elems), so sizes match when dim 0 does: numel only on a mismatch
    if scounts is None and rcounts is None and src.shape[0] != dst.shape[0] \
            and src.numel != dst.numel:
        _validate.equal_split_sizes(name, src, dst)
    if np.may_share_memory(src.view, dst.view):
        src.detach_input()
    sarr, rarr = src.array, dst.array
    dt = mpi_datatype(sarr.dtype)
    quick_key = exchange_key(rarr, sarr, pg, extra) \
        if extra is not False and src.dtype in PLAIN and max(sarr.size, rarr.size) <= INT_MAX \
        else None
    if _direct.chosen(pg):  # (the group's size alone decides: alike on every rank)
        if scounts is None and rcounts is None:
            scounts, rcounts = [sarr.size // n] * n, [rarr.size // n] * n
        else:
            scounts, rcounts = _uneven(pg, src, dst, scounts, rcounts, row)
        return _direct.single(pg, src, dst, sarr, rarr, scounts, rcounts, dt, quick_key,
                              _QUICK, output, async_op)
    if scounts is None and rcounts is None:
        args = ([sarr, sarr.size // n, dt], [rarr, rarr.size // n, dt])
        sizes = exchange_sizes(name, pg, [sarr.size // n] * n, [rarr.size // n] * n, "output",
                               src.dtype)
        if quick_key is not None:
            _QUICK[quick_key] = Exchange("Ialltoall", sarr.size // n, rarr.size // n, dt,
                                         None, None, sizes)
        return issue(name, pg, "Alltoall", args, dst.commit_hook, async_op, [output],
                     sig=lambda: {"dtype": src.dtype, "send": [sarr.size // n] * n,
                                  "recv": [rarr.size // n] * n}, sizes=sizes)
    scounts, rcounts = _uneven(pg, src, dst, scounts, rcounts, row)
    sizes = exchange_sizes(name, pg, scounts, rcounts, "output", src.dtype)
    args, own = alltoallv_args(pg.my_rank, sarr, scounts, rarr, rcounts, dt)
    if quick_key is not None:  # (copies: the counts may be the caller's lists)
        (sc, sd), (rc, rd) = args[0][1], args[1][1]
        _QUICK[quick_key] = Exchange("Ialltoallv", (list(sc), sd), (list(rc), rd), dt, None,
                                     own, sizes)
    return issue(name, pg, "Alltoallv", args, then(own_copy(sarr, rarr, own),
                                                   dst.commit_hook), async_op, [output],
                 sig=lambda: {"dtype": src.dtype, "send": scounts, "recv": rcounts},
                 sizes=sizes)


def _uneven(pg: Any, src: Any, dst: Any, scounts: list[int] | None,
            rcounts: list[int] | None, row: int) -> tuple[list[int], list[int]]:
    """all_to_all_single's counts in elements where split sizes are given (the other
    side's, if omitted, an equal split), this rank's own block checked."""
    n = pg._size
    if scounts is None:
        scounts = [src.shape[0] // n] * n
    if rcounts is None:
        rcounts = [dst.shape[0] // n] * n
    _validate.self_block("all_to_all_single", scounts, rcounts, pg.my_rank,
                         "input_split_sizes", "output_split_sizes")
    if row != 1:
        scounts = [c * row for c in scounts]
        rcounts = [c * row for c in rcounts]
    return scounts, rcounts


# quick_exchange's table for all_to_all_single (extra: the group rank for equal splits, else the
# split sizes and this rank's place: _splits), filled by the general path once it has
# validated such a call and needs no step after MPI's but the copy of this rank's own
# block (_alltoallv_args); all_to_all's: (dtype, group size and rank, sizes of the lists)
_QUICK: dict[tuple, Exchange | Messages] = Table()
_QUICK_LISTS: dict[tuple, Listed | Messages] = Table()


def _splits(pg: Any, osizes: Any, isizes: Any) -> tuple | bool:
    """What all_to_all_single's validation depends on beyond dtypes, shapes and group
    size when split sizes are given: this rank's place and the sizes, for lists of ints;
    False for other forms (tuples, tensors: the general path every time)."""
    if type(osizes) is not list or type(isizes) is not list:
        return False
    # loops, not a set of the types: half the cost for a few ranks, no more for many
    for c in osizes:
        if type(c) is not int:
            return False
    for c in isizes:
        if type(c) is not int:
            return False
    return pg._rank, tuple(isizes), tuple(osizes)


def all_to_all(output_tensor_list: list[Any], input_tensor_list: list[Any], group: Any = None,
               async_op: bool = False) -> Work | None:
    """Send ``input_tensor_list[j]`` to rank j; receive rank j's into ``output_tensor_list[j]``.

    Call on every rank of ``group``. Tensors may differ in size per peer
    (uneven exchange). The tensors of ``output_tensor_list`` are written in
    place. Lists of adjacent views of one buffer (``x.chunk(n)``,
    ``x.split(sizes)``) are exchanged without any copy.

    Args:
        output_tensor_list: one tensor per rank, receiving that rank's data.
        input_tensor_list: one tensor per rank, sent to that rank.
        group: ProcessGroup, mpi4py Intracomm, or None for WORLD.
        async_op: return a :class:`Work` instead of blocking.
    """
    name = "all_to_all"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if not async_op and _quick_lists(name, pg, output_tensor_list, input_tensor_list):
        return None
    return _all_to_all(name, pg, output_tensor_list, input_tensor_list, async_op)


def _quick_lists(name: str, pg: Any, output_tensor_list: Any,
                 input_tensor_list: Any) -> bool:
    """all_to_all's quick path: lists of sizes an earlier call of the general path
    validated, where they lie (adjacent views as one buffer, separate tensors by their
    displacements). True when done; False: the general path's."""
    core = _core_loader.module
    if core is not None:  # (the lookup, and a kept Plan's run, in C: core.lists)
        if not quick_allowed():
            return False
        found = core.lists(name, pg, output_tensor_list, input_tensor_list, _QUICK_LISTS,
                           QUICKERS, len(_polling.spin), _departed.left)
        if found is True or found is False:
            return found
        if len(found) == 5:  # (the Plan's run did not finish)
            _direct.settled(core, name, pg, *found, (output_tensor_list, input_tensor_list))
            return True
        if len(found) == 4:  # (MPI's Alltoallv, made in the core, did not complete)
            core_failed(name, pg, *found, (output_tensor_list, input_tensor_list))
        hit, outl, inl = found
    else:
        n = pg._size
        outl = layout(output_tensor_list, n, True)
        inl = layout(input_tensor_list, n, False) if outl is not None else None
        if inl is None or outl.dtype != inl.dtype:
            return False
        hit = _QUICK_LISTS.get((outl.dtype, n, pg._rank, *inl.counts, None, *outl.counts))
        if hit is None:
            return False
    if not (inl.end <= outl.start or outl.end <= inl.start or lists_apart(outl, inl)):
        return False
    if hit.method == "direct":
        # (no Plan kept, or one the core did not run: the messages kept by where the
        # lists lie, made with their arguments where the group keeps none there; the
        # lists kept alive by the Work an interrupt leaves)
        me, d, both = pg._rank, hit.direct, inl.end_to_end and outl.end_to_end
        _direct.started(
            name, pg, d, partial(_over_lists, d, inl, outl,
                                 hit.displacements if both else None, hit.datatype),
            _own_tensors(outl.arrays[me], inl.arrays[me]) if d.counts[0][me] else None,
            keep=(tuple(output_tensor_list), tuple(input_tensor_list)), hit=hit,
            key=_direct.plan_key(hit, _direct.where(inl), _direct.where(outl)), depth=5)
        return True
    _, sc, rc, dt, own, sizes = hit
    sbuf, rbuf = area(inl), area(outl)
    if inl.end_to_end and outl.end_to_end:
        args = ([sbuf, sc, dt], [rbuf, rc, dt])
        copy = None if own is None else own_blocks(
            np.frombuffer(sbuf, inl.dtype), np.frombuffer(rbuf, inl.dtype), own)
    else:  # (sc, rc: the counts, this rank's own zeroed where copied locally)
        args = ([sbuf, (sc[0], displs(inl)), dt], [rbuf, (rc[0], displs(outl)), dt])
        me = pg._rank
        copy = None if own is None else (outl.arrays[me].reshape(-1),
                                         inl.arrays[me].reshape(-1))
    if copy is None:
        quick(name, pg, "Ialltoallv", args, sizes, 4)
    else:
        quick_then_copy(name, pg, "Ialltoallv", args, copy, sizes, 4)
    return True


def _all_to_all(name: str, pg: Any, output_tensor_list: Any, input_tensor_list: Any,
                async_op: bool) -> Work | None:
    """all_to_all's general path: any tensors, validated, its quick entry stored."""
    n = pg._size
    ins = _validate.tensor_list(name, input_tensor_list, n, "input_tensor_list", writable=False)
    outs = _validate.tensor_list(name, output_tensor_list, n, "output_tensor_list",
                                 writable=True, distinct=False)
    _validate.same_dtype(name, outs[0], ins[0], "output_tensor_list", "input_tensor_list")
    scounts = [b.numel for b in ins]
    rcounts = [b.numel for b in outs]
    _validate.self_block(name, scounts, rcounts, pg.my_rank, "input_tensor_list",
                         "output_tensor_list")
    send = _pack.pack(ins)
    recv, staged = _pack.receive_area(outs, sum(rcounts))
    if staged:  # adjacent outputs are distinct by construction
        _validate.distinct_outputs(name, outs, "output_tensor_list")
    if np.may_share_memory(send, recv):
        send = send.copy()
    sizes = exchange_sizes(name, pg, scounts, rcounts, "output_tensor_list[{peer}]",
                           ins[0].dtype)
    unpack = (lambda: _pack.unpack(recv, outs)) if staged else None
    sig = lambda: {"dtype": ins[0].dtype, "send": scounts, "recv": rcounts}  # noqa: E731
    if _direct.chosen(pg):
        me, dt = pg._rank, mpi_datatype(send.dtype)
        d = _direct.plan(pg, scounts, rcounts, sizes, signature(name, send.dtype))
        sd, rd = _pack.displs(scounts), _pack.displs(rcounts)
        if ins[0].dtype in PLAIN:
            _QUICK_LISTS[(send.dtype, n, me, *scounts, None, *rcounts)] = Messages(
                "direct", (sd, rd), dt, None, d)
        return _direct.issue(name, pg, d, ([send, (d.counts[0], sd), dt],
                                           [recv, (d.counts[1], rd), dt]),
                             (send, sd, recv, rd, dt),
                             own_block_copy(send, recv, (sd[me], rd[me], scounts[me]))
                             if scounts[me] else None, unpack, async_op,
                             list(output_tensor_list), keep=(ins, outs), sig=sig)
    args, own = alltoallv_args(pg.my_rank, send, scounts, recv, rcounts,
                               mpi_datatype(send.dtype))
    if ins[0].dtype in PLAIN:
        (sc, sd), (rc, rd) = args[0][1], args[1][1]
        _QUICK_LISTS[(send.dtype, n, pg.my_rank, *scounts, None, *rcounts)] = Listed(
            "Ialltoallv", (sc, sd), (rc, rd), args[0][2], own, sizes)
    return issue(name, pg, "Alltoallv", args, then(own_copy(send, recv, own), unpack), async_op,
                 list(output_tensor_list), keep=(ins, outs), sig=sig, sizes=sizes)


def _over_lists(d: Any, inl: Layout, outl: Layout, displacements: Any, dt: Any) -> tuple:
    """:func:`._direct.over` of the lists of layouts ``inl`` and ``outl``: their areas, at
    ``displacements`` (the quick entry's, where both lie end to end) or each tensor's."""
    return _direct.over(d, area(inl), displs(inl) if displacements is None
                        else displacements[0], area(outl), displs(outl)
                        if displacements is None else displacements[1], dt)


def _own_tensors(out: Any, inp: Any) -> tuple[Any, Any, Any]:
    """The copy of this rank's own tensor (numpy views of one size and dtype), as
    :func:`._direct.issue` makes it."""
    if out.shape == inp.shape:
        return out, Ellipsis, inp
    return out.reshape(-1), Ellipsis, inp.reshape(-1)
