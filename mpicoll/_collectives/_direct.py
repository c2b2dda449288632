"""[3] Direct exchanges: all_to_all on a few ranks as point-to-point messages, each
carrying its count in its tag.

On a group of 2 to ``MAX_RANKS`` ranks, all_to_all_single and all_to_all post on every
rank one receive from each peer, of any tag, and one send to each peer, whose tag is the
number of elements it sends; this rank's own block is copied locally. The messages go on
a communicator of the group's own for them (``ProcessGroup.direct``, made by ``Idup`` at
the group's first direct exchange: every rank makes it at the same call). A receive's
status then says how many elements its peer sent, even where MPI cut the message short,
so sizes that disagree across ranks are caught (:class:`~mpicoll.errors.SizeMismatch`
on the receiver, worded as :mod:`._sizes` words it) with no message beyond the data:
the checked exchange costs less than MPI's unchecked ``Ialltoallv`` alone
(docs/performance.md).

One call's messages pair up with the same call's on each peer: every rank posts them in
call order, one each way per peer (empty ones too), and MPI keeps the messages between
two ranks on one communicator in order.

``MPICOLL_DIRECT``: the largest group that exchanges directly (default 8; 0: never).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from numpy import array as _array
from numpy import int64 as _int64

from .. import _departed
from .._checkmode import verify
from .._describe import mpi_error
from .._env import settings as _settings
from .._mpi import MPI
from .._recorder import done, issued, waiting
from .._tags import tag_ub
from .._wait import wait_requests
from .._work import Work
from ._own_block import own_block_copy
from ._pack import displs
from ._sizes import Sizes, exchange

_ANY = MPI.ANY_TAG
_Status = MPI.Status
_testall = MPI.Request.Testall


def _max_ranks() -> int:
    raw = os.environ.get("MPICOLL_DIRECT", "")
    try:
        return int(raw) if raw else 8
    except ValueError:
        raise ValueError(f"environment variable MPICOLL_DIRECT={raw!r}: expected the largest "
                         "number of ranks that exchange directly (0: never)") from None


MAX_RANKS = _max_ranks()


def chosen(pg: Any) -> bool:
    """Whether ``pg``'s exchanges go direct (its size alone decides: alike on every rank)."""
    return 1 < pg._size <= MAX_RANKS


class Direct:
    """One exchange's messages, by this rank's counts (``scounts`` sent to and
    ``rcounts`` received from each rank, in elements): made once per call signature and
    kept with the quick path's entry; read-only, so calls in flight at once share it.
    ``sizes``: the counts' wording for a mismatch (:func:`._sizes.exchange`), None where
    the check is off (``MPICOLL_CHECK=0``)."""

    __slots__ = ("counts", "recvs", "sends", "sizes", "tags", "ub")

    def __init__(self, me: int, scounts: list[int], rcounts: list[int],
                 sizes: Sizes | None) -> None:
        ub = self.ub = tag_ub()
        peers = [j for j in range(len(rcounts)) if j != me]
        self.recvs = [(j, rcounts[j]) for j in peers]
        self.sends = [(j, scounts[j], min(scounts[j], ub)) for j in peers]
        self.tags = [min(rcounts[j], ub) for j in peers]  # what each receive's tag must be
        self.counts = (list(scounts), list(rcounts))
        self.sizes = sizes

    def post(self, comm: Any, args: tuple) -> list[Any]:
        """Post the receives, then the sends (``args``: Alltoallv's buffer specs, counts
        and displacements in elements)."""
        (sbuf, (_, sd), dt), (rbuf, (_, rd), _) = args[0], args[1]
        irecv, isend = comm.Irecv, comm.Isend
        reqs = [irecv([rbuf, (c, rd[j]), dt], j, _ANY) for j, c in self.recvs]
        for j, c, tag in self.sends:
            reqs.append(isend([sbuf, (c, sd[j]), dt], j, tag))
        return reqs

    def check(self, statuses: list[Any], me: int, dt: Any) -> None:
        """Raise SizeMismatch where a peer sent another count than this rank expects (its
        receives' statuses, first in ``statuses``)."""
        sizes = self.sizes
        if sizes is None:
            return
        ub = self.ub
        for k, want in enumerate(self.tags):
            st = statuses[k]
            tag = st.Get_tag()
            if tag != want or (tag == ub and st.Get_count(dt) != self.recvs[k][1]):
                break
        else:
            return
        got = list(self.counts[1])
        for k, (j, _) in enumerate(self.recvs):
            st = statuses[k]
            tag = st.Get_tag()
            got[j] = tag if tag < ub or st.Get_error() else st.Get_count(dt)
        sizes.mismatch(_array(got, _int64), me)


_PLANS: dict[tuple, Direct] = {}


def plan(pg: Any, scounts: list[int], rcounts: list[int], sizes: Sizes | None) -> Direct:
    """The :class:`Direct` of these counts on ``pg`` (kept: a training loop's general
    path, async calls included, does not remake it per call)."""
    key = (pg._rank, tuple(scounts), tuple(rcounts), sizes)
    found = _PLANS.get(key)
    if found is None:
        if len(_PLANS) >= 1024:
            _PLANS.clear()
        found = _PLANS[key] = Direct(pg._rank, scounts, rcounts, sizes)
    return found


def issue(op: str, group: Any, direct: Direct, args: tuple, copy: tuple | None,
          finalize: Callable[[], Any] | None = None, async_op: bool = False,
          outputs: list[Any] | None = None, keep: Any = None,
          sig: Callable[[], dict[str, Any]] | None = None, depth: int = 3) -> Work | None:
    """:func:`._call.issue` of a direct exchange: post ``direct``'s messages over
    ``args`` (Alltoallv's buffer specs), copy this rank's own block (``copy`` =
    (destination, index, source): ``destination[index] = source``; or None), then wait (or return the Work) and compare the
    counts the peers sent before ``finalize``. ``depth``: frames up to the user's, for
    the flight recorder (:func:`._call.quick`'s)."""
    seq = group.seq = group.seq + 1
    if _departed.left:
        _departed.check(op, group, seq)
    if sig is not None and _settings().check:
        verify(op, group, sig())
    comm = group.direct
    if comm is None:
        comm = _communicator(op, group, seq)
    rec = issued(op, group, seq, args, depth=depth)
    try:
        reqs = direct.post(comm, args)
    except MPI.Exception as e:
        done(rec, False)
        raise mpi_error(op, e, args) from e
    if copy is not None:  # (no message of this rank's to itself: MPI never touches it)
        copy[0][copy[1]] = copy[2]
    sts = [_Status() for _ in reqs]
    me, dt = group._rank, args[0][2]

    def compared() -> None:
        direct.check(sts, me, dt)
        if finalize is not None:
            finalize()

    def explain() -> None:  # an MPI error (a message cut short): what its tag says
        direct.check(sts, me, dt)

    if async_op:
        return Work(op, reqs, compared, keep=(args, keep), outputs=outputs, group=group,
                    seq=seq, explain=explain, rec=rec, statuses=sts)
    try:
        if not _testall(reqs, sts):
            waiting(rec)
            wait_requests(reqs, op, group, seq, args, statuses=sts)
    except MPI.Exception as e:
        done(rec, False)
        explain()
        raise mpi_error(op, e, args) from e
    except BaseException:
        # interrupted between Tests: the messages, and what follows them, become a
        # pending Work, as if the call had been made with async_op=True
        if any(reqs):
            Work(op, reqs, compared, keep=(args, keep), outputs=outputs, group=group,
                 seq=seq, explain=explain, rec=rec, statuses=sts)
        else:  # (all completed as the wait returned)
            done(rec)
        raise
    try:
        direct.check(sts, me, dt)
    except BaseException:
        done(rec, False)
        raise
    done(rec)
    if finalize is not None:
        finalize()
    return None


def single(pg: Any, src: Any, dst: Any, sarr: Any, rarr: Any, scounts: list[int],
           rcounts: list[int], dt: Any, quick_key: tuple | None, table: dict, output: Any,
           async_op: bool) -> Work | None:
    """all_to_all_single's general path, from its validated buffers (``src``, ``dst``:
    the adapter's; ``sarr``, ``rarr``: their arrays; counts in elements), its quick entry
    stored in ``table`` (:func:`exchanged` makes it)."""
    name, me = "all_to_all_single", pg._rank
    d = plan(pg, scounts, rcounts, exchange(name, pg, scounts, rcounts, "output"))
    sd, rd = displs(scounts), displs(rcounts)
    own = (sd[me], rd[me], scounts[me]) if scounts[me] else None
    if quick_key is not None:  # (this rank's own block: where it lies in each, flat)
        table[quick_key] = ("direct", (sd, rd), None, dt, None, None if own is None else (
            slice(own[0], own[0] + own[2]), slice(own[1], own[1] + own[2])), d)
    return issue(name, pg, d, ([sarr, (d.counts[0], sd), dt], [rarr, (d.counts[1], rd), dt]),
                 None if own is None else own_block_copy(sarr, rarr, own), dst.commit_hook,
                 async_op, [output],
                 sig=lambda: {"dtype": src.dtype, "send": scounts, "recv": rcounts})


def exchanged(op: str, group: Any, hit: tuple, s: Any, r: Any) -> None:
    """:func:`._call.exchanged` of an entry :func:`single` stored, from array ``s`` to
    array ``r`` (the user's frame: 6 up from the recorder's)."""
    _, (sd, rd), _, dt, _, own, d = hit
    c = d.counts
    if own is None:
        copy = None
    else:  # (a slice of each, flat: half the cost of own_blocks and np.copyto)
        copy = (r if r.ndim == 1 else r.reshape(-1), own[1],
                (s if s.ndim == 1 else s.reshape(-1))[own[0]])
    issue(op, group, d, ((s, (c[0], sd), dt), (r, (c[1], rd), dt)), copy, depth=6)


def _communicator(op: str, group: Any, seq: int) -> Any:
    """The group's communicator for direct exchanges, made at its first (a collective
    over the group's communicator, waited for as any call is)."""
    comm, req = group.comm.Idup()
    try:
        wait_requests([req], op, group, seq, ())
    except MPI.Exception as e:
        raise mpi_error(op, e, ()) from e
    group.direct = comm
    return comm


def describe() -> str:
    """Which exchanges go direct, for ``python -m mpicoll info``."""
    if MAX_RANKS < 2:
        return f"never (MPICOLL_DIRECT={MAX_RANKS}): all_to_all as Alltoall(v)"
    return (f"all_to_all on groups of 2 to {MAX_RANKS} ranks: point-to-point messages, "
            "each with its count in its tag")
