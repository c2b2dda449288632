"""A dump's records in words and by group: what every report of the analyzer shares."""

from __future__ import annotations

from typing import Any

Dump = dict[str, Any]
Record = dict[str, Any]


def fmt_ns(ns: float) -> str:
    """A duration for people: ``45 us``, ``12.3 ms``, ``4.20 s``."""
    if abs(ns) < 1e6:
        return f"{ns / 1e3:.0f} us"
    return f"{ns / 1e6:.1f} ms" if abs(ns) < 1e9 else f"{ns / 1e9:.2f} s"


def site(rec: Record) -> str:
    """The user's call site of a record, ``file:line``."""
    return f"{rec.get('file', '?')}:{rec.get('line', 0)}"


def describe(rec: Record) -> str:
    """An operation in words: ``all_reduce seq 3``, ``recv from rank 0``; the group is
    named unless it is the default one."""
    op = rec.get("op", "?")
    if rec.get("p2p"):
        peer = rec.get("peer")
        who = f"rank {peer}" if isinstance(peer, int) and peer >= 0 else "any rank"
        return f"{op} {'to' if op in ('send', 'isend') else 'from'} {who}"
    on = "" if rec.get("group") == "default" else f" on group {rec.get('group')}"
    return f"{op} seq {rec.get('seq')}{on}"


def completed(rec: Record) -> bool:
    """Whether the operation completed (its duration is known)."""
    return (rec.get("state") == "completed" and isinstance(rec.get("done_ns"), int)
            and isinstance(rec.get("issued_ns"), int))


def whereabouts(rank: int, dump: Dump) -> str:
    """Where a rank was when it dumped: its last completed operation, and each one not
    completed with how long it had been in that state (the question after a hang)."""
    recs = dump["records"]
    done = [r for r in recs if completed(r)]
    last = max(done, key=lambda r: r["done_ns"]) if done else None
    parts = [f"last completed {describe(last)} ({site(last)})" if last else
             "nothing completed in its ring"]
    open_ = [r for r in recs if not completed(r)]
    now = dump.get("time_ns", 0)
    for r in open_[-3:]:
        since = r.get("wait_ns") or r.get("issued_ns") or now
        how = ("failed" if r.get("state") == "failed" else
               f"{r.get('state')} for {fmt_ns(now - since)} at the dump")
        parts.append(f"not completed: {describe(r)} ({site(r)}), {how}")
    if len(open_) > 3:
        parts.append(f"and {len(open_) - 3} earlier ones not completed")
    return f"rank {rank}: " + "; ".join(parts)


def groups(dumps: dict[int, Dump]) -> tuple[dict[str, list[int]], list[str]]:
    """Every group's global ranks; a note for each rank that disagrees on a group's."""
    found: dict[str, list[int]] = {}
    notes = []
    for rank, dump in sorted(dumps.items()):
        for name, ranks in (dump.get("groups") or {}).items():
            if found.setdefault(name, list(ranks)) != list(ranks):
                notes.append(f"rank {rank} says group {name} is {list(ranks)}, not "
                             f"{found[name]}")
    return found, notes


def collectives(dump: Dump, group: str) -> dict[int, Record]:
    """A rank's collectives on ``group`` by seq (point-to-point left out)."""
    return {r["seq"]: r for r in dump["records"]
            if r.get("group") == group and not r.get("p2p") and (r.get("seq") or 0) > 0}
