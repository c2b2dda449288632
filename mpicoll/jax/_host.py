"""[2]/[3] The host side of a JAX collective: numpy arrays in, mpicoll's in-place call.

``run`` is what the callback executes, on XLA's thread under ``jax.jit`` or on
the caller's eagerly. It writes the result into ``out`` (XLA's own output buffer
on the CPU) with the in-place collectives of ``mpicoll``, so the semantics, the
reductions (bfloat16, NaN-keeping MIN/MAX, ...), checked mode and the watchdog
are the ones every other face has.

Compiled collectives run on a *twin* of each group, a duplicate of its
communicator: they can run on XLA's thread while the main thread issues other
collectives, and collectives on different communicators never match each other.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

import mpicoll as _m

try:  # numpy's C function itself, without the __array_function__ dispatch
    from numpy._core._multiarray_umath import may_share_memory
except ImportError:  # numpy < 2
    from numpy import may_share_memory

from .._collectives.all_reduce import as_messages
from .._collectives.reduce_op import ReduceOp
from .._process_group import ProcessGroup, resolve
from ..errors import SizeMismatch


class Twin:
    """The duplicate of a group that mpicoll.jax communicates on (a static JAX
    parameter: hashed and compared by identity)."""

    __slots__ = ("__weakref__", "group", "rank", "ranks", "size")

    def __init__(self, group: ProcessGroup | None, rank: int, size: int,
                 ranks: list[int]) -> None:
        self.group = group
        self.rank = rank
        self.size = size
        self.ranks = ranks

    def global_rank(self, group_rank: int) -> int:
        return self.ranks[group_rank]

    def __repr__(self) -> str:
        return f"Twin(ranks={self.ranks})"


NO_GROUP = Twin(None, 0, 1, [0])  # the probe's: communicates with nobody
PROBED: list[bool] = []  # each probe call's: was its output its input's buffer?

_twins: weakref.WeakKeyDictionary[ProcessGroup, Twin] = weakref.WeakKeyDictionary()


def twin(group: Any, op: str) -> Twin:
    """The twin of ``group`` (None: WORLD; a ProcessGroup or an mpi4py Intracomm).

    Made on first use, by a collective ``Dup`` on the group's communicator: that is at
    trace time, on the main thread, where every rank reaches the same call in the
    same order.
    """
    pg = resolve(group, op)
    if pg is None:
        raise ValueError(f"{op}: this rank is not a member of group")
    if pg.comm is None:
        raise ValueError(f"{op}: group {pg.name!r} was destroyed")
    t = _twins.get(pg)
    if t is None or t.group is None or t.group.comm is None:
        dup = ProcessGroup(pg.comm.Dup(), list(pg.ranks), name=f"{pg.name}:jax",
                           desc="mpicoll.jax", timeout=pg.timeout)
        t = _twins[pg] = Twin(dup, pg.my_rank, pg.nranks, list(pg.ranks))
    return t


def reduce_op(spec_op: tuple[str, Any]) -> Any:
    """A ReduceOp from its static form ``(name, factor)``."""
    name, factor = spec_op
    return ReduceOp.premul_sum(factor) if name == "PREMUL_SUM" else ReduceOp[name]


def _rows(a: np.ndarray, counts: tuple[int, ...]) -> list[np.ndarray]:
    """Adjacent row blocks of ``a`` (views: gathered or scattered without a copy)."""
    edges = np.cumsum((0, *counts))
    return [a[edges[i]:edges[i + 1]] for i in range(len(counts))]


def run(kind: str, spec: tuple, t: Twin, src: np.ndarray, out: np.ndarray) -> None:
    """Collective ``kind`` from ``src`` into ``out`` over ``t``'s group (every rank)."""
    pg = t.group
    if kind in ("all_reduce", "broadcast", "reduce") and not np.may_share_memory(out, src):
        np.copyto(out, src)  # unless XLA gave the input's buffer as the output
    if kind == "all_reduce":
        _m.all_reduce(out, reduce_op(spec[0]), pg)
    elif kind == "broadcast":
        _m.broadcast(out, group=pg, group_src=spec[0])
    elif kind == "reduce":
        _m.reduce(out, op=reduce_op(spec[1]), group=pg, group_dst=spec[0])
    elif kind == "all_gather":
        if spec[0] is None:
            try:
                _m.all_gather_into_tensor(out, src, pg)
            except SizeMismatch as e:
                raise _gather_sizes(e, src) from e
        else:
            _m.all_gather(_rows(out, spec[0]), src, pg)
    elif kind == "reduce_scatter":
        if spec[0] is None:
            _m.reduce_scatter_tensor(out, src, reduce_op(spec[1]), pg)
        else:
            _m.reduce_scatter(out, _rows(src, spec[0]), reduce_op(spec[1]), pg)
    elif kind == "all_to_all":
        scounts, rcounts = spec
        _m.all_to_all_single(out, src, None if rcounts is None else list(rcounts),
                             None if scounts is None else list(scounts), pg)
    elif kind == "sendrecv":
        _sendrecv(spec, t, src, out)
    elif kind == "_probe":  # (whether XLA made the output the input's buffer: noted)
        PROBED.append(bool(np.may_share_memory(src, out)))
        np.add(src, 1, out=out)
    else:
        raise AssertionError(kind)


def _gather_sizes(e: SizeMismatch, src: np.ndarray) -> SizeMismatch:
    """An even all_gather's SizeMismatch as the user called it, with the fix (it names
    all_gather_into_tensor's output_tensor, which the user never passed)."""
    return SizeMismatch(
        f"mpicoll.jax.all_gather (or all_gather_into_tensor) under a transformation: the "
        f"ranks' inputs differ in size, and without sizes= every rank's input must have "
        f"this rank's shape {src.shape}; pass sizes=[dim 0 of each rank's input] to "
        f"mpicoll.jax.all_gather ({e})")


def _sendrecv(spec: tuple, t: Twin, src: np.ndarray, out: np.ndarray) -> None:
    dst, source, tag = spec
    if dst == t.rank and source == t.rank:
        np.copyto(out, src)
        return
    ops = []
    if dst is not None:
        ops.append(_m.P2POp(_m.isend, src, group=t.group, tag=tag, group_peer=dst))
    if source is not None:
        ops.append(_m.P2POp(_m.irecv, out, group=t.group, tag=tag, group_peer=source))
    else:
        out.fill(0)
    for work in _m.batch_isend_irecv(ops) if ops else ():
        work.wait()


# A lean collective whose buffers are fresh (XLA's FFI handler says so: not those of
# either of its last two calls) and of up to this many bytes runs on two arrays of its
# own, its input copied in and its result copied out. A group keeps a repeated call's
# messages by where its arrays lie, so each call on new buffers would find none and post
# its own (all_to_all_single of 8 B in jit, 2 ranks: 47 us a call, against 17 staged).
# Above it, or where XLA hands the same buffers in turn (their messages are kept, and
# found), the call is made on XLA's buffers.
STAGED = 1 << 12


def lean(kind: str, spec: tuple, t: Twin, dtype: Any, in_shape: tuple[int, ...],
         out_shape: tuple[int, ...], aliased: bool | None = None
         ) -> Callable[..., bool] | None:
    """What :func:`run` does for one compiled collective, with what cannot change between
    its calls worked out once (the group, the ReduceOp, the form): a function of (src,
    out, fresh=False) that makes the call and returns True.

    Built when the collective is lowered, for the calls a compiled step repeats
    (all_reduce, and the even all_gather, reduce_scatter and all_to_all). It calls the
    public collective, as :func:`run` does: its first call validates and remembers the
    call, and later ones take its quick path (in the compiled core where it is in use:
    the tests, the lookup, the call and the wait in C); where ``fresh`` (buffers not
    seen in the last calls) and up to :data:`STAGED` bytes, on arrays of its own.
    ``aliased``: whether all_reduce's ``out`` is always ``src``'s buffer (True), never
    (False), or may be (None: asked on each call). None: no lean form.
    """
    pg = t.group
    n_in, n_out = (int(np.prod(shape, dtype=np.int64)) for shape in (in_shape, out_shape))
    small = np.dtype(dtype).itemsize * max(n_in, n_out) <= STAGED
    if kind == "all_reduce":
        rop = reduce_op(spec[0])
        # (staged where the call is messages, kept by where they lie: MPI's Allreduce
        # keeps nothing; the site's own array: its calls never overlap, the ordered
        # effect runs them one by one)
        stage = np.empty(out_shape, dtype) if small and pg is not None and as_messages(
            pg, n_out) else None

        def reduced(src: np.ndarray, out: np.ndarray, fresh: bool = False) -> bool:
            if fresh and stage is not None:
                np.copyto(stage, src)
                _m.all_reduce(stage, rop, pg)
                np.copyto(out, stage)
                return True
            # the buffer lowering aliases the input to the output (XLA copies the input
            # first where it is still needed): in place; else copied there first
            if not (may_share_memory(src, out) if aliased is None else aliased):
                np.copyto(out, src)
            _m.all_reduce(out, rop, pg)
            return True

        return reduced
    call = None
    if kind == "all_gather" and spec[0] is None:

        def call(src: np.ndarray, out: np.ndarray) -> bool:
            try:
                _m.all_gather_into_tensor(out, src, pg)
            except SizeMismatch as e:
                raise _gather_sizes(e, src) from e
            return True

    elif kind == "reduce_scatter" and spec[0] is None:
        rop = reduce_op(spec[1])

        def call(src: np.ndarray, out: np.ndarray) -> bool:
            _m.reduce_scatter_tensor(out, src, rop, pg)
            return True

    elif kind == "all_to_all" and spec[0] is None and spec[1] is None:

        def call(src: np.ndarray, out: np.ndarray) -> bool:
            _m.all_to_all_single(out, src, None, None, pg)
            return True

    if call is None:
        return None
    # (the site's own: its calls never overlap, the ordered effect runs them one by one)
    staged_in = np.empty(in_shape, dtype) if small else None
    staged_out = np.empty(out_shape, dtype) if small else None

    def exchanged(src: np.ndarray, out: np.ndarray, fresh: bool = False) -> bool:
        if not fresh or staged_in is None:
            return call(src, out)
        np.copyto(staged_in, src)
        call(staged_in, staged_out)
        np.copyto(out, staged_out)
        return True

    return exchanged
