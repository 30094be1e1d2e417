"""The demo pipeline on Spark: ingest, queries, the late batch and time travel all go through the
icefloe Spark data source; the driver commits, executors write and read the files. Then the rest
of ``tpch.lineitem``'s life (:mod:`icefloe.cli._demo_life`): a change-data MERGE, schema and
partition changes, health, maintenance on Spark, a bad batch rolled back, time travel to a tag,
metadata tables.

    tpchgen-cli -> Parquet -> spark.read.parquet -> df.write.format("icefloe")   (ingest, late batch)
    icefloe.spark.read(...) / spark.read.format("icefloe") -> Spark SQL        (Q1, Q3, Q6)
    .option("snapshot-id", ...)                                                (time travel)
    icefloe.spark.table(...).merge(...), table.maintenance.*(spark=spark)      (the table's life)

The catalog is configured in the session (``spark.icefloe.catalog.demo.*``) and named by the
``catalog`` option; only the driver talks to it, executors get the table's FileIO properties.
"""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.cli._demo_progress import SparkProgress
from icefloe.cli.demo import (
    _LATE_FROM,
    _LATE_TO,
    CATALOG_NAME,
    _catalog_properties,
    _create_tables,
    _plain,
    _prepare_workdir,
    _print_summary,
    _q6_reference,
    _say,
    _source_dir,
    _step,
    _table_text,
    _tpchgen,
)
from icefloe.spark.session import catalog_conf, spark_session

if TYPE_CHECKING:
    from icefloe.cli._demo_life import LifeResult

__all__ = ["run_spark"]

CATALOG = CATALOG_NAME

_Q1 = """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
       sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       count(*) as count_order
from lineitem where l_shipdate <= date'1998-09-02'
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus
"""
_Q3 = """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate
from orders join lineitem on o_orderkey = l_orderkey
where o_orderdate < date'1995-03-15' and l_shipdate > date'1995-03-15'
group by l_orderkey, o_orderdate order by revenue desc, o_orderdate limit 5
"""
_Q6_WHERE = (
    "l_shipdate >= '1995-01-01' and l_shipdate < '1996-01-01' "
    "and l_discount between 0.05 and 0.07 and l_quantity < 24"
)
_Q6_SQL_WHERE = _Q6_WHERE.replace("'1995", "date'1995").replace("'1996", "date'1996")
_MONTH = f"l_shipdate >= date'{_LATE_FROM.isoformat()}' and l_shipdate < date'{_LATE_TO.isoformat()}'"
_LATE = f"{_MONTH} and l_receiptdate >= date'{_LATE_TO.isoformat()}'"
_MONTH_FILTER = f"l_shipdate >= '{_LATE_FROM.isoformat()}' and l_shipdate < '{_LATE_TO.isoformat()}'"
# Q6 plus the row counts the comparison needs, in one pass over a snapshot (the data source
# ships every column through Python, so each scan counts)
_Q6_AND_COUNTS = f"""
select sum(case when {_Q6_SQL_WHERE} then l_extendedprice * l_discount end) as revenue,
       count(*) as row_count,
       count(case when {_MONTH} then 1 end) as month_rows
from lineitem_snapshot
"""


# Errors only, on stderr: Spark's INFO/WARN lines would bury the demo's progress output.
def _q6_and_counts(spark: Any, snapshot_id: int | None = None) -> tuple[float, int, int]:
    """(Q6 revenue, rows, rows shipped in the late month) of one snapshot, via the data source."""
    _read(spark, "tpch.lineitem", snapshot_id).createOrReplaceTempView("lineitem_snapshot")
    revenue, rows, late = spark.sql(_Q6_AND_COUNTS).collect()[0]
    return float(revenue or Decimal(0)), int(rows), int(late)


def run_spark(
    workdir: Path,
    scale: float,
    fresh: bool,
    master: str = "local[2]",
    spark: Any | None = None,
    catalog: dict[str, str] | None = None,
) -> LifeResult:
    """The pipeline on Spark. With ``spark`` given (tests share one session) it is used as is,
    with the demo catalog set in its runtime conf, and left running. ``catalog`` properties
    default to the embedded SQLite catalog and local warehouse under ``workdir``; Spark's
    executors write and read the files through the FileIO those properties configure."""
    import icefloe.spark

    _prepare_workdir(workdir, fresh, catalog)
    t_start = time.perf_counter()
    src = _source_dir(workdir, scale)

    with _step(f"generating TPC-H data at scale factor {scale} (tpchgen-cli)"):
        _tpchgen(src, scale)
        orders_schema = _plain(pq.read_schema(src / "orders.parquet").empty_table()).schema
        lineitem_schema = _plain(pq.read_schema(src / "lineitem.parquet").empty_table()).schema

    props = catalog or _catalog_properties(workdir)
    cat = icefloe.load_catalog(CATALOG, **props)
    own = spark is None
    with _step(f"starting Spark ({master})" if own else "using the given Spark session"):
        if spark is None:
            spark = spark_session(master, **catalog_conf(CATALOG, props))
        else:
            for k, v in catalog_conf(CATALOG, props).items():
                spark.conf.set(k, v)
        icefloe.spark.register(spark)
        _say(f"    Spark {spark.version}, {spark.sparkContext.defaultParallelism} cores")
    try:
        lineitem_src = _pipeline(spark, cat, src, orders_schema, lineitem_schema)
        from icefloe.cli._demo_life import run_life

        life = run_life(spark, cat, lineitem_src, props)
    finally:
        if own:
            spark.stop()
    with cat:
        orders, lineitem = cat.load_table("tpch.orders"), cat.load_table("tpch.lineitem")
        _print_summary(workdir, (orders, lineitem), t_start, props)
    return life


def _write(df: Any, table: str, mode: str = "append") -> None:
    df.write.format("icefloe").option("catalog", CATALOG).mode(mode).save(table)


def _read(spark: Any, table: str, snapshot_id: int | None = None) -> Any:
    r = spark.read.format("icefloe").option("catalog", CATALOG)
    if snapshot_id is not None:
        r = r.option("snapshot-id", str(snapshot_id))
    return r.load(table)


def _fast(spark: Any, table: str, columns: list[str], where: str) -> Any:
    import icefloe.spark

    return icefloe.spark.read(spark, table, columns=columns, where=where, catalog=CATALOG)


def _pipeline(
    spark: Any, catalog: Any, src: Path, orders_schema: pa.Schema, lineitem_schema: pa.Schema
) -> Any:
    """Ingest, queries, the late batch and time travel; returns the source lineitem DataFrame."""
    step = SparkProgress(spark).step
    with _step("creating partitioned tables"):
        _create_tables(catalog, orders_schema, lineitem_schema)

    orders_src = spark.read.parquet(str(src / "orders.parquet"))
    lineitem_src = spark.read.parquet(str(src / "lineitem.parquet"))

    with step("ingesting orders and lineitem through Spark (df.write.format('icefloe'))"):
        _write(orders_src, "tpch.orders")
        # One month of shipments is held back: it arrives late, into old partitions.
        _write(lineitem_src.where(f"not ({_LATE})"), "tpch.lineitem")
        lineitem = catalog.load_table("tpch.lineitem")
        snap = lineitem.current_snapshot()
        assert snap is not None
        before_id = snap.snapshot_id
        p = snap.summary.properties
        orders_snap = catalog.load_table("tpch.orders").current_snapshot()
        orders_rows = int(orders_snap.summary.properties.get("added-records", 0)) if orders_snap else 0
        _say(
            f"    lineitem snapshot {before_id}: {p.get('added-data-files')} files, "
            f"{int(p.get('added-records', 0)):,} rows; orders: {orders_rows:,} rows"
        )

    results: list[tuple[str, str, str]] = []  # (what, before the late batch, after)

    with step("TPC-H Q1 (pricing summary), Spark SQL over the icefloe fast path"):
        _fast(
            spark,
            "tpch.lineitem",
            [
                "l_returnflag",
                "l_linestatus",
                "l_quantity",
                "l_extendedprice",
                "l_discount",
                "l_tax",
                "l_shipdate",
            ],
            "l_shipdate <= '1998-09-02'",
        ).createOrReplaceTempView("lineitem")
        q1 = spark.sql(_Q1).toArrow()
        _say(_table_text(q1))
    with step("TPC-H Q3-style join (top unshipped orders)"):
        _fast(
            spark,
            "tpch.orders",
            ["o_orderkey", "o_orderdate", "o_shippriority"],
            "o_orderdate < '1995-03-15'",
        ).createOrReplaceTempView("orders")
        _fast(
            spark,
            "tpch.lineitem",
            ["l_orderkey", "l_extendedprice", "l_discount", "l_shipdate"],
            "l_shipdate > '1995-03-15'",
        ).createOrReplaceTempView("lineitem")
        _say(_table_text(spark.sql(_Q3).toArrow()))
    with step("TPC-H Q6 (forecast revenue, 1995), through the data source"):
        revenue_before, _, _ = _q6_and_counts(spark)
        _say(f"    revenue = {revenue_before:,.2f}")

    late = lineitem_src.where(_LATE)
    late_rows = late.count()
    with step(f"late batch: {late_rows:,} {_LATE_FROM:%B %Y} shipments received after the month arrive"):
        _write(late, "tpch.lineitem")

    with step("time travel: Q6 and row counts before and after the late batch"):
        revenue_after, count_now, month_now = _q6_and_counts(spark)
        revenue_then, count_then, month_then = _q6_and_counts(spark, snapshot_id=before_id)
        files_then, files_now = _month_files(catalog.load_table("tpch.lineitem"), before_id)
        results.append(("Q6 revenue (1995)", f"{revenue_then:,.2f}", f"{revenue_after:,.2f}"))
        results.append(("lineitem rows", f"{count_then:,}", f"{count_now:,}"))
        results.append((f"rows shipped {_LATE_FROM:%b %Y}", f"{month_then:,}", f"{month_now:,}"))
        results.append((f"data files, month {_LATE_FROM:%Y-%m}", f"{files_then:,}", f"{files_now:,}"))
        if month_now - month_then != late_rows or month_then == 0:
            raise SystemExit(
                f"late batch mismatch: {month_then} rows before, {month_now} after, {late_rows} sent"
            )

        expected = _q6_reference(_plain(pq.read_table(src / "lineitem.parquet", columns=_Q6_COLUMNS)))
        if abs(revenue_after - expected) > 1e-6 * max(1.0, expected):
            raise SystemExit(f"Q6 mismatch: table says {revenue_after}, source data says {expected}")
        source_rows = pq.ParquetFile(src / "lineitem.parquet").metadata.num_rows
        if count_now != source_rows:
            raise SystemExit(f"row count mismatch: table has {count_now:,}, source data {source_rows:,}")
        if revenue_before != revenue_then:
            raise SystemExit(f"time travel mismatch: {revenue_before} before, {revenue_then} as of then")

    _say(f"\nResults (before = as of snapshot {before_id}, read with option snapshot-id)")
    _say(_table_text(pa.table({k: [r[i] for r in results] for i, k in enumerate(("", "before", "after"))})))
    _say(f"    Q6 now matches Q6 computed directly on the source Parquet: {expected:,.2f}")
    _say(f"    every source row is readable: {count_now:,} rows")
    return lineitem_src


def _month_files(lineitem: Any, before_id: int) -> tuple[int, int]:
    """Data files of the late month's partition before and after the late batch (planning only)."""
    now = lineitem.current_snapshot().snapshot_id
    then_files, now_files = (
        len(lineitem.scan(row_filter=_MONTH_FILTER, snapshot_id=sid).plan_files()) for sid in (before_id, now)
    )
    return then_files, now_files


_Q6_COLUMNS = ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"]
