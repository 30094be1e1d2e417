"""What a run leaves behind: a text summary, ``<timestamp>.json`` and ``<timestamp>.png`` (the
scoreboard, its table of every target, is bench/scoreboard.py).

The chart has one bar group per scenario (one bar per ratio), a log-scale y axis so that 0.5x and
10x read alike, each bar's target drawn as a black tick across it, and the bar green when the
target is met, red when missed, grey when there is no target. Ratios read "higher is better" for
``speed`` targets (>=) and "lower is better" for ``time`` targets (<=); the label says which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["summary_text", "write_chart", "write_json"]


def _verdict(met: bool | None) -> str:
    return "info" if met is None else "MET" if met else "MISSED"


def summary_text(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        head = f"{r['scenario']}/{r['case']}: {r['description']}"
        if r["skipped"]:
            lines.append(f"{head}\n    skipped: {r['skipped']}")
            continue
        lines.append(head)
        if r["median_s"]:
            med = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r["median_s"].items())
            lines.append(f"    median: {med}")
        if r.get("median_cpu_s"):
            cpu = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r["median_cpu_s"].items())
            lines.append(f"    cpu:    {cpu}")
        for q in r["ratios"]:
            target = "no target" if q["op"] is None else f"target {q['op']} {q['target']:g}x"
            cpu = f"; by CPU time {q['cpu_value']:.2f}x" if q.get("cpu_value") is not None else ""
            note = f"; {q['note']}" if q.get("note") else ""
            lines.append(f"    {_verdict(q['met']):<7}{q['label']}: {q['value']:.2f}x ({target}{cpu}{note})")
        for c in r["checks"]:
            lines.append(f"    {_verdict(c['met']):<7}{c['label']}: {c['detail']}")
        extra = {k: v for k, v in r["metrics"].items() if k in ("commits_per_s", "retries")}
        if extra:
            lines.append(
                "    "
                + ", ".join(
                    f"{k}: {v if not isinstance(v, float) else round(v, 2)}" for k, v in extra.items()
                )
            )
    return "\n".join(lines)


def write_json(path: Path, run_info: dict[str, Any], results: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"run": run_info, "results": results}, indent=1, default=str))


def write_chart(path: Path, run_info: dict[str, Any], results: list[dict[str, Any]]) -> bool:
    """Draw the ratios; returns False (and draws nothing) when there is no ratio to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        for q in r["ratios"]:
            groups.setdefault(r["scenario"], []).append(q)
    if not groups:
        return False
    bars = [(scenario, q) for scenario, qs in groups.items() for q in qs]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.8 * len(bars) + 3), 7.5))
    x = 0.0
    ticks: list[float] = []
    tick_labels: list[str] = []
    spans: list[tuple[float, float, str]] = []
    levels: list[float] = [1.0]
    for scenario, qs in groups.items():
        start = x
        for q in qs:
            value = max(float(q["value"]), 1e-3)
            color = "#9e9e9e" if q["met"] is None else "#2e7d32" if q["met"] else "#c62828"
            # Bars grow from parity (1x) up or down, so "faster" and "slower" read at a glance.
            ax.bar(x, value - 1.0, bottom=1.0, width=0.8, color=color)
            ax.annotate(
                f"{value:.2f}x",
                (x, value),
                xytext=(0, 3 if value >= 1 else -3),
                textcoords="offset points",
                ha="center",
                va="bottom" if value >= 1 else "top",
                fontsize=8,
                fontweight="bold",
            )
            levels.append(value)
            if q["target"] is not None:
                ax.hlines(q["target"], x - 0.45, x + 0.45, colors="black", linewidth=2.5)
                ax.annotate(
                    f"{q['op']} {q['target']:g}",
                    (x - 0.45, q["target"]),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="left",
                    va="bottom",
                    fontsize=7,
                )
                levels.append(float(q["target"]))
            ticks.append(x)
            tick_labels.append(q["label"].split(": ", 1)[-1] + "\n" + q["label"].split(": ", 1)[0])
            x += 1.0
        spans.append((start, x - 1.0, scenario))
        x += 0.7
    ax.set_yscale("log")
    ax.set_ylim(min(levels) / 2.0, max(levels) * 2.0)
    ax.axhline(1.0, color="#616161", linewidth=0.8, linestyle=":")
    ax.set_xticks(ticks, tick_labels, rotation=35, ha="right", fontsize=7)
    for a, b, name in spans:
        ax.text(
            (a + b) / 2,
            1.01,
            name,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=10,
            fontweight="bold",
        )
        ax.axvspan(a - 0.5, b + 0.5, color="#f5f5f5", zorder=-1)
    ax.set_ylabel("ratio, log scale (speed targets >=: higher is better;\ntime targets <=: lower is better)")
    ax.set_title(
        f"icefloe benchmark ratios, TPC-H SF {run_info['scale']}, median of {run_info['repeat']}, "
        f"{run_info['started']}\ngreen = target met, red = missed, grey = no target, black tick = target",
        fontsize=10,
        pad=22,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
