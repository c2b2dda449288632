"""[3] The point-to-point messages of a direct call (:mod:`._direct`): posted, waited
for as any call is, and the counts their tags carry compared with those expected."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from numpy import array as _array
from numpy import copyto as _copyto
from numpy import int64 as _int64
from numpy import uint8 as _uint8
from numpy import zeros as _zeros

from .. import _core_loader, _departed, _polling
from .._abandoned import settle
from .._checkmode import verify
from .._describe import mpi_error
from .._env import flag
from .._env import settings as _settings
from .._mpi import MPI
from .._recorder import done, issued, kept, recording, waiting
from .._tags import tag_ub
from .._wait import wait_requests
from .._work import Work
from ..errors import SignatureMismatch, torch_flavoured
from . import _large
from ._signature import acknowledging, bits, differs, roots_differ
from ._sizes import Sizes

_ANY = MPI.ANY_TAG
_BYTE = MPI.BYTE
_buffer = MPI.buffer
_INT_MAX = 2**31 - 1
_Status = MPI.Status
_Request = MPI.Request
_testall = MPI.Request.Testall
_startall = MPI.Prequest.Startall


def _bytes(buf: Any, count: int, at: int, dt: Any, isz: int) -> list:
    """A message's buffer specification: ``count`` elements of ``dt`` (``isz`` bytes each)
    from element ``at`` of ``buf``, as bytes where their number fits an int. A receive of
    another dtype's message, whose length is no whole number of its elements (3 float32
    into float64), then arrives to be refused by its tag's signature: typed, MPICH stops
    the process on it (an assertion in its unpacking) before any check can run. The
    elements counted by ``MPI_Get_count`` with ``dt`` are the same."""
    n = count * isz
    return [buf, (n, at * isz), _BYTE] if n <= _INT_MAX else [buf, (count, at), dt]


# where a root's acknowledgements arrive (:class:`Direct`'s ``acks``): none carries data,
# but a rank that took itself for the root sends its data there instead, to be refused
# by its tag. The room holds at least the largest message of the call (:attr:`Direct.room`:
# a peer's chunk for this rank is the size of this rank's own, where the ranks agree on
# sizes), never less than ACK_ROOM bytes: a message cut short is an error
# on MPICH, but on Open MPI a long one can be written past the room's end (its
# single-copy path) before any check runs. Shared by size class (a power of two; only a
# call that raises writes into one), numpy's zeros, whose pages stay untouched until
# then; at most 2**30 bytes (a longer chunk that meets an acknowledgement is Open MPI's
# hazard of sizes that differ, docs/errors.md)
ACK_ROOM = 1 << 14
_ROOM_MAX = 1 << 30
_rooms: dict[int, Any] = {}


def _ack_room(nbytes: int) -> list:
    """A receive of an acknowledgement into a room of at least ``nbytes`` (capped)."""
    size = min(max(ACK_ROOM, 1 << max(nbytes - 1, 0).bit_length()), _ROOM_MAX)
    room = _rooms.get(size)
    if room is None:
        room = _rooms[size] = _zeros(size, _uint8)
    return [room, size, _BYTE]


_NOTHING = [bytearray(1), (0, 0), _BYTE]

# whether a direct call's messages are posted afresh at each call (MPI_Irecv, MPI_Isend,
# from the compiled core's kept Plan), so that each send's tag also carries the call's
# number on its group (:data:`SEQ_BITS` of it), rather than restarted from persistent
# requests, whose tags are fixed when they are made. The number tells a message left over
# from an earlier call (a root that differed beyond two ranks, an error caught and the job
# gone on) from this call's, where it would otherwise be received as this call's data.
# Measured: on Open MPI persistent starts cost about 1.75x new messages (0.31 against
# 0.18 us a pair, 8 B, 2 ranks); on MPICH the same. Where no core is in use, a direct call
# then posts its messages at each call (nothing kept). MPICOLL_FRESH=0: persistent
# requests, no call number in the tags (to measure one against the other)
FRESH = flag("MPICOLL_FRESH", True)
# the bits of a call's number on its group that each tag carries (calls counted modulo
# 2**SEQ_BITS), between the count and the signature
SEQ_BITS = 4


def _where(spec: list) -> tuple[int, int, Any]:
    """A buffer specification [buffer, (count, displacement) or count, datatype] as
    (address, count, datatype), the displacement in the datatype's units."""
    buf, how, dt = spec
    count, at = how if type(how) is tuple else (how, 0)
    return _buffer(buf).address + at * dt.Get_extent()[1], count, dt


class Kept(NamedTuple):
    """A repeated call's messages as its group keeps them where the compiled core is not
    in use and they are persistent requests (``MPICOLL_FRESH=0``: by default that path
    keeps none, :func:`._direct.keeps`). The core keeps a ``Plan``, whose ``hit``,
    ``reqs`` and ``statuses`` are the same. Taken out while in use and put back once
    complete (:mod:`._direct`)."""

    hit: Any  # the quick entry it was made for
    reqs: list[Any]  # persistent requests, started at each call
    statuses: list[Any]  # their statuses
    args: tuple | None  # the MPI call's arguments it stands for (None: made at each call)
    bufs: tuple  # the messages' buffers, as Direct.post takes them
    copy: tuple | None = None  # this rank's own block: (destination, index, source)
    finalize: Any = None  # what follows the messages: a reduction of the blocks
    direct: Any = None  # the messages' Direct, where the caller does not hold it
    owns: Any = None  # memory the requests write that nothing else holds (a scratch)


class Direct:
    """One call's messages: ``recvs`` (peer, count it must send, where its count goes in
    ``base``) and ``sends`` (peer, count), counts in elements; made once per call
    signature and kept with the quick path's entry; read-only, so calls in flight at
    once share it. ``base``: what ``sizes`` expects to receive, in its order (the
    counts' wording for a mismatch, :mod:`._sizes`; None where the check is off,
    ``MPICOLL_CHECK=0``). ``counts``: an exchange's (send, receive) counts of every
    rank, for its arguments.

    ``acks``: a broadcast's or scatter's acknowledgements, where the check is on. A root
    receives one from each rank (peer, count, where in ``base``; into room for ``room``
    elements, or the most it sends a peer), each rank sends one to the root (peer,
    count): no data, a tag with the count and
    :func:`._signature.acknowledging`'s signature. So every rank that takes itself for
    the root receives from every other rank: where two ranks take different roots, each
    one's message reaches the other at this call and is refused by its tag, where
    without them each would return its own tensor (or chunk) and leave its message
    queued for the next call between them."""

    __slots__ = ("acks_in", "acks_out", "base", "big", "bits", "capped", "cmax", "counts",
                 "lengths", "recvs", "room", "sends", "shift", "sig", "sizes", "stamps", "tags",
                 "zeros")

    def __init__(self, recvs: list[tuple[int, int, int]], sends: list[tuple[int, int]],
                 base: list[int], sizes: Sizes | None, n: int,
                 counts: tuple[list[int], list[int]] | None = None, sig: int = 0,
                 acks: list[tuple] = (), room: int = 0) -> None:
        # a tag: the count, then the call's number (:meth:`stamp`, where the messages are
        # posted afresh at each call: :data:`FRESH`), then the signature's bits
        # (:mod:`._signature`: which collective, dtype and reduce op); the count capped at
        # what the tag can hold. The tags below carry no number: :meth:`stamp` adds it
        b = self.bits = bits() if sizes is not None else 0
        self.sig = sig if b else 0
        self.stamps = (1 << SEQ_BITS) - 1 if b and FRESH else 0
        shift = self.shift = b + (SEQ_BITS if self.stamps else 0)
        cmax = self.cmax = ((tag_ub() + 1) >> shift) - 1

        def tag(c: int, signed: int = self.sig) -> int:
            return min(c, cmax) << shift | signed

        # (only where the tags carry signatures: else an acknowledgement's tag, its count
        # alone, would pass for the data a receive expects, and two roots return unwritten)
        acks = acks if b else ()
        ack = acknowledging(self.sig)
        self.acks_in = [(j, c, at) for j, c, at in (a for a in acks if len(a) == 3)]
        self.acks_out = [(j, tag(c, ack)) for j, c in (a for a in acks if len(a) == 2)]
        self.recvs = [*recvs, *self.acks_in]
        self.sends = [(j, c, tag(c)) for j, c in sends]
        # (elements: where the acknowledgements arrive, as large as the call's largest
        # message, ``room`` where the caller knows a larger one than it sends)
        self.room = max(room, *(c for _, c in sends), 0)
        # what each receive's tag must be (the acknowledgements' last)
        self.tags = (*(tag(c) for _, c, _ in recvs), *(tag(c, ack) for _, c, _ in self.acks_in))
        # (a count a tag cannot hold: its length compared; (index, count) of those receives)
        self.lengths = tuple((k, c) for k, (_, c, _) in enumerate(recvs) if c >= cmax)
        self.capped = bool(self.lengths)
        self.base, self.sizes, self.counts = base, sizes, counts
        self.zeros = [0] * n  # (displacements of a lone tensor, to every peer)
        # a count above INT_MAX on MPI-3: one element of a type that holds them all (_large)
        self.big = _large.MPI3 and any(c > _large.INT_MAX for c in (
            *(c for _, c, _ in recvs), *(c for _, c in sends)))

    def stamp(self, seq: int) -> int:
        """What call ``seq`` on the group adds to each of its tags: its number, modulo
        2**:data:`SEQ_BITS`, above the signature (0 where the tags carry none)."""
        return (seq & self.stamps) << self.bits

    def post(self, comm: Any, bufs: tuple, seq: int) -> list[Any]:
        """Post the receives, then the sends, of call ``seq`` on the group: ``bufs`` =
        (send buffer, its displacement for each rank, receive buffer, its displacement for
        each rank, MPI datatype), displacements in elements."""
        sbuf, sd, rbuf, rd, dt = bufs
        irecv, isend, isz = comm.Irecv, comm.Isend, dt.Get_size()
        data = len(self.recvs) - len(self.acks_in)
        at = self.stamp(seq)
        if self.big:  # (in the same order: the data's receives, the acknowledgements', ...)
            reqs = _large.post_messages(comm, self.recvs[:data], [], sbuf, sd, rbuf, rd, dt)
            reqs += [irecv(_ack_room(self.room * isz), j, _ANY) for j, _, _ in self.acks_in]
            reqs += _large.post_messages(comm, [], [(j, c, tag + at) for j, c, tag in self.sends],
                                         sbuf, sd, rbuf, rd, dt)
            return reqs + [isend(_NOTHING, j, tag + at) for j, tag in self.acks_out]
        reqs = [irecv(_bytes(rbuf, c, rd[j], dt, isz), j, _ANY) for j, c, _ in self.recvs[:data]]
        reqs += [irecv(_ack_room(self.room * isz), j, _ANY) for j, _, _ in self.acks_in]
        for j, c, tag in self.sends:
            reqs.append(isend(_bytes(sbuf, c, sd[j], dt, isz), j, tag + at))
        reqs += [isend(_NOTHING, j, tag + at) for j, tag in self.acks_out]
        return reqs

    def prepare(self, comm: Any, bufs: tuple) -> tuple[list[Any], tuple | None]:
        """:meth:`post`'s messages for a call kept as the compiled core's ``Plan``, or the
        Python path's :class:`Kept` (not where :attr:`big`): (requests, posts). Where
        :data:`FRESH` (the core's only), ``posts`` is (``comm``, each message as the core
        posts it afresh at each run: (send, address, count, datatype, peer, tag without
        the call's number)), and the requests are empty (``MPI_REQUEST_NULL``), one a
        message, for the core to hand back those MPI left running after an error. Else
        ``posts`` is None and the requests persistent, not started (Recv_init,
        Send_init)."""
        sbuf, sd, rbuf, rd, dt = bufs
        isz = dt.Get_size()
        data = len(self.recvs) - len(self.acks_in)
        specs = [(0, _bytes(rbuf, c, rd[j], dt, isz), j, _ANY)
                 for j, c, _ in self.recvs[:data]]
        specs += [(0, _ack_room(self.room * isz), j, _ANY) for j, _, _ in self.acks_in]
        specs += [(1, _bytes(sbuf, c, sd[j], dt, isz), j, tag) for j, c, tag in self.sends]
        specs += [(1, _NOTHING, j, tag) for j, tag in self.acks_out]
        if FRESH:
            return ([_Request() for _ in specs],
                    (comm, tuple((send, *_where(spec), j, tag) for send, spec, j, tag in specs)))
        rinit, sinit = comm.Recv_init, comm.Send_init
        return [(sinit if send else rinit)(spec, j, tag) for send, spec, j, tag in specs], None

    def check(self, statuses: list[Any], me: int, dt: Any, seq: int = 0) -> None:
        """Raise SignatureMismatch where a peer's call is another collective, or of another
        dtype or reduce op (the signature in its tag), SizeMismatch where it sent another
        count than this rank expects (its receives' statuses, first in ``statuses``);
        ``seq``: the call's number on its group, for the message."""
        sizes = self.sizes
        if sizes is None:
            return
        at = self.stamp(seq)
        # the common case, each tag as expected: one test each (the sends' statuses follow)
        for want, st in zip(self.tags, statuses, strict=False):
            if st.Get_tag() != want + at:
                break
        else:
            if not self.capped:
                return
        b, cmax, mask, shift = self.bits, self.cmax, (1 << self.bits) - 1, self.shift
        for k, want in enumerate(self.tags):
            st = statuses[k]
            tag = st.Get_tag()  # (negative: no status, after an error; not compared)
            if tag >= 0 and (tag >> b) & self.stamps != seq & self.stamps:
                self._leftover(self.recvs[k][0], (tag >> b) & self.stamps, me, seq)
            if tag >= 0 and tag & mask != want & mask:
                self._differs(self.recvs[k][0], want & mask, tag & mask, me,
                              k >= len(self.tags) - len(self.acks_in), seq)
            if (tag != want + at and tag >= 0) or (tag >> shift == cmax and not self.big and
                                                   st.Get_count(dt) != self.recvs[k][1]):
                break
        else:
            return
        got = list(self.base)
        for k, (_, c, at) in enumerate(self.recvs):
            st = statuses[k]
            tag = st.Get_tag()
            got[at] = c if tag < 0 else tag >> shift if tag >> shift < cmax or self.big or \
                st.Get_error() else st.Get_count(dt)
        sizes.mismatch(_array(got, _int64), me)

    def _leftover(self, peer: int, theirs: int, me: int, seq: int) -> None:
        """Raise SignatureMismatch: group rank ``peer``'s message, received at call ``seq``
        on the group, was sent at another call (``theirs``: its number, modulo
        2**:data:`SEQ_BITS`)."""
        m = self.stamps + 1
        then = seq - (seq - theirs) % m
        raise torch_flavoured(SignatureMismatch)(
            f"{self.sizes.op} #{seq}: rank {peer}'s message to rank {me} belongs to another "
            f"call: rank {peer} sent it at its call #{then} on the group (or {m}, {2 * m}, "
            f"... calls before it: the tags count calls modulo {m}), left over from an "
            "earlier call that did not complete on every rank (a root that differed, an "
            f"error caught and the job gone on). The output of rank {me} is not what the "
            "call asked for; every rank must make the same collectives, in the same order")

    def _differs(self, peer: int, mine: int, theirs: int, me: int, root: bool,
                 seq: int) -> None:
        """Raise SignatureMismatch: group rank ``peer``'s call is another than this one,
        call ``seq`` on the group (``root``: this rank is a broadcast's or scatter's root,
        reading an acknowledgement)."""
        op = f"{self.sizes.op} #{seq}" if seq else self.sizes.op
        roots = roots_differ(mine, theirs)
        if roots is not None:
            raise torch_flavoured(SignatureMismatch)(
                f"{op}: the ranks disagree on the root: "
                f"{roots.format(peer=peer, me=me)}. The output of rank {me} is not what the "
                "call asked for; every rank must pass the same src (or group_src)")
        said = "; ".join(differs(mine, theirs))
        outcome = (f"The root's tensor (rank {me}) is "
                   f"{'unchanged' if self.sizes.op == 'broadcast' else 'its own chunk'}; "
                   f"rank {peer}'s output is not what the call asked for" if root else
                   f"Rank {me} did not wait for the others" if
                   self.sizes.op == "barrier" else
                   f"The output of rank {me} is not what the call asked for")
        raise torch_flavoured(SignatureMismatch)(
            f"{op}: rank {peer} made another call than rank {me} at the same "
            f"point: {said}. {outcome}; every rank must make the same collectives, in the "
            "same order, with the same dtype and reduce op")


class Fold:
    """The reduction of a direct call's blocks in rank order, as the compiled core makes
    it from :attr:`spec` (mpicoll/_core.c, reduce_in_rank_order), here with mpi4py's
    ``Reduce_local``, call for call the same. An all_reduce's (:mod:`._all_reduce_direct`):
    into ``buf`` (its own block, in place), each peer's block in ``scratch`` at its rank's
    place: x0 op x1 op .... A reduce_scatter's (``own``: this rank's own chunk): ``own``
    reduced with each peer's chunk into ``buf``."""

    __slots__ = ("buf", "dt", "me", "mpi_op", "own", "scratch", "spec")

    def __init__(self, mpi_op: Any, dt: Any, me: int, buf: Any, scratch: Any,
                 own: Any = None) -> None:
        self.mpi_op, self.dt, self.me, self.buf, self.scratch = mpi_op, dt, me, buf, scratch
        self.own = own
        self.spec = (mpi_op, me, buf, scratch) if own is None else \
            (mpi_op, me, buf, scratch, own)

    @classmethod
    def of(cls, spec: tuple, dt: Any) -> Fold:
        """The fold of a core ``Plan``'s ``spec`` (:attr:`spec`) on datatype ``dt``."""
        return cls(spec[0], dt, *spec[1:])

    def __call__(self) -> None:
        c, me = self.buf.size, self.me
        flat = self.buf.reshape(-1)
        if self.own is not None:
            _copyto(flat, self.own.reshape(-1))
            for j in range(self.scratch.size // c if c else 0):
                if j != me:
                    self.mpi_op.Reduce_local([self.scratch[j * c:(j + 1) * c], self.dt],
                                             [flat, self.dt])
            return
        acc = flat if me == 0 else self.scratch[:c]
        for j in range(1, self.scratch.size // c):
            src = flat if j == me else self.scratch[j * c:(j + 1) * c]
            self.mpi_op.Reduce_local([src, self.dt], [acc, self.dt])  # acc = src op acc
        if me != 0:
            _copyto(flat, acc)


def issue(op: str, group: Any, direct: Direct, args: tuple, bufs: tuple,
          copy: tuple | None, finalize: Callable[[], Any] | None = None,
          async_op: bool = False, outputs: list[Any] | None = None, keep: Any = None,
          sig: Callable[[], dict[str, Any]] | None = None, depth: int = 3,
          started: Any = None, fold: tuple | None = None) -> Work | None:
    """:func:`._call.issue` of a direct call: post ``direct``'s messages over ``bufs``
    (:meth:`Direct.post`; ``args``: the MPI collective's arguments it stands for, for
    the flight recorder and errors), copy this rank's own block (``copy`` =
    (destination, index, source): ``destination[index] = source``; or None), then wait
    (or return the Work) and compare the counts the peers sent before ``finalize``.
    ``depth``: frames up to the user's, for the flight recorder (:func:`._call.quick`'s).
    ``started``: the group's :class:`Kept` messages, or the core's ``Plan``, its
    requests started instead of posting (a blocking call's); freed here wherever they
    cannot be started again (a mismatch, an MPI error, an interrupt). ``fold``: with
    ``started``, where ``finalize`` is an all_reduce's reduction of the blocks
    (:mod:`._all_reduce_direct`), the same reduction as the compiled core makes it: (MPI
    op, rank, buffer, scratch)."""
    seq = group.seq = group.seq + 1
    core = (_core_loader.module or _core_loader.load()) if started is not None and not \
        async_op else None
    try:
        if _departed.left:
            _departed.check(op, group, seq)
        if sig is not None and _settings().check:
            verify(op, group, sig())
        if core is not None:
            return _in_core(core, op, group, seq, direct, args, bufs[4], copy, finalize,
                            keep, started, fold)
        rec = issued(op, group, seq, args, depth=depth,
                     owner=None if started is None else started.statuses)
    except BaseException:
        if started is not None:  # (not started: never restarted either)
            free(started.reqs)
        raise
    try:
        if started is None:
            reqs = direct.post(group.direct, bufs, seq)
            sts = [_Status() for _ in reqs]
        else:
            reqs, sts = started.reqs, started.statuses
            _startall(reqs)
    except MPI.Exception as e:
        done(rec, False)
        if started is not None:
            free(reqs)
        raise mpi_error(op, e, args) from e
    me, dt = group._rank, bufs[4]
    if async_op:
        if copy is not None:  # (no message of this rank's to itself: MPI never touches it)
            copy[0][copy[1]] = copy[2]
        return Work(op, reqs, partial(_compared, direct, sts, me, dt, finalize, seq),
                    keep=(held := (args, keep)), outputs=outputs, group=group, seq=seq,
                    explain=partial(_explain, direct, reqs, sts, me, dt, op, group, seq, held),
                    rec=rec, statuses=sts)
    try:
        if copy is not None:  # (no message of this rank's to itself: MPI never touches it)
            copy[0][copy[1]] = copy[2]
        if not _testall(reqs, sts):
            waiting(rec)
            wait_requests(reqs, op, group, seq, args, statuses=sts)
    except MPI.Exception as e:
        done(rec, False)
        # (the counts compared, once what MPI left pending completed; persistent
        # requests freed there, not where an interrupt leaves them running)
        _explain(direct, reqs, sts, me, dt, op, group, seq, (args, keep), started is not None)
        raise mpi_error(op, e, args) from e
    except BaseException:
        # interrupted: the messages, and what follows them, become a pending Work, as if
        # the call had been made with async_op=True (the own block copied again: an
        # interrupt may have come before it; the same copy twice is the same)
        if copy is not None:
            copy[0][copy[1]] = copy[2]
        if started is not None and all(r.Get_status() for r in reqs):
            # (persistent requests are never null: complete, waited for or not, they
            # leave nothing pending; what follows them done before the interrupt goes
            # on: a reduce_scatter's reduction, a sizes check)
            done(rec)
            free(reqs)
            _compared(direct, sts, me, dt, finalize, seq)
        elif any(reqs):
            compared = partial(_compared, direct, sts, me, dt, finalize, seq)
            Work(op, reqs, compared if started is None else partial(_freed_after, reqs, compared),
                 keep=(held := (args, keep)), outputs=outputs, group=group, seq=seq,
                 explain=partial(_explain, direct, reqs, sts, me, dt, op, group, seq, held,
                                 started is not None),
                 rec=rec, statuses=sts)
        else:  # (all completed as the wait returned)
            done(rec)
            _compared(direct, sts, me, dt, finalize, seq)
        raise
    try:
        direct.check(sts, me, dt, seq)
    except BaseException:
        done(rec, False)
        if started is not None:
            free(reqs)
        raise
    done(rec)
    if finalize is not None:
        finalize()
    return None


def issue_plan(op: str, group: Any, plan: Any, keep: Any, depth: int) -> None:
    """A kept ``Plan`` of the compiled core that its lookup did not run (a rank has left:
    :func:`issue` asks first whether it is in the group), run this once by :func:`issue`:
    its messages, the MPI call's arguments, datatype, own block and reduction are the
    Plan's. ``depth``: frames up to the user's, from the caller."""
    copy = None if plan.copy is None else (plan.copy[0], Ellipsis, plan.copy[1])
    fold = None if plan.fold is None else Fold.of(plan.fold, plan.datatype)
    issue(op, group, plan.direct, plan.args, (None, None, None, None, plan.datatype), copy,
          fold, keep=keep, depth=depth + 1, started=plan, fold=plan.fold)


def _in_core(core: Any, op: str, group: Any, seq: int, direct: Direct, args: tuple,
             dt: Any, copy: tuple | None, finalize: Callable[[], Any] | None, keep: Any,
             started: Any, fold: tuple | None) -> None:
    """:func:`issue` of kept messages (``started``), blocking, in the compiled core: started,
    this rank's own block copied, waited for (watched past its tests) and recorded in C;
    the tags compared there (and here where one differs), the blocks reduced there where
    ``fold`` says."""
    reqs, sts = started.reqs, started.statuses
    if copy is not None and copy[1] is not Ellipsis:  # (the core copies a whole block)
        copy[0][copy[1]] = copy[2]
        copy = None
    try:
        differs = core.startwait(op, group, seq, started,
                                 None if copy is None else (copy[0], copy[2]),
                                 kept(args, sts) if recording() else None,
                                 len(_polling.spin), args, fold)
    except MPI.Exception as e:
        settle_core(core, op, group, seq, direct, reqs, sts, dt, args, keep, e)
    except BaseException:  # (not an MPI error: the own block's copy; all complete)
        free(reqs)
        raise
    if differs is not None:
        settle_core(core, op, group, seq, direct, reqs, sts, dt, args, keep, differs)
    elif fold is not None:  # (reduced in the core)
        return
    if finalize is not None:
        finalize()


def settle_core(core: Any, op: str, group: Any, seq: int, direct: Direct, reqs: list[Any],
                sts: list[Any], dt: Any, args: tuple, keep: Any, outcome: Any) -> None:
    """What the compiled core left of call ``seq``'s messages (``reqs``: persistent, or
    those MPI left running where they were posted afresh): an
    MPI error (``outcome``, raised: what the tags say first, :func:`_explain`), or the
    record's id where a tag or a length differs (:meth:`Direct.check` raises, the record
    marked failed and ``reqs`` freed; returns where the counts' check is off)."""
    if isinstance(outcome, MPI.Exception):
        _explain(direct, reqs, sts, group._rank, dt, op, group, seq, (args, keep), True)
        raise mpi_error(op, outcome, args) from outcome
    try:
        direct.check(sts, group._rank, dt, seq)
    except BaseException:
        core.failed(outcome)
        free(reqs)
        raise


def free(reqs: list[Any]) -> None:
    """Free persistent requests (inactive, or left to complete: MPI_Request_free)."""
    for r in reqs:
        if r:
            r.Free()


def _freed_after(reqs: list[Any], then: Callable[[], Any]) -> None:
    """A pending Work's completion of persistent requests: free them, then ``then``."""
    free(reqs)
    then()


def _compared(direct: Direct, sts: list[Any], me: int, dt: Any,
              finalize: Callable[[], Any] | None, seq: int = 0) -> None:
    """An async direct call's completion: the counts compared, then ``finalize``."""
    direct.check(sts, me, dt, seq)
    if finalize is not None:
        finalize()


def _explain(direct: Direct, reqs: list[Any], sts: list[Any], me: int, dt: Any, op: str,
             group: Any, seq: int, held: tuple, persistent: bool = False) -> None:
    """An MPI error (a message cut short): what the tags say, once the messages MPI left
    running have completed (:func:`~mpicoll._abandoned.settle`; ``held``: the call's
    arguments and the caller's tensors, kept with any it cannot complete)."""
    try:
        settle(reqs, sts, op, group, seq, held)
    finally:
        if persistent:  # (complete, failed or kept running: never restarted)
            free(reqs)
    direct.check(sts, me, dt, seq)
