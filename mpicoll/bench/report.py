"""The bandwidth benchmark's output: one line per measurement, then a Markdown table."""

from __future__ import annotations

from typing import Any

__all__ = ["print_row", "table"]

VARIANTS = ("raw_mpi4py", "mpicoll_numpy", "mpicoll_torch", "torch_backend", "gloo")

# variants of a collective, compared with its single-tensor form (same bytes, same run)
FORM_OF = {"all_to_all(list of chunks)": "all_to_all_single",
           "all_to_all_single(split sizes)": "all_to_all_single",
           "reduce_scatter(list of chunks)": "reduce_scatter_tensor",
           "all_gather(list of chunks)": "all_gather_into_tensor"}


def print_row(row: dict[str, Any]) -> None:
    cols = [f"{k}={row[k] * 1e6:.1f}us" for k in VARIANTS if k in row]
    print(f"{row['op']:>28} {row['bytes']:>9} B  " + "  ".join(cols)
          + ("" if row["verified"] else "  UNVERIFIED"), flush=True)


def _fmt(row: dict[str, Any], key: str, ref: str | None = None, suffix: str = "") -> str:
    if key not in row:
        return "-"
    if ref is None:
        return f"{row[key] * 1e6:.1f}"
    return f"{row[key] / row[ref]:.2f}{suffix}" if ref in row else "-"


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: times in microseconds and the ratios the targets are stated in."""
    head = ("| op | bytes/rank | ranks | raw mpi4py us | mpicoll numpy us | numpy/raw | "
            "mpicoll torch us | torch/raw | torch backend us | backend/mpicoll | gloo us | "
            "gloo/backend | numpy/single-tensor form |")
    lines = [head, "|" + "---|" * 13]
    single = {(r["op"], r["bytes"]): r for r in rows}
    for r in rows:
        cells = [r["op"], str(r["bytes"]), str(r["ranks"]), _fmt(r, "raw_mpi4py"),
                 _fmt(r, "mpicoll_numpy"), _fmt(r, "mpicoll_numpy", "raw_mpi4py"),
                 _fmt(r, "mpicoll_torch"), _fmt(r, "mpicoll_torch", "raw_mpi4py"),
                 _fmt(r, "torch_backend"), _fmt(r, "torch_backend", "mpicoll_torch"),
                 _fmt(r, "gloo"), _fmt(r, "gloo", "torch_backend", "x")]
        base = single.get((FORM_OF.get(r["op"]), r["bytes"]))
        ok = base is not None and "mpicoll_numpy" in r and "mpicoll_numpy" in base
        cells.append(f"{r['mpicoll_numpy'] / base['mpicoll_numpy']:.2f}" if ok else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
