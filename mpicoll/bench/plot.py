"""``python -m mpicoll.bench plot``: bandwidth and overhead versus size, from JSON files."""

from __future__ import annotations

import json
import os

__all__ = ["plot"]


def plot(paths: list[str], out_dir: str) -> list[str]:
    """Bandwidth-vs-size and overhead-vs-size plots (PNG) from benchmark JSON files."""
    import matplotlib  # lazy: matplotlib loads only for `plot`

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: after choosing the Agg backend

    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
        if runs[-1]["meta"].get("mode") == "overhead":
            raise SystemExit(f"plot: {path} holds `overhead` results: plot draws the "
                             f"JSON of `python -m mpicoll.bench --out`")
    ops = list(dict.fromkeys(r["op"] for run in runs for r in run["results"]))
    styles = {"raw_mpi4py": ("raw mpi4py", "k", "-"), "mpicoll_numpy": ("mpicoll numpy", "C0", "-"),
              "mpicoll_torch": ("mpicoll torch", "C1", "--"),
              "torch_backend": ("torch.distributed 'mpicoll'", "C2", "-."),
              "gloo": ("torch.distributed gloo", "C3", ":")}
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for kind in ("bandwidth", "overhead"):
        # one row per collective, one column per rank count
        fig, axes = plt.subplots(len(ops), len(runs), figsize=(5.5 * len(runs), 3 * len(ops)),
                                 squeeze=False)
        for i, run in enumerate(runs):
            for j, op in enumerate(ops):
                ax = axes[j][i]
                for key, (label, color, style) in styles.items():
                    rows = [r for r in run["results"] if r["op"] == op and key in r
                            and (kind == "bandwidth" or "raw_mpi4py" in r)]
                    if not rows:
                        continue
                    sizes = [r["bytes"] for r in rows]
                    if kind == "bandwidth":
                        ys = [r["bytes"] / r[key] / 1e9 for r in rows]
                    else:
                        ys = [(r[key] - r["raw_mpi4py"]) * 1e6 for r in rows]
                    ax.plot(sizes, ys, style, color=color, label=label, marker=".")
                ax.set_xscale("log", base=2)
                if kind == "bandwidth":
                    ax.set_yscale("log")
                    ax.set_ylabel("GB/s per rank")
                else:
                    ax.set_yscale("symlog", linthresh=1)
                    ax.set_ylabel("us over raw mpi4py")
                ax.set_title(f"{op}, {run['meta']['ranks']} ranks", fontsize=9)
                ax.set_xlabel("bytes per rank")
                ax.grid(True, alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{kind}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written
