"""Spark read/write throughput through icefloe against raw Spark Parquet, side by side.

    python -m bench.spark_io [--scale SF] [--repeat N] [--master local[2]]

One Spark session, one TPC-H ``lineitem`` (tpchgen-cli) cached in memory as the source, and each
measurement repeated ``--repeat`` times with the contenders alternating (icefloe first on even
rounds, raw Parquet first on odd ones) so that JIT warm-up, page cache and GC drift hit both sides
alike. Reported: the median wall time of each, rows/s, and the icefloe/raw time ratio (1.0 = as
fast as raw Parquet; 2.0 = twice the time). Scans end in Spark's ``noop`` sink, which materialises
every selected column without writing anything.

Contenders:
- write: the data source ``df.write.format("icefloe").mode("append").save(table)`` and
  ``icefloe.spark.write(df, table)``, whose native path lets Spark's Parquet writer write the
  files (the driver commits one snapshot) vs ``df.write.parquet(dir)`` with snappy (Spark's
  default) and zstd (icefloe's default codec). Each round appends to a new, empty table created
  before the timer starts (what a write to an existing table pays: the write and its commit; the
  raw contender's new directory is made by its write), whose schema is the DataFrame's: nullable
  columns, as the raw writer writes them (a table with required columns adds a per-row null check
  when the DataFrame's columns are nullable);
- full scan: the data source ``spark.read.format("icefloe").load(table)`` and the fast path
  ``icefloe.spark.read(spark, table)`` vs ``spark.read.parquet(dir)``;
- filtered scan with column projection (one month of ``l_shipdate``, 3 columns), same three.

For the native write the time is also split into the Spark jobs it ran (their own duration, from
Spark's status store) and the rest (driver-side Python, planning, commit), the split that stays
meaningful on a loaded machine. Besides wall time, the CPU time of this process and all its
descendants (the Spark JVM and its Python workers, read from /proc; Linux only) is recorded per
operation: on a machine shared with other jobs it tells the work done apart from the waiting.
Results go to ``bench/results/spark_io-<time>.json``; never timed inside the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.data import DATA_DIR, lineitem_path
from icefloe.cli.demo import _catalog_properties, _plain

__all__ = ["main"]

CATALOG = "bench"
FILTER = "l_shipdate >= '1995-01-01' and l_shipdate < '1995-02-01'"
SPARK_FILTER = "l_shipdate >= date'1995-01-01' and l_shipdate < date'1995-02-01'"
COLUMNS = ["l_orderkey", "l_extendedprice", "l_discount"]


def _tree_cpu() -> float:
    """CPU seconds (user + system, with waited-for children) of this process and every
    descendant still running; 0.0 where /proc is missing."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[pid] = int(fields[1])
        cpu[pid] = sum(int(v) for v in fields[11:15]) / tick
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p = pid
        while p > 1 and p != me:
            p = parents.get(p, 0)
        if p == me:
            total += cpu[pid]
    return total


CPU: dict[str, list[float]] = {}
#: per native write: (seconds inside Spark jobs, seconds outside them)
SPLIT: list[tuple[float, float]] = []


def _job_ids(spark: Any) -> set[int]:
    jobs = spark._jsc.sc().statusStore().jobsList(None)
    return {jobs.apply(i).jobId() for i in range(jobs.size())}


def _job_seconds(spark: Any, before: set[int]) -> float:
    """Summed duration of the Spark jobs that are not in ``before``."""
    store = spark._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    total = 0.0
    for i in range(jobs.size()):
        j = jobs.apply(i)
        if j.jobId() in before or not j.completionTime().isDefined():
            continue
        total += (j.completionTime().get().getTime() - j.submissionTime().get().getTime()) / 1000
    return total


def _timed(fn: Callable[[], object], key: str = "") -> float:
    c0 = _tree_cpu()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    if key:
        CPU.setdefault(key, []).append(_tree_cpu() - c0)
    return wall


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


class Bench:
    """Holds the session, the catalog and the per-round output locations."""

    def __init__(self, spark: Any, workdir: Path, source: Any, data: Path) -> None:
        import icefloe.spark

        self.spark = spark
        self.workdir = workdir
        self.source = source
        self.spark_api = icefloe.spark
        self.catalog = icefloe.load_catalog(CATALOG, **_catalog_properties(workdir))
        if not self.catalog.namespace_exists("b"):
            self.catalog.create_namespace("b")
        self.round = 0
        plain = _plain(pq.read_schema(data).empty_table()).schema
        # the DataFrame's schema: spark.read.parquet makes every column nullable
        self.schema = pa.schema([f.with_nullable(True) for f in plain])

    def new_table(self, name: str) -> str:
        """An empty table for one round's write, made before the write is timed."""
        if self.catalog.table_exists(name):
            self.catalog.drop_table(name, purge=True)
        self.catalog.create_table(name, schema=self.schema)
        return name

    # ---------------------------------------------------------------- writes
    def write_icefloe(self, name: str) -> str:
        self.source.write.format("icefloe").option("catalog", CATALOG).mode("append").save(name)
        return name

    def write_native(self, name: str) -> str:
        """``icefloe.spark.write``: Spark's Parquet writer, footers and commit on the driver."""
        before = _job_ids(self.spark)
        t0 = time.perf_counter()
        self.spark_api.write(self.source, name, catalog=CATALOG, engine="native")
        wall = time.perf_counter() - t0
        jobs = _job_seconds(self.spark, before)
        SPLIT.append((jobs, wall - jobs))
        return name

    def write_raw(self, compression: str = "snappy") -> str:
        """Spark's own Parquet write (snappy, Spark's default; ``zstd`` like icefloe's files)."""
        path = self.workdir / f"raw_{compression}" / f"lineitem_{self.round}"
        if path.exists():
            shutil.rmtree(path)
        self.source.write.option("compression", compression).parquet(str(path))
        return str(path)

    # ---------------------------------------------------------------- scans
    def scan_source(self, table: str, filtered: bool) -> Any:
        df = self.spark.read.format("icefloe").option("catalog", CATALOG).load(table)
        return df.where(SPARK_FILTER).select(*COLUMNS) if filtered else df

    def scan_fast(self, table: str, filtered: bool) -> Any:
        if filtered:
            df = self.spark_api.read(
                self.spark, table, columns=[*COLUMNS, "l_shipdate"], where=FILTER, catalog=CATALOG
            )
            return df.where(SPARK_FILTER).select(*COLUMNS)
        return self.spark_api.read(self.spark, table, catalog=CATALOG)

    def scan_raw(self, path: str, filtered: bool) -> Any:
        df = self.spark.read.parquet(path)
        return df.where(SPARK_FILTER).select(*COLUMNS) if filtered else df


def _scan_fn(scan: Callable[[str, bool], Any], target: str, filtered: bool) -> Callable[[], None]:
    return lambda: _noop(scan(target, filtered))


def _round(b: Bench, first_raw: bool) -> dict[str, float]:
    """One write of each contender, then the scans of what they wrote; ``first_raw`` flips the
    order within every pair."""
    tables: dict[str, str] = {}
    ice = b.new_table(f"b.lineitem_{b.round}")
    native = b.new_table(f"b.lineitem_native_{b.round}")

    def w_ice() -> None:
        tables["ice"] = b.write_icefloe(ice)

    def w_raw() -> None:
        tables["raw"] = b.write_raw()

    writes: list[tuple[str, Callable[[], object]]] = [
        ("write.icefloe", w_ice),
        ("write.icefloe_native", lambda: b.write_native(native)),
        ("write.raw", w_raw),
        ("write.raw_zstd", lambda: b.write_raw("zstd")),
    ]
    if first_raw:
        writes.reverse()
    measured = {k: _timed(fn, k) for k, fn in writes}
    for filtered in (False, True):
        kind = "scan_filtered" if filtered else "scan_full"
        scans: list[tuple[str, Callable[[], object]]] = [
            (f"{kind}.icefloe_source", _scan_fn(b.scan_source, tables["ice"], filtered)),
            (f"{kind}.icefloe_fast", _scan_fn(b.scan_fast, tables["ice"], filtered)),
            (f"{kind}.raw", _scan_fn(b.scan_raw, tables["raw"], filtered)),
        ]
        if first_raw:
            scans.reverse()
        measured.update({k: _timed(fn) for k, fn in scans})
    return measured


def run(scale: float, repeat: int, master: str, workdir: Path) -> dict[str, Any]:
    from icefloe.spark.session import catalog_conf, spark_session

    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    data = lineitem_path(DATA_DIR, scale)  # generated once, cached under bench/.data
    rows = pq.ParquetFile(data).metadata.num_rows
    spark = spark_session(master, "icefloe-bench", **catalog_conf(CATALOG, _catalog_properties(workdir)))
    import icefloe.spark

    icefloe.spark.register(spark)
    try:
        source = spark.read.parquet(str(data)).cache()
        source.count()
        b = Bench(spark, workdir, source, data)
        times: dict[str, list[float]] = {
            k: []
            for k in (
                "write.icefloe",
                "write.icefloe_native",
                "write.raw",
                "write.raw_zstd",
                "scan_full.icefloe_source",
                "scan_full.icefloe_fast",
                "scan_full.raw",
                "scan_filtered.icefloe_source",
                "scan_filtered.icefloe_fast",
                "scan_filtered.raw",
            )
        }
        # one untimed round warms up the JVM, the Python workers and the page cache
        for r in range(repeat + 1):
            if r == 1:
                CPU.clear()
                SPLIT.clear()
            b.round = r
            measured = _round(b, first_raw=r % 2 == 1)
            status = "warm-up" if r == 0 else f"round {r}/{repeat}"
            print(f"  {status}: " + ", ".join(f"{k}={v:.2f}s" for k, v in measured.items()), flush=True)
            if r > 0:
                for k, v in measured.items():
                    times[k].append(v)
        spark_version = spark.version
    finally:
        spark.stop()

    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = {
        "write": med["write.icefloe"] / med["write.raw"],
        "write_vs_zstd": med["write.icefloe"] / med["write.raw_zstd"],
        "write_native": med["write.icefloe_native"] / med["write.raw"],
        "write_native_vs_zstd": med["write.icefloe_native"] / med["write.raw_zstd"],
        "scan_full.source": med["scan_full.icefloe_source"] / med["scan_full.raw"],
        "scan_full.fast": med["scan_full.icefloe_fast"] / med["scan_full.raw"],
        "scan_filtered.source": med["scan_filtered.icefloe_source"] / med["scan_filtered.raw"],
        "scan_filtered.fast": med["scan_filtered.icefloe_fast"] / med["scan_filtered.raw"],
    }
    return {
        "scale": scale,
        "rows": rows,
        "repeat": repeat,
        "master": master,
        "spark": spark_version,
        "cpus": os.cpu_count(),
        "times_s": times,
        "median_s": med,
        "cpu_s": dict(CPU),
        "median_cpu_s": {k: statistics.median(v) for k, v in CPU.items() if v},
        "native_split_s": {
            "spark_jobs": [j for j, _ in SPLIT],
            "rest": [r for _, r in SPLIT],
            "median_spark_jobs": statistics.median(j for j, _ in SPLIT) if SPLIT else None,
            "median_rest": statistics.median(r for _, r in SPLIT) if SPLIT else None,
        },
        "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "ratio_icefloe_over_raw": ratios,
    }


def _report(res: dict[str, Any]) -> str:
    rows = res["rows"]
    med = res["median_s"]
    lines = [
        f"lineitem SF {res['scale']} ({rows:,} rows), Spark {res['spark']} {res['master']}, "
        f"median of {res['repeat']} alternating rounds",
        f"  {'operation':<24}{'icefloe':>10}{'raw parquet':>13}{'ratio':>8}  {'icefloe rows/s':>15}",
    ]
    pairs = [
        ("write", "write.icefloe", "write.raw"),
        ("write (raw zstd)", "write.icefloe", "write.raw_zstd"),
        ("native write", "write.icefloe_native", "write.raw"),
        ("native write (raw zstd)", "write.icefloe_native", "write.raw_zstd"),
        ("full scan (source)", "scan_full.icefloe_source", "scan_full.raw"),
        ("full scan (fast path)", "scan_full.icefloe_fast", "scan_full.raw"),
        ("filtered scan (source)", "scan_filtered.icefloe_source", "scan_filtered.raw"),
        ("filtered scan (fast)", "scan_filtered.icefloe_fast", "scan_filtered.raw"),
    ]
    for label, ice, raw in pairs:
        lines.append(
            f"  {label:<24}{med[ice]:>9.2f}s{med[raw]:>12.2f}s{med[ice] / med[raw]:>8.2f}"
            f"  {rows / med[ice]:>15,.0f}"
        )
    lines.append(
        "  (ratio = icefloe time / raw Spark Parquet time; filtered scans select one month, 3 columns)"
    )
    cpu = res.get("median_cpu_s", {})
    if cpu:
        lines.append(
            "  write CPU s (process tree): "
            + ", ".join(f"{k.split('.', 1)[1]}={v:.1f}" for k, v in sorted(cpu.items()))
        )
    split = res.get("native_split_s", {})
    if split.get("median_spark_jobs") is not None:
        lines.append(
            f"  native write split (median): Spark jobs {split['median_spark_jobs']:.2f}s, "
            f"the rest (driver, planning, commit) {split['median_rest']:.2f}s"
        )
    lines.append(f"  load average (1 min) at the end: {res.get('load_avg_1m')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.spark_io", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    p.add_argument("--scale", type=float, default=0.5, help="TPC-H scale factor (default 0.5)")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3; plus one warm-up)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--workdir", type=Path, default=Path("bench/results/spark_io-work"))
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    res = run(args.scale, args.repeat, args.master, args.workdir.resolve())
    print(_report(res))
    out = Path("bench/results") / f"spark_io-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"results: {out}")
    shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
