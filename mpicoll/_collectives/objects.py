"""[2] Object collectives over mpi4py's pickle-based methods."""

from __future__ import annotations

from typing import Any

from .. import _departed, _tags
from .._checkmode import verify
from .._describe import mpi_error
from .._env import settings as _settings
from .._mpi import MPI
from .._process_group import ProcessGroup, resolve
from .._recorder import done, issued
from .._wait import timeout_for
from .._watched import watched
from ..errors import ArgumentTypeError as _Type
from ..errors import ArgumentValueError as _Value
from ._call import next_seq
from ._validate import peer as _peer
from ._validate import root as _root


def _weights_only(op: str, weights_only: bool) -> None:
    """torch 2.15's ``weights_only=True`` (unpickle with an allowlist) is refused: mpi4py
    unpickles what arrives inside its own call, with its process-wide pickle, so mpicoll
    cannot restrict it for one call without touching every other caller's."""
    if weights_only:
        raise _Value(op, "weights_only", "{arg}=True is not supported: mpi4py unpickles "
                     "received objects itself; exchange tensors or numpy arrays instead "
                     "of objects from peers you do not trust", {"arg": "weights_only"},
                     got=True)


def _list(op: str, xs: Any, name: str) -> None:
    if not isinstance(xs, list):
        raise _Type(op, "type", "{arg} must be a list, got {got}", {"arg": name},
                    got=type(xs).__name__)


def call(op: str, pg: ProcessGroup, fn: Any, *args: Any, peer: int | None = None,
          **kw: Any) -> Any:
    """One pickled MPI call on ``pg``, watched like every mpicoll wait; a collective
    when ``peer`` is None, else a message to or from group rank ``peer``."""
    seq = next_seq(op, pg) if peer is None else 0
    if peer is None and _settings().check:
        verify(op, pg, {})  # peers must be in the same object collective
    if peer is not None and _departed.left:
        _departed.check_peer(op, pg, peer)
    rec = issued(op, pg, seq, (None, None), peer)
    token = watched.begin(op, pg, seq, None, timeout_for(pg), peer)
    try:
        out = fn(*args, **kw)
    except MPI.Exception as e:
        done(rec, False)
        raise mpi_error(op, e) from e
    except BaseException:
        done(rec, False)
        raise
    finally:
        watched.end(token)
    done(rec)
    return out


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None,
                      weights_only: bool = False) -> None:
    """Gather a picklable ``obj`` from every rank into ``object_list`` (len = group size)."""
    name = "all_gather_object"
    pg = resolve(group, name)
    if pg is None:
        return
    _list(name, object_list, "object_list")
    if len(object_list) != pg.nranks:
        raise _Value(name, "length", "{arg} must have one entry per rank: expected "
                     "{expected}, got {got}", {"arg": "object_list"}, expected=pg.nranks,
                     got=len(object_list))
    _weights_only(name, weights_only)
    object_list[:] = call(name, pg, pg.comm.allgather, obj)


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: Any = None,
                          device: Any = None, group_src: int | None = None,
                          weights_only: bool = False) -> None:
    """Replace ``object_list``'s entries with the source rank's, in place."""
    name = "broadcast_object_list"
    pg = resolve(group, name)
    if pg is None:
        return
    _list(name, object_list, "object_list")
    if src is None and group_src is None:
        src = 0
    root = _root(pg, name, src, group_src, "src", "group_src")
    _weights_only(name, weights_only)
    got = call(name, pg, pg.comm.bcast, object_list if pg.my_rank == root else None,
               root=root)
    if len(got) != len(object_list):
        raise _Value(name, "length", "{arg} must have the source's length: expected "
                     "{expected}, got {got}", {"arg": "object_list"}, expected=len(got),
                     got=len(object_list))
    object_list[:] = got


def gather_object(obj: Any, object_gather_list: list[Any] | None = None,
                  dst: int | None = None, group: Any = None,
                  group_dst: int | None = None, weights_only: bool = False) -> None:
    """Gather ``obj`` from every rank into ``object_gather_list`` on the destination."""
    name = "gather_object"
    pg = resolve(group, name)
    if pg is None:
        return
    if dst is None and group_dst is None:
        dst = 0
    root = _root(pg, name, dst, group_dst, "dst", "group_dst")
    if pg.my_rank == root:
        _list(name, object_gather_list, "object_gather_list")
        assert object_gather_list is not None
        if len(object_gather_list) != pg.nranks:
            raise _Value(name, "length", "{arg} must have one entry per rank: expected "
                         "{expected}, got {got}", {"arg": "object_gather_list"},
                         expected=pg.nranks, got=len(object_gather_list))
    elif object_gather_list:
        raise _Value(name, "off_root", "{arg} must be given on the destination rank only "
                     "(group rank {expected}); this is group rank {got}",
                     {"arg": "object_gather_list"}, expected=root, got=pg.my_rank)
    _weights_only(name, weights_only)
    got = call(name, pg, pg.comm.gather, obj, root=root)
    if pg.my_rank == root:
        object_gather_list[:] = got  # type: ignore[index]


def scatter_object_list(scatter_object_output_list: list[Any],
                        scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: Any = None,
                        group_src: int | None = None, weights_only: bool = False) -> None:
    """Give rank j ``scatter_object_input_list[j]`` in ``scatter_object_output_list[0]``."""
    name = "scatter_object_list"
    pg = resolve(group, name)
    if pg is None:
        return
    _list(name, scatter_object_output_list, "scatter_object_output_list")
    if len(scatter_object_output_list) < 1:
        raise _Value(name, "length", "{arg} must have at least one entry",
                     {"arg": "scatter_object_output_list"})
    if src is None and group_src is None:
        src = 0
    root = _root(pg, name, src, group_src, "src", "group_src")
    if pg.my_rank == root:
        _list(name, scatter_object_input_list, "scatter_object_input_list")
        assert scatter_object_input_list is not None
        if len(scatter_object_input_list) != pg.nranks:
            raise _Value(name, "length", "{arg} must have one entry per rank: expected "
                         "{expected}, got {got}", {"arg": "scatter_object_input_list"},
                         expected=pg.nranks, got=len(scatter_object_input_list))
    payload = scatter_object_input_list if pg.my_rank == root else None
    _weights_only(name, weights_only)
    scatter_object_output_list[0] = call(name, pg, pg.comm.scatter, payload, root=root)


def _p2p_group(op: str, group: Any) -> ProcessGroup | None:
    return resolve(group, op)


def send_object_list(object_list: list[Any], dst: int | None = None, group: Any = None,
                     device: Any = None, group_dst: int | None = None,
                     use_batch: bool = False, weights_only: bool = False) -> None:
    """Send a list of picklable objects to ``dst``."""
    name = "send_object_list"
    pg = _p2p_group(name, group)
    if pg is None:
        return
    _list(name, object_list, "object_list")
    peer = _peer(pg, name, dst, group_dst, "dst", "group_dst")
    call(name, pg, pg.comm.send, object_list, dest=peer, tag=_tags.objects(), peer=peer)
    pg.sent[peer] = pg.sent.get(peer, 0) + 1


def recv_object_list(object_list: list[Any], src: int | None = None, group: Any = None,
                     device: Any = None, group_src: int | None = None,
                     use_batch: bool = False, weights_only: bool = False) -> int:
    """Receive a list of objects into ``object_list`` (same length); returns the sender."""
    name = "recv_object_list"
    pg = _p2p_group(name, group)
    if pg is None:
        return -1
    _list(name, object_list, "object_list")
    source = MPI.ANY_SOURCE if src is None and group_src is None else _peer(
        pg, name, src, group_src, "src", "group_src")
    status = MPI.Status()
    _weights_only(name, weights_only)
    got = call(name, pg, pg.comm.recv, source=source, tag=_tags.objects(),
               status=status, peer=source)
    src = status.Get_source()
    pg.received[src] = pg.received.get(src, 0) + 1
    if len(got) != len(object_list):
        raise _Value(name, "length", "{arg} must have the sender's length: expected "
                     "{expected}, got {got}", {"arg": "object_list"}, expected=len(got),
                     got=len(object_list))
    object_list[:] = got
    return pg.ranks[src]


