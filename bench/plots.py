"""Draw the benchmark figures from ``bench/results/latest.json`` into ``docs/img/``.

    .venv-bench/bin/python bench/plots.py [--results bench/results/latest.json]

* ``bench_cycle.png``: figure (a), median (bar) and p95 (whisker) of one cycle, per backend;
* ``bench_bytes.png``: figure (b), bytes stored against K for both systems, log scale;
* ``bench_cycle_k.png``: figure (b), time of the K-th cycle against K;
* ``bench_inbox.png``: figure (inbox), p50 of the API and web inbox timings against the number
  of waiting requests, with their targets (also from ``--inbox bench/results/scale_inbox.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogLocator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COLORS = {"langchain": "#d95f02", "interlock": "#1b9e77"}
LABELS = {"langchain": "LangChain create_agent + HITL middleware", "interlock": "interlock"}
STYLES = {"memory": ":", "sqlite": "-", "postgres": "--"}


def plot_cycle(res: dict[str, Any], out: Path) -> None:
    a = res["a"]
    backends = [b for b in ("memory", "sqlite", "postgres") if b in a]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    width = 0.36
    for i, name in enumerate(("langchain", "interlock")):
        xs = [j + (i - 0.5) * width for j in range(len(backends))]
        med = [a[b][name]["median_ms"] for b in backends]
        p95 = [a[b][name]["p95_ms"] for b in backends]
        err = [[0] * len(med), [p - m for p, m in zip(p95, med, strict=True)]]
        ax.bar(xs, med, width, color=COLORS[name], label=LABELS[name], yerr=err, capsize=4)
        for x, m, p in zip(xs, med, p95, strict=True):  # above the whisker
            ax.text(x, p * 1.05, f"{m:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(backends)))
    ax.set_xticklabels([f"{b}\n{a[b]['ratio_median']:.1f}x faster" for b in backends])
    ax.set_yscale("log")
    plain_log_axis(ax)
    ax.set_ylabel("ms per cycle (bar: median, whisker: p95)")
    ax.set_title("(a) one approve cycle on a fresh thread")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


def plain_log_axis(ax: Any) -> None:
    """Tick labels of a log axis as plain numbers (1, 2, 5, 10 ...), not powers of ten."""
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def plot_bytes(res: dict[str, Any], out: Path) -> None:
    b = res["b"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for backend in ("memory", "sqlite", "postgres"):
        if backend not in b:
            continue
        for name in ("langchain", "interlock"):
            sizes = {int(k): v for k, v in b[backend]["sizes"][name].items()}
            base = sizes.get(0, 0)
            # a store that has not grown past its preallocated pages yet has no point here
            ks = sorted(k for k in sizes if k > 0 and sizes[k] - base >= 1024)
            ys = [(sizes[k] - base) / 1024 / 1024 for k in ks]
            ax.plot(ks, ys, STYLES[backend], color=COLORS[name], marker=".",
                    label=f"{name}, {backend}")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("K (cycles in one thread)")
    ax.set_ylabel("MB stored (minus the empty store)")
    ax.set_title("(b) bytes stored after K cycles")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


def plot_cycle_k(raw: dict[str, Any] | None, out: Path) -> None:
    if raw is None:
        return
    b = raw["b"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for backend in ("memory", "sqlite", "postgres"):
        if backend not in b:
            continue
        for name in ("langchain", "interlock"):
            ts = [t * 1e3 for t in b[backend]["times"][name]]
            # median of 5 consecutive cycles, to keep the lines readable
            sm = [sorted(ts[max(0, i - 4):i + 1])[len(ts[max(0, i - 4):i + 1]) // 2]
                  for i in range(len(ts))]
            ax.plot(range(1, len(ts) + 1), sm, STYLES[backend], color=COLORS[name],
                    label=f"{name}, {backend}")
    ax.set_yscale("log")
    ax.set_xlabel("K (cycles in one thread)")
    ax.set_ylabel("ms for cycle K (median of K-4..K)")
    ax.set_title("(b) time of the K-th cycle")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


INBOX_PANELS = [
    ("API (ms, p50)", [("first_page", "first page"), ("search_oldest", "search: oldest only"),
                       ("search_oldest_id", "same, by sequential id"),
                       ("reviewer_dba", "reviewer (1 % readable)"),
                       ("reviewer_ops", "reviewer (99 % readable)")]),
    ("web inbox in Chromium (ms, p50)", [("inbox_first_rows", "first rows on screen"),
                                         ("inbox_search_oldest", "search until oldest shown")]),
]
INBOX_COLORS = ["#1b9e77", "#d95f02", "#a6761d", "#7570b3", "#e7298a"]


def plot_inbox(inbox: dict[str, Any], out: Path) -> None:
    runs = inbox["runs"]
    targets = inbox.get("targets_ms", {})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, (title, metrics) in zip(axes, INBOX_PANELS, strict=True):
        for color, (key, label) in zip(INBOX_COLORS, metrics, strict=False):
            for backend in ("sqlite", "postgres"):
                pts = sorted((r["pending"], r[key]["p50_ms"]) for name, r in runs.items()
                             if name.startswith(backend) and key in r)
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], STYLES[backend],
                            color=color, marker="o", label=f"{label}, {backend}")
            if key in targets:
                ax.axhline(targets[key], color=color, alpha=0.35, linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axis(ax)
        ax.set_xlabel("waiting requests (thin lines: targets)")
        ax.set_title(title)
        ax.legend(fontsize=7)
        ax.grid(which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--results", default=str(HERE / "results" / "latest.json"))
    p.add_argument("--raw", default=None, help="raw file for the K-th-cycle plot (default: "
                   "the newest in bench/results/raw/ of the same run)")
    p.add_argument("--out", default=str(ROOT / "docs" / "img"))
    p.add_argument("--inbox", default=None, help="only the inbox plot, from the JSON that "
                   "bench/scale_inbox.py wrote")
    a = p.parse_args()
    if a.inbox:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        plot_inbox(json.loads(Path(a.inbox).read_text()), Path(a.out) / "bench_inbox.png")
        print(f"plot written to {Path(a.out) / 'bench_inbox.png'}")
        return
    res = json.loads(Path(a.results).read_text())
    raw = None
    raw_path = Path(a.raw) if a.raw else None
    if raw_path is None:
        for f in sorted((HERE / "results" / "raw").glob("*.json"), reverse=True):
            data = json.loads(f.read_text())
            if data["summary"].get("started") == res.get("started"):
                raw = data["raw"]
                break
    else:
        raw = json.loads(raw_path.read_text())["raw"]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if "a" in res:
        plot_cycle(res, out / "bench_cycle.png")
    if "b" in res:
        plot_bytes(res, out / "bench_bytes.png")
        plot_cycle_k(raw, out / "bench_cycle_k.png")
    if "inbox" in res:
        plot_inbox(res["inbox"], out / "bench_inbox.png")
    print(f"plots written to {out}")


if __name__ == "__main__":
    main()
