"""Metadata tables on the Arrow API (their agreement with Iceberg Java's is checked in
``tests/interop/test_history_java.py``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.arrow.schema import schema_to_arrow
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import NoSuchSnapshotError, ValidationError
from icefloe.table import Table
from icefloe.table.inspect import METADATA_TABLES

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("cat", pa.string())])


def rows(*ids: int, cat: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids], "cat": [cat] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    cat = InMemoryCatalog("m", warehouse=tmp_path.as_uri())
    cat.create_namespace("ns")
    return cat.create_table("ns.t", schema=SCHEMA, partition_by=["cat"])


def test_every_table_has_java_columns_even_when_empty(table: Table) -> None:
    for name in METADATA_TABLES:
        t = table.inspect.table(name)
        assert t.num_rows == (1 if name == "metadata_log_entries" else 0), name
        assert t.schema == schema_to_arrow(table.inspect.schema(name)), name
    files = table.inspect.files().schema
    assert files.field("partition").type.names == ["cat"]
    assert files.names[:5] == ["content", "file_path", "file_format", "spec_id", "partition"]
    assert files.names[-1] == "readable_metrics"
    assert files.field("record_count").type == pa.int64()
    assert table.inspect.snapshots().schema.field("committed_at").type == pa.timestamp("us", tz="UTC")
    with pytest.raises(ValidationError, match="unknown metadata table"):
        table.inspect.table("nope")
    with pytest.raises(ValidationError, match="whole table"):
        table.inspect.table("snapshots", snapshot_id=1)


def test_history_refs_and_log(table: Table) -> None:
    s1 = table.append(rows(1, 2))
    s2 = table.append(rows(3))
    assert s1 and s2
    with table.manage_snapshots() as ms:
        ms.create_tag("t1", s1.snapshot_id, max_ref_age_ms=1000)
        ms.rollback_to(s1.snapshot_id)
    s3 = table.append(rows(4))
    assert s3
    history = table.inspect.history().to_pylist()
    assert [h["snapshot_id"] for h in history] == [
        s1.snapshot_id,
        s2.snapshot_id,
        s1.snapshot_id,
        s3.snapshot_id,
    ]
    assert [h["is_current_ancestor"] for h in history] == [True, False, True, True]
    refs = {r["name"]: r for r in table.inspect.refs().to_pylist()}
    assert refs["t1"]["type"] == "TAG" and refs["t1"]["max_reference_age_in_ms"] == 1000
    assert refs["main"]["snapshot_id"] == s3.snapshot_id
    snaps = table.inspect.snapshots().to_pylist()
    assert [s["operation"] for s in snaps] == ["append"] * 3
    assert dict(snaps[0]["summary"])["added-records"] == "2"
    log = table.inspect.metadata_log_entries().to_pylist()
    assert log[-1]["file"] == table.metadata_location
    assert log[-1]["latest_snapshot_id"] == s3.snapshot_id


def test_files_entries_partitions_and_position_deletes(table: Table) -> None:
    s1 = table.append(rows(1, 2, 3, cat="a"))
    table.append(rows(4, cat="b"))
    table.delete("id = 4")  # copy-on-write: a whole-file delete by metadata
    with table.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": "merge-on-read"})
    table.delete("id = 2")  # a position delete file
    assert s1
    files = table.inspect.files().to_pylist()
    assert sorted(f["content"] for f in files) == [0, 1]
    data = table.inspect.data_files().to_pylist()
    assert [d["partition"] for d in data] == [{"cat": "a"}]
    metrics = data[0]["readable_metrics"]
    assert metrics["id"]["lower_bound"] == 1 and metrics["id"]["upper_bound"] == 3
    assert metrics["v"]["null_value_count"] == 0
    assert table.inspect.delete_files().num_rows == 1
    assert {f["file_path"] for f in table.inspect.files(snapshot_id=s1.snapshot_id).to_pylist()} == {
        data[0]["file_path"]
    }
    entries = table.inspect.entries().to_pylist()
    assert {e["status"] for e in entries} == {1, 2}  # live files, and the one the delete removed
    all_entries = table.inspect.all_entries().to_pylist()
    assert 2 in {e["status"] for e in all_entries}  # the file the delete removed
    assert table.inspect.all_data_files().num_rows >= 2
    parts = {p["partition"]["cat"]: p for p in table.inspect.partitions().to_pylist()}
    assert set(parts) == {"a"}
    assert parts["a"]["record_count"] == 3 and parts["a"]["position_delete_record_count"] == 1
    assert parts["a"]["last_updated_snapshot_id"] == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    pos = table.inspect.position_deletes().to_pylist()
    assert [(p["file_path"], p["pos"], p["partition"]) for p in pos] == [
        (data[0]["file_path"], 1, {"cat": "a"})
    ]
    manifests = table.inspect.manifests().to_pylist()
    assert {m["content"] for m in manifests} == {0, 1}
    summaries = [s for m in manifests if m["content"] == 0 for s in m["partition_summaries"]]
    assert {(s["lower_bound"], s["upper_bound"]) for s in summaries} >= {("a", "a")}
    all_manifests = table.inspect.all_manifests().to_pylist()
    assert {m["reference_snapshot_id"] for m in all_manifests} == {s.snapshot_id for s in table.snapshots()}
    with pytest.raises(NoSuchSnapshotError):
        table.inspect.files(snapshot_id=42)


def test_unpartitioned_tables_have_no_partition_column(tmp_path: Path) -> None:
    cat = InMemoryCatalog("m", warehouse=tmp_path.as_uri())
    cat.create_namespace("ns")
    t = cat.create_table("ns.u", schema=SCHEMA)
    t.append(rows(1, 2))
    assert "partition" not in t.inspect.files().column_names
    assert t.inspect.partitions().column_names[0] == "record_count"
    assert t.inspect.partitions().to_pylist()[0]["record_count"] == 2
