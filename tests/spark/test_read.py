"""Reading through the data source: time travel options, pushed filters, split planning.

Planning checks build the reader in-process (the same object Spark pickles to its workers), so
they need no Spark job; end-to-end checks run one small query each.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import datasource as ds
from pyspark.sql import functions as F

from icefloe.errors import ExpressionError, NoSuchSnapshotError, ValidationError
from icefloe.spark.source import IcefloeDataSource, IcefloeReader, spark_filter_to_expression
from icefloe.spec.snapshot import SnapshotRef, SnapshotRefType
from icefloe.spec.updates import SetSnapshotRef

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def _batch(ids: range, cat: str) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "cat": [cat] * len(ids),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1 + (i % 5), tzinfo=dt.UTC) for i in ids], pa.timestamp("us", tz="UTC")
            ),
        }
    )


def _reader(options: dict[str, str], where: str | None = None) -> IcefloeReader:
    source = IcefloeDataSource({**options, "filter": where} if where is not None else options)
    reader = source.reader(source.schema())
    assert isinstance(reader, IcefloeReader)
    return reader


@pytest.fixture
def conf_options(spark_warehouse: Any) -> dict[str, str]:
    """Catalog options as data source options (the in-process reader has no Spark conf)."""
    return {
        "catalog.uri": f"sqlite:///{spark_warehouse / 'catalog.db'}",
        "catalog.warehouse": (spark_warehouse / "wh").as_uri(),
    }


def test_time_travel_options(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA)
    s1 = t.append(_batch(range(0, 3), "a"))
    s2 = t.append(_batch(range(3, 5), "b"))
    assert s1 is not None and s2 is not None
    spark_catalog.commit_table(
        t.identifier, [], [SetSnapshotRef("v1", SnapshotRef(s1.snapshot_id, SnapshotRefType.TAG))]
    )
    spark_catalog.commit_table(
        t.identifier, [], [SetSnapshotRef("dev", SnapshotRef(s1.snapshot_id, SnapshotRefType.BRANCH))]
    )

    def count(**options: str) -> int:
        reader = spark.read.format("icefloe")
        for k, v in options.items():
            reader = reader.option(k, v)
        return int(reader.load(table_name).count())

    assert count() == 5
    assert count(**{"snapshot-id": str(s1.snapshot_id)}) == 3
    assert count(**{"as-of-timestamp": str(s2.timestamp_ms)}) == 5
    assert count(**{"as-of-timestamp": str(s2.timestamp_ms - 1)}) == 3
    assert count(tag="v1") == 3
    assert count(branch="dev") == 3


def test_bad_options_fail_in_planning(
    spark_catalog: Any, table_name: str, conf_options: dict[str, str]
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA)
    t.append(_batch(range(3), "a"))
    with pytest.raises(NoSuchSnapshotError):
        _reader({**conf_options, "path": table_name, "tag": "nope"})
    with pytest.raises(ValidationError, match="snapshot-id"):
        _reader({**conf_options, "path": table_name, "snapshot-id": "x"})
    with pytest.raises(ValidationError, match="no table"):
        IcefloeDataSource(conf_options).schema()


def test_filter_translation() -> None:
    assert str(spark_filter_to_expression(ds.EqualTo(("a",), 1))) == str(
        spark_filter_to_expression(ds.EqualNullSafe(("a",), 1))
    )
    assert "is_null" in repr(
        spark_filter_to_expression(ds.EqualNullSafe(("a",), None))
    ).lower() or "IsNull" in repr(spark_filter_to_expression(ds.EqualNullSafe(("a",), None)))
    assert spark_filter_to_expression(ds.StringEndsWith(("a",), "x")) is None
    assert spark_filter_to_expression(ds.StringContains(("a",), "x")) is None
    assert spark_filter_to_expression(ds.Not(ds.StringContains(("a",), "x"))) is None
    assert "IsNaN" in repr(spark_filter_to_expression(ds.EqualTo(("f",), float("nan"))))
    assert spark_filter_to_expression(ds.LessThan(("f",), float("nan"))) is None
    nested = spark_filter_to_expression(ds.GreaterThan(("s", "x"), 3))
    assert nested is not None and "s.x" in str(nested)
    assert spark_filter_to_expression(ds.In(("a",), (1, None, 2))) is not None
    assert spark_filter_to_expression(ds.StringStartsWith(("a",), "ab")) is not None


def test_filter_option_prunes_files(
    spark: Any, spark_catalog: Any, table_name: str, conf_options: dict[str, str]
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["cat"])
    for i, cat in enumerate("abcd"):
        t.append(_batch(range(i * 10, i * 10 + 10), cat))
    options = {**conf_options, "path": table_name, "split-size": "1"}  # one partition per file
    assert len(_reader(options).partitions()) == 4
    assert len(_reader(options, "cat = 'b'").partitions()) == 1
    assert len(_reader(options, "id >= 25 and id < 32").partitions()) == 2
    # time-typed literals prune too
    ts_filter = _reader(options, "ts > '2024-01-09T00:00:00+00:00'")
    assert all(not p.tasks for p in ts_filter.partitions())  # type: ignore[attr-defined]
    with pytest.raises(ExpressionError, match="nope"):
        _reader(options, "nope = 1")
    # end to end: the option prunes, and the residual is applied exactly
    df = spark.read.format("icefloe").option("split-size", "1").option("filter", "cat = 'c' and id > 25")
    df = df.load(table_name)
    assert df.rdd.getNumPartitions() == 1
    assert sorted(r.id for r in df.collect()) == list(range(26, 30))
    # Spark-side filters are evaluated by Spark on the unpruned scan (never pushed, see source.py)
    cutoff = dt.datetime(2024, 1, 4, tzinfo=dt.UTC)
    ts_df = spark.read.format("icefloe").load(table_name).filter(F.col("ts") >= F.lit(cutoff))
    expected = t.scan(row_filter="ts >= '2024-01-04T00:00:00+00:00'").count()
    assert expected == 16 and ts_df.count() == expected


def test_split_planning(
    spark: Any, spark_catalog: Any, table_name: str, conf_options: dict[str, str]
) -> None:
    t = spark_catalog.create_table(
        table_name, SCHEMA, properties={"write.parquet.row-group-size-bytes": "4096"}
    )
    chunks = [_batch(range(i, i + 2_500), "a").to_batches()[0] for i in range(0, 20_000, 2_500)]
    t.append(pa.Table.from_batches(chunks))  # one file, a row group per chunk
    for i in range(3):
        t.append(_batch(range(100_000 + i, 100_001 + i), "small"))  # three tiny files
    (big,) = [f for f in _files(t) if f.record_count == 20_000]
    assert len(big.split_offsets) > 4
    split = max(big.file_size_in_bytes // 4, 1)
    options = {**conf_options, "path": table_name, "split-size": str(split), "file-open-cost": "1"}
    parts = _reader(options).partitions()
    big_pieces = [task for p in parts for task in p.tasks if task.file.file_path == big.file_path]  # type: ignore[attr-defined]
    assert len(big_pieces) >= 3  # split on row-group boundaries
    small_groups = [p for p in parts if all(task.file.record_count == 1 for task in p.tasks)]  # type: ignore[attr-defined]
    assert len(small_groups) == 1  # the three small files are combined
    df = (
        spark.read.format("icefloe")
        .option("split-size", str(split))
        .option("file-open-cost", "1")
        .load(table_name)
    )
    assert df.rdd.getNumPartitions() == len(parts)
    assert df.count() == 20_003


def _files(t: Any) -> list[Any]:
    return [task.file for task in t.scan().plan_files()]
