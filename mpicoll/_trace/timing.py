"""How long operations took, and who kept the others waiting: per-op totals, stragglers.

Times are each rank's ``time.time_ns()`` wall clock: durations are exact on one rank;
comparing ranks (who issued a collective last) trusts the hosts' clocks to agree, which
NTP or PTP keeps within well under a millisecond on a cluster, and which ranks of one host
share.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .counts import elements
from .records import Dump, collectives, completed, fmt_ns, groups

LATE_NS = 100_000  # a rank later than this behind the others' median counts as last


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' factor from algorithm to bus bandwidth on ``n`` ranks (PERFORMANCE.md
    of NVIDIA/nccl-tests): what crosses the busiest link per byte of the buffer."""
    if op.startswith("all_reduce"):
        return 2 * (n - 1) / n
    if op.startswith(("all_gather", "reduce_scatter", "all_to_all")):
        return (n - 1) / n
    return 1.0


@dataclass
class OpStats:
    """One operation's totals over every rank's records."""

    calls: int = 0  # records, every rank's
    completed: int = 0
    nbytes: int = 0  # per record the larger of what it sends and receives
    time_ns: int = 0  # issue to completion, completed ones
    bus_bytes: float = 0.0  # bytes x bus factor, completed ones

    @property
    def mean_ns(self) -> float:
        return self.time_ns / self.completed if self.completed else 0.0

    @property
    def busbw(self) -> float:
        """Bus bandwidth in GB/s (bytes per nanosecond)."""
        return self.bus_bytes / self.time_ns if self.time_ns else 0.0


def summary(dumps: dict[int, Dump]) -> dict[str, OpStats]:
    """Totals per operation name."""
    members, _ = groups(dumps)
    stats: dict[str, OpStats] = {}
    for rank, dump in dumps.items():
        for rec in dump["records"]:
            op = str(rec.get("op"))
            ranks = [] if rec.get("p2p") else members.get(rec.get("group", ""), [])
            n = max(len(ranks), 1)
            root = ranks.index(rec["root"]) if rec.get("root") in ranks else None
            nbytes = elements(rec, n, ranks.index(rank) if rank in ranks else 0, root) * \
                int(rec.get("itemsize") or 1)
            s = stats.setdefault(op, OpStats())
            s.calls += 1
            s.nbytes += nbytes
            if completed(rec):
                took = rec["done_ns"] - rec["issued_ns"]
                s.completed += 1
                s.time_ns += took
                s.bus_bytes += nbytes * bus_factor(op, n)
    return dict(sorted(stats.items()))


def fmt_bytes(n: float) -> str:
    """A size for people: ``512 B``, ``48.0 KiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def summary_text(stats: dict[str, OpStats]) -> str:
    """The per-operation table."""
    head = (f"{'op':<24}{'calls':>7}{'done':>7}{'bytes':>12}{'total time':>12}"
            f"{'mean time':>11}{'busbw GB/s':>12}")
    rows = [f"{op:<24}{s.calls:>7}{s.completed:>7}{fmt_bytes(s.nbytes):>12}" + (
            f"{fmt_ns(s.time_ns):>12}{fmt_ns(s.mean_ns):>11}{s.busbw:>12.3f}" if s.completed
            else f"{'-':>12}{'-':>11}{'-':>12}") for op, s in stats.items()]
    return "\n".join(["per operation (every rank's records; times of completed ones):", head,
                      *rows])


@dataclass
class Stragglers:
    """Who issued each collective last, over those every member of its group recorded."""

    collectives: int = 0
    taken: dict[int, int] = field(default_factory=dict)  # rank -> collectives compared
    lags: dict[int, list[int]] = field(default_factory=dict)  # rank -> lags when last
    straggler: int | None = None  # last in more than half of its collectives
    hosts: int = 1

    def mean_ns(self, rank: int) -> float:
        lags = self.lags.get(rank) or [0]
        return sum(lags) / len(lags)


def stragglers(dumps: dict[int, Dump]) -> Stragglers:
    """Per collective present on every member that dumped, the rank whose issue came last
    and its lag behind the median of the others' (a lag under :data:`LATE_NS` makes no one
    last)."""
    members, _ = groups(dumps)
    out = Stragglers(hosts=len({d.get("host") for d in dumps.values()}))
    for name, group in members.items():
        ranks = [r for r in group if r in dumps]  # (a rank without a dump: not compared)
        if len(ranks) < 2:
            continue
        by = {r: collectives(dumps[r], name) for r in ranks}
        for seq in sorted(set.intersection(*(set(v) for v in by.values()))):
            t = {r: by[r][seq].get("issued_ns") for r in ranks}
            issued = {r: v for r, v in t.items() if isinstance(v, int)}
            if len(issued) < len(ranks):
                continue
            late = max(issued, key=lambda r: issued[r])
            lag = issued[late] - statistics.median(v for r, v in issued.items() if r != late)
            out.collectives += 1
            for r in ranks:
                out.taken[r] = out.taken.get(r, 0) + 1
            if lag >= LATE_NS:
                out.lags.setdefault(late, []).append(int(lag))
    if out.lags:
        worst = max(out.lags, key=lambda r: (len(out.lags[r]), out.mean_ns(r)))
        if len(out.lags[worst]) * 2 > out.taken[worst]:
            out.straggler = worst
    return out


def stragglers_text(s: Stragglers) -> str:
    """The straggler report: per rank how often it was last and by how much; the verdict."""
    lines = [f"stragglers: the rank that issued a collective last, and its lag behind the "
             f"median of the others ({s.collectives} collectives that every member recorded; a "
             f"lag under {fmt_ns(LATE_NS)} makes no one last)",
             f"  {'rank':>4}{'last':>6}{'of':>6}{'mean lag':>11}{'max lag':>11}"]
    for r in sorted(s.taken):
        lags = s.lags.get(r, [])
        mean, most = (fmt_ns(s.mean_ns(r)), fmt_ns(max(lags))) if lags else ("-", "-")
        lines.append(f"  {r:>4}{len(lags):>6}{s.taken[r]:>6}{mean:>11}{most:>11}")
    if s.straggler is not None:
        r = s.straggler
        lines.append(f"straggler: rank {r}, last in {len(s.lags[r])} of {s.taken[r]} "
                     f"collectives, by {fmt_ns(s.mean_ns(r))} on average (max "
                     f"{fmt_ns(max(s.lags[r]))})")
    elif s.lags:
        r = max(s.lags, key=lambda k: len(s.lags[k]))
        lines.append(f"no clear straggler: rank {r} was last most often, in "
                     f"{len(s.lags[r])} of {s.taken[r]} collectives")
    else:
        lines.append("no clear straggler: no rank was ever last by that much")
    if s.hosts > 1:
        lines.append(f"note: issue times are the wall clocks of {s.hosts} hosts: an offset "
                     "between their clocks reads as lag")
    return "\n".join(lines)
