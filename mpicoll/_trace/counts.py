"""The counts of one collective on every rank: whether they can match, and how many elements.

Counts are elements, as the recorder writes them. A list holds one count per group rank.
An int in a per-peer field (what an all_to_all sends to each rank, what an all_gather
receives from each, a gather's root from each, a scatter's root to each) is the count to
or from every peer, as in MPI's block collectives; anywhere else it is the whole buffer.
A reduce_scatter's int send is either its block (``Ireduce_scatter_block``) or the whole
input (``Ireduce_scatter``): the record does not say which, so both are accepted.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

Record = dict[str, Any]
Flow = tuple[list[int] | None, list[int] | None]
Pair = tuple[int, int, int, int]  # sender, receiver, what it sends, what the receiver expects

# every count of every rank is the same number (None, in place, is not compared)
EQUAL = frozenset({"all_reduce", "all_reduce_coalesced", "broadcast", "reduce", "barrier",
                   "monitored_barrier"})
EXCHANGE = frozenset({"all_to_all", "all_to_all_single", "all_gather",
                      "all_gather_into_tensor", "all_gather_single"})
GATHER = frozenset({"gather", "gather_single", "gather_into_tensor"})
REDUCE_SCATTER = frozenset({"reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single"})


def _per_peer(v: Any, n: int) -> list[int] | None:
    return None if v is None else list(v) if isinstance(v, (list, tuple)) else [v] * n


def _one(v: Any, at: int, n: int) -> list[int] | None:
    return None if not isinstance(v, int) else [v if k == at else 0 for k in range(n)]


def flows(rec: Record, n: int, me: int, root: int | None) -> Flow:
    """(elements this rank sends to each group rank, elements it receives from each);
    None where the record does not say (in place, an op of no per-peer counts).

    ``me`` and ``root`` are group ranks."""
    op, send, recv = rec.get("op"), rec.get("send"), rec.get("recv")
    if op in EXCHANGE:
        return _per_peer(send, n), _per_peer(recv, n)
    if op in REDUCE_SCATTER:  # rank j receives its block from each rank
        return (list(send) if isinstance(send, (list, tuple)) else None,
                None if not isinstance(recv, int) else [recv] * n)
    if root is None:
        return None, None
    if op in GATHER:
        return _one(send, root, n), _per_peer(recv, n) if me == root else [0] * n
    if op == "scatter":
        return _per_peer(send, n) if me == root else [0] * n, _one(recv, root, n)
    return None, None


def _total(v: Any) -> int:
    return 0 if v is None else sum(v) if isinstance(v, (list, tuple)) else int(v)


def elements(rec: Record, n: int, me: int, root: int | None) -> int:
    """The larger of the elements a rank sends and receives in one operation."""
    out, inn = flows(rec, n, me, root)
    send = sum(out) if out is not None else _total(rec.get("send"))
    if rec.get("op") in REDUCE_SCATTER and isinstance(rec.get("send"), int) \
            and rec.get("send") == rec.get("recv"):
        send *= n  # Ireduce_scatter_block's count is the block
    return max(send, sum(inn) if inn is not None else _total(rec.get("recv")))


def _counts(rec: Record) -> str:
    return ", ".join(f"{k} {'in place' if rec.get(k) is None else rec.get(k)}"
                     for k in ("send", "recv"))


def mismatch(op: str, have: dict[int, Record],
             members: list[int]) -> tuple[list[int], str, list[Pair]] | None:
    """(ranks at fault, what is wrong, the pairs that disagree) when the counts of the
    ranks in ``have`` (global rank -> record) cannot match; None when they can, or when
    the records do not tell (an op of unknown counts)."""
    n, idx = len(members), {r: k for k, r in enumerate(members)}
    if op in EQUAL:
        seen = {r: {str(v) for v in (rec.get("send"), rec.get("recv")) if v is not None}
                for r, rec in have.items()}
        votes = Counter(v for vs in seen.values() for v in vs).most_common(1)
        odd = [r for r, vs in seen.items() if votes and vs - {votes[0][0]}]
        return (odd, "counts differ: " + "; ".join(
            f"rank {r} {_counts(have[r])}" for r in sorted(have)), []) if odd else None
    if op in REDUCE_SCATTER and len(have) == n:
        recvs = [rec.get("recv") for rec in have.values()]
        total = sum(v for v in recvs if isinstance(v, int))
        odd = [r for r, rec in have.items() if isinstance(rec.get("send"), int)
               and rec["send"] != total and any(v != rec["send"] for v in recvs)]
        if odd:
            return odd, (f"the blocks the ranks receive total {total}, but " + "; ".join(
                f"rank {r} sends {have[r]['send']}" for r in odd)), []
    roots = [idx[rec["root"]] for rec in have.values() if rec.get("root") in idx]
    fl = {r: flows(rec, n, idx[r], roots[0] if roots else None) for r, rec in have.items()}
    wrong = sorted({r for r, f in fl.items() for v in f if v is not None and len(v) != n})
    if wrong:
        return wrong, f"count lists whose length is not the group's size {n}: " + "; ".join(
            f"rank {r} {_counts(have[r])}" for r in wrong), []
    pairs = [(i, j, out[idx[j]], inn[idx[i]]) for i, (out, _) in sorted(fl.items())
             if out is not None for j, (_, inn) in sorted(fl.items())
             if inn is not None and out[idx[j]] != inn[idx[i]]]
    if not pairs:
        return None
    said = [f"rank {i} sends {a} to rank {j}, which expects {b} from it" for i, j, a, b in pairs]
    more = f"; and {len(said) - 4} more" if len(said) > 4 else ""
    return sorted({r for p in pairs for r in p[:2]}), "; ".join(said[:4]) + more, pairs
