"""Compaction of a table of many small files: ``table.maintenance.rewrite_data_files`` with the
local (Arrow) runner and on Spark, against raw pyarrow and Iceberg Java 1.10 on Spark 3.5.

The input: ``ICEFLOE_BENCH_COMPACTION_FILES`` (default 10,000) Parquet files of 100 rows each
(id, timestamptz, int, double, string; about 4 KB each, zstd), written once and cached under
``bench/.data/compaction-<n>``. Every timed rewrite runs on a fresh table (created outside the
clock in its own SQLite catalog) listing those files, so every round rewrites the same bytes:
10,000 files into one (Java's defaults: 512 MiB target, ``min-input-files`` 5).

Cases:

- ``local``: bin-pack and sort (``k, id``) with the Arrow runner, against raw pyarrow reading
  the same files (``pyarrow.dataset``, all cores) and writing one zstd file (``pq.write_table``),
  unsorted and sorted by ``pc.sort_indices``; reported as throughput ratios.
- ``spark``: bin-pack and sort on Spark (``local[2]``) against Iceberg Java's
  ``CALL system.rewrite_data_files`` on Spark 3.5 doing the same on its own fresh tables listing
  the same files (the oracle venv, ``bench/_java_compaction.py``: its own process and JVM, which
  takes one job at a time, so that the four contenders alternate round by round like the others).
  Both times include planning, the Spark job(s) and the commit. Target: at least as fast as Java.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench._core import Case, CaseResult, Contender, Context, Ratio, ratio_target, run_case, skipped

__all__ = ["run"]

SCENARIO = "compaction"
ROWS_PER_FILE = 100
JAVA_SORT = "k ASC NULLS FIRST, id ASC NULLS FIRST"
ICEFLOE_SORT = "k, id"
ORACLE_PYTHON = (
    Path(os.environ.get("ORACLE_VENV", os.path.expanduser("~/.cache/icefloe-oracle/venv"))) / "bin" / "python"
)


def _files_count() -> int:
    return int(os.environ.get("ICEFLOE_BENCH_COMPACTION_FILES", "10000"))


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("k", pa.int32()),
            ("v", pa.float64()),
            ("s", pa.string()),
        ]
    )


def small_files(data_dir: Path, count: int) -> list[Any]:
    """``count`` small data files (their DataFile entries), written once by icefloe's writer."""
    import numpy as np
    import pyarrow as pa

    import icefloe
    from icefloe.arrow.writer import write_data_files

    root = data_dir / f"compaction-{count}"
    ready = root / "files.pkl"
    if ready.exists():
        files: list[Any] = pickle.loads(ready.read_bytes())
        return files
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    schema = _schema()
    cat = icefloe.load_catalog(
        "bench_compaction_source",
        type="sql",
        uri=f"sqlite:///{root / 'c.db'}",
        warehouse=(root / "wh").as_uri(),
    )
    cat.create_namespace("g")
    t = cat.create_table("g.source", schema=schema)
    rng = np.random.default_rng(11)
    out = []
    for i in range(count):
        n = ROWS_PER_FILE
        data = pa.table(
            {
                "id": np.arange(i * n, (i + 1) * n, dtype=np.int64),
                "ts": pa.array(
                    1_704_067_200_000_000 + rng.integers(0, 86_400_000_000 * 365, n),
                    pa.timestamp("us", tz="UTC"),
                ),
                "k": rng.integers(0, 1000, n).astype(np.int32),
                "v": rng.random(n),
                "s": [f"str-{x:08d}" for x in rng.integers(0, 10**8, n)],
            },
            schema=schema,
        )
        out += write_data_files(t.io, t.metadata, data)
    cat.close()
    ready.write_bytes(pickle.dumps(out))
    return out


class _Tables:
    """Fresh tables listing the small files, in a scratch catalog."""

    def __init__(self, root: Path, name: str, files: list[Any]) -> None:
        import icefloe

        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.name = name
        self.catalog = icefloe.load_catalog(
            name, type="sql", uri=f"sqlite:///{root / 'c.db'}", warehouse=(root / "wh").as_uri()
        )
        self.catalog.create_namespace("b")
        self.files = files
        self.counter = itertools.count()
        self.current: Any = None

    def fresh(self) -> Any:
        t = self.catalog.create_table(f"b.t{next(self.counter)}", schema=_schema())
        with t.transaction() as tx:
            tx.append_files(self.files)
        self.current = t
        return t


def _rewrite(tables: _Tables, strategy: str, spark: Any = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"sort_order": ICEFLOE_SORT} if strategy == "sort" else {}
    r = tables.current.maintenance.rewrite_data_files(strategy, spark=spark, **kwargs)
    return {"rewritten": r.rewritten_data_files_count, "added": r.added_data_files_count}


def _raw(paths: list[str], out: Path, sort: bool) -> dict[str, Any]:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = ds.dataset(paths, format="parquet").to_table()
    if sort:
        table = table.take(pc.sort_indices(table, sort_keys=[("k", "ascending"), ("id", "ascending")]))
    pq.write_table(table, out, compression="zstd")
    return {"rows": table.num_rows}


def run(ctx: Context) -> list[CaseResult]:
    from icefloe.io.local import local_path

    count = _files_count()
    ctx.say(f"    {count} small files (cached under {ctx.data_dir}) ...")
    files = small_files(ctx.data_dir, count)
    size_mb = sum(f.file_size_in_bytes for f in files) / 1e6
    paths = [local_path(f.file_path) for f in files]
    root = ctx.work_dir / "compaction"
    local_tables = _Tables(root / "local", "bench_local", files)
    results = []
    for strategy in ("binpack", "sort"):
        case = Case(
            SCENARIO,
            f"local_{strategy}",
            f"{strategy} of {count} files ({size_mb:.0f} MB) into one, Arrow runner vs raw pyarrow "
            "read+write",
            [
                Contender(
                    "icefloe_local",
                    lambda s=strategy: _rewrite(local_tables, s),
                    setup=local_tables.fresh,
                ),
                Contender("raw_pyarrow", lambda s=strategy: _raw(paths, root / "raw.parquet", s == "sort")),
            ],
            [
                Ratio(
                    f"local {strategy}: throughput vs raw pyarrow read+write",
                    "icefloe_local",
                    "raw_pyarrow",
                    "speed",
                )
            ],
        )
        r = run_case(ctx, case)
        r.metrics["input_mb"] = size_mb
        r.metrics["icefloe_mb_per_s"] = size_mb / r.median_s["icefloe_local"]
        r.metrics["raw_mb_per_s"] = size_mb / r.median_s["raw_pyarrow"]
        results.append(r)
    results += _spark_vs_java(ctx, files, root, count, size_mb)
    return results


def _spark_session(master: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName("icefloe-bench-compaction")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _spark_vs_java(
    ctx: Context, files: list[Any], root: Path, count: int, size_mb: float
) -> list[CaseResult]:
    import importlib.util

    describe = f"of {count} files ({size_mb:.0f} MB) into one, Spark local[2]"
    if importlib.util.find_spec("pyspark") is None:
        return [skipped(SCENARIO, "spark", describe, "pyspark not installed")]
    master = str(ctx.options.get("spark_master", "local[2]"))
    tables = _Tables(root / "spark", "bench_spark", files)
    java = _JavaRewriter.start(ctx, files, root / "java")
    spark = _spark_session(master)
    try:
        contenders = [
            Contender(
                "icefloe_spark_binpack", lambda: _rewrite(tables, "binpack", spark), setup=tables.fresh
            ),
            Contender("icefloe_spark_sort", lambda: _rewrite(tables, "sort", spark), setup=tables.fresh),
        ]
        ratios = []
        if isinstance(java, _JavaRewriter):
            contenders.insert(1, Contender("iceberg_java_binpack", lambda: java.rewrite("binpack")))
            contenders.append(Contender("iceberg_java_sort", lambda: java.rewrite("sort")))
            ratios = [
                Ratio(
                    f"spark {s}: speed vs Iceberg Java 1.10 on Spark 3.5",
                    f"icefloe_spark_{s}",
                    f"iceberg_java_{s}",
                    "speed",
                    ">=",
                    1.0,
                )
                for s in ("binpack", "sort")
            ]
        case = Case(
            SCENARIO,
            "spark",
            f"bin-pack and sort {describe}; Iceberg Java's CALL rewrite_data_files alternating, in its own "
            "process (oracle venv)",
            contenders,
            ratios,
        )
        result = run_case(ctx, case)
        # this process's CPU time says nothing about a rewrite done in another process's JVM
        for entry in result.ratios:
            entry.pop("cpu_value", None)
        for side in ("iceberg_java_binpack", "iceberg_java_sort"):
            result.cpu_s.pop(side, None)
            result.median_cpu_s.pop(side, None)
    finally:
        spark.stop()
        if isinstance(java, _JavaRewriter):
            java.stop()
    if isinstance(java, str):
        result.metrics["iceberg_java"] = java
    return [result]


class _JavaRewriter:
    """Iceberg Java's rewrites on request (``bench/_java_compaction.py`` in the oracle venv), on
    tables created here before its JVM starts (its JdbcCatalog reads icefloe's SQLite catalog)."""

    def __init__(self, proc: subprocess.Popen[str], tables: dict[str, list[str]]) -> None:
        self.proc = proc
        self.tables = tables

    @classmethod
    def start(cls, ctx: Context, files: list[Any], root: Path) -> _JavaRewriter | str:
        if not ORACLE_PYTHON.exists():
            return f"oracle venv not found at {ORACLE_PYTHON}"
        made = _Tables(root, "bench_java", files)
        rounds = ctx.warmup + ctx.repeat
        tables = {s: [f"b.{made.fresh().identifier[-1]}" for _ in range(rounds)] for s in ("binpack", "sort")}
        warm = f"b.{made.fresh().identifier[-1]}"
        made.catalog.close()
        script = Path(__file__).resolve().parent.parent / "_java_compaction.py"
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["TZ"] = "UTC"
        proc = subprocess.Popen(
            [str(ORACLE_PYTHON), str(script), str(root / "c.db"), "bench_java", str(root / "wh"), warm],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.strip().startswith("{"):
            proc.kill()
            return "Iceberg Java did not start (see bench/_java_compaction.py)"
        return cls(proc, tables)

    def rewrite(self, strategy: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        job = {"table": self.tables[strategy].pop(0), "strategy": strategy}
        if strategy == "sort":
            job["sort_order"] = JAVA_SORT
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        res = answer["result"]
        return {
            "rewritten": res["rewritten_data_files_count"],
            "added": res["added_data_files_count"],
            "in_jvm_s": answer["seconds"],
        }

    def stop(self) -> int:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
            return self.proc.wait(timeout=120)
        except Exception:
            self.proc.kill()
            return -1


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    ratio_target(
        f"compaction.spark.{s}-vs-java",
        "spark",
        f"spark {s}: speed vs Iceberg Java 1.10 on Spark 3.5",
        f"{text} compaction on Spark vs Iceberg Java 1.10 rewriteDataFiles",
        ">=",
        1.0,
    )
    for s, text in (("binpack", "bin-pack"), ("sort", "sort"))
] + [
    ratio_target(
        f"compaction.local_{s}.vs-raw",
        f"local_{s}",
        f"local {s}: throughput vs raw pyarrow read+write",
        f"local {text} compaction vs raw pyarrow read{extra} + write",
    )
    for s, text, extra in (("binpack", "bin-pack", ""), ("sort", "sort", " + sort"))
]
