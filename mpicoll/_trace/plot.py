"""One PNG of the dumps: the straggler report above a per-rank timeline of operations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .records import Dump, completed
from .timing import stragglers


def _matplotlib() -> tuple[Any, Any, Any]:
    """(Figure, FigureCanvasAgg, Patch): the Agg canvas directly, so no global backend of
    the caller's (a notebook's) is switched."""
    try:
        # lazy: matplotlib is optional, slow to import, and only --plot needs it
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError("plot: matplotlib is not installed: pip install matplotlib") from e
    return Figure, FigureCanvasAgg, Patch


def plot(dumps: dict[int, Dump], path: str | Path) -> None:
    """Write the straggler report (per rank: how often last, mean lag) and a timeline (per
    rank a bar per operation, coloured by op; not completed: red, hatched, to the dump) as
    one PNG at ``path``.

    Raises:
        ImportError: matplotlib is not installed (the message says how to install it).
    """
    figure, canvas, patch = _matplotlib()
    ranks = sorted(dumps)
    fig = figure(figsize=(12, 3.5 + 0.45 * len(ranks)), layout="constrained")
    canvas(fig)
    top, bottom = fig.subplots(2, 1, height_ratios=[1, 1.2 + 0.15 * len(ranks)])
    s = stragglers(dumps)
    last = [len(s.lags.get(r, [])) for r in ranks]
    mean = [s.mean_ns(r) / 1e6 if s.lags.get(r) else 0.0 for r in ranks]
    x = list(range(len(ranks)))
    top.bar([k - 0.2 for k in x], last, width=0.4, color="tab:blue", label="times last")
    top.set_ylabel("times last")
    lag = top.twinx()
    lag.bar([k + 0.2 for k in x], mean, width=0.4, color="tab:orange", label="mean lag")
    lag.set_ylabel("mean lag when last (ms)")
    top.set_ylim(0, max([*last, 1]) * 1.15)
    lag.set_ylim(0, max([*mean, 1.0]) * 1.15)
    top.set_xticks(x, [f"rank {r}" for r in ranks])
    verdict = (f"straggler: rank {s.straggler}, last in {len(s.lags[s.straggler])} of "
               f"{s.taken[s.straggler]}, by {s.mean_ns(s.straggler) / 1e6:.1f} ms on average"
               if s.straggler is not None else "no clear straggler")
    top.set_title(f"who issued each collective last ({s.collectives} compared): {verdict}")
    top.legend(handles=[patch(color="tab:blue", label="times last"),
                        patch(color="tab:orange", label="mean lag (ms)")], loc="upper left")
    _timeline(bottom, dumps, ranks, patch)
    fig.savefig(str(path), dpi=110)


def _timeline(ax: Any, dumps: dict[int, Dump], ranks: list[int], patch: Any) -> None:
    recs = [(r, rec) for r in ranks for rec in dumps[r]["records"]
            if isinstance(rec.get("issued_ns"), int)]
    t0 = min((rec["issued_ns"] for _, rec in recs), default=0)
    end = max([dumps[r].get("time_ns") or t0 for r in ranks] + [t0 + 1])
    least = (end - t0) / 1e6 / 500  # the narrowest bar drawn, in ms: an op stays visible
    ops = sorted({str(rec.get("op")) for _, rec in recs})
    colour = {op: f"C{k % 10}" for k, op in enumerate(ops)}
    for y, r in enumerate(ranks):
        now = dumps[r].get("time_ns") or end
        for rec in dumps[r]["records"]:
            if not isinstance(rec.get("issued_ns"), int):
                continue
            done = completed(rec)
            stop = rec["done_ns"] if done else max(now, rec["issued_ns"])
            span = ((rec["issued_ns"] - t0) / 1e6, max((stop - rec["issued_ns"]) / 1e6, least))
            if done:
                ax.broken_barh([span], (y - 0.35, 0.7), facecolors=colour[str(rec.get("op"))])
            else:
                ax.broken_barh([span], (y - 0.35, 0.7), facecolors=colour[str(rec.get("op"))],
                               edgecolor="red", hatch="//", linewidth=1.5, alpha=0.8)
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the first issue (not completed: red, hatched, up to the dump)")
    ax.set_title("operations from issue to completion")
    handles = [patch(color=colour[op], label=op) for op in ops]
    handles.append(patch(facecolor="white", edgecolor="red", hatch="//",
                         label="not completed"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
