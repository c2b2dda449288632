"""Writing the flight recorder's ring (:mod:`._recorder`) to a file, and what it holds.

Each rank writes ``mpicoll_trace_rank_<rank>`` in ``MPICOLL_TRACE_DIR``: one pickle of
a dict whose ``mpicoll`` key holds the records as plain data (docs/debugging.md lists
the fields), beside the keys that the converters in :data:`formats` add (torch's
flight-recorder format, registered by the layers above, so that torch's own analyzer
reads the same files). The file is written whole, then renamed into place.
"""

from __future__ import annotations

import itertools
import os
import pickle
import socket
import sys
from collections.abc import Callable
from typing import Any

from . import _env, _recorder
from ._process_group import _EVERY
from ._recorder import DONE, FILE, GROUP, ID, ISSUED, LINE, OP, PEER, SEQ, WAIT
from ._start import on_start

FORMAT = 1
PREFIX = "mpicoll_trace_rank_"  # + global rank: torch's fr_trace reads it with -p PREFIX

# converters run at each dump: (the mpicoll dict) -> top-level keys to add (torch's format)
formats: list[Callable[[dict[str, Any]], dict[str, Any]]] = []
_dumped: list[str] = []  # the path the last dump wrote
_tmps = itertools.count()


def folder() -> str | None:
    """Where dumps go: MPICOLL_TRACE_DIR, or None."""
    return os.environ.get("MPICOLL_TRACE_DIR") or None


def dump(reason: str = "request", directory: str | None = None) -> str | None:
    """Write this rank's ring to ``directory`` (default: MPICOLL_TRACE_DIR) as
    ``mpicoll_trace_rank_<rank>``, atomically (a reader never sees half a file; a
    SIGKILL mid-dump leaves the previous file). Returns the path, or None when there is
    no folder or nothing is recorded."""
    where = directory or folder()
    if where is None or _recorder.ring is None:
        return None
    if reason.startswith("peer-") and _unchanged(where):
        return _dumped[0]  # (asked again by another peer: nothing new since the last)
    data = snapshot(reason)
    out: dict[str, Any] = {}
    for convert in formats:
        try:
            out.update(convert(data))
        except Exception as e:  # a converter's bug must not cost the dump itself
            data["format_error"] = f"{type(e).__name__}: {e}"
    out["mpicoll"] = data
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, f"{PREFIX}{data['rank']}")
    # one temporary file per dump (two threads may dump at once: SIGUSR1 at exit), named
    # so that no reader takes it for a dump (torch's reads every file whose name holds
    # the prefix), and removed if the write fails
    tmp = os.path.join(where, f".tmp-r{data['rank']}-{os.getpid()}-{next(_tmps)}")
    try:
        with open(tmp, "wb") as f:
            pickle.dump(out, f, protocol=4)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    records = data["records"]
    _dumped[:] = [path, where, records[-1]["id"] if records else -1]
    return path


def _unchanged(where: str) -> bool:
    """The last dump went to ``where`` and the ring has had no record since: a peer's
    second query (each rank that times out asks every other) need not write again."""
    if len(_dumped) < 3 or _dumped[1] != where or _recorder.ring is None:
        return False
    records = _recorder.records()
    return (records[-1][0] if records else -1) == _dumped[2]


def dump_trace(directory: str | None = None) -> str | None:
    """Write this rank's flight record now: its last operations (``MPICOLL_TRACE_ENTRIES``,
    2000 by default), each with its group, sequence number, dtype, counts, root or peer,
    call site, timestamps and state, to ``directory`` (default ``MPICOLL_TRACE_DIR``) as
    ``mpicoll_trace_rank_<rank>``. Read a folder of them with ``python -m mpicoll trace
    DIR``, or with torch's ``python -m torch.distributed.flight_recorder.fr_trace DIR -p
    mpicoll_trace_rank_``. Not collective: each rank writes its own.

    Returns:
        The file written, or None when no folder is given or set, or recording is off
        (``MPICOLL_TRACE_ENTRIES=0``).
    """
    return dump("request", directory)


def snapshot(reason: str) -> dict[str, Any]:
    """The ring as plain data (the dump's ``mpicoll`` dict; docs/debugging.md)."""
    records = _copy()
    rank, size = _world()
    groups: dict[str, list[int]] = {}
    named: dict[int, tuple[str, list[int]]] = {}  # id(group) -> its name and ranks, once
    rows = []
    for r in records:
        g = r[GROUP]
        known = named.get(id(g))
        if known is None:
            known = named[id(g)] = (_group_name(g), list(getattr(g, "ranks", None) or []))
            groups.setdefault(*known)
        rows.append(_row(r, *known))
    first = records[0][ID] if records else 0
    return {"format": FORMAT, "rank": rank, "world_size": size, "host": socket.gethostname(),
            "pid": os.getpid(), "reason": reason, "time_ns": _recorder.now(),
            "capacity": _recorder.capacity, "dropped": first, "groups": groups, "records": rows,
            "settings": {"timeout_s": _env.settings().timeout}}


def _copy() -> list[list[Any]]:
    """The records, oldest first, each copied (another thread may append meanwhile)."""
    return _recorder.records()


def _world() -> tuple[int, int]:
    """(rank, size) in COMM_WORLD; remembered, for a dump after MPI_Finalize."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        _known[:] = [MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()]
    return (_known[0], _known[1]) if _known else (0, 1)


_known: list[int] = []  # (rank, size), read while MPI ran
on_start(lambda MPI: _world())


def _group_name(g: Any) -> str:
    """A group's name in the dump, the same on every member and told apart from every
    other group's: mpicoll's name (``~k`` for the k-th remake of a name and ranks), the
    member ranks where they are not the whole world (split_group names its parts
    alike), and a wrapped mpi4py communicator numbered among those of its ranks (its
    own name holds a handle, which differs from process to process)."""
    if g is None:
        return "none"
    key = getattr(g, "key", None)
    name = getattr(g, "name", "") or "group"
    ranks = list(getattr(g, "ranks", None) or [])
    if name.startswith("comm"):
        alike = [h for h in _EVERY if h.name.startswith("comm") and h.ranks == ranks]
        name = f"comm{next((k for k, h in enumerate(alike) if h is g), 0)}"
    elif key and key[2]:
        name = f"{name}~{key[2]}"
    if ranks != list(range(_world()[1])):
        name += "[" + ",".join(map(str, ranks)) + "]"
    return name


def _row(r: list[Any], gname: str, ranks: list[int]) -> dict[str, Any]:
    """One record as the dump's dict (docs/debugging.md lists the fields)."""
    send, recv, _ = _recorder.ints_of(r)
    dtype, itemsize = _dtype(send, recv)
    seq, peer = r[SEQ], r[PEER]
    if peer is not None and 0 <= peer < len(ranks):
        peer = ranks[peer]  # (recorded as a group rank; -1: any source)
    root = _recorder.root_of(r)
    if root is not None and 0 <= root < len(ranks):
        root = ranks[root]
    return {"id": r[ID], "op": r[OP], "group": gname, "seq": seq, "p2p": peer is not None,
            "peer": peer, "root": root, "dtype": dtype, "itemsize": itemsize,
            "send": _counts(send), "recv": _counts(recv), "file": _file(r[FILE]),
            "line": _line(r[FILE], r[LINE]),
            "issued_ns": r[ISSUED], "wait_ns": r[WAIT], "done_ns": r[DONE], "state": _recorder.state(r)}


def _file(code: Any) -> str:
    return code.co_filename if code is not None else "?"


def _line(code: Any, lasti: int) -> int:
    """The source line of the instruction at byte offset ``lasti`` of ``code`` (the
    frame's line number, worked out at the dump rather than on every call)."""
    if code is None:
        return 0
    for start, end, line in code.co_lines():
        if start <= lasti < end:
            return line or code.co_firstlineno
    return code.co_firstlineno


def _counts(spec: Any) -> int | list[int] | None:
    """Elements of a buffer specification: an int, one per peer, or None (in place)."""
    if spec is None or type(spec) is int:
        return None
    c = spec[0]
    if c is None:
        return None
    if isinstance(c, (tuple, list)) and c and not isinstance(c[0], int):
        c = c[0]  # ((counts, displacements), datatype)
    try:
        return int(c)
    except TypeError:
        try:
            return [int(x) for x in c]
        except TypeError:
            return None


def _dtype(*specs: Any) -> tuple[str | None, int]:
    for spec in specs:
        if spec is None or type(spec) is int:
            continue
        dt = spec[-1]
        if isinstance(dt, (list, tuple)):
            dt = dt[0] if dt else None
        if hasattr(dt, "itemsize") and hasattr(dt, "kind"):  # a numpy dtype (p2p)
            return dt.name, int(dt.itemsize)
        try:
            from mpi4py.util import dtlib  # lazy: only at a dump, MPI started already
            np_dt = dtlib.to_numpy_dtype(dt)
            return str(np_dt), int(np_dt.itemsize)
        except Exception:
            size = getattr(dt, "size", None)
            name = getattr(dt, "name", None) or "derived"
            return (name if isinstance(name, str) else "derived",
                    size if isinstance(size, int) and size > 0 else 1)
    return None, 1
