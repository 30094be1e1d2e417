"""Writing through the data source: partitioning by every transform, rolling files, overwrite
modes, schema checks before any file is written, and cleanup when a job fails."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from icefloe.spark.types import to_spark_schema

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("cat", pa.string()),
        ("ts1", pa.timestamp("us", tz="UTC")),
        ("ts2", pa.timestamp("us")),
        ("d1", pa.date32()),
        ("d2", pa.date32()),
        ("x", pa.int32()),
    ]
)
ALL_TRANSFORMS = [
    "bucket(4, id)",
    "truncate(2, s)",
    "cat",
    "hour(ts1)",
    "day(ts2)",
    "month(d1)",
    "year(d2)",
    "void(x)",
]


def _data(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "s": [f"s{i % 7}x" if i % 11 else None for i in ids],
            "cat": [["a", "b", "c"][i % 3] for i in ids],
            "ts1": pa.array(
                [dt.datetime(2024, 1, 1, i % 5, tzinfo=dt.UTC) for i in ids], pa.timestamp("us", tz="UTC")
            ),
            "ts2": pa.array(
                [dt.datetime(2023, 12, 30 + i % 3) if i % 3 < 2 else dt.datetime(2024, 1, 1) for i in ids],
                pa.timestamp("us"),
            ),
            "d1": pa.array([dt.date(2024, 1 + i % 4, 1) for i in ids], pa.date32()),
            "d2": pa.array([dt.date(2020 + i % 2, 6, 1) for i in ids], pa.date32()),
            "x": pa.array([i for i in ids], pa.int32()),
        }
    )


def _df(spark: Any, table: Any, data: pa.Table) -> Any:
    return spark.createDataFrame(data, schema=to_spark_schema(table.schema()))


def _data_files(table: Any) -> list[Path]:
    root = Path(urlparse(table.location).path) / "data"
    return sorted(root.rglob("*.parquet")) if root.exists() else []


def test_partitioned_write_every_transform_matches_arrow_write(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    spark_t = spark_catalog.create_table(table_name, SCHEMA, partition_by=ALL_TRANSFORMS)
    arrow_t = spark_catalog.create_table(table_name + "_arrow", SCHEMA, partition_by=ALL_TRANSFORMS)
    data = _data(300)
    _df(spark, spark_t, data).repartition(2).write.format("icefloe").mode("append").save(table_name)
    arrow_t.append(data)
    spark_t.refresh()
    assert len(spark_t.snapshots()) == 1  # one commit for the whole job

    def partitions(t: Any) -> dict[tuple[Any, ...], int]:
        out: dict[tuple[Any, ...], int] = {}
        for task in t.scan().plan_files():
            out[task.file.partition] = out.get(task.file.partition, 0) + task.file.record_count
        return out

    assert partitions(spark_t) == partitions(arrow_t)
    assert spark_t.scan().to_arrow().sort_by("id").equals(data)
    some = spark_t.scan().plan_files()[0].file
    assert some.lower_bounds and some.upper_bounds and some.value_counts and some.null_value_counts
    assert "/cat=" in some.file_path and "id_bucket=" in some.file_path


def test_rolling_at_target_file_size(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA)
    _df(spark, t, _data(25_000)).coalesce(1).write.format("icefloe").option(
        "target-file-size-bytes", "1"
    ).mode("append").save(table_name)
    t.refresh()
    files = [task.file for task in t.scan().plan_files()]
    assert len(files) >= 3  # Spark hands over 10,000-row batches; each one closes a file
    assert sum(f.record_count for f in files) == 25_000


def test_overwrite_modes(spark: Any, spark_catalog: Any, table_name: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    t = spark_catalog.create_table(table_name, schema, partition_by=["day(ts)"])

    def rows(ids: list[int], day: int) -> pa.Table:
        return pa.table(
            {
                "id": ids,
                "ts": pa.array(
                    [dt.datetime(2024, 1, day, 5, tzinfo=dt.UTC)] * len(ids), pa.timestamp("us", tz="UTC")
                ),
            }
        )

    t.append(pa.concat_tables([rows([1, 2], 1), rows([3, 4], 2), rows([5, 6], 3)]))

    def ids() -> list[int]:
        t.refresh()
        return sorted(t.scan().to_arrow().column("id").to_pylist())

    writer = lambda data: _df(spark, t, data).write.format("icefloe")  # noqa: E731
    # dynamic: replaces exactly the days the data touches (a non-identity transform)
    writer(rows([30, 31], 2)).mode("overwrite").option("partition-overwrite-mode", "dynamic").save(table_name)
    assert ids() == [1, 2, 5, 6, 30, 31]
    # by filter: rows matching the filter go, the new rows come
    writer(rows([10], 1)).mode("overwrite").option("overwrite-filter", "id >= 5").save(table_name)
    assert ids() == [1, 2, 10]
    # full overwrite
    writer(rows([100], 4)).mode("overwrite").save(table_name)
    assert ids() == [100]
    ops = [s.summary.operation.value for s in t.snapshots()]
    assert ops[0] == "append" and all(op in ("overwrite", "replace", "delete") for op in ops[1:])


def test_schema_mismatch_fails_before_any_file_is_written(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64()), ("name", pa.string())]))
    extra = spark.createDataFrame([(1, "a", 2.0)], "id long, name string, score double")
    with pytest.raises(Exception, match="score"):
        extra.write.format("icefloe").mode("append").save(table_name)
    wrong_type = spark.createDataFrame([("1", "a")], "id string, name string")
    with pytest.raises(Exception, match="'id'"):
        wrong_type.write.format("icefloe").mode("append").save(table_name)
    bad_filter = spark.createDataFrame([(1, "a")], "id long, name string")
    with pytest.raises(Exception, match="nope"):
        bad_filter.write.format("icefloe").mode("overwrite").option("overwrite-filter", "nope = 1").save(
            table_name
        )
    t.refresh()
    assert t.snapshots() == []
    assert _data_files(t) == []


def test_failed_job_commits_nothing_and_deletes_its_files(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64()), ("v", pa.int64())]))

    # The failing row comes last in its task, after rows that were already handed to the writer.
    explode_late = F.when(F.col("id") == 24_999, F.raise_error(F.lit("boom"))).otherwise(F.col("id"))
    df = spark.range(0, 25_000, numPartitions=2).select(F.col("id"), explode_late.cast("long").alias("v"))
    with pytest.raises(Exception, match="boom"):
        df.write.format("icefloe").mode("append").save(table_name)
    t.refresh()
    assert t.snapshots() == []
    assert _data_files(t) == []


def test_writer_protocol_in_process(spark_catalog: Any, table_name: str, spark_warehouse: Path) -> None:
    """The writer object Spark pickles, driven directly: commit tags the snapshot with the job's
    write id; abort after a commit that did land keeps the files; abort otherwise deletes them,
    including files of tasks that never reported (found by the write id in their names)."""
    from icefloe.spark.source import WRITE_ID_PROPERTY, IcefloeDataSource, delete_job_files

    options = {
        "path": table_name,
        "catalog.uri": f"sqlite:///{spark_warehouse / 'catalog.db'}",
        "catalog.warehouse": (spark_warehouse / "wh").as_uri(),
    }
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64())]))
    spark_schema = to_spark_schema(t.schema())
    batch = pa.record_batch({"id": pa.array([1, 2, 3], pa.int64())})

    writer = IcefloeDataSource(options).writer(spark_schema, False)
    message = writer.write(iter([batch]))
    writer.commit([message])
    t.refresh()
    (snap,) = t.snapshots()
    assert snap.summary.props[WRITE_ID_PROPERTY] == writer.write_id
    writer.abort([message])  # e.g. Spark aborting after a commit reported as failed: keep the files
    assert len(_data_files(t)) == 1

    failed = IcefloeDataSource(options).writer(spark_schema, False)
    reported = failed.write(iter([batch]))
    unreported = failed.write(iter([batch]))  # a task that died before Spark got its message
    assert len(_data_files(t)) == 3
    failed.abort([reported, None])
    assert len(_data_files(t)) == 1
    assert all(f.file_path not in {p.as_uri() for p in _data_files(t)} for f in unreported.files)
    assert delete_job_files(t.metadata, failed.write_id) == 0


def test_dynamic_overwrite_by_bucket(spark: Any, spark_catalog: Any, table_name: str) -> None:
    from icefloe.spec.types import LongType
    from icefloe.transforms import BucketTransform

    t = spark_catalog.create_table(
        table_name, pa.schema([("id", pa.int64())]), partition_by=["bucket(4, id)"]
    )
    t.append(pa.table({"id": list(range(20))}))
    bucket = BucketTransform(4)
    spark.createDataFrame([(1000,)], "id long").write.format("icefloe").mode("overwrite").option(
        "partition-overwrite-mode", "dynamic"
    ).save(table_name)
    t.refresh()
    target = bucket.apply(LongType(), 1000)
    expected = sorted([i for i in range(20) if bucket.apply(LongType(), i) != target] + [1000])
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == expected
