"""The entry point: choose scenarios, prepare their data (cached under ``bench/.data``), run each
with its contenders alternating, print medians, ratios and verdicts, save JSON and a PNG chart."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from bench._core import Context, skipped
from bench.data import DATA_DIR
from bench.report import summary_text, write_chart, write_json
from bench.scenarios import SCENARIOS, load

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="icefloe benchmarks: each scenario against its peers, alternating; medians, ratios.",
        epilog="scenarios: " + "; ".join(f"{k}: {v[2]}" for k, v in SCENARIOS.items()),
    )
    p.add_argument(
        "scenarios", nargs="*", metavar="scenario", help=f"any of {', '.join(SCENARIOS)} (default: all)"
    )
    p.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds per case (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds before them (default 1)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results",
        help="where <timestamp>.json and .png go (default bench/results)",
    )
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="input cache (default bench/.data)")
    p.add_argument(
        "--planning-manifests",
        type=int,
        default=1000,
        help="manifests in the planning table, 10 files each (default 1000)",
    )
    p.add_argument("--writers", type=int, default=8, help="concurrent writer processes (default 8)")
    p.add_argument("--commits-per-writer", type=int, default=5)
    p.add_argument("--spark-master", default="local[2]")
    p.add_argument("--no-chart", action="store_true", help="skip the PNG")
    return p


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    chosen = args.scenarios or list(SCENARIOS)
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    if args.repeat < 1 or args.warmup < 0 or args.scale <= 0 or args.planning_manifests < 1:
        p.error("--repeat and --planning-manifests must be >= 1, --warmup >= 0, --scale > 0")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="work-", dir=args.data_dir))
    ctx = Context(
        scale=args.scale,
        repeat=args.repeat,
        warmup=args.warmup,
        data_dir=args.data_dir.resolve(),
        work_dir=work.resolve(),
        options={
            "planning_manifests": args.planning_manifests,
            "writers": args.writers,
            "commits_per_writer": args.commits_per_writer,
            "spark_master": args.spark_master,
        },
    )
    stamp = time.strftime("%Y%m%dT%H%M%S")
    run_info: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "scenarios": chosen,
        "scale": args.scale,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "planning_manifests": args.planning_manifests,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    results: list[dict[str, Any]] = []
    failed = False
    try:
        for name in chosen:
            print(f"==> {name}: {SCENARIOS[name][2]}", flush=True)
            t0 = time.perf_counter()
            try:
                for r in load(name)(ctx):
                    results.append(r.to_json())
            except Exception as e:  # one broken scenario must not lose the others' numbers
                traceback.print_exc()
                failed = True
                results.append(
                    skipped(name, "error", SCENARIOS[name][2], f"failed: {type(e).__name__}: {e}").to_json()
                )
            print(f"    ({time.perf_counter() - t0:.1f}s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    run_info["load_average_end"] = os.getloadavg()
    print("\n" + summary_text(results))
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{stamp}.json"
    write_json(json_path, run_info, results)
    print(f"\nresults: {json_path}")
    if not args.no_chart:
        png = args.out / f"{stamp}.png"
        if write_chart(png, run_info, results):
            print(f"chart:   {png}")
    return 1 if failed else 0
