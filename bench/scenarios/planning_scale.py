"""How planning cost grows with table size: icefloe vs PyIceberg 0.12 vs Iceberg Java 1.10.

Metadata-only tables (manifests listing synthetic data files that do not exist; planning never
opens them) on a grid of sizes: 10,000 / 100,000 / 1,000,000 data files spread over 100 / 1,000 /
10,000 manifests, built like ``planning``'s table (identity-partitioned on ``p``, manifest ``m``
holding only partition ``p = m``) and cached under ``bench/.data/planning-scale/``.

Per table, two plans:

* ``selective``: ``p = <one partition>``: exactly one manifest can match, so the work should stay
  that of one manifest list plus one manifest whatever the table's size;
* ``full``: ``id >= 0``: every manifest and every file.

Measured: wall time and manifests opened (icefloe: ``CountingFileIO``; PyIceberg: a counting
``PyArrowFileIO`` passed as ``py-io-impl``; Java: the scan's ``ScanReport``,
``scannedDataManifests``). icefloe runs cold (its caches cleared before every plan: the first plan
of a snapshot in a process) and warm. Java runs in its own process (``bench/_java_planning.py``,
the oracle venv), loading each table from its metadata file and timing
``table.newScan().filter(expr).planFiles()`` in the JVM after one warm-up plan.

On demand only (minutes per size; the 1M-file tables take about a minute each to build). Limit the
grid with environment variables (or run ``python -m bench.scenarios.planning_scale --files 10000
--manifests 100,1000``):

* ``BENCH_PLANNING_SCALE_FILES`` (default ``10000,100000,1000000``),
* ``BENCH_PLANNING_SCALE_MANIFESTS`` (default ``100,1000,10000``),
* ``BENCH_PLANNING_SCALE_ENGINES`` (default ``icefloe,pyiceberg,java``),
* ``BENCH_PLANNING_SCALE_FULL_MAX`` (default ``100000``): PyIceberg plans every file only up to
  this many data files (it takes about two minutes per million files here); icefloe and Java
  always do.

A pair (files, manifests) runs when files >= manifests.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from bench._core import CaseResult, Context, ratio_entry
from bench.data import clear_icefloe_caches

if TYPE_CHECKING:
    from icefloe.io import FileIO

__all__ = ["CountingPyArrowFileIO", "grid", "run"]

SCENARIO = "planning-scale"
DEFAULT_FILES = (10_000, 100_000, 1_000_000)
DEFAULT_MANIFESTS = (100, 1_000, 10_000)
ENGINES = ("icefloe", "pyiceberg", "java")
ORACLE_PYTHON = (
    Path(os.environ.get("ORACLE_VENV", os.path.expanduser("~/.cache/icefloe-oracle/venv"))) / "bin" / "python"
)


def _ints(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    if not text:
        return default
    return tuple(int(x.replace("_", "")) for x in text.split(",") if x.strip())


def grid(options: dict[str, Any]) -> list[tuple[int, int]]:
    """The (data files, manifests) pairs to measure, from ``options`` or the environment."""
    files = options.get("planning_scale_files") or _ints(
        os.environ.get("BENCH_PLANNING_SCALE_FILES"), DEFAULT_FILES
    )
    manifests = options.get("planning_scale_manifests") or _ints(
        os.environ.get("BENCH_PLANNING_SCALE_MANIFESTS"), DEFAULT_MANIFESTS
    )
    return [(f, m) for f in files for m in manifests if f >= m and f % m == 0]


def _engines(options: dict[str, Any]) -> tuple[str, ...]:
    text = options.get("planning_scale_engines") or os.environ.get("BENCH_PLANNING_SCALE_ENGINES")
    if not text:
        return ENGINES
    chosen = tuple(e.strip() for e in str(text).split(",") if e.strip())
    unknown = set(chosen) - set(ENGINES)
    if unknown:
        raise ValueError(f"unknown engines {sorted(unknown)}; choose from {', '.join(ENGINES)}")
    return chosen


class CountingPyArrowFileIO:
    """PyIceberg's ``PyArrowFileIO`` counting the Avro metadata files it opens (loaded by class
    path through the ``py-io-impl`` property, so it is built lazily by PyIceberg)."""

    opened: ClassVar[list[str]] = []

    def __new__(cls, properties: Any = None) -> Any:
        from pyiceberg.io.pyarrow import PyArrowFileIO

        class _Counting(PyArrowFileIO):  # type: ignore[misc]
            def new_input(self, location: str) -> Any:
                if location.endswith(".avro"):
                    CountingPyArrowFileIO.opened.append(location)
                return super().new_input(location)

        return _Counting(properties or {})


def _table_root(ctx: Context, files: int, manifests: int) -> Path:
    return ctx.data_dir / "planning-scale" / f"f{files}-m{manifests}"


def _table(ctx: Context, files: int, manifests: int) -> tuple[Path, str]:
    from bench.scenarios.planning import _build

    root = _table_root(ctx, files, manifests)
    ready = root / "METADATA_LOCATION"
    if not ready.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t0 = time.perf_counter()
        _, location = _build(root, manifests, files // manifests)
        ready.write_text(location)
        ctx.say(f"    built {files:,} files in {manifests:,} manifests in {time.perf_counter() - t0:.1f}s")
    return root, ready.read_text().strip()


def _plans(files: int, manifests: int) -> list[tuple[str, str, dict[str, Any], int, int]]:
    """(case, icefloe/PyIceberg filter, Java filter, matching manifests, matching files)."""
    selected = manifests // 2
    return [
        (
            "selective",
            f"p = {selected}",
            {"column": "p", "op": "eq", "value": selected},
            1,
            files // manifests,
        ),
        ("full", "id >= 0", {"column": "id", "op": "ge", "value": 0}, manifests, files),
    ]


def _time(fn: Any, rounds: int, setup: Any = None) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(rounds):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def _java(ctx: Context, jobs: list[dict[str, Any]]) -> dict[str, Any] | str:
    if not ORACLE_PYTHON.exists():
        return f"oracle venv not found at {ORACLE_PYTHON}"
    spec = ctx.work_dir / "java-planning-jobs.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(json.dumps(jobs))
    script = Path(__file__).resolve().parent.parent / "_java_planning.py"
    proc = subprocess.run(
        [str(ORACLE_PYTHON), str(script), str(spec), "--repeat", str(ctx.repeat)],
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if proc.returncode != 0:
        return f"Iceberg Java run failed: {proc.stderr.strip().splitlines()[-3:]}"
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def run(ctx: Context) -> list[CaseResult]:
    import icefloe
    from bench.data import catalog_properties
    from icefloe.table import Table
    from icefloe.testing import CountingFileIO

    engines = _engines(ctx.options)
    full_max = int(os.environ.get("BENCH_PLANNING_SCALE_FULL_MAX", "100000"))
    results: list[CaseResult] = []
    java_jobs: list[dict[str, Any]] = []
    pending: dict[str, CaseResult] = {}
    for files, manifests in grid(ctx.options):
        root, location = _table(ctx, files, manifests)
        cat = icefloe.load_catalog("bench_plan", **catalog_properties(root))
        loaded = cat.load_table("b.many_files")
        counting = CountingFileIO(loaded.io)
        ice = Table(
            loaded.identifier, loaded.metadata, loaded.metadata_location, cast("FileIO", counting), cat
        )
        py_table = None
        if "pyiceberg" in engines:
            from pyiceberg.table import StaticTable

            py_table = StaticTable.from_metadata(
                location, properties={"py-io-impl": f"{__name__}.CountingPyArrowFileIO"}
            )
        for case, row_filter, java_filter, match_manifests, match_files in _plans(files, manifests):
            name = f"{case}_f{files}_m{manifests}"
            ctx.say(f"  {SCENARIO}/{name}: {files:,} files in {manifests:,} manifests, filter {row_filter!r}")
            res = CaseResult(
                SCENARIO,
                name,
                f"plan_files, {files:,} files in {manifests:,} manifests, filter {row_filter!r} "
                f"({match_manifests:,} manifest(s), {match_files:,} files match)",
            )
            res.metrics.update(
                {
                    "data_files": files,
                    "manifests": manifests,
                    "matching_manifests": match_manifests,
                    "matching_files": match_files,
                }
            )
            big = files >= 1_000_000 and case == "full"
            rounds = 1 if big else ctx.repeat
            if "icefloe" in engines:

                def ice_plan(
                    f: str = row_filter, table: Table = ice, io: CountingFileIO = counting
                ) -> tuple[int, int]:
                    io.reset()
                    n = len(table.scan(row_filter=f).plan_files())
                    return n, sum(1 for p in io.opened if "/bench-m" in p)

                times, (n, opened) = _time(ice_plan, rounds, clear_icefloe_caches)
                res.times_s["icefloe-cold"] = times
                res.metrics["icefloe_files"] = n
                res.metrics["icefloe_manifests_opened"] = opened
                times, _ = _time(ice_plan, rounds)
                res.times_s["icefloe"] = times
            if py_table is not None and (case == "selective" or files <= full_max):

                def py_plan(f: str = row_filter, table: Any = py_table) -> tuple[int, int]:
                    CountingPyArrowFileIO.opened.clear()
                    n = sum(1 for _ in table.scan(row_filter=f).plan_files())
                    return n, sum(1 for p in CountingPyArrowFileIO.opened if "/bench-m" in p)

                times, (n, opened) = _time(py_plan, rounds)
                res.times_s["pyiceberg"] = times
                res.metrics["pyiceberg_files"] = n
                res.metrics["pyiceberg_manifests_opened"] = opened
            elif "pyiceberg" in engines:
                res.metrics["pyiceberg_skipped"] = (
                    f"full plans above {full_max:,} files (BENCH_PLANNING_SCALE_FULL_MAX)"
                )
            if "java" in engines:
                java_jobs.append({"key": name, "metadata": location, **java_filter})
            for who, ts in res.times_s.items():
                res.median_s[who] = statistics.median(ts)
            ctx.say(
                "    "
                + ", ".join(f"{who} {t * 1e3:,.1f} ms" for who, t in res.median_s.items())
                + "; manifests opened: "
                + ", ".join(
                    f"{who} {res.metrics[f'{who}_manifests_opened']}"
                    for who in ("icefloe", "pyiceberg")
                    if f"{who}_manifests_opened" in res.metrics
                )
            )
            pending[name] = res
            results.append(res)
        cat.close()
    if "java" in engines and java_jobs:
        ctx.say(f"  {SCENARIO}: Iceberg Java 1.10 on {len(java_jobs)} plans (one JVM)")
        java = _java(ctx, java_jobs)
        if isinstance(java, str):
            ctx.say(f"    {java}")
            for res in results:
                res.metrics["java_skipped"] = java
        else:
            for key, got in java.items():
                if key.startswith("_"):
                    continue
                res = pending[key]
                res.times_s["java"] = got["times_s"]
                res.median_s["java"] = statistics.median(got["times_s"])
                res.metrics["java_files"] = got["files"]
                res.metrics["java_manifests_opened"] = got["scanned_manifests"]
                ctx.say(
                    f"    {key}: java {res.median_s['java'] * 1e3:,.1f} ms, "
                    f"manifests scanned {got['scanned_manifests']}"
                )
    for res in results:
        _judge(res)
    return results


def _judge(res: CaseResult) -> None:
    """Ratios (reported, no targets: the targets are on ``planning``'s 1,000-manifest table) and
    the checks that make the curve mean something: every engine planned the matching files, and
    icefloe opened exactly the matching manifests."""
    from bench._core import Ratio

    m = res.metrics
    for base in ("pyiceberg", "java"):
        for subject in ("icefloe-cold", "icefloe"):
            if subject in res.median_s and base in res.median_s:
                res.ratios.append(
                    ratio_entry(Ratio(f"{subject} time vs {base}", subject, base, "time"), res.median_s)
                )
    planned = {who: m[f"{who}_files"] for who in ("icefloe", "pyiceberg", "java") if f"{who}_files" in m}
    res.checks.append(
        {
            "label": "every engine planned the matching files",
            "met": all(n == m["matching_files"] for n in planned.values()),
            "detail": f"{planned}, expected {m['matching_files']}",
        }
    )
    if "icefloe_manifests_opened" in m:
        res.checks.append(
            {
                "label": "icefloe opened exactly the matching manifests",
                "met": m["icefloe_manifests_opened"] == m["matching_manifests"],
                "detail": f"opened {m['icefloe_manifests_opened']}, matching {m['matching_manifests']}",
            }
        )


def main(argv: list[str] | None = None) -> int:
    """Run the curve outside ``python -m bench`` with its own size flags."""
    import argparse
    import tempfile

    p = argparse.ArgumentParser(prog="python -m bench.scenarios.planning_scale")
    p.add_argument("--files", default=",".join(map(str, DEFAULT_FILES)))
    p.add_argument("--manifests", default=",".join(map(str, DEFAULT_MANIFESTS)))
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parent.parent / ".data"))
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="planning-scale-") as work:
        ctx = Context(
            scale=1.0,
            repeat=args.repeat,
            warmup=0,
            data_dir=Path(args.data_dir),
            work_dir=Path(work),
            options={
                "planning_scale_files": _ints(args.files, DEFAULT_FILES),
                "planning_scale_manifests": _ints(args.manifests, DEFAULT_MANIFESTS),
                "planning_scale_engines": args.engines,
            },
        )
        results = run(ctx)
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in results], indent=1))
    return 0


def render(results: list[CaseResult]) -> str:
    """The curve as a Markdown table: median ms and manifests opened per engine."""
    lines = [
        "| plan | data files | manifests | matching manifests | icefloe cold ms | icefloe warm ms | "
        "PyIceberg ms | Java ms | manifests opened (icefloe / PyIceberg / Java) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        m, t = r.metrics, r.median_s

        def ms(who: str, t: dict[str, float] = t) -> str:
            return f"{t[who] * 1e3:,.1f}" if who in t else "-"

        opened = " / ".join(
            str(m.get(f"{who}_manifests_opened", "-")) for who in ("icefloe", "pyiceberg", "java")
        )
        lines.append(
            f"| {r.name.split('_')[0]} | {m['data_files']:,} | {m['manifests']:,} | "
            f"{m['matching_manifests']:,} | "
            f"{ms('icefloe-cold')} | {ms('icefloe')} | {ms('pyiceberg')} | {ms('java')} | {opened} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
