"""Checked mode (MPICOLL_CHECK=1): peers compare a signature before each collective.

Every rank all-gathers a small dict (collective, sequence number, dtype, op,
root, element counts seen from each side) and runs the same comparison, so
every rank raises the same :class:`~mpicoll.errors.SignatureMismatch` instead
of hanging or producing a silently wrong tensor. Costs one small Iallgather per
collective, waited for under the watchdog (see the docs for measured figures).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ._wait import wait_requests
from .errors import SignatureMismatch, torch_flavoured

_SAME = ("dtype", "reduce_op", "root", "numel", "counts", "split_sizes")


def verify(op: str, group: Any, sig: dict[str, Any]) -> None:
    """Exchange signatures on ``group``; raise on every rank if they disagree."""
    mine = {"op": op, "seq": group.seq, **sig}
    everyone = _allgathered(op, group, mine)
    problem = compare(everyone)
    if problem:
        # the same message on every rank: it names no rank-local detail
        raise torch_flavoured(SignatureMismatch)(
            f"checked mode: ranks disagree at collective #{group.seq} on the group of global "
            f"ranks {group.ranks}: {problem}")


# the bytes of a row of the signatures' first exchange: a signature's pickle fits in most
# (a few hundred bytes; counts for many ranks make more)
_ROW = 1024


def _allgathered(op: str, group: Any, obj: Any) -> list[Any]:
    """Every rank's ``obj``, in group rank order, by a nonblocking Iallgather of rows of
    :data:`_ROW` bytes (each row: the pickle's length, then as much of the pickle as
    fits), and a second one of rows as long as the longest pickle where one did not fit
    (every rank sees every length: all decide alike). Each is waited for under the
    watchdog as a collective's own wait is: a rank that exits or never comes ends the job
    with the watchdog's message (mpi4py's blocking ``allgather`` waited unwatched, for
    ever)."""
    data = np.frombuffer(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), np.uint8)
    rows = _rows(op, group, data, _ROW)
    lengths = [int(r[:8].view(np.int64)[0]) for r in rows]
    if max(lengths) > _ROW - 8:
        rows = _rows(op, group, data, 8 + max(lengths))
    return [pickle.loads(r[8:8 + n].tobytes()) for r, n in zip(rows, lengths, strict=True)]


def _rows(op: str, group: Any, data: Any, width: int) -> Any:
    row = np.zeros(width, np.uint8)
    row[:8] = np.array([data.size], np.int64).view(np.uint8)
    fits = min(data.size, width - 8)
    row[8:8 + fits] = data[:fits]
    rows = np.empty((group._size, width), np.uint8)
    wait_requests([group.comm.Iallgather(row, rows)], op, group, group.seq, ())
    return rows


def _by_value(sigs: list[dict[str, Any]], key: str) -> str:
    groups: dict[str, list[int]] = {}
    for r, s in enumerate(sigs):
        groups.setdefault(repr(s.get(key)), []).append(r)
    return "; ".join(f"group rank(s) {ranks} have {v}" for v, ranks in groups.items())


def compare(sigs: list[dict[str, Any]]) -> str:
    """The first disagreement among every rank's signature, or ''."""
    if len({s["op"] for s in sigs}) > 1:
        return "different collectives called at the same point: " + _by_value(sigs, "op")
    if len({s["seq"] for s in sigs}) > 1:
        return ("ranks are at different positions in the sequence of collectives: "
                + _by_value(sigs, "seq"))
    for key in _SAME:
        if len({repr(s.get(key)) for s in sigs}) > 1:
            return f"{key} differs: " + _by_value(sigs, key)
    if "send" in sigs[0]:
        for r, s in enumerate(sigs):
            for j, expected in enumerate(s["recv"]):
                sent = sigs[j]["send"][r]
                if expected != sent:
                    return (f"group rank {r} expects {expected} elements from group rank {j}, "
                            f"which sends it {sent} (output split sizes on rank {r} must "
                            f"match input split sizes on its peers)")
    root = sigs[0].get("root")
    if root is not None and "root_counts" in sigs[root]:
        counts = sigs[root]["root_counts"]
        for r, s in enumerate(sigs):
            if counts[r] != s["mine"]:
                return (f"the root (group rank {root}) expects {counts[r]} elements for "
                        f"group rank {r}, which has {s['mine']}")
    return ""
