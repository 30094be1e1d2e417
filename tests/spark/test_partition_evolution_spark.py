"""Spark writes after partition evolution: the executors write with the table's new default spec,
a dynamic overwrite replaces partitions of that spec only (Iceberg Java's ReplacePartitions), and
filtered reads see the files of every spec."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from icefloe.spark.types import to_spark_schema

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("cat", pa.string())])


def _rows(ids: list[int], cat: str = "a") -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": ids,
            "ts": pa.array([base + dt.timedelta(hours=i % 100) for i in ids], pa.timestamp("us", tz="UTC")),
            "cat": [cat] * len(ids),
        }
    )


def test_spark_writes_use_the_new_spec_and_overwrite_its_partitions(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["day(ts)"])

    def write(data: pa.Table, mode: str = "append") -> None:
        w = spark.createDataFrame(data, schema=to_spark_schema(t.schema())).write.format("icefloe")
        if mode == "dynamic":
            w = w.mode("overwrite").option("partition-overwrite-mode", "dynamic")
        else:
            w = w.mode("append")
        w.save(table_name)
        t.refresh()

    write(_rows([1, 2, 3]))
    with t.update_spec() as u:
        u.remove_field("ts_day").add_field("hour(ts)").add_identity("cat")
    write(pa.concat_tables([_rows([4, 5]), _rows([6], "b")]))
    by_spec = {}
    for task in t.scan().plan_files():
        by_spec.setdefault(task.file.spec_id, []).append(task.file)
    assert sorted(by_spec) == [0, 1]
    assert all("/ts_hour=" in f.file_path and "/cat=" in f.file_path for f in by_spec[1])
    # 104 and 105 fall in the (hour, cat) partitions of 4 and 5 under spec 1: those go; rows 1..3 are
    # in the same day and cat, but under spec 0: they stay
    write(_rows([104, 105]), mode="dynamic")
    ids = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert ids == [1, 2, 3, 6, 104, 105]
    got = spark.read.format("icefloe").load(table_name).where("cat = 'a' and id < 100").select("id").collect()
    assert sorted(r["id"] for r in got) == [1, 2, 3]
