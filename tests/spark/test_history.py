"""History on Spark: writes to branches and write-audit-publish, incremental and changelog reads,
and metadata tables through the data source and ``icefloe.spark.read``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import icefloe.spark
from icefloe.errors import ValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(spark: Any, *pairs: tuple[int, str]) -> Any:
    return spark.createDataFrame(list(pairs), "id long, v string")


def _ids(df: Any) -> list[int]:
    return sorted(r["id"] for r in df.collect())


def test_branch_and_wap_writes(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, schema=SCHEMA)
    s1 = t.append(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert s1
    _rows(spark, (2, "b")).write.format("icefloe").option("branch", "dev").mode("append").save(table_name)
    t.refresh()
    assert t.current_snapshot() == s1
    assert _ids(spark.read.format("icefloe").option("branch", "dev").load(table_name)) == [1, 2]
    assert _ids(spark.read.format("icefloe").load(table_name)) == [1]

    with t.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    _rows(spark, (3, "c")).write.format("icefloe").option("wap-id", "audit-1").mode("append").save(table_name)
    both = _rows(spark, (9, "z")).write.format("icefloe").option("wap-id", "x").option("branch", "dev")
    with pytest.raises(Exception, match="staged"):
        both.mode("append").save(table_name)
    t.refresh()
    staged = [s for s in t.snapshots() if s.summary.get("wap.id") == "audit-1"]
    assert len(staged) == 1 and t.current_snapshot() == s1
    sid = staged[0].snapshot_id
    assert _ids(spark.read.format("icefloe").option("snapshot-id", str(sid)).load(table_name)) == [1, 3]
    with t.manage_snapshots() as ms:
        ms.cherry_pick(sid)
    assert _ids(spark.read.format("icefloe").load(table_name)) == [1, 3]


def test_incremental_and_changelog_reads(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, schema=SCHEMA)
    s1 = t.append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    s2 = t.append(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    t.upsert(pa.table({"id": [1], "v": ["A"]}, schema=SCHEMA), ["id"])
    s4 = t.append(pa.table({"id": [4], "v": ["d"]}, schema=SCHEMA))
    assert s1 and s2 and s4
    inc = (
        spark.read.format("icefloe")
        .option("start-snapshot-id", str(s1.snapshot_id))
        .option("end-snapshot-id", str(s4.snapshot_id))
        .load(table_name)
    )
    assert _ids(inc) == [3, 4]  # the upsert's snapshot is an overwrite, not an append
    with pytest.raises(Exception, match="incremental"):
        spark.read.format("icefloe").option("end-snapshot-id", "1").load(table_name).collect()

    changes = (
        spark.read.format("icefloe")
        .option("start-snapshot-id", str(s2.snapshot_id))
        .option("identifier-columns", "id")
        .load(f"{table_name}.changes")
    )
    got = sorted((r["id"], r["v"], r["_change_type"], r["_change_ordinal"]) for r in changes.collect())
    assert got == [(1, "A", "UPDATE_AFTER", 0), (1, "a", "UPDATE_BEFORE", 0), (4, "d", "INSERT", 1)]
    arrow = t.changelog_scan(s2.snapshot_id, identifier_columns=["id"]).to_arrow()
    rows = arrow.to_pylist()
    assert sorted((r["id"], r["v"], r["_change_type"], r["_change_ordinal"]) for r in rows) == got


def test_metadata_tables_on_spark(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["bucket(2, id)"])
    t.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    with t.manage_snapshots() as ms:
        ms.create_tag("v1")
    for name in ("snapshots", "history", "refs", "files", "manifests", "entries", "partitions"):
        df = spark.read.format("icefloe").load(f"{table_name}.{name}")
        want = t.inspect.table(name)
        assert df.columns == want.column_names, name
        assert df.count() == want.num_rows, name
    snaps = icefloe.spark.read(spark, f"{table_name}.snapshots", columns=["snapshot_id", "operation"])
    assert [(r["snapshot_id"], r["operation"]) for r in snaps.collect()] == [
        (s.snapshot_id, s.operation.value) for s in t.snapshots()
    ]
    refs = {r["name"]: r["type"] for r in icefloe.spark.read(spark, f"{table_name}.refs").collect()}
    assert refs == {"main": "BRANCH", "v1": "TAG"}
    files = spark.read.format("icefloe").load(f"{table_name}.files").collect()
    assert sum(r["record_count"] for r in files) == 3
    assert {r["partition"]["id_bucket"] for r in files} <= {0, 1}
    assert all(r["readable_metrics"]["id"]["lower_bound"] >= 1 for r in files)
    with pytest.raises(Exception, match=r"no table|NoSuchTable|not exist"):
        spark.read.format("icefloe").load("spark.no_such_table.files").collect()


def test_metadata_table_name_errors(spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, schema=SCHEMA)
    with pytest.raises(ValidationError, match="unknown metadata table"):
        t.inspect.table("nope")
