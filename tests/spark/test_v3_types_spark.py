"""Spark reads format v3 tables with nanosecond timestamps, column defaults and ``unknown``
columns through the icefloe data source. Spark has only microsecond timestamps, so
``timestamp_ns`` reads as ``TimestampNTZType`` and ``timestamptz_ns`` as ``TimestampType``,
truncated to the microsecond (toward the earlier instant, as Iceberg Java's Spark 4 reader does)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

NS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("ns")),
        pa.field("tz", pa.timestamp("ns", "UTC")),
    ]
)
BASE = 1_700_000_000_123_456_789  # 2023-11-14T22:13:20.123456789
EPOCH = dt.datetime(1970, 1, 1)


def _micros_floor(nanos: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=nanos // 1000)


def test_spark_reads_nanosecond_columns_as_microseconds(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(
        table_name, schema=NS_SCHEMA, partition_by=["day(ts)"], properties={"format-version": "3"}
    )
    values = [BASE, -1, 999, None]
    t.append(
        pa.table(
            {
                "id": pa.array([0, 1, 2, 3], pa.int64()),
                "ts": pa.array(values, pa.timestamp("ns")),
                "tz": pa.array(values, pa.timestamp("ns", "UTC")),
            }
        )
    )
    df = spark.read.format("icefloe").load(table_name)
    assert isinstance(df.schema["ts"].dataType, T.TimestampNTZType)
    assert isinstance(df.schema["tz"].dataType, T.TimestampType)
    rows = {r["id"]: r for r in df.collect()}
    for i, v in enumerate(values):
        want = None if v is None else _micros_floor(v)
        assert rows[i]["ts"] == want, (i, v)
        got_tz = rows[i]["tz"]
        assert (None if got_tz is None else got_tz.replace(tzinfo=None)) == want, (i, v)
    since = dt.datetime(2023, 11, 14)
    assert sorted(r["id"] for r in df.filter(F.col("ts") >= F.lit(since)).collect()) == [0]


def test_spark_reads_defaults_and_unknown(spark: Any, spark_catalog: Any, table_name: str) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("u", pa.null())])
    t = spark_catalog.create_table(table_name, schema=schema, properties={"format-version": "3"})
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    with t.update_schema() as u:
        u.add_column("region", "string", required=True, default="EU")
        u.add_column("day", "date", default=dt.date(2024, 2, 29))
    t.append(pa.table({"id": pa.array([3], pa.int64()), "region": ["US"]}))
    df = spark.read.format("icefloe").load(table_name)
    assert isinstance(df.schema["u"].dataType, T.NullType)
    rows = sorted((r["id"], r["u"], r["region"], r["day"]) for r in df.collect())
    assert rows == [
        (1, None, "EU", dt.date(2024, 2, 29)),
        (2, None, "EU", dt.date(2024, 2, 29)),
        (3, None, "US", dt.date(2024, 2, 29)),
    ]
    assert [r["id"] for r in df.filter("region = 'EU'").orderBy("id").collect()] == [1, 2]


def test_spark_writes_v3_tables_and_refuses_dml_that_would_drop_nanoseconds(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """The data source appends to a v3 table (microseconds widen into the ns columns, row ids are
    assigned at commit, write defaults fill absent columns); Spark DML on a table with ns columns
    is refused before anything is written, because rewriting rows through Spark would drop
    their nanoseconds."""
    import pytest

    import icefloe

    t = spark_catalog.create_table(table_name, schema=NS_SCHEMA, properties={"format-version": "3"})
    t.append(
        pa.table(
            {
                "id": pa.array([0], pa.int64()),
                "ts": pa.array([BASE], pa.timestamp("ns")),
                "tz": pa.array([BASE], pa.timestamp("ns", "UTC")),
            }
        )
    )
    with t.update_schema() as u:
        u.add_column("region", "string", default="EU")
    src = spark.createDataFrame(
        [(1, dt.datetime(2024, 1, 2, 3, 4, 5, 6))],
        "id long, ts timestamp_ntz",
    )
    src.write.format("icefloe").mode("append").save(table_name)
    t = spark_catalog.load_table(table_name)
    got = t.scan(selected_fields=("id", "ts", "tz", "region", "_row_id")).to_arrow().sort_by("id")
    assert got.column("ts").to_pylist()[0].value == BASE  # nanoseconds kept
    assert got.column("ts").to_pylist()[1].value == int(
        (dt.datetime(2024, 1, 2, 3, 4, 5, 6) - EPOCH) / dt.timedelta(microseconds=1)
    ) * 1000
    assert got.column("tz").to_pylist()[1] is None
    # the old row reads the initial default, the Spark row got the write default
    assert got.column("region").to_pylist() == ["EU", "EU"]
    assert got.column("_row_id").to_pylist() == [0, 1]
    before = t.current_snapshot().snapshot_id
    with pytest.raises(icefloe.UnsupportedFeatureError, match="nanosecond"):
        icefloe.spark.table(spark, table_name).delete("id = 0")
    assert spark_catalog.load_table(table_name).current_snapshot().snapshot_id == before
