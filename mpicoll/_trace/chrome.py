"""The dumps as a Chrome trace (chrome://tracing, https://ui.perfetto.dev): a row per rank.

Each rank is a process (``pid`` = global rank, named ``rank N``), each group a thread of
it, each operation a complete event (``ph: "X"``) from its issue to its completion; one
not completed runs to its rank's dump and says so in its name and args. Times are
microseconds from the earliest issue of any rank (the format's unit; wall clocks, so ranks
on several hosts line up as well as their clocks do).
"""

from __future__ import annotations

from typing import Any

from .records import Dump, completed, describe, site


def chrome(dumps: dict[int, Dump]) -> dict[str, Any]:
    """The trace as a dict for ``json.dump`` (the JSON Object Format of the Trace Event
    Format)."""
    starts = [rec["issued_ns"] for d in dumps.values() for rec in d["records"]
              if isinstance(rec.get("issued_ns"), int)]
    t0 = min(starts, default=0)
    names = sorted({str(rec.get("group")) for d in dumps.values() for rec in d["records"]})
    tid = {name: k + 1 for k, name in enumerate(names)}
    events: list[dict[str, Any]] = []
    for rank, dump in sorted(dumps.items()):
        events.append({"ph": "M", "pid": rank, "tid": 0, "name": "process_name",
                       "args": {"name": f"rank {rank}"}})
        events.append({"ph": "M", "pid": rank, "tid": 0, "name": "process_sort_index",
                       "args": {"sort_index": rank}})
        for name in sorted({str(rec.get("group")) for rec in dump["records"]}):
            events.append({"ph": "M", "pid": rank, "tid": tid[name], "name": "thread_name",
                           "args": {"name": f"group {name}"}})
        now = dump.get("time_ns") or t0
        for rec in dump["records"]:
            if not isinstance(rec.get("issued_ns"), int):
                continue
            done = completed(rec)
            end = rec["done_ns"] if done else max(now, rec["issued_ns"])
            args = {k: rec.get(k) for k in ("seq", "send", "recv", "dtype", "itemsize",
                                            "root", "peer", "state", "id")}
            args["site"] = site(rec)
            if not done:
                args["not completed"] = (f"{rec.get('state')} at the dump "
                                         f"({dump.get('reason')})")
            events.append({
                "ph": "X", "pid": rank, "tid": tid[str(rec.get("group"))],
                "name": describe(rec) + ("" if done else " (not completed)"),
                "cat": "p2p" if rec.get("p2p") else "collective",
                "ts": (rec["issued_ns"] - t0) / 1e3, "dur": (end - rec["issued_ns"]) / 1e3,
                "args": args, **({} if done else {"cname": "terrible"})})
        events.append({"ph": "i", "s": "p", "pid": rank, "tid": 0,
                       "name": f"dump ({dump.get('reason')})", "ts": (now - t0) / 1e3})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"origin_ns": t0, "source": "python -m mpicoll trace"}}
