"""End-to-end behaviour of the Arrow path: create, append, scan, time travel, and planning that
opens only the files it must. Runs against every catalog implementation."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.errors import (
    ExpressionError,
    NoSuchSnapshotError,
    SchemaMismatchError,
    ValidationError,
)
from icefloe.spec.table_metadata import read_metadata_json
from icefloe.table import Table
from icefloe.testing import CountingFileIO

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.decimal128(10, 2)),
    ]
)


def rows(ids: range, cat: str, day: int = 1) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "cat": pa.array([cat] * n),
            "ts": pa.array([dt.datetime(2024, 1, day, 12, tzinfo=dt.UTC)] * n, pa.timestamp("us", tz="UTC")),
            "amount": pa.array([Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
        },
        schema=SCHEMA,
    )


def sorted_rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def table(any_catalog: icefloe.Catalog) -> Table:
    any_catalog.create_namespace("sales")
    return any_catalog.create_table("sales.orders", schema=SCHEMA, partition_by=["cat", "day(ts)"])


def test_append_then_scan_returns_every_row(table: Table) -> None:
    data = pa.concat_tables([rows(range(0, 50), "a"), rows(range(50, 100), "b", day=2)])
    snap = table.append(data)
    assert snap is not None
    assert snap.summary.properties["added-records"] == "100"
    assert snap.summary.properties["total-records"] == "100"
    assert snap.summary.properties["changed-partition-count"] == "2"
    out = table.scan().to_arrow()
    assert out.schema.names == SCHEMA.names
    assert sorted_rows(out) == sorted_rows(data)
    again = table.catalog.load_table("sales.orders")
    assert sorted_rows(again.scan().to_arrow()) == sorted_rows(data)


def test_filter_and_projection(table: Table) -> None:
    table.append(pa.concat_tables([rows(range(0, 10), "a"), rows(range(10, 20), "b")]))
    out = table.scan(row_filter="id >= 5 and cat = 'b'", selected_fields=("id", "cat")).to_arrow()
    assert out.schema.names == ["id", "cat"]
    assert sorted(out["id"].to_pylist()) == list(range(10, 20))
    out = table.scan(row_filter="id < 3 or id > 17", selected_fields=("id",)).to_arrow()
    assert sorted(out["id"].to_pylist()) == [0, 1, 2, 18, 19]


def test_time_travel_by_id_timestamp_and_ref(table: Table) -> None:
    first = table.append(rows(range(0, 5), "a"))
    second = table.append(rows(range(5, 9), "b"))
    assert first is not None and second is not None
    assert second.parent_snapshot_id == first.snapshot_id
    assert second.sequence_number == first.sequence_number + 1
    assert table.scan(snapshot_id=first.snapshot_id).count() == 5
    assert table.scan().count() == 9
    assert table.scan(as_of_timestamp=first.timestamp_ms).count() == 5
    assert table.scan(ref="main").count() == 9
    assert [s.snapshot_id for s in table.snapshots()] == [first.snapshot_id, second.snapshot_id]
    with pytest.raises(NoSuchSnapshotError):
        table.scan(snapshot_id=12345)
    with pytest.raises(NoSuchSnapshotError):
        table.scan(ref="nope")
    with pytest.raises(NoSuchSnapshotError):
        table.scan(as_of_timestamp=first.timestamp_ms - 10_000)


def test_streaming_batches_and_limit(table: Table) -> None:
    table.append(rows(range(0, 30), "a"))
    table.append(rows(range(30, 60), "b"))
    reader = table.scan().to_batches()
    assert sum(b.num_rows for b in reader) == 60
    assert table.scan(limit=7).to_arrow().num_rows == 7
    assert table.scan(limit=0).to_arrow().num_rows == 0


def test_empty_table_scans_to_empty_result(table: Table) -> None:
    out = table.scan().to_arrow()
    assert out.num_rows == 0
    assert out.schema.names == SCHEMA.names
    assert table.scan().plan_files() == []


def test_to_pandas_and_duckdb(table: Table) -> None:
    table.append(rows(range(0, 4), "a"))
    assert len(table.scan().to_pandas()) == 4
    con = table.scan(selected_fields=("id",)).to_duckdb("t")
    assert con.execute("select sum(id) from t").fetchone() == (6,)


def test_bad_input_leaves_table_unchanged(table: Table) -> None:
    table.append(rows(range(0, 3), "a"))
    before = table.metadata_location
    bad = pa.table({"id": pa.array([1, None], pa.int64()), "cat": ["x", "y"]})
    with pytest.raises(SchemaMismatchError, match="id"):
        table.append(bad)
    with pytest.raises(SchemaMismatchError, match="nope"):
        table.append(pa.table({"id": pa.array([1], pa.int64()), "nope": [1]}))
    with pytest.raises(SchemaMismatchError, match="cat"):
        table.append(pa.table({"id": pa.array([1], pa.int64()), "cat": pa.array([1.5])}))
    assert table.refresh().metadata_location == before
    assert table.scan().count() == 3
    data_dir = Path(table.location.removeprefix("file://")) / "data"
    files = {str(p) for p in data_dir.rglob("*.parquet")}
    planned = {t.file.file_path.removeprefix("file://") for t in table.scan().plan_files()}
    assert {f.removeprefix("file://") for f in files} == planned, "no stray data files were left behind"


def test_bad_filters_fail_before_reading(table: Table) -> None:
    table.append(rows(range(0, 3), "a"))
    with pytest.raises(ExpressionError):
        table.scan(row_filter="nope = 1")
    with pytest.raises(ExpressionError):
        table.scan(row_filter="id = 'abc'")
    with pytest.raises(ExpressionError):
        table.scan(row_filter="id >= ")
    with pytest.raises(ValidationError):
        table.scan(selected_fields=("nope",))


def test_concurrent_appends_both_land(any_catalog: icefloe.Catalog) -> None:
    any_catalog.create_namespace("ns")
    t1 = any_catalog.create_table("ns.t", schema=SCHEMA)
    t2 = any_catalog.load_table("ns.t")
    t1.append(rows(range(0, 3), "a"))
    # t2's view is stale: its commit conflicts, refreshes, re-applies on the new base and lands.
    t2.append(rows(range(3, 5), "b"))
    final = any_catalog.load_table("ns.t")
    assert sorted(final.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3, 4]
    assert len(final.snapshots()) == 2


def test_planning_opens_only_surviving_manifests(any_catalog: icefloe.Catalog) -> None:
    any_catalog.create_namespace("ns")
    t = any_catalog.create_table("ns.p", schema=SCHEMA, partition_by=["cat"])
    for i, c in enumerate("abcd"):
        t.append(rows(range(i * 10, i * 10 + 10), c))
    counting = CountingFileIO(t.io)
    with counting.new_input(t.metadata_location).open() as f:
        metadata = read_metadata_json(f.read())
    handle = Table(t.identifier, metadata, t.metadata_location, counting, t.catalog)
    scan = handle.scan(row_filter="cat = 'c'")
    tasks = scan.plan_files()
    assert len(tasks) == 1
    snap = metadata.current_snapshot()
    assert snap is not None
    opened = dict(counting.opened)
    assert opened.pop(t.metadata_location) == 1
    assert opened.pop(snap.manifest_list) == 1
    assert len(opened) == 1 and list(opened.values()) == [1], opened  # one manifest of four
    assert scan.planning_stats.manifests_total == 4
    assert scan.planning_stats.manifests_skipped == 3


def test_metrics_prune_files_within_a_partition(any_catalog: icefloe.Catalog) -> None:
    any_catalog.create_namespace("ns")
    t = any_catalog.create_table("ns.m", schema=SCHEMA)
    for i in range(3):
        t.append(rows(range(i * 100, i * 100 + 100), "a"))
    scan = t.scan(row_filter="id between 120 and 130")
    tasks = scan.plan_files()
    assert len(tasks) == 1
    assert scan.planning_stats.files_skipped_by_metrics == 2
    assert sorted(scan.to_arrow()["id"].to_pylist()) == list(range(120, 131))


def test_metadata_files_are_numbered(table: Table) -> None:
    table.append(rows(range(0, 3), "a"))
    table.append(rows(range(3, 6), "a"))
    name = os.path.basename(table.metadata_location)
    assert name.startswith("00002-") and name.endswith(".metadata.json")
    assert len(table.metadata.metadata_log) == 2
