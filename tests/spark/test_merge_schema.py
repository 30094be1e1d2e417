"""Spark writes with ``merge-schema``: new columns (top-level and nested) and int -> long widening
join the table in the same commit as the data; without the option, or with an incompatible
type, the write fails on the driver before any task runs; a schema change that lands while the
job runs makes the commit fail typed and deletes the job's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from icefloe.errors import ConflictError
from icefloe.spark.types import to_spark_schema


def _data_files(t: Any) -> list[Path]:
    root = Path(urlparse(t.location).path) / "data"
    return sorted(root.rglob("*.parquet")) if root.exists() else []


def _rows(t: Any) -> list[dict[str, Any]]:
    return sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def test_merge_schema_adds_columns_and_widens(spark: Any, spark_catalog: Any, table_name: str) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("n", pa.int32()), ("s", pa.struct([("x", pa.int32())]))]
    )
    t = spark_catalog.create_table(table_name, schema)
    t.append(pa.table({"id": [1], "n": pa.array([5], pa.int32()), "s": [{"x": 1}]}, schema=schema))
    log = len(t.metadata.metadata_log)

    df = spark.createDataFrame(
        [(2, 2**40, (2, "two"), 0.5)], "id long, n long, s struct<x: int, label: string>, score double"
    )
    df.write.format("icefloe").option("merge-schema", "true").mode("append").save(table_name)

    t.refresh()
    assert len(t.metadata.metadata_log) == log + 1  # schema and data in one commit
    s = t.schema()
    assert str(s.find_type("n")) == "long"
    assert s.find_field("s.label").field_id == 5 and s.find_field("score").field_id == 6
    assert s.find_field("id").required  # a nullable DataFrame column does not relax it
    snap = t.current_snapshot()
    assert snap is not None and snap.schema_id == t.metadata.current_schema_id
    assert _rows(t) == [
        {"id": 1, "n": 5, "s": {"x": 1, "label": None}, "score": None},
        {"id": 2, "n": 2**40, "s": {"x": 2, "label": "two"}, "score": 0.5},
    ]
    # Spark reads the evolved table back, old rows through the new schema
    back = spark.read.format("icefloe").load(table_name).orderBy("id").collect()
    assert [(r["id"], r["n"], r["score"], r["s"]["label"]) for r in back] == [
        (1, 5, None, None),
        (2, 2**40, 0.5, "two"),
    ]
    # a narrower DataFrame type merges to no change at all
    schema_id = t.metadata.current_schema_id
    spark.createDataFrame([(3, 7)], "id long, n int").write.format("icefloe").option(
        "merge-schema", "true"
    ).mode("append").save(table_name)
    assert t.refresh().metadata.current_schema_id == schema_id
    assert [r["id"] for r in _rows(t)] == [1, 2, 3]


def test_unknown_column_without_the_option_fails_before_any_task(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64()), ("n", pa.int32())]))
    extra = spark.createDataFrame([(1, 1, "new")], "id long, n int, extra string")
    with pytest.raises(Exception, match="extra"):
        extra.write.format("icefloe").mode("append").save(table_name)
    wider = spark.createDataFrame([(1, 2**40)], "id long, n long")
    with pytest.raises(Exception, match="'n'"):
        wider.write.format("icefloe").mode("append").save(table_name)
    incompatible = spark.createDataFrame([(1, "x")], "id long, n string")
    with pytest.raises(Exception, match="cannot change column 'n' from int to string"):
        incompatible.write.format("icefloe").option("merge-schema", "true").mode("append").save(table_name)
    t.refresh()
    assert t.snapshots() == [] and _data_files(t) == []
    assert [f.name for f in t.schema().fields] == ["id", "n"]


def test_merge_schema_in_overwrite_mode(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2]}))
    spark.createDataFrame([(3, "c")], "id long, tag string").write.format("icefloe").option(
        "mergeSchema", "true"
    ).mode("overwrite").save(table_name)
    assert _rows(t.refresh()) == [{"id": 3, "tag": "c"}]


def test_schema_change_while_the_job_runs_fails_the_commit(
    spark_catalog: Any, table_name: str, spark_warehouse: Path
) -> None:
    """The writer protocol driven directly: the job's files carry the field ids of the merge
    planned in writer(); another schema change lands before commit(), so those ids may mean
    something else now: ConflictError, and the job's files are deleted."""
    from icefloe.spark.source import IcefloeDataSource

    options = {
        "path": table_name,
        "merge-schema": "true",
        "catalog.uri": f"sqlite:///{spark_warehouse / 'catalog.db'}",
        "catalog.warehouse": (spark_warehouse / "wh").as_uri(),
    }
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64())]))
    spark_schema = to_spark_schema(t.schema()).add("extra", "string")
    writer = IcefloeDataSource(options).writer(spark_schema, False)
    message = writer.write(iter([pa.record_batch({"id": [1], "extra": ["e"]})]))
    assert len(_data_files(t)) == 1
    with t.update_schema() as u:
        u.add_column("other", pa.int32())
    with pytest.raises(ConflictError, match="schema changed while the write ran"):
        writer.commit([message])
    t.refresh()
    assert t.snapshots() == [] and _data_files(t) == []
    assert [f.name for f in t.schema().fields] == ["id", "other"]
