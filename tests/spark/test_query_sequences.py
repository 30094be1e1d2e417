"""Several differently filtered, unfiltered and aggregated queries on ONE DataFrame.

Regression for a wrong-answer bug: PySpark keeps the read plan that filter pushdown produced on
the data source object shared by every query of a DataFrame, so filters pushed by one query
leaked into the next (``df.count()`` after ``df.filter(...).count()`` returned the filtered
count; both sides of a self-join read with one side's filter). Each query below is checked
against icefloe's Arrow scan of the same snapshot.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

import icefloe.spark

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("x", pa.float64())])
N = 300


def _rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table(
        {"id": ids, "cat": ["abcd"[i % 4] for i in ids], "x": [i / 7 for i in ids]}, schema=SCHEMA
    )


def _make_table(catalog: Any, name: str, *, with_deletes: bool) -> Any:
    props = {"write.delete.mode": "merge-on-read"} if with_deletes else {}
    t = catalog.create_table(name, SCHEMA, partition_by=["cat"], properties=props)
    for lo in range(0, N, 100):  # several files per partition, so pruning has files to skip
        t.append(_rows(lo, lo + 100))
    if with_deletes:
        t.delete("id in (7, 57, 107, 157, 207, 257)")
    return catalog.load_table(name)


def _expected_ids(table: Any, where: str | None = None) -> list[int]:
    scan = table.scan(row_filter=where) if where else table.scan()
    return sorted(scan.to_arrow().column("id").to_pylist())


def _sequence(df: Any, table: Any) -> None:
    """The query sequence from the bug report, and then some, on one DataFrame."""
    all_ids = _expected_ids(table)
    assert df.count() == len(all_ids)
    assert df.filter("id >= 150 and id < 160").count() == len(_expected_ids(table, "id >= 150 and id < 160"))
    assert df.count() == len(all_ids)  # the bug answered 10 here
    assert df.agg(F.sum("id")).collect()[0][0] == sum(all_ids)
    assert df.filter("cat = 'b'").count() == len(_expected_ids(table, "cat = 'b'"))
    assert sorted(r.id for r in df.collect()) == all_ids
    a = df.filter("id < 40").alias("a")
    b = df.filter("id >= 20 and cat = 'a'").alias("b")
    joined = a.join(b, F.col("a.id") == F.col("b.id"))
    expected_join = set(_expected_ids(table, "id < 40")) & set(_expected_ids(table, "id >= 20 and cat = 'a'"))
    assert joined.count() == len(expected_join)
    assert df.filter("id > 290").count() == len(_expected_ids(table, "id > 290"))
    assert df.groupBy("cat").count().count() == 4
    assert len(df.limit(5).collect()) == 5
    assert df.count() == len(all_ids)


@pytest.mark.parametrize("with_deletes", [False, True], ids=["plain", "mor-deletes"])
def test_query_sequence_on_one_data_source_dataframe(
    spark: Any, spark_catalog: Any, table_name: str, with_deletes: bool
) -> None:
    table = _make_table(spark_catalog, table_name, with_deletes=with_deletes)
    _sequence(spark.read.format("icefloe").load(table_name), table)


@pytest.mark.parametrize("with_deletes", [False, True], ids=["parquet-path", "source-fallback"])
def test_query_sequence_on_one_fast_path_dataframe(
    spark: Any, spark_catalog: Any, table_name: str, with_deletes: bool
) -> None:
    # without deletes the fast path reads with Spark's Parquet reader; with delete files it falls
    # back to the data source, which then prunes by its "filter" option
    table = _make_table(spark_catalog, table_name, with_deletes=with_deletes)
    _sequence(icefloe.spark.read(spark, table_name), table)
    where = "id >= 100 and cat in ('a', 'c')"
    df = icefloe.spark.read(spark, table_name, where=where)
    expected = _expected_ids(table, where)
    assert sorted(r.id for r in df.collect()) == expected
    assert df.count() == len(expected)
    assert df.filter("id < 200").count() == len([i for i in expected if i < 200])
    assert df.count() == len(expected)


def test_random_query_sequences(spark: Any, spark_catalog: Any, table_name: str) -> None:
    """Seeded random sequences of filters and aggregates on one DataFrame per path."""
    table = _make_table(spark_catalog, table_name, with_deletes=True)
    arrow = table.scan().to_arrow()
    rng = random.Random(20261124)
    frames = {
        "source": spark.read.format("icefloe").load(table_name),
        "fast": icefloe.spark.read(spark, table_name),
    }
    for step in range(12):
        kind = rng.choice(["none", "range", "cat", "or"])
        lo = rng.randrange(0, N)
        hi = lo + rng.randrange(1, 80)
        cat = rng.choice("abcd")
        where = {
            "none": None,
            "range": f"id >= {lo} and id < {hi}",
            "cat": f"cat = '{cat}'",
            "or": f"id < {lo // 3} or cat = '{cat}'",
        }[kind]
        mask = {
            "none": None,
            "range": pc.and_(pc.greater_equal(arrow["id"], lo), pc.less(arrow["id"], hi)),
            "cat": pc.equal(arrow["cat"], cat),
            "or": pc.or_(pc.less(arrow["id"], lo // 3), pc.equal(arrow["cat"], cat)),
        }[kind]
        want = arrow if mask is None else arrow.filter(mask)
        for path, df in frames.items():
            q = df if where is None else df.filter(where)
            context = f"step {step} ({path}, where={where!r})"
            assert q.count() == want.num_rows, context
            got_sum = q.agg(F.sum("id")).collect()[0][0]
            assert (got_sum or 0) == (pc.sum(want["id"]).as_py() or 0), context
