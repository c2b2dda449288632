"""What went wrong: the first collective at which the ranks of a group part ways.

Each group's collectives are aligned by ``seq`` over the seqs that every member's ring
still covers (a record evicted from a full ring is not missing). The first seq where a
member has no record (it skipped the call, or never got there), where the members are in
different operations, or where their dtype, root or counts (:mod:`.counts`) cannot match,
is the group's divergence; of several groups', the one issued first leads the report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .counts import Pair, mismatch
from .records import Dump, Record, collectives, describe, groups, site, whereabouts


@dataclass
class Finding:
    """The first collective of a group at which its ranks part ways."""

    group: str
    members: list[int]  # the group's global ranks
    seq: int
    op: str  # the operation of most of the ranks that have the record
    kind: str  # "missing", "op", "dtype", "root" or "sizes"
    ranks: list[int]  # the ranks that differ from the others (or lack the record)
    detail: str
    pairs: list[Pair] = field(default_factory=list)  # sizes: (sender, receiver, sends, expects)
    issued_ns: int = 0  # its earliest issue: which group's divergence came first


@dataclass
class Check:
    """Every group's divergence (the first issued first), and what was compared."""

    findings: list[Finding]
    collectives: int  # (group, seq) pairs compared and found consistent
    groups: int
    notes: list[str]


def _absence(rank: int, seq: int, recs: dict[int, Record]) -> str:
    later = sorted(s for s in recs if s > seq)
    if later:
        rec = recs[later[0]]
        return (f"rank {rank} has no record of it, yet has later ones on this group "
                f"({describe(rec)} at {site(rec)}): it skipped it")
    before = [s for s in recs if s < seq]
    last = (f"its last on this group is {describe(recs[max(before)])} at "
            f"{site(recs[max(before)])}" if before else "none of this group in its ring")
    return f"rank {rank} has no record of it ({last}): it never got there"


def _compare(group: str, members: list[int], seq: int, have: dict[int, Record],
             lacking: list[int], by_rank: dict[int, dict[int, Record]]) -> Finding | None:
    """How the members' records of one collective disagree, if they do."""
    ops = Counter(str(rec.get("op")) for rec in have.values())
    op = ops.most_common(1)[0][0]
    first = min(rec.get("issued_ns") or 0 for rec in have.values())

    def finding(kind: str, ranks: list[int], detail: str, pairs: list[Pair] | None = None,
                ) -> Finding:
        return Finding(group, members, seq, op, kind, sorted(ranks), detail, pairs or [], first)

    if lacking:
        return finding("missing", lacking,
                       "; ".join(_absence(r, seq, by_rank[r]) for r in lacking))
    if len(ops) > 1:
        return finding("op", [r for r, rec in have.items() if rec.get("op") != op],
                       "ranks are in different operations: " + "; ".join(
                           f"rank {r} {rec.get('op')} at {site(rec)}"
                           for r, rec in sorted(have.items())))
    for key in ("dtype", "root"):
        votes = Counter(rec.get(key) for rec in have.values() if rec.get(key) is not None)
        if len(votes) > 1:
            common = votes.most_common(1)[0][0]
            return finding(key, [r for r, rec in have.items()
                                 if rec.get(key) not in (None, common)],
                           f"{key} differs: " + "; ".join(
                               f"rank {r} {rec.get(key)}" for r, rec in sorted(have.items())))
    bad = mismatch(op, have, members)
    return finding("sizes", *bad) if bad else None


def _scan(group: str, members: list[int], dumps: dict[int, Dump],
          notes: list[str]) -> tuple[Finding | None, int]:
    """A group's first divergence, and how many of its collectives matched before it."""
    by_rank = {r: collectives(dumps[r], group) for r in members if r in dumps}
    start = {}  # the first seq of the group that each member's ring still covers
    for r, recs in by_rank.items():
        if not dumps[r].get("dropped"):
            start[r] = 1
        elif recs:
            start[r] = min(recs)
        else:
            notes.append(f"rank {r} has no record of group {group} left in its ring "
                         f"({dumps[r]['dropped']} evicted): the group is compared without it")
    if len(start) < 2:
        return None, 0
    checked = 0
    for seq in range(max(start.values()),
                     max((max(by_rank[r], default=0) for r in start), default=0) + 1):
        have = {r: by_rank[r][seq] for r in start if seq in by_rank[r]}
        if have:
            lacking = [r for r in start if seq not in by_rank[r]]
            found = _compare(group, members, seq, have, lacking, by_rank)
            if found is not None:
                return found, checked
            checked += 1
    return None, checked


def check(dumps: dict[int, Dump]) -> Check:
    """Every group's first divergence, in the order they were issued."""
    members, notes = groups(dumps)
    findings, checked = [], 0
    for name in sorted(members):
        found, n = _scan(name, members[name], dumps, notes)
        checked += n
        if found is not None:
            findings.append(found)
    findings.sort(key=lambda f: f.issued_ns)
    return Check(findings, checked, len(members), notes)


def report(c: Check, dumps: dict[int, Dump]) -> str:
    """The divergence report: the first divergence, where each of its group's ranks was
    at the dump, the other groups' divergences; or that there was none."""
    lines = []
    if not c.findings:
        lines.append(f"no divergence found in {c.collectives} collectives on {c.groups} "
                     f"group{'s' if c.groups != 1 else ''}")
        stuck = [whereabouts(r, d) for r, d in sorted(dumps.items())
                 if any(rec.get("state") != "completed" for rec in d["records"])]
        if stuck:
            lines += ["operations not completed at the dump:", *(f"  {s}" for s in stuck)]
    else:
        f = c.findings[0]
        who = ", ".join(map(str, f.ranks))
        lines += [f"DIVERGENCE at {f.op} seq {f.seq} on group {f.group} (ranks "
                  f"{', '.join(map(str, f.members))}): rank{'s' if len(f.ranks) > 1 else ''} "
                  f"{who} ({_KINDS[f.kind]})", f"  {f.detail}",
                  "  where each rank of the group was at its dump:"]
        lines += [f"    {whereabouts(r, dumps[r])}" for r in f.members if r in dumps]
        lines += [f"also: {g.op} seq {g.seq} on group {g.group}: {g.detail}"
                  for g in c.findings[1:]]
    return "\n".join(lines + [f"note: {n}" for n in c.notes])


_KINDS = {"missing": "no record of it", "op": "a different operation", "dtype": "dtype",
          "root": "root", "sizes": "counts that do not match"}


def divergence(dumps: dict[int, Dump]) -> tuple[Finding | None, str]:
    """The first divergence (None if there is none) and the report in words."""
    c = check(dumps)
    return (c.findings[0] if c.findings else None), report(c, dumps)
