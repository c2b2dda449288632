"""[3] PersistentCollective: one collective set up once, restarted with MPI_Start.

MPI-4 persistent collectives (``MPI_Allreduce_init``, ...) fix the buffers,
counts and algorithm at set-up; each ``MPI_Start``/``MPI_Wait`` then costs
little more than the data movement. Where the library has none (MPI < 4), the
same object restarts the ordinary nonblocking call on the same prepared
arguments, through :func:`issue`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numpy import array as _array
from numpy import empty as _empty
from numpy import int64 as _int64

from .._checkmode import verify
from .._describe import mpi_error
from .._env import settings, warn_once
from .._mpi import MPI
from .._ordering import memory_of, ordered
from .._pending import pending
from .._recorder import done, issued, waiting
from .._wait import wait_requests
from .._work import Work
from ..errors import ArgumentValueError as _Value
from ..errors import SignatureMismatch, SizeMismatch, torch_flavoured
from . import _large
from ._call import issue, next_seq
from ._persistent_choice import choose
from ._refresh import Step, fingerprint
from ._signature import code, differs
from ._sizes import Signed, sizes_on
from ._unchanged import changed, fingerprints

# A blocking start tests its request up to this many times (each MPI_Test drives MPI's
# progress, a few hundred ns) before it waits under the watchdog's eye: a small
# collective is done by then, and registering the wait costs about as much as the
# collective itself. Measured at 2 ranks, MPICH, 8 B all_reduce: 5.7 us with one test,
# 2.7 us with 64, raw mpi4py Start + Wait 3.0 us. Bounded, so a stuck start still
# reaches the watchdog within microseconds.
_SPIN = range(64)

_choice: tuple[bool, str] | None = None  # available()'s answer, made once by choose()

# beside a set-up's signature (a value, not a tag: no bits to spare), so that a set-up
# never agrees with an ordinary call's signature (:class:`._sizes.Signed`)
SET_UP = 1 << 20


def available() -> tuple[bool, str]:
    """Whether ``*_init`` uses the MPI library's persistent collectives, and why.

    MPI-4 libraries have them; ``MPICOLL_PERSISTENT=1`` uses the library's
    ``MPI_*_init`` calls even where it reports an older standard (Open MPI 5
    reports MPI 3.1 but has them), ``MPICOLL_PERSISTENT=0`` never does.
    """
    global _choice
    if _choice is None:
        _choice = choose()
    return _choice


class PersistentCollective:
    """One collective, set up once by a ``*_init`` call (not made directly) and restarted
    many times.

    Made collectively: every rank of the group calls the same ``*_init`` in the
    same order as its other collectives, and every later start is a collective
    too. Its tensors are fixed at set-up: write new values into them in place
    (``t.copy_(x)``, ``a[...] = x``) between starts; a tensor that was reallocated,
    resized or changed dtype since is refused at the next start.

    Attributes:
        op: the collective (``"all_reduce"``, ...).
        persistent: True when MPI's persistent collective is used, False when each
            start issues the ordinary nonblocking call (MPI < 4), or on a rank
            outside ``group``, where starts do nothing.
        group: the ProcessGroup (None on a rank outside it).
    """

    __slots__ = ("__weakref__", "_args", "_expected", "_fingerprints", "_finish", "_freed",
                 "_method", "_name", "_outputs", "_req", "_reqs", "_sig", "_steps", "_watch",
                 "_work", "group", "op", "persistent")

    def __init__(self, op: str, group: Any, method: str = "", args: tuple = (),
                 finish: Step | None = None, outputs: list[Any] | None = None,
                 watch: list[tuple[str, Any]] | None = None, steps: list[Step | None] | None = None,
                 sig: Callable[[], dict[str, Any]] | None = None) -> None:
        self.op = op
        self.group = group
        self._name = f"persistent {op}"
        self._method = method
        self._args = args
        self._finish = finish
        self._outputs = outputs or []
        self._sig = sig
        self._steps = tuple(s for s in steps or () if s is not None)
        self._watch = tuple((name, fingerprint(x)) for name, x in watch or ())
        self._fingerprints = fingerprints(self._watch)
        self._expected = self._fingerprints()
        self._work: Work | None = None
        self._freed = False
        self._req: Any = None
        self._reqs: list[Any] = []
        self.persistent = False
        if group is None:
            return
        # set-up is itself a collective (MPI-4 orders *_init with the other collectives)
        init = f"{op}_init"
        next_seq(init, group)
        if settings().check:
            verify(init, group, sig() if sig is not None else {})
        elif sig is not None and group._size > 1 and sizes_on():
            agree_at_set_up(init, op, group, group.seq, sig())
        use, _ = available()
        if not use or (_large.MPI3 and _large.too_big(args)):
            return  # (counts above INT_MAX on MPI-3 need issue()'s rewrite)
        try:
            self._req = getattr(group.comm, f"{method}_init")(*args)
        except NotImplementedError:  # mpi4py: the library lacks it
            warn_once("persistent-missing", f"mpicoll: this MPI has no MPI_{method}_init; "
                      "persistent collectives restart the ordinary call instead")
            return
        except MPI.Exception as e:
            raise mpi_error(init, e, args) from e
        self._reqs = [self._req]
        self.persistent = True

    def start(self, async_op: bool = False) -> Work | None:
        """Start the collective again; call on every rank of the group.

        The tensors' current values are sent, and results are written into the
        same tensors as the ``*_init`` call's (in place, staged copies written
        back, AVG divided) once the start completes.

        Args:
            async_op: return a :class:`Work` instead of blocking.

        Returns:
            A Work if ``async_op``, else None.

        Raises:
            RuntimeError: the previous start is still pending, or after ``free()``.
            ValueError: a tensor was reallocated, resized or changed dtype.
        """
        self._work is not None and self._settle()
        if self._freed:
            raise RuntimeError(f"{self._name}: used after free()")
        pg = self.group
        if pg is None:  # not a member of the group: nothing to do, as the ordinary call
            return Work.completed(self._name, self._outputs) if async_op else None
        if pg.comm is None:
            raise _Value(self._name, "destroyed", "{arg} {got!r} was destroyed",
                         {"arg": "group"}, got=pg.name)
        if self._fingerprints() != self._expected:
            raise changed(self._name, self.op, self._watch, self._expected)
        if pending:  # an unfinished async call on these tensors' memory completes first
            for a in memory_of(self._args, ()):  # what MPI reads (and its receive areas)
                ordered(a, False)
            for a in memory_of((), self._outputs):  # what the start writes
                ordered(a, True)
        for step in self._steps:
            step()
        req = self._req
        if req is None:  # MPI < 4: the ordinary nonblocking call, on the prepared arguments
            work = issue(self._name, pg, self._method, self._args, self._finish, async_op,
                         self._outputs, sig=self._sig)
            self._work = work
            return work
        seq = next_seq(self._name, pg)
        if settings().check:
            verify(self._name, pg, self._sig() if self._sig is not None else {})
        rec = issued(self._name, pg, seq, self._args, depth=2)  # (called by the user)
        try:
            req.Start()
        except MPI.Exception as e:
            done(rec, False)
            raise mpi_error(self._name, e, self._args) from e
        if async_op:
            work = self._work = Work(self._name, self._reqs, self._finish, keep=self._args,
                                     outputs=self._outputs, group=pg, seq=seq, rec=rec)
            return work
        try:
            for _ in _SPIN:
                if req.Test():
                    break
            else:  # not done yet: the one watched wait
                waiting(rec)
                wait_requests(self._reqs, self._name, pg, seq, self._args)
        except MPI.Exception as e:
            done(rec, False)
            raise mpi_error(self._name, e, self._args) from e
        except BaseException:
            # still running: later starts must see it pending
            self._work = Work(self._name, self._reqs, self._finish, keep=self._args,
                              outputs=self._outputs, group=pg, seq=seq, rec=rec)
            raise
        done(rec)
        fin = self._finish
        if fin is not None:
            fin()
        return None

    # calling it starts it and waits: ``coll()`` is ``coll.start()``
    __call__ = start

    def _settle(self) -> None:
        """Forget a completed start; raise if it is still pending."""
        work = self._work
        if work is not None and not work.is_completed():
            raise RuntimeError(f"{self._name}: started while the previous start is still "
                               "pending: wait() for its Work first")
        self._work = None

    def free(self) -> None:
        """Release the MPI request and the tensors (local; safe to call twice).

        Raises:
            RuntimeError: a start is still pending (wait for it first).
        """
        if self._freed:
            return
        if self._work is not None:
            self._settle()
        self._freed = True
        req, self._req = self._req, None
        self._reqs = []
        self._args, self._steps, self._watch, self._outputs = (), (), (), []
        self._fingerprints, self._expected = tuple, ()
        self._finish = self._sig = None
        if req is not None and not MPI.Is_finalized():
            req.Free()

    def __enter__(self) -> PersistentCollective:
        return self

    def __exit__(self, *exc: Any) -> None:
        work = self._work
        if work is not None:
            try:
                work.wait()
            except BaseException:
                if exc[0] is None:
                    raise
        self.free()

    def __del__(self) -> None:
        try:
            work = self._work
            if self._req is not None and (work is None or work.is_completed()):
                self.free()
        except Exception:
            pass  # at interpreter exit, or with MPI already gone

    def __repr__(self) -> str:
        state = "freed" if self._freed else "started" if self._work is not None else "ready"
        how = ("persistent" if self.persistent else "fallback" if self.group is not None
               else "not a member of the group")
        return f"<mpicoll.PersistentCollective {self.op} ({how}, {state})>"


class SetUp(Signed):
    """What a persistent collective's set-up fixes for every start: which collective,
    dtype and reduce op (:func:`._signature.code`, with :data:`SET_UP`), the root and
    the element count (-1 where the call has none to agree on)."""

    __slots__ = ()

    def calls_differ(self, mine: int, theirs: int) -> list[str]:
        return differs(mine, theirs) if theirs & SET_UP else [
            "another rank makes a call that sets up no persistent collective"]

    def differences(self, recv: Any) -> list[str]:
        # (where the collectives differ, their roots and sizes are no news: -1, where one
        # has none, would read as a group rank or a size)
        said = super().differences(recv)
        return [s for s in said if not s.startswith(("root:", "size:"))] or said

    def mismatch(self, recv: Any, me: int, seq: int = 0) -> None:
        raise torch_flavoured(SignatureMismatch)(
            f"{self.op} #{seq}: the ranks set up different persistent collectives: "
            f"{'; '.join(self.differences(recv))}. Nothing was set up on rank {me}; every "
            "rank must set up the same collective, with the same dtype, reduce op, root and "
            "size")


def agree_at_set_up(init: str, op: str, group: Any, seq: int, sig: dict[str, Any]) -> None:
    """The default check of a persistent collective's set-up ``init`` (collective ``op``,
    call ``seq`` on ``group``; ``sig``: its checked-mode signature). MPI's persistent
    collectives carry no tag and no count beside their data, so ranks that set up
    different ones (a float32 all_reduce against a float64 one, SUM against MAX, another
    root or size) would get a wrong result at every start, silently. Their set-up is
    compared once instead: an Iallreduce(MAX) of what it fixes and its negatives
    (:class:`SetUp`), waited for under the watchdog, and every rank raises
    SignatureMismatch where any differs, before anything is set up. A few microseconds
    once; nothing per start."""
    check = SetUp(init, code(op, sig["dtype"], sig.get("reduce_op")) | SET_UP,
                  sig.get("root", -1), sig.get("numel", -1))
    recv = _empty(check.n, _int64)
    _waited(init, group, seq, group.comm.Iallreduce, check.send, recv, MPI.MAX)
    check.check(recv, group._rank, seq)
    if "send" in sig:
        agree_on_split_sizes(init, group, seq, sig["send"], sig["recv"], sig["split_sizes"])


def agree_on_split_sizes(init: str, group: Any, seq: int, send: list[int], recv: list[int],
                         given: bool) -> None:
    """all_to_all_single_init's part of :func:`agree_at_set_up`. Its split sizes differ
    from rank to rank, so they are paired, not compared: what a rank sends rank j
    (``send[j]`` elements) must be what j expects from it (j's ``recv``), and every rank
    must set up the same MPI call (``given``: split sizes, MPI's Alltoallv; else its
    Alltoall). An Ialltoall of (count, given) tells each rank what each peer sends it,
    and an Iallreduce(MAX) of whether a rank found a pair that differs makes every rank
    raise SizeMismatch, before anything is set up. Otherwise a rank that expects more than
    its peer sends would find part of its output unwritten at every start, silently."""
    n = group._size
    out = _array([(c, int(given)) for c in send], _int64)
    got = _empty((n, 2), _int64)
    _waited(init, group, seq, group.comm.Ialltoall, out, got)
    said = [f"group rank {j} sends this rank {int(got[j, 0])} element(s), where this rank's "
            f"output split sizes expect {recv[j]}" for j in range(n) if got[j, 0] != recv[j]]
    said += [f"group rank {j} set it up {'with' if got[j, 1] else 'without'} split sizes "
             f"(MPI's {'Alltoallv' if got[j, 1] else 'Alltoall'}), this rank "
             f"{'with' if given else 'without'} them" for j in range(n) if got[j, 1] != given]
    wrong = _array([int(bool(said))], _int64)
    anyone = _empty(1, _int64)
    _waited(init, group, seq, group.comm.Iallreduce, wrong, anyone, MPI.MAX)
    if anyone[0]:
        me = group._rank
        why = "; ".join(said) if said else ("the split sizes of other ranks do not pair up "
                                            "(their messages say which)")
        raise torch_flavoured(SizeMismatch)(
            f"{init} #{seq}: the ranks set up all_to_all_single with split sizes that do not "
            f"pair up: {why}. Nothing was set up on rank {me}; what each rank sends rank j "
            "must be what rank j's output split sizes expect from it, and every rank must "
            "pass split sizes, or none")


def _waited(init: str, group: Any, seq: int, start: Callable[..., Any], *args: Any) -> None:
    """A set-up check's collective, started and waited for under the watchdog."""
    try:
        wait_requests([start(*args)], init, group, seq, ())
    except MPI.Exception as e:
        raise mpi_error(init, e, ()) from e
