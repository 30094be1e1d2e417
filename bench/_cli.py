"""The entry point: choose scenarios, prepare their data (cached under ``bench/.data``), run each
with its contenders alternating, print medians, ratios and verdicts, then the scoreboard (every
declared target, measured or not, bench/scoreboard.py); save JSON and a PNG chart.

``--scoreboard`` runs the default set (every scenario but the on-demand ones) at the sizes of
:data:`PROFILES` and saves the scoreboard as JSON and markdown; ``--from`` re-prints the
scoreboard of a saved run; ``--targets`` prints bench/README.md's targets table."""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from bench import scoreboard
from bench._core import Context, skipped
from bench.data import DATA_DIR
from bench.report import summary_text, write_chart, write_json
from bench.scenarios import SCENARIOS, load

__all__ = ["ON_DEMAND", "PROFILES", "main"]

# What a run uses where the command line does not say. "plain" is ``python -m bench``;
# "scoreboard" and "quick" are ``--scoreboard [--quick]``: every scenario that runs here at SF 0.1,
# sized for a shared 2-core machine. ``per_scenario`` lowers the rounds of the heavy Spark /
# Iceberg Java scenarios (one timed round after one warm-up: each is a job of seconds, and their
# JVMs dominate the run); ``env`` sets the sizes those read from the environment (unless set).
PROFILES: dict[str, dict[str, Any]] = {
    "plain": {"scale": 0.1, "repeat": 3, "warmup": 1, "memory_mib": 256, "per_scenario": {}, "env": {}},
    "scoreboard": {
        "scale": 0.1,
        "repeat": 3,
        "warmup": 1,
        "memory_mib": 256,
        "per_scenario": {
            name: {"repeat": 1} for name in ("spark", "compaction", "expire", "merge", "spark-memory")
        },
        "env": {"ICEFLOE_BENCH_COMPACTION_FILES": "2000", "ICEFLOE_BENCH_UPSERT_TIMEOUT": "90"},
    },
    "quick": {
        "scale": 0.1,
        "repeat": 1,
        "warmup": 1,
        "memory_mib": 64,
        "per_scenario": {"expire": {"warmup": 0}},
        "env": {"ICEFLOE_BENCH_COMPACTION_FILES": "300", "ICEFLOE_BENCH_UPSERT_TIMEOUT": "30"},
    },
}
# Scenarios left out of the default set (they take far longer); run them by name.
ON_DEMAND = {"planning-scale"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="icefloe benchmarks: each scenario against its peers, alternating; medians, ratios.",
        epilog="scenarios: " + "; ".join(f"{k}: {v[2]}" for k, v in SCENARIOS.items()),
    )
    p.add_argument(
        "scenarios",
        nargs="*",
        metavar="scenario",
        help=f"any of {', '.join(SCENARIOS)} (default: all but the on-demand {', '.join(sorted(ON_DEMAND))})",
    )
    p.add_argument("--scale", type=float, help="TPC-H scale factor (default 0.1)")
    p.add_argument("--repeat", type=int, help="timed rounds per case (default 3)")
    p.add_argument("--warmup", type=int, help="untimed rounds before them (default 1)")
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
    p.add_argument(
        "--planning-no-fresh",
        action="store_true",
        help="planning: skip the fresh-process measurement (a few child interpreters per case)",
    )
    p.add_argument("--writers", type=int, default=8, help="concurrent writer processes (default 8)")
    p.add_argument("--commits-per-writer", type=int, default=5)
    p.add_argument("--spark-master", default="local[2]")
    p.add_argument(
        "--memory-mib",
        type=int,
        help="size of the stream-memory and spark-memory table, MiB of Arrow data (default 256; "
        "spark-memory: 5120 is 10x its 512m driver heap)",
    )
    p.add_argument(
        "--small-files-appends",
        type=int,
        default=300,
        help="small-files: appends of four 2,000-row files each (default 300: 1,200 files)",
    )
    p.add_argument("--no-chart", action="store_true", help="skip the PNG")
    p.add_argument(
        "--scoreboard",
        action="store_true",
        help="run every scenario that runs here (or those named) at the scoreboard's sizes; save the "
        "scoreboard as scoreboard-<timestamp>.json and .md in --out",
    )
    p.add_argument("--quick", action="store_true", help="with --scoreboard: one round, smaller inputs")
    p.add_argument(
        "--from",
        dest="from_file",
        type=Path,
        metavar="RESULTS_JSON",
        help="print the scoreboard of a saved run (<stamp>.json or scoreboard-<stamp>.json), run nothing",
    )
    p.add_argument("--targets", action="store_true", help="print bench/README.md's targets table (markdown)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    if args.targets:
        print(scoreboard.targets_markdown())
        return 0
    if args.from_file is not None:
        try:
            run_info, results = scoreboard.load_results(args.from_file)
        except (OSError, ValueError) as e:
            p.error(f"--from: {e}")
        print(
            scoreboard.render_text(
                scoreboard.build_rows(run_info, results, scoreboard.declared_targets()), run_info
            )
        )
        return 0
    if args.quick and not args.scoreboard:
        p.error("--quick goes with --scoreboard")
    profile_name = ("quick" if args.quick else "scoreboard") if args.scoreboard else "plain"
    profile = PROFILES[profile_name]
    given = {key for key in ("repeat", "warmup") if getattr(args, key) is not None}
    for key in ("scale", "repeat", "warmup", "memory_mib"):
        if getattr(args, key) is None:
            setattr(args, key, profile[key])
    chosen = args.scenarios or [s for s in SCENARIOS if s not in ON_DEMAND]
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    if args.repeat < 1 or args.warmup < 0 or args.scale <= 0 or args.planning_manifests < 1:
        p.error("--repeat and --planning-manifests must be >= 1, --warmup >= 0, --scale > 0")
    if args.memory_mib < 1:
        p.error("--memory-mib must be >= 1")
    if args.small_files_appends < 1:
        p.error("--small-files-appends must be >= 1")
    env_set = {}
    for k, v in profile["env"].items():
        if k not in os.environ:
            os.environ[k] = env_set[k] = v
    # Rounds per scenario: the profile's lighter settings for heavy scenarios, unless the command
    # line gave --repeat / --warmup.
    per_scenario: dict[str, dict[str, int]] = {}
    for name, over in profile["per_scenario"].items():
        per_scenario[name] = {k: v for k, v in over.items() if k not in given}
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
            "planning_no_fresh": args.planning_no_fresh,
            "writers": args.writers,
            "commits_per_writer": args.commits_per_writer,
            "spark_master": args.spark_master,
            "memory_mib": args.memory_mib,
            "small_files_appends": args.small_files_appends,
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
        "memory_mib": args.memory_mib,
        "profile": profile_name,
        "per_scenario": {k: v for k, v in per_scenario.items() if k in chosen and v},
        "env": {k: os.environ[k] for k in profile["env"] if k in os.environ} | env_set,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    results: list[dict[str, Any]] = []
    failed = False
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    try:
        for name in chosen:
            print(f"==> {name}: {SCENARIOS[name][2]}", flush=True)
            t0 = time.perf_counter()
            try:
                for r in load(name)(dataclasses.replace(ctx, **per_scenario.get(name, {}))):
                    results.append(r.to_json())
            except Exception as e:  # one broken scenario must not lose the others' numbers
                traceback.print_exc()
                failed = True
                results.append(
                    skipped(name, "error", SCENARIOS[name][2], f"failed: {type(e).__name__}: {e}").to_json()
                )
            seconds[name] = time.perf_counter() - t0
            print(f"    ({seconds[name]:.1f}s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    run_info["load_average_end"] = os.getloadavg()
    run_info["elapsed_s"] = time.perf_counter() - started
    run_info["scenario_seconds"] = seconds
    print("\n" + summary_text(results))
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{stamp}.json"
    write_json(json_path, run_info, results)  # first: the numbers are kept whatever follows
    rows = scoreboard.build_rows(run_info, results, scoreboard.declared_targets())
    print("\n" + scoreboard.render_text(rows, run_info))
    print(f"\nresults: {json_path}")
    if args.scoreboard:
        board_json, board_md = scoreboard.save(args.out, stamp, run_info, results, rows)
        print(f"scoreboard: {board_json}, {board_md}")
    if not args.no_chart:
        png = args.out / f"{stamp}.png"
        if write_chart(png, run_info, results):
            print(f"chart:   {png}")
    return 1 if failed else 0
