"""Row-level changes on Spark: MERGE of a source (half updates, half inserts) into TPC-H
``lineitem``, and DELETE of 1%, with ``icefloe.spark.table(...)`` in both write modes, against
Iceberg Java 1.10's ``MERGE INTO`` on Spark 3.5 and PyIceberg 0.12's ``upsert`` of the same data.

The source has ``rows / 6`` rows (1M at SF 1): every 12th lineitem row with a new quantity and
comment (updates, spread over every data file), and as many rows under new order keys (inserts);
it is written once as Parquet, and every contender reads it from there inside its timed call.
Each timed statement runs on a fresh table (created outside the clock in a scratch SQLite catalog)
listing the cached ``b.lineitem`` data files (21 files at SF 1), so every round starts from the
same files; Iceberg Java's tables are made the same way in the same catalog before its JVM starts
(its JdbcCatalog reads icefloe's catalog tables) and it runs one statement per request in its own
process (``bench/_java_merge.py``), alternating with icefloe round by round. Both Spark sessions
are ``local[2]`` with a 2 GB driver and 4 shuffle partitions. Times include planning, the Spark
jobs and the commit. PyIceberg's ``upsert`` (Arrow, single process) runs with a
time limit (``ICEFLOE_BENCH_UPSERT_TIMEOUT``, default 600 s) as a reference: once, not timed
against the others (it ignores the write modes).

Targets: MERGE <= 60 s in both modes at SF 1 and at least as fast as Iceberg Java; the
merge-on-read DELETE of 1% >= 10x faster than the copy-on-write one.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._core import (
    Case,
    CaseResult,
    Contender,
    Context,
    Ratio,
    check_target,
    metric_target,
    ratio_target,
    run_case,
    skipped,
)
from bench.data import lineitem, lineitem_table

__all__ = ["run"]

SCENARIO = "merge"
CATALOG = "bench_merge"
KEYS = ("l_orderkey", "l_linenumber")
ON = "t.l_orderkey = s.l_orderkey AND t.l_linenumber = s.l_linenumber"
MODES = ("merge-on-read", "copy-on-write")
ORACLE_PYTHON = (
    Path(os.environ.get("ORACLE_VENV", os.path.expanduser("~/.cache/icefloe-oracle/venv"))) / "bin" / "python"
)
MERGE_LIMIT_S = 60.0


def _source(ctx: Context, root: Path) -> tuple[Path, int]:
    """The MERGE source as Parquet: updates of every 12th row, and as many new rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    data = lineitem(ctx.data_dir, ctx.scale)
    n = data.num_rows
    updates = data.take(pa.array(range(0, n, 12)))
    updates = updates.set_column(
        updates.schema.get_field_index("l_quantity"),
        "l_quantity",
        pc.add(updates.column("l_quantity"), pa.scalar(1, updates.schema.field("l_quantity").type)),
    )
    updates = updates.set_column(
        updates.schema.get_field_index("l_comment"), "l_comment", pa.array(["merged"] * updates.num_rows)
    )
    offset = int(pc.max(data.column("l_orderkey")).as_py()) + 1
    inserts = data.take(pa.array(range(6, n, 12)))
    inserts = inserts.set_column(
        inserts.schema.get_field_index("l_orderkey"),
        "l_orderkey",
        pc.add(inserts.column("l_orderkey"), pa.scalar(offset, inserts.schema.field("l_orderkey").type)),
    )
    source = pa.concat_tables([updates.cast(data.schema), inserts.cast(data.schema)])
    path = root / "source"
    path.mkdir(parents=True)
    pq.write_table(source, path / "part-0.parquet", row_group_size=256 * 1024)
    return path, source.num_rows


class _Tables:
    """Fresh tables listing the cached lineitem files, in the scratch catalog."""

    def __init__(self, root: Path, base: Any) -> None:
        import icefloe

        self.catalog = icefloe.load_catalog(
            CATALOG, type="sql", uri=f"sqlite:///{root / 'c.db'}", warehouse=(root / "wh").as_uri()
        )
        self.catalog.create_namespace("b")
        self.schema = base.schema()
        self.properties = dict(base.properties)
        self.files = [t.file for t in base.scan().plan_files()]
        self.counter = itertools.count()
        self.current: dict[str, str] = {}

    def fresh(self, mode: str, key: str | None = None) -> str:
        name = f"b.t{next(self.counter)}"
        props = {**self.properties, **{f"write.{c}.mode": mode for c in ("merge", "delete", "update")}}
        t = self.catalog.create_table(name, schema=self.schema, properties=props)
        with t.transaction() as tx:
            tx.append_files(self.files)
        self.current[key or mode] = name
        return name


def _fresh(tables: _Tables, mode: str, key: str | None = None) -> None:
    tables.fresh(mode, key)


def _spark_session() -> Any:
    from icefloe.spark.session import spark_session

    return spark_session(
        "local[2]",
        "icefloe-bench-merge",
        **{
            "spark.driver.memory": "2g",
            "spark.sql.shuffle.partitions": "4",
            "spark.python.worker.reuse": "true",
        },
    )


def _merge_icefloe(spark: Any, tables: _Tables, mode: str, source: Path) -> dict[str, Any]:
    import icefloe.spark

    t = icefloe.spark.table(spark, tables.current[mode], catalog=CATALOG, catalog_properties=_props(tables))
    src = spark.read.parquet(str(source))
    r = (
        t.alias("t")
        .merge(src.alias("s"), ON)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    return {
        "updated": r.rows_updated,
        "inserted": r.rows_inserted,
        "data_files_added": r.data_files_added,
        "delete_files_added": r.delete_files_added,
        "data_files_removed": r.data_files_removed,
    }


def _delete_icefloe(spark: Any, tables: _Tables, mode: str, where: str) -> dict[str, Any]:
    import icefloe.spark

    name = tables.current["delete-" + mode]
    r = icefloe.spark.table(spark, name, catalog=CATALOG, catalog_properties=_props(tables)).delete(where)
    return {"deleted": r.rows_deleted, "files_added": r.files_added, "files_removed": r.files_removed}


def _props(tables: _Tables) -> dict[str, str]:
    return {
        "uri": str(tables.catalog.properties["uri"]),
        "warehouse": str(tables.catalog.properties["warehouse"]),
    }


def run(ctx: Context) -> list[CaseResult]:
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        return [skipped(SCENARIO, "merge", "MERGE on Spark", "pyspark not installed")]
    base = lineitem_table(ctx.data_dir, ctx.scale)
    root = ctx.work_dir / "merge"
    root.mkdir(parents=True)
    ctx.say("    source (half updates, half inserts) ...")
    source, source_rows = _source(ctx, root)
    tables = _Tables(root, base)
    rows = sum(f.record_count for f in tables.files)
    java = _JavaSql.start(ctx, tables, root, source)
    spark = _spark_session()
    results: list[CaseResult] = []
    try:
        results.append(_merge_case(ctx, spark, tables, java, source, source_rows, rows))
        results.append(_delete_case(ctx, spark, tables))
    finally:
        spark.stop()
        if isinstance(java, _JavaSql):
            java.stop()
    results.append(_pyiceberg_case(ctx, tables, source, source_rows))
    tables.catalog.close()
    return results


def _merge_case(
    ctx: Context, spark: Any, tables: _Tables, java: Any, source: Path, source_rows: int, rows: int
) -> CaseResult:
    contenders = []
    ratios = []
    for mode in MODES:
        short = "mor" if mode == "merge-on-read" else "cow"
        contenders.append(
            Contender(
                f"icefloe_{short}",
                lambda m=mode: _merge_icefloe(spark, tables, m, source),
                setup=lambda m=mode: _fresh(tables, m),
            )
        )
        if isinstance(java, _JavaSql):
            contenders.append(Contender(f"iceberg_java_{short}", lambda m=mode: java.merge(m)))
            ratios.append(
                Ratio(
                    f"MERGE {short.upper()}: speed vs Iceberg Java 1.10 on Spark 3.5",
                    f"icefloe_{short}",
                    f"iceberg_java_{short}",
                    "speed",
                    ">=",
                    1.0,
                )
            )

    case = Case(
        SCENARIO,
        "merge",
        f"MERGE {source_rows:,} source rows (half updates, half inserts) into lineitem "
        f"({len(tables.files)} files), Spark local[2], both write modes",
        contenders,
        ratios,
    )
    result = run_case(ctx, case)
    for short in ("mor", "cow"):
        median = result.median_s.get(f"icefloe_{short}")
        if median is not None:
            result.checks.append(
                {
                    "label": f"MERGE {short.upper()} <= {MERGE_LIMIT_S:.0f} s",
                    "met": median <= MERGE_LIMIT_S,
                    "detail": f"{median:.1f} s",
                }
            )
    for side in list(result.cpu_s):
        if side.startswith("iceberg_java"):
            result.cpu_s.pop(side, None)
            result.median_cpu_s.pop(side, None)
    for entry in result.ratios:
        entry.pop("cpu_value", None)
    if isinstance(java, str):
        result.metrics["iceberg_java"] = java
    result.metrics["source_rows"] = source_rows
    result.metrics["table_rows"] = rows
    return result


def _delete_case(ctx: Context, spark: Any, tables: _Tables) -> CaseResult:
    partkeys = max(1, int(200_000 * ctx.scale))
    where = f"l_partkey < {max(2, partkeys // 100 + 1)}"
    contenders = [
        Contender(
            f"icefloe_{short}",
            lambda m=mode: _delete_icefloe(spark, tables, m, where),
            setup=lambda m=mode: _fresh(tables, m, "delete-" + m),
        )
        for mode, short in (("merge-on-read", "mor"), ("copy-on-write", "cow"))
    ]
    case = Case(
        SCENARIO,
        "delete",
        f"DELETE {where!r} (~1%, in every file) on Spark: merge-on-read vs copy-on-write",
        contenders,
        [Ratio("Spark DELETE 1%: MOR speed vs COW", "icefloe_mor", "icefloe_cow", "speed", ">=", 10.0)],
    )
    return run_case(ctx, case)


# --------------------------------------------------------------------------- Iceberg Java


class _JavaSql:
    """Iceberg Java's MERGE INTO on request (``bench/_java_merge.py`` in the oracle venv), on tables
    created here before its JVM starts (its JdbcCatalog reads the same SQLite catalog)."""

    def __init__(self, proc: subprocess.Popen[str], tables: dict[str, list[str]], source: Path) -> None:
        self.proc = proc
        self.tables = tables
        self.source = source

    @classmethod
    def start(cls, ctx: Context, tables: _Tables, root: Path, source: Path) -> _JavaSql | str:
        if not ORACLE_PYTHON.exists():
            return f"oracle venv not found at {ORACLE_PYTHON}"
        rounds = ctx.warmup + ctx.repeat
        made = {mode: [tables.fresh(mode, "java") for _ in range(rounds)] for mode in MODES}
        warm = tables.fresh("merge-on-read", "java")
        script = Path(__file__).resolve().parent.parent / "_java_merge.py"
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["TZ"] = "UTC"
        proc = subprocess.Popen(
            [str(ORACLE_PYTHON), str(script), str(root / "c.db"), CATALOG, str(root / "wh"), warm],
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
            return "Iceberg Java did not start (see bench/_java_merge.py)"
        return cls(proc, made, source)

    def merge(self, mode: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        table = self.tables[mode].pop(0)
        sql = (
            f"MERGE INTO {CATALOG}.{table} t USING (SELECT * FROM parquet.`{self.source}`) s ON {ON} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        self.proc.stdin.write(json.dumps({"sql": sql, "table": table}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        summary = answer["summary"]
        return {
            "in_jvm_s": answer["seconds"],
            "added_records": summary.get("added-records"),
            "added_delete_files": summary.get("added-delete-files", "0"),
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


# --------------------------------------------------------------------------- PyIceberg


_UPSERT = """
import sys, time
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
name, uri, warehouse, table, source = sys.argv[1:6]
cat = SqlCatalog(name, uri=uri, warehouse=warehouse)
t = cat.load_table(table)
data = pq.read_table(source).cast(t.schema().as_arrow())
t0 = time.perf_counter()
r = t.upsert(data, join_cols=["l_orderkey", "l_linenumber"])
print(time.perf_counter() - t0, r.rows_updated, r.rows_inserted)
"""


def _pyiceberg_case(ctx: Context, tables: _Tables, source: Path, source_rows: int) -> CaseResult:
    import importlib.util

    describe = f"PyIceberg 0.12 Table.upsert of the same {source_rows:,} rows (Arrow, one process), reference"
    if importlib.util.find_spec("pyiceberg") is None:
        return skipped(SCENARIO, "pyiceberg_upsert", describe, "pyiceberg not installed")
    limit = float(os.environ.get("ICEFLOE_BENCH_UPSERT_TIMEOUT", "600"))
    result = CaseResult(SCENARIO, "pyiceberg_upsert", describe)
    name = tables.fresh("copy-on-write", "pyiceberg")
    uri = str(tables.catalog.properties["uri"])
    warehouse = str(tables.catalog.properties["warehouse"])
    ctx.say(f"    PyIceberg upsert, limit {limit:.0f} s ...")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _UPSERT, CATALOG, uri, warehouse, name, str(source / "part-0.parquet")],
            capture_output=True,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        result.metrics["pyiceberg"] = f"did not finish in {limit:.0f} s"
        ctx.say(f"    PyIceberg upsert: did not finish in {limit:.0f} s")
        return result
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        result.metrics["pyiceberg"] = f"failed (exit status {proc.returncode}): {last}"
        return result
    seconds, updated, inserted = proc.stdout.split()[-3:]
    result.times_s["pyiceberg"] = [float(seconds)]
    result.median_s["pyiceberg"] = statistics.median([float(seconds)])
    result.metrics["pyiceberg"] = {"updated": int(updated), "inserted": int(inserted), "process_s": elapsed}
    ctx.say(f"    PyIceberg upsert: {float(seconds):.1f} s")
    return result


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = (
    [
        ratio_target(
            f"merge.merge.{short}-vs-java",
            "merge",
            f"MERGE {short.upper()}: speed vs Iceberg Java 1.10 on Spark 3.5",
            f"Spark MERGE into lineitem, {mode}, vs Iceberg Java 1.10",
            ">=",
            1.0,
        )
        for short, mode in (("mor", "merge-on-read"), ("cow", "copy-on-write"))
    ]
    + [
        check_target(
            f"merge.merge.{short}-within-limit",
            "merge",
            f"MERGE {short.upper()} <= {MERGE_LIMIT_S:.0f} s",
            f"the {mode} MERGE takes <= {MERGE_LIMIT_S:.0f} s (the target is at SF 1)",
        )
        for short, mode in (("mor", "merge-on-read"), ("cow", "copy-on-write"))
    ]
    + [
        ratio_target(
            "merge.delete.mor-vs-cow",
            "delete",
            "Spark DELETE 1%: MOR speed vs COW",
            "Spark DELETE of 1% (in every file): merge-on-read vs copy-on-write",
            ">=",
            10.0,
        ),
        metric_target(
            "merge.pyiceberg_upsert.reference",
            "pyiceberg_upsert",
            "pyiceberg",
            "PyIceberg 0.12 upsert of the same source, time-boxed reference",
        ),
    ]
)
