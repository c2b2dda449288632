"""[2] broadcast -> Bcast, reduce -> Reduce, gather -> Gatherv, scatter -> Scatterv."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .. import _core_loader, _departed, _polling
from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._adapter.views import PLAIN, QUICKERS
from .._describe import mpi_error
from .._mpi import MPI
from .._process_group import _State, resolve
from .._work import Work
from ..errors import ArgumentValueError as _Value
from . import _direct, _pack, _reduce, _reduce_direct, _rooted_direct, _validate
from ._all_reduce_direct import MAX_COUNT
from ._call import issue, quick, quick_allowed, quick_array
from ._entries import Broadcast, OffRoot, Reduction, RootedReduction, RootList
from ._rooted_quick import _QUICK_GATHER, _QUICK_SCATTER, BROADCASTS, QUICK_OFF_ROOT, quick_rooted
from ._sizes import SIGNED, signed
from ._sizes import rooted as rooted_sizes
from .reduce_op import ReduceOp, op_name, plan


def broadcast(tensor: Any, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` from rank ``src`` (global) or ``group_src`` to every rank.

    Call on every rank of ``group``. ``tensor`` is written in place on every
    rank but the source.
    """
    name = "broadcast"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    core = _core_loader.module
    in_core = not async_op and core is not None and quick_allowed()
    if in_core:
        # the root found, the tests, the lookup, and the call numbered, issued (its kept
        # messages, or MPI's Ibcast), waited on (watched past its tests) and recorded, in C
        found = core.bcast(name, pg, tensor, src, group_src, BROADCASTS, QUICKERS,
                           len(_polling.spin), _departed.left, _rooted_direct.MAX_BROADCAST)
        if found is True:  # (done: the common case)
            return None
    root = _validate.root(pg, name, src, group_src, "src", "group_src")
    if not async_op:
        if in_core:  # (what the core handed back, or False: no root, entry or array)
            found = _direct.core_found(core, name, pg, found, tensor,
                                       partial(_broadcast_args, root))
            if found is None:
                return None
            hit, a = found
        else:
            a = quick_array(tensor)
            hit = BROADCASTS.get((a.dtype, root)) if a is not None else None
        if hit is not None:
            if _rooted_direct.broadcasts(pg, a.size):
                _rooted_direct.broadcast_quick(name, pg, a, hit, keep=tensor)
            else:
                quick(name, pg, "Ibcast", ([a, hit.datatype], root), signed(
                    name, pg, a.dtype, None, root, a.size) if a.size >= SIGNED else None)
            return None
    return _broadcast(name, pg, tensor, root, async_op)


def _broadcast_args(root: int, hit: Broadcast, a: Any) -> tuple:
    """MPI's Ibcast's arguments for the array ``a`` of a quick entry ``hit``."""
    return [a, hit.datatype], root


def _broadcast(name: str, pg: Any, tensor: Any, root: int, async_op: bool) -> Work | None:
    """broadcast's general path: any tensor, validated, its quick entry stored."""
    _core_loader.load()  # (once: the next such call may take the core's path)
    buf = as_buffer(tensor, writable=pg.my_rank != root, op=name, name="tensor")
    arr = buf.array
    dt = mpi_datatype(arr.dtype)
    if buf.dtype in PLAIN:
        BROADCASTS[(arr.dtype, root)] = Broadcast(dt, root)
    sig = lambda: {"dtype": buf.dtype, "numel": buf.numel, "root": root}  # noqa: E731
    if _rooted_direct.broadcasts(pg, arr.size):  # (alike on every rank: the group, the size)
        return _rooted_direct.broadcast(name, pg, root, arr, dt, buf.commit_hook, async_op,
                                        [tensor], sig)
    return issue(name, pg, "Bcast", ([arr, dt], root), buf.commit_hook, async_op, [tensor],
                 sig=sig, sizes=signed(name, pg, buf.dtype, None, root, arr.size))


def reduce(tensor: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` across ranks into ``tensor`` on rank ``dst`` (or ``group_dst``).

    Call on every rank of ``group``. Only the destination's tensor is written;
    the others are left unchanged.
    """
    name = "reduce"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    quick_op = type(op) is ReduceOp and not async_op
    core = _core_loader.module
    if quick_op and core is not None and quick_allowed():
        # the root found, the tests, the lookup and the call (the group's kept messages,
        # or MPI's Ireduce) numbered, issued, waited on and recorded in C; a call the core
        # hands back is made or explained here; none found: the general path (Python's
        # validation words what is wrong)
        direct = pg.direct is not None
        if direct and _reduce_as_messages(core, name, pg, tensor, op, dst, group_dst):
            return None
        # MPI's Ireduce (a group that sends no messages, or more elements than they take;
        # on such a group, never fewer: those calls go as messages, their signature in
        # the tags)
        found = core.reduce_to(name, pg, tensor, _reduce.QUICK, op, dst, group_dst,
                               QUICKERS, len(_polling.spin), _departed.left,
                               MAX_COUNT if direct else -1)
        if found is True or (found is not False and _reduce_found(name, pg, found, op, dst,
                                                                  group_dst)):
            return None
    root = _validate.root(pg, name, dst, group_dst, "dst", "group_dst")
    is_root = pg._rank == root
    if quick_op and core is None:
        # all_reduce's quick path, rooted: the root reduces in place, the others send
        a = quick_array(tensor, is_root)
        if a is not None and pg.direct is not None and 0 < a.size <= MAX_COUNT:
            # (messages: as every rank's call goes, its size alike, a miss too)
            hit = _reduce_direct.QUICK.get((a.dtype, (op, root)))
            if hit is not None:
                _reduce_direct.quick(name, pg, root, a, hit, op.name, keep=tensor)
                return None
            a = None
        hit = _reduce.QUICK.get((a.dtype, op)) if a is not None else None
        if hit is not None:
            big = a.size >= SIGNED  # (its signature beside the data: quick(), below)
            core = _core_loader.module or _core_loader.load()
            if core is not None and not _departed.left and not big:
                # numbered, issued, waited on (watched past its tests) and recorded in C
                seq = pg.seq = pg.seq + 1
                try:
                    core.call(core.REDUCE, name, pg.comm, a, hit.datatype, (hit.op, root), pg, seq,
                              len(_polling.spin))
                except MPI.Exception as e:
                    raise mpi_error(name, e, _reduce_args(root, is_root, hit, a)) from e
                return None
            quick(name, pg, "Ireduce", _reduce_args(root, is_root, hit, a),
                  signed(name, pg, a.dtype, op, root, a.size) if big else None)
            return None
    return _reduce_general(name, pg, tensor, root, op, async_op)


def _reduce_as_messages(core: Any, name: str, pg: Any, tensor: Any, op: ReduceOp, dst: Any,
                        group_dst: Any) -> bool:
    """reduce's quick path as messages, on a group that sends them (all_reduce's quick
    path; its entry, of three, never makes MPI's Iallreduce): the group's kept Plan run
    in C, or the call made here where the core hands it back. True when the call is done;
    False: no entry, or more elements than messages take."""
    found = core.reduce(name, pg, tensor, _reduce_direct.QUICK, op, QUICKERS,
                        len(_polling.spin), _departed.left, MAX_COUNT, dst, group_dst)
    if found is True:
        return True
    if found is False:
        return False
    root = _validate.root(pg, name, dst, group_dst, "dst", "group_dst")
    found = _direct.core_found(core, name, pg, found, tensor,
                               partial(_reduce_args, root, pg._rank == root))
    if found is None:
        return True
    # (no Plan kept yet, a rank that left, or more elements than messages take)
    hit, a = found
    if 0 < a.size <= MAX_COUNT:
        _reduce_direct.quick(name, pg, root, a, hit, op.name, keep=tensor, depth=6)
        return True
    return False


def _reduce_found(name: str, pg: Any, found: tuple, op: ReduceOp, dst: Any,
                  group_dst: Any) -> bool:
    """What the core's ``reduce_to`` handed back, settled: MPI's error raised, or the call
    made here (a rank has left, or the signature goes beside the data). True."""
    root = _validate.root(pg, name, dst, group_dst, "dst", "group_dst")
    is_root = pg._rank == root
    if len(found) == 3:  # (MPI raised)
        hit, a, e = found
        raise mpi_error(name, e, _reduce_args(root, is_root, hit, a)) from e
    hit, a = found  # (a rank has left, or the signature goes beside the data)
    quick(name, pg, "Ireduce", _reduce_args(root, is_root, hit, a),
          signed(name, pg, a.dtype, op, root, a.size) if a.size >= SIGNED else None, depth=4)
    return True


def _reduce_general(name: str, pg: Any, tensor: Any, root: int, op: Any,
                    async_op: bool) -> Work | None:
    """reduce's general path: any tensor, validated, planned (the dtype's step before and
    after MPI's), its quick entry stored."""
    is_root = pg._rank == root
    buf = as_buffer(tensor, writable=is_root, op=name, name="tensor")
    p = plan(buf.dtype, op, name)
    direct = _reduce_direct.chosen(pg, buf.numel)  # (alike on every rank)
    if direct and _reduce.repeatable(op, buf.dtype, p):
        _reduce_direct.QUICK[(buf.array.dtype, (op, root))] = RootedReduction(
            mpi_datatype(buf.array.dtype), p.mpi_op, root)
    elif not direct:
        _reduce.remember(buf, op, p)

    def sig() -> dict[str, Any]:
        return {"dtype": buf.dtype, "numel": buf.numel, "root": root, "reduce_op": op_name(op)}

    if not is_root:
        send = _reduce.send_side(p, buf.array, buf.dtype)
        if direct:
            return _reduce_direct.general(name, pg, root, send, buf.dtype, p.mpi_op,
                                          op_name(op), None, async_op, [tensor], sig)
        args = ([send, mpi_datatype(send.dtype)], None, p.mpi_op, root)
        return issue(name, pg, "Reduce", args, None, async_op, [tensor], sig=sig,
                     sizes=signed(name, pg, buf.dtype, op_name(op), root, buf.numel))
    recv, specs = _reduce.into_place(p, buf.array, buf.dtype)
    fin = _reduce.finisher(p, recv, buf, pg.nranks)
    if direct:
        return _reduce_direct.general(name, pg, root, _reduce.in_place(recv, specs), buf.dtype,
                                      p.mpi_op, op_name(op), fin, async_op, [tensor], sig)
    args = (*specs, p.mpi_op, root)
    return issue(name, pg, "Reduce", args, fin, async_op, [tensor], sig=sig,
                 sizes=signed(name, pg, buf.dtype, op_name(op), root, buf.numel))


def _reduce_args(root: int, is_root: bool, hit: Reduction, a: Any) -> tuple:
    """MPI's Ireduce's arguments for the array ``a`` of a quick entry ``hit``: in place on
    the root."""
    mine = [a, hit.datatype]
    return (MPI.IN_PLACE, mine, hit.op, root) if is_root else (mine, None, hit.op, root)


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int | None = None,
           group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Gather every rank's ``tensor`` into ``gather_list`` on rank ``dst``.

    Call on every rank of ``group``; ``gather_list`` (one tensor per rank,
    sizes may differ) is given on the destination only and written in place.
    """
    name = "gather"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if dst is None and group_dst is None:
        dst = 0  # torch's default: global rank 0
    if not async_op and quick_rooted(name, pg, dst, group_dst, tensor, gather_list, True):
        return None
    root = _validate.root(pg, name, dst, group_dst, "dst", "group_dst")
    return _gather(name, pg, root, tensor, gather_list, async_op)


def _gather(name: str, pg: Any, root: int, tensor: Any, gather_list: Any,
            async_op: bool) -> Work | None:
    """gather's general path: any tensors, validated, its quick entry stored."""
    src = as_buffer(tensor, op=name, name="tensor")
    dt = mpi_datatype(src.array.dtype)
    if pg.my_rank != root:
        if gather_list:
            raise _Value(name, "off_root", "{arg} must be given on the destination rank only "
                         "(group rank {expected}); this is group rank {got}",
                         {"arg": "gather_list"}, expected=root, got=pg.my_rank)
        args, sizes = ([src.array, dt], None, root), rooted_sizes(
            name, pg, root, True, src.numel, None, src.dtype)
        if src.dtype in PLAIN:
            QUICK_OFF_ROOT[(src.array.dtype, root, True, src.numel)] = OffRoot(dt, root, True,
                                                                               sizes)
        sig = lambda: {"dtype": src.dtype, "root": root, "mine": src.numel}  # noqa: E731
        if _direct.chosen(pg):
            return _rooted_direct.rooted(name, pg, root, True, src.array, dt, args, sizes,
                                         async_op=async_op, sig=sig)
        return issue(name, pg, "Gatherv", args, None, async_op, sig=sig, sizes=sizes)
    if gather_list is None:
        raise _Value(name, "missing", "{arg} is required on the destination rank",
                     {"arg": "gather_list"})
    outs = _validate.tensor_list(name, gather_list, pg.nranks, "gather_list", writable=True,
                                 distinct=False)
    _validate.same_dtype(name, outs[0], src, "gather_list", "tensor")
    counts = [b.numel for b in outs]
    if counts[root] != src.numel:
        raise _Value(name, "numel_mismatch", "{arg} must have the size of {t}: expected "
                     "{expected} elements, got {got}", {"arg": f"gather_list[{root}]",
                                                        "t": "tensor"},
                     expected=src.numel, got=counts[root])
    recv, staged = _pack.receive_area(outs, sum(counts))
    if staged:  # adjacent outputs are distinct by construction
        _validate.distinct_outputs(name, outs, "gather_list")
    send = src.array
    if np.may_share_memory(src.view, recv):
        send = send.copy()
    args = ([send, dt], [recv, (counts, _pack.displs(counts)), dt], root)
    sizes = rooted_sizes(name, pg, root, True, src.numel, counts, src.dtype)
    if src.dtype in PLAIN:
        _QUICK_GATHER[(send.dtype, send.size, root, *counts)] = RootList(*args[1][1:], sizes)

    def finish() -> None:
        if staged:
            _pack.unpack(recv, outs)

    sig = lambda: {"dtype": src.dtype, "root": root, "mine": src.numel,  # noqa: E731
                   "root_counts": counts}
    if _direct.chosen(pg):
        ds = args[1][1][1]
        return _rooted_direct.rooted(name, pg, root, True, send, dt, args, sizes, recv, ds,
                                     counts, recv[ds[root]:ds[root] + counts[root]], finish,
                                     async_op, list(gather_list), outs, sig)
    return issue(name, pg, "Gatherv", args, finish, async_op, list(gather_list), keep=outs,
                 sig=sig, sizes=sizes)


def scatter(tensor: Any, scatter_list: list[Any] | None = None, src: int | None = None,
            group: Any = None, async_op: bool = False,
            group_src: int | None = None) -> Work | None:
    """Send ``scatter_list[j]`` from rank ``src`` to rank j's ``tensor``.

    Call on every rank of ``group``; ``scatter_list`` (one tensor per rank,
    sizes may differ) is given on the source only. ``tensor`` is written in
    place.
    """
    name = "scatter"
    pg = _State.default if group is None else None  # WORLD, without a call
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if src is None and group_src is None:
        src = 0  # torch's default: global rank 0
    if not async_op and quick_rooted(name, pg, src, group_src, tensor, scatter_list, False):
        return None
    root = _validate.root(pg, name, src, group_src, "src", "group_src")
    return _scatter(name, pg, root, tensor, scatter_list, async_op)


def _scatter(name: str, pg: Any, root: int, tensor: Any, scatter_list: Any,
             async_op: bool) -> Work | None:
    """scatter's general path: any tensors, validated, its quick entry stored."""
    dst = as_buffer(tensor, writable=True, op=name, name="tensor")
    dt = mpi_datatype(dst.array.dtype)
    if pg.my_rank != root:
        if scatter_list:
            raise _Value(name, "off_root", "{arg} must be given on the source rank only "
                         "(group rank {expected}); this is group rank {got}",
                         {"arg": "scatter_list"}, expected=root, got=pg.my_rank)
        args, sizes = (None, [dst.array, dt], root), rooted_sizes(
            name, pg, root, False, dst.numel, None, dst.dtype)
        if dst.dtype in PLAIN:
            QUICK_OFF_ROOT[(dst.array.dtype, root, False, dst.numel)] = OffRoot(dt, root, False,
                                                                                sizes)
        sig = lambda: {"dtype": dst.dtype, "root": root, "mine": dst.numel}  # noqa: E731
        if _direct.chosen(pg):
            return _rooted_direct.rooted(name, pg, root, False, dst.array, dt, args, sizes,
                                         finalize=dst.commit_hook, async_op=async_op,
                                         outputs=[tensor], sig=sig)
        return issue(name, pg, "Scatterv", args, dst.commit_hook, async_op, [tensor], sig=sig,
                     sizes=sizes)
    if scatter_list is None:
        raise _Value(name, "missing", "{arg} is required on the source rank",
                     {"arg": "scatter_list"})
    ins = _validate.tensor_list(name, scatter_list, pg.nranks, "scatter_list", writable=False)
    _validate.same_dtype(name, dst, ins[0], "tensor", "scatter_list")
    counts = [b.numel for b in ins]
    if counts[root] != dst.numel:
        raise _Value(name, "numel_mismatch", "{arg} must have the size of {s}: expected "
                     "{expected} elements, got {got}", {"arg": "tensor",
                                                        "s": f"scatter_list[{root}]"},
                     expected=counts[root], got=dst.numel)
    send = _pack.pack(ins)
    if np.may_share_memory(send, dst.view):
        send = send.copy()
    args = ([send, (counts, _pack.displs(counts)), dt], [dst.array, dt], root)
    sizes = rooted_sizes(name, pg, root, False, dst.numel, counts, dst.dtype)
    if dst.dtype in PLAIN:
        _QUICK_SCATTER[(send.dtype, dst.numel, root, *counts)] = RootList(*args[0][1:], sizes)
    sig = lambda: {"dtype": dst.dtype, "root": root, "mine": dst.numel,  # noqa: E731
                   "root_counts": counts}
    if _direct.chosen(pg):
        ds = args[0][1][1]
        return _rooted_direct.rooted(name, pg, root, False, dst.array, dt, args, sizes,
                                     send, ds, counts, send[ds[root]:ds[root] + counts[root]],
                                     dst.commit_hook, async_op, [tensor], ins, sig)
    return issue(name, pg, "Scatterv", args, dst.commit_hook, async_op, [tensor], keep=ins,
                 sig=sig, sizes=sizes)
