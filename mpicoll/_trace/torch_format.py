"""mpicoll's flight-recorder dump in torch's format, for torch's own analyzer.

:func:`to_torch` turns one rank's ``mpicoll`` dict (the dump schema) into the
top-level keys torch's flight recorder writes (``version``, ``pg_config``,
``pg_status``, ``entries``, ``comm_lib_version``), so that ``python -m
torch.distributed.flight_recorder.fr_trace DIR -p mpicoll_trace_rank_`` reads the same
files and names a desync: the rank that did not join a collective, or the one whose
sizes, dtype or state differ. What it maps, and why:

- a record -> an entry; ``record_id`` is the record's per-rank ``id`` (torch aligns
  ranks whose rings dropped old records by it), ``collective_seq_id`` the group's ``seq``
  (torch matches a collective across ranks by group and this number);
- an op -> ``nccl:<name>`` in torch's vocabulary (``all_gather_into_tensor`` ->
  ``_all_gather_base``, ``all_to_all_single`` -> ``all_to_all``, ...): the analyzer
  rejects other names (an op it has none for counts as a ``barrier``; its frame keeps
  the mpicoll name); ``nccl`` is the one prefix every torch release accepts;
- counts -> one shape per op, ``[[elements]]``, built as torch records them (an
  all_gather's output is the group's, a reduce_scatter's input too), so the ranks of a
  correct program agree and a count one rank got wrong shows as a size mismatch;
  object collectives move pickles of per-rank sizes: their sizes are left out (0);
- numpy dtype names -> torch's (``float32`` -> ``Float``), for its dtype check;
- states: ``issued`` and ``waiting`` are both ``started`` (the rank is inside the
  operation; torch reports ranks whose states differ), ``completed`` stays, ``failed``
  too (torch only compares states);
- a group -> a process group named as mpicoll names it (the world: desc ``default_pg``);
- point-to-point messages are left out: torch matches a message by a number per pair
  of ranks, which the records cannot give exactly (tags, groups, any-source receives,
  rings that dropped different messages), so it would report mismatches that are not
  there. mpicoll's analyzer shows them (a rank stuck in a receive, and from whom).

Only builtins here and in the result: the recorder pickles it into the dump.
"""

from __future__ import annotations

from typing import Any

VERSION = "2.10"  # torch's dump format that 2.13 writes: 2.7+ checks coalesced ops, 2.4+ sizes
BACKEND = "nccl"
WORLD_NAMES = ("default", "0", "torch-world")

# mpicoll op -> (torch's op name, how its counts make torch's shapes)
OPS: dict[str, tuple[str, str]] = {
    "all_reduce": ("all_reduce", "same"), "reduce": ("reduce", "same"),
    "broadcast": ("broadcast", "same"), "barrier": ("barrier", "same"),
    "monitored_barrier": ("barrier", "same"),
    "all_gather": ("all_gather", "gather"),
    "all_gather_into_tensor": ("_all_gather_base", "gather"),
    "gather": ("gather", "gather"),
    "reduce_scatter": ("reduce_scatter", "scatter"),
    "reduce_scatter_tensor": ("_reduce_scatter_base", "scatter"),
    "scatter": ("scatter", "scatter"),
    "all_to_all": ("all_to_all", "a2a"), "all_to_all_single": ("all_to_all", "a2a"),
    "send": ("send", "p2p"), "isend": ("send", "p2p"),
    "recv": ("recv", "p2p"), "irecv": ("recv", "p2p"),
}
# names not above, by the first of these they contain (object and mpicoll-only variants)
LIKE = ("all_to_all", "reduce_scatter", "all_gather", "all_reduce", "broadcast", "scatter",
        "gather", "reduce", "barrier", "send", "recv")

DTYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}

STATES = {"issued": "started", "waiting": "started", "completed": "completed",
          "failed": "failed"}


def torch_op(op: str) -> tuple[str, str]:
    """torch's name of an mpicoll op and the kind of its counts (``obj``: not compared)."""
    if op in OPS:
        return OPS[op]
    for like in LIKE:
        if like in op:
            name, kind = OPS[like] if like in OPS else ("all_reduce", "same")
            return name, "p2p" if kind == "p2p" else ("obj" if "object" in op else kind)
    return "barrier", "obj"


def _total(n: Any) -> int | None:
    if n is None:
        return None
    return sum(int(x) for x in n) if isinstance(n, (list, tuple)) else int(n)


def _block(v: Any) -> int | None:
    """The count per peer of an even list (its entries equal, a rank's own block of 0
    aside: MPICH's Alltoallv leaves it out), an int as it is; None when uneven."""
    if v is None or isinstance(v, int):
        return v
    values = {int(x) for x in v if int(x)}
    return values.pop() if len(values) == 1 else (0 if not values else None)


def shapes(kind: str, send: Any, recv: Any, size: int, rooted: bool = False
           ) -> tuple[int, int]:
    """Elements of the input and output as torch records them, on a group of ``size``.

    Forms that torch has no even shape for are left out (0, 0: torch compares sizes
    across ranks): uneven all_gather and reduce_scatter lists, and the rooted gather and
    scatter, whose counts may differ per rank in mpicoll. mpicoll's analyzer checks them."""
    s, r = _total(send), _total(recv)
    if kind == "obj" or (rooted and kind in ("gather", "scatter")):
        return 0, 0
    if kind == "gather":  # input: this rank's part; output: the group's
        sb, rb = _block(send), _block(recv)
        if (send is not None and sb is None) or (recv is not None and rb is None):
            return 0, 0  # uneven
        b = sb or rb or 0
        return b, b * size
    if kind == "scatter":  # input: the group's; output: this rank's part
        sb = _block(send) if not isinstance(send, int) else (
            send // size if r is not None and send == r * size else send if send == r else None)
        if (send is not None and sb is None) or not isinstance(recv, (int, type(None))):
            return 0, 0  # uneven
        b = sb or r or 0
        return b * size, b
    if kind == "a2a":
        return (s if s is not None else r or 0), (r if r is not None else s or 0)
    n = s if s is not None else (r or 0)
    return n, n


def _pg(name: str, ranks: list[int], desc: str) -> dict[str, str]:
    return {"name": name, "desc": desc, "ranks": str(sorted(ranks))}


def to_torch(m: dict[str, Any]) -> dict[str, Any]:
    """One rank's dump in torch's flight-recorder format (its top-level keys)."""
    world = int(m.get("world_size", 1))
    groups: dict[str, list[int]] = {k: list(v) for k, v in (m.get("groups") or {}).items()}
    timeout = (m.get("settings") or {}).get("timeout_s")
    timeout_ms = int(timeout * 1000) if isinstance(timeout, (int, float)) else 0
    pg_config: dict[str, dict[str, str]] = {}
    pg_ids: dict[str, int] = {}
    status: dict[str, list[int]] = {}  # pg -> last enqueued, started, completed
    entries: list[dict[str, Any]] = []
    for rec in m.get("records") or []:
        name, kind = torch_op(str(rec.get("op", "")))
        if kind == "p2p" or rec.get("p2p"):
            # left out: torch matches a message by a number per pair of ranks, which the
            # records cannot give it exactly (tags, groups, any-source receives, rings that
            # dropped different messages): it would report mismatches that are not there
            continue
        pg = str(rec.get("group", ""))
        ranks = groups.get(pg) or []
        if not ranks:
            continue  # no group to match it in
        desc = "default_pg" if pg in WORLD_NAMES and len(ranks) == world else "undefined"
        seq, p2p_seq, is_p2p = int(rec.get("seq") or 0), 0, False
        title = f"{BACKEND}:{name}"
        if pg not in pg_config:
            pg_config[pg] = _pg(pg, ranks, desc)
            pg_ids[pg] = len(pg_ids)
            status[pg] = [-1, -1, -1]
        n_in, n_out = shapes(kind, rec.get("send"), rec.get("recv"), len(ranks),
                             rec.get("root") is not None)
        dtype = rec.get("dtype")
        dtypes = [DTYPES.get(str(dtype), str(dtype))] if dtype else []
        state = STATES.get(str(rec.get("state")), str(rec.get("state")))
        done = rec.get("done_ns") if state == "completed" else None
        last = status[pg]
        last[0] = max(last[0], seq)
        if state in ("started", "completed"):
            last[1] = max(last[1], seq)
        if state == "completed":
            last[2] = max(last[2], seq)
        entry: dict[str, Any] = {
            "record_id": int(rec.get("id", len(entries))), "pg_id": pg_ids[pg],
            "process_group": (pg, desc), "collective_seq_id": seq, "p2p_seq_id": p2p_seq,
            "op_id": int(rec.get("id", len(entries))), "profiling_name": title,
            "time_created_ns": int(rec.get("issued_ns") or 0),
            "input_sizes": [[n_in]], "input_dtypes": dtypes,
            "output_sizes": [[n_out]], "output_dtypes": list(dtypes),
            "state": state,
            "time_discovered_started_ns": rec.get("wait_ns") or rec.get("issued_ns"),
            "time_discovered_completed_ns": done,
            "retired": done is not None, "timeout_ms": timeout_ms, "is_p2p": is_p2p,
            "thread_id": "", "thread_name": "",
            "frames": [{"name": str(rec.get("op", "")), "filename": str(rec.get("file", "?")),
                        "line": int(rec.get("line") or 0)}],
        }
        if done is not None and rec.get("issued_ns") is not None:
            entry["duration_ms"] = (done - rec["issued_ns"]) / 1e6
        entries.append(entry)
    pg_status = {str(pg_ids[pg]): {"last_enqueued_collective": s[0],
                                   "last_started_collective": s[1],
                                   "last_completed_collective": s[2]}
                 for pg, s in status.items()}
    return {"version": VERSION, "comm_lib_version": "mpicoll", "pg_config": pg_config,
            "pg_status": pg_status, "entries": entries}
