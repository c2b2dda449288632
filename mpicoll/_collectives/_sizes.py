"""[2] The sizes each rank sends, compared with what its peers expect, beside the data.

In a v-collective (uneven split sizes, lists, gather, scatter, reduce_scatter of a
list) every rank states its own counts, and MPI does not always tell when they
disagree: MPICH's nonblocking ``Ialltoallv`` truncates a longer message silently, and
no MPI reports a shorter one, whose tail is left unwritten. So each such call posts a
second, small collective of counts right after its data, in the same order on every
rank, and waits for both: the counts travel beside the data, not in a round trip
before it. Once both are complete, a rank whose output would be wrong raises
:class:`~mpicoll.errors.SizeMismatch`, naming the operation, the peer and both counts:
the receiver of a direct message (all_to_all, gather, scatter: an Ialltoall, Igather or
Iscatter of counts), or every rank where MPI relays data between ranks (all_gather,
reduce_scatter: :class:`Agreed`). Exchanges on a few ranks carry their counts in their
own messages instead (:mod:`._direct`), worded by the same :class:`Sizes`.

``MPICOLL_CHECK=0`` turns it off (every rank must agree on that setting, as on
``MPICOLL_CHECK=1``, whose signature comparison covers this and more).
"""

from __future__ import annotations

from typing import Any

from numpy import array as _array
from numpy import empty as _empty
from numpy import frombuffer as _frombuffer
from numpy import int64 as _int64

from .. import _env
from .._mpi import MPI
from ..errors import SignatureMismatch, SizeMismatch, torch_flavoured
from ._counts_ring import RINGS, Ring
from ._persistent_choice import choose
from ._signature import code, differs

_MAX = MPI.MAX


class Sizes:
    """One call's counts: the small collective that carries them (``method`` on
    ``send``, ``n`` counts received, ``after``: its arguments after the buffers, the root
    or the MPI op) and what this rank expects to receive (bytes of int64, None where
    this rank receives nothing to compare). Made once per call signature
    (:func:`_kept`) and kept with the quick path's entry; read-only, so calls in flight
    at once share it.

    ``sig``: the call's signature (:func:`._signature.code`: which collective, dtype and
    reduce op), or None. Where it is given (whatever its value: every rank of a call
    gives one, or none), each count posted travels with it, as the pair
    (count, signature), and a receiver whose counts agree but whose peer's signature
    differs raises SignatureMismatch: MPI's collectives carry no tag, so on groups whose
    calls are MPI's (more than 8 ranks) this is what tells a float32 call from a float64
    one of the same counts, at no extra message. Direct messages carry it in their tags
    (:mod:`._messages`), and word their counts with the same object."""

    __slots__ = ("after", "expected", "form", "method", "n", "op", "root", "says", "send",
                 "sent", "sig")
    # whether every rank compares the counts (:class:`Agreed`): then a rank whose data
    # MPI may never complete can leave it, every rank knowing; where only a receiver
    # compares, its own data completes (cut short, or with an error) and its peers', which
    # agree, need this rank to go on driving it
    relayed = False

    def __init__(self, op: str, method: str, send: Any, n: int, expected: list[int] | None,
                 says: str, root: int | None = None, after: tuple = (),
                 sig: int | None = None) -> None:
        self.sig = sig
        if sig is not None:  # (each count with the signature beside it)
            send = None if send is None else [v for c in send for v in (c, sig)]
            expected = None if expected is None else [v for c in expected for v in (c, sig)]
            n *= 2
        self.op, self.method, self.n, self.root, self.says = op, method, n, root, says
        self.after = after if root is None else (root,)
        self.send = None if send is None else _array(send, _int64)
        self.sent = None if send is None else self.send.tobytes()
        self.expected = None if expected is None else _array(expected, _int64).tobytes()
        # the persistent requests that can carry these counts (Ring): the same on every
        # rank for the same call
        self.form = (method, root, 0 if send is None else self.send.size, n)

    def prepare(self, group: Any) -> None:
        """Before the call's data is posted: where the counts take a persistent request
        (:mod:`._counts_ring`), make the group's ring of this form at its first call, and
        the slot this call takes free."""
        ring = self.ring(group)
        if ring is not None:
            ring.ready(self.op, group)

    def post(self, group: Any) -> tuple[Any, Any, Ring | None, int]:
        """Start the counts' collective on ``group``: (request, what it receives into, its
        :class:`Ring` and slot there, to note an owner; None, 0 where not persistent)."""
        ring = self.ring(group)
        if ring is not None:
            return ring.start(self.op, group, self.sent)
        recv = _empty(self.n, _int64) if self.n else None
        return getattr(group.comm, self.method)(self.send, recv, *self.after), recv, None, 0

    def ring(self, group: Any) -> Ring | None:
        """The group's :class:`Ring` of these counts' form, made at its first call (every
        rank makes it at the same call), or None where they go in a nonblocking
        collective of their own (no persistent collectives, or a form past the first
        ``RINGS``). The compiled core asks for it too, where the group has none yet."""
        global _PERSISTENT
        rings = getattr(group, "counts", None)
        if rings is None:
            return None
        if not (_PERSISTENT if _PERSISTENT is not None else _persistent()):
            if not rings:  # (none will be made: the core need not ask again)
                group.counts = None
            return None
        ring = rings.get(self.form)
        if ring is None:  # (collective: every rank makes it at the same call)
            if len(rings) >= RINGS:  # (gathers to many roots: the first forms only)
                return None
            try:
                ring = rings[self.form] = Ring(group.comm, self.method, self.after,
                                               self.form[2], self.n)
            except NotImplementedError:  # (MPICOLL_PERSISTENT=1 on a library without them)
                _PERSISTENT = False
                return None
        return ring

    def agree(self, recv: Any) -> bool:
        """Whether the counts received are those expected (or none are compared here)."""
        return self.expected is None or recv.tobytes() == self.expected

    def check(self, recv: Any, me: int, seq: int = 0) -> None:
        """Raise SizeMismatch if the counts received differ from those expected
        (``me``: this rank in the group; ``seq``: the call's number on the group)."""
        if self.expected is not None and recv.tobytes() != self.expected:
            self.mismatch(recv, me, seq)

    def mismatch(self, recv: Any, me: int, seq: int = 0) -> None:
        want = _frombuffer(self.expected, _int64)
        got = [int(c) for c in recv]
        sigs = None
        if self.sig is not None:  # (counts posted as (count, signature) pairs; a direct
            # call's alone)
            if len(got) == len(want):
                got, sigs = got[0::2], got[1::2]
            want = want[0::2]
        bad = [(j, got[j], int(want[j])) for j in range(len(got)) if got[j] != want[j]]
        if not bad and sigs is not None:
            self.signatures_differ(sigs, me, seq)
        said = "; ".join(self.says.format(peer=j, me=me, got=_elements(g), want=w,
                                          root=self.root) for j, g, w in bad)
        raise torch_flavoured(SizeMismatch)(
            f"{self.op}: the ranks disagree on sizes: {said}. {self.outcome.format(me=me)}; "
            "every rank must pass sizes that match its peers'")

    def signatures_differ(self, sigs: list[int], me: int, seq: int) -> None:
        """Raise SignatureMismatch: the signatures ``sigs`` received (one per count) are
        not all this call's."""
        j = next(j for j, s in enumerate(sigs) if s != self.sig)
        peer = self.root if self.method == "Iscatter" else j
        op = f"{self.op} #{seq}" if seq else self.op
        raise torch_flavoured(SignatureMismatch)(
            f"{op}: rank {peer} made another call than rank {me} at the same point: "
            f"{'; '.join(differs(self.sig, sigs[j]))}. The output of rank {me} is not what "
            "the call asked for; every rank must make the same collectives, in the same "
            "order, with the same dtype and reduce op")

    # what the mismatch means for this rank's output
    outcome = ("The output of rank {me} is not what the call asked for (MPI may have cut a "
               "message short or left part of the output unwritten)")


class Acknowledged(Sizes):
    """A broadcast root's: the count in each rank's acknowledgement compared with the
    root's (:class:`._messages.Direct`'s ``acks``); the root's own tensor is untouched."""

    __slots__ = ()
    outcome = ("The root's tensor (rank {me}) is unchanged; the other ranks' outputs are "
               "not what the call asked for")


_PERSISTENT: bool | None = None  # whether the counts take persistent requests (decided once)


def _persistent() -> bool:
    global _PERSISTENT
    if _PERSISTENT is None:
        _PERSISTENT = choose()[0]
    return _PERSISTENT


class Agreed(Sizes):
    """The counts of a collective whose data MPI may relay through other ranks
    (Allgatherv's rings and doublings, Reduce_scatter's halvings): one rank's wrong idea
    of a size spoils what others receive, so every rank's list of sizes must be the same.
    Its collective is an Iallreduce(MAX) of (sizes, -sizes): the greatest and least of
    each size over the ranks, equal to this rank's on every rank exactly when all
    agree; so every rank raises when any disagrees."""

    __slots__ = ()
    relayed = True

    def __init__(self, op: str, counts: list[int], says: str, sig: int | None = None) -> None:
        # (the signature, where given, as one more number whose least and greatest must be
        # this rank's)
        values = [*counts, sig] if sig is not None else list(counts)
        both = [*values, *(-c for c in values)]
        super().__init__(op, "Iallreduce", both, len(both), both, says, after=(_MAX,))
        self.sig = sig

    def mismatch(self, recv: Any, me: int, seq: int = 0) -> None:
        n = self.n // 2
        mine = _frombuffer(self.expected, _int64)[:n]
        if self.sig is not None:  # (the last number: the signature)
            n -= 1
            if all(recv[j] == mine[j] and recv[n + 1 + j] == -mine[j] for j in range(n)):
                other = int(recv[n]) if recv[n] != self.sig else -int(recv[2 * n + 1])
                op = f"{self.op} #{seq}" if seq else self.op
                raise torch_flavoured(SignatureMismatch)(
                    f"{op}: the ranks made different calls at the same point: "
                    f"{'; '.join(differs(self.sig, other))}. MPI passes the data on between "
                    "ranks, so no rank's output can be trusted; every rank must make the "
                    "same collectives, in the same order, with the same dtype and reduce op")
            recv = [*recv[:n], *recv[n + 1:2 * n + 1]]
        said = "; ".join(
            self.says.format(peer=j, me=me, lo=-int(recv[n + j]), hi=int(recv[j]),
                             want=int(mine[j]))
            for j in range(n) if recv[j] != mine[j] or recv[n + j] != -mine[j])
        raise torch_flavoured(SizeMismatch)(
            f"{self.op}: the ranks disagree on sizes: {said}. MPI passes the data on "
            "between ranks, so no rank's output can be trusted; every rank must pass the "
            "same sizes")


class Signed(Agreed):
    """What a call of MPI's own all_reduce, broadcast or reduce is, beside its data:
    which collective, dtype and reduce op (:func:`._signature.code`), the root and the
    count. MPI's collectives carry no tag, and MPI reduces or copies whatever it is
    given: a float32 all_reduce against a float64 one returns garbage on every rank,
    SUM against MAX each rank's own op's. :class:`Agreed`'s Iallreduce(MAX) of (them,
    -them) tells every rank whether all agree, and each raises SignatureMismatch where
    any differs; the data, which may never complete, is left to MPI."""

    __slots__ = ()

    def __init__(self, op: str, signature: int, root: int, count: int) -> None:
        super().__init__(op, [signature, root, count], "")  # (the signature is a value here)

    def differences(self, recv: Any) -> list[str]:
        """What differs across the ranks, from the greatest and least of each value
        (``recv``), in words: the call (:meth:`calls_differ`), the root, the size."""
        mine = [int(v) for v in _frombuffer(self.expected, _int64)[:3]]
        hi, lo = [int(v) for v in recv[:3]], [-int(v) for v in recv[3:6]]
        said = []
        if hi[0] != mine[0] or lo[0] != mine[0]:  # (another call: one of them named)
            said += self.calls_differ(mine[0], hi[0] if hi[0] != mine[0] else lo[0])
        if hi[1] != mine[1] or lo[1] != mine[1]:
            said.append(f"root: group rank {hi[1] if hi[1] != mine[1] else lo[1]} there, "
                        f"{mine[1]} here")
        if hi[2] != mine[2] or lo[2] != mine[2]:
            said.append(f"size: from {lo[2]} to {hi[2]} elements across the ranks, "
                        f"{mine[2]} here")
        return said

    def calls_differ(self, mine: int, theirs: int) -> list[str]:
        """How another rank's call (signature ``theirs``) differs from this one's."""
        return differs(mine, theirs)

    def mismatch(self, recv: Any, me: int, seq: int = 0) -> None:
        said = self.differences(recv)
        op = f"{self.op} #{seq}" if seq else self.op
        output = ("no tensor but the root's can" if self.op == "broadcast" else
                  "the root's output cannot" if self.op == "reduce" else
                  f"the output of rank {me} cannot")
        raise torch_flavoured(SignatureMismatch)(
            f"{op}: the ranks made different calls at the same point: {'; '.join(said)}. "
            f"MPI's collective ran on calls that differ, so {output} be trusted; "
            "every rank must make the same collectives, in the same order, with the same "
            "dtype, reduce op, root and size")


# an all_reduce, broadcast or reduce of at least this many elements that MPI's own
# collective makes carries its Signed beside its data. Below it (to 512 elements on 2 to 8
# ranks the call is direct messages, whose tags carry the same) it would cost more than 2%
# of the call (measured, MPICH, 2 and 4 ranks: a persistent Iallreduce of 6 int64 beside
# an Iallreduce of 64 KiB +16-20%, 1 MiB +1-7%, 4 MiB -2 to +1%). By elements, so that
# ranks whose dtypes differ still make the same calls, and are told so
SIGNED = 1 << 20


def signed(op: str, pg: Any, dtype: Any, reduce_op: Any, root: int,
           count: int) -> Signed | None:
    """The :class:`Signed` of an all_reduce, broadcast or reduce (``root`` -1 for an
    all_reduce) of ``count`` elements of ``dtype`` by MPI's collective (``reduce_op``: its
    name, a ReduceOp, or None): None below :data:`SIGNED` elements, with one rank, or
    off."""
    if count < SIGNED or pg._size == 1 or not sizes_on():
        return None
    sig = code(op, dtype, getattr(reduce_op, "name", reduce_op))
    return _kept(("signed", op, sig, root, count), lambda: Signed(op, sig, root, count))


def agreed(op: str, pg: Any, counts: list[int], what: str, dtype: Any = None,
           reduce_op: Any = None) -> Agreed | None:
    """The counts of an all_gather or reduce_scatter, which every rank must state alike
    (:class:`Agreed`), with the call's signature where ``dtype`` is given (and
    ``reduce_op``: a name or a ReduceOp); None with one rank, or off."""
    if pg._size == 1 or not sizes_on():
        return None
    sig = _code(op, dtype, reduce_op)
    return _kept(("agreed", op, what, sig, *counts), lambda: Agreed(
        op, counts, "the size of " + what + " is from {lo} to {hi} elements across the "
        "ranks ({want} on rank {me})", sig))


def exchange(op: str, pg: Any, scounts: list[int], rcounts: list[int], what: str,
             dtype: Any = None) -> Sizes | None:
    """The counts an exchange carries beside its data: this rank's send counts, each
    peer's compared with ``rcounts`` (with the call's signature where ``dtype`` is
    given); None with one rank, or off."""
    if pg._size == 1 or not sizes_on():
        return None
    sig = _code(op, dtype)
    return _kept(("exchange", op, what, sig, *scounts, None, *rcounts), lambda: Sizes(
        op, "Ialltoall", scounts, pg._size, rcounts,
        "rank {peer} sends {got} to rank {me}, whose " + what + " holds {want} for it",
        sig=sig))


def _code(op: str, dtype: Any, reduce_op: Any = None) -> int | None:
    """The signature the counts of call ``op`` carry (None: none, where ``dtype`` is None:
    whether there is one never depends on its value, so every rank posts the same)."""
    return None if dtype is None else code(op, dtype, getattr(reduce_op, "name", reduce_op))


def scattered(op: str, pg: Any, scounts: list[int], count: int, what: str) -> Sizes | None:
    """The counts of a reduce_scatter as direct messages: this rank's chunk for each
    rank, each peer's for this one compared with ``count`` (output's size)."""
    if pg._size == 1 or not sizes_on():
        return None
    return _kept(("scattered", op, what, *scounts, count), lambda: Sizes(
        op, "Ialltoall", scounts, pg._size, [count] * pg._size, "rank {peer}'s chunk for "
        "rank {me}" + what + " has {got}, and output on rank {me} holds {want}"))


_SLOT = {"gather_single": "gather_tensor's block {peer}", "reduce": "tensor"}


def rooted(name: str, pg: Any, root: int, gathering: bool, mine: int,
           counts: Any, dtype: Any = None) -> Sizes | None:
    """The counts a gather sends to its root, compared there with ``counts`` (the sizes
    of gather_list), or a scatter's root sends out (``counts``: scatter_list's), each
    rank comparing its own with ``mine``, its tensor's size. ``counts`` is None off the
    root; with the call's signature where ``dtype`` is given. None with one rank, or
    off."""
    if pg._size == 1 or not sizes_on():
        return None
    sig = _code(name, dtype)
    key = (name, root, mine, sig, None if counts is None else tuple(counts))
    if gathering:
        return _kept(key, lambda: Sizes(name, "Igather", [mine],
                                        0 if counts is None else pg._size, counts,
                                        "rank {peer} sends {got}, and " +
                                        _SLOT.get(name, "gather_list[{peer}]") +
                                        " on the root (rank {me}) holds {want}", root,
                                        sig=sig))
    return _kept(key, lambda: Sizes(name, "Iscatter", counts, 1, [mine],
                                    "the root (rank {root}) sends {got} in "
                                    "scatter_list[{me}], and tensor on rank {me} holds "
                                    "{want}", root, sig=sig))


def broadcast(name: str, pg: Any, root: int, mine: int) -> Sizes | None:
    """The count a broadcast's root sends each rank as direct messages, each rank
    comparing it with ``mine``, its tensor's size, and the root each rank's (their
    acknowledgements'); None with one rank, or off."""
    if pg._size == 1 or not sizes_on():
        return None
    if pg._rank == root:
        return _kept((name, "broadcast", root, mine, pg._size), lambda: Acknowledged(
            name, "Iscatter", [mine] * pg._size, 1, [mine] * pg._size,
            "tensor on rank {peer} holds {got}, and on the root (rank {me}) {want}", root))
    return _kept((name, "broadcast", root, mine), lambda: Sizes(
        name, "Iscatter", None, 1, [mine],
        "the root (rank {root}) sends {got}, and tensor on rank {me} holds {want}", root))


# Sizes made, by everything they are made from: a training loop's calls, whose general
# path runs again when async or after an overlap, do not remake them per call
_KEPT: dict[tuple, Any] = {}
_KEPT_MAX = 1024


def _kept(key: tuple, make: Any) -> Any:
    found = _KEPT.get(key)
    if found is None:
        if len(_KEPT) >= _KEPT_MAX:
            _KEPT.clear()
        found = _KEPT[key] = make()
    return found


def describe() -> str:
    """How the v-collectives' counts travel, for ``python -m mpicoll info``."""
    if not sizes_on():
        return "off (MPICOLL_CHECK=0): sizes that disagree across ranks are not caught"
    how = ("a persistent collective per group and form, restarted each call (MPI_*_init)"
           if _persistent() else "a nonblocking collective per call")
    return f"counts beside each v-collective's data: {how}"


def _elements(n: int) -> str:
    return f"{n} element" if n == 1 else f"{n} elements"


def sizes_on() -> bool:
    """Whether calls carry their counts (not with ``MPICOLL_CHECK=0``)."""
    return _env.settings().sizes
