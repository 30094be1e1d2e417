"""The metadata builder: new tables exactly as Iceberg Java creates them, and each change's checks."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from icefloe.errors import (
    CommitFailedError,
    InvalidMetadataError,
    NoSuchSnapshotError,
    PartitionSpecError,
    SortOrderError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.spec.metadata_builder import TableMetadataBuilder
from icefloe.spec.partition import UNPARTITIONED_SPEC, PartitionField, PartitionSpec
from icefloe.spec.schema import Schema, assign_fresh_ids
from icefloe.spec.snapshot import (
    MAIN_BRANCH,
    MetadataLogEntry,
    Operation,
    Snapshot,
    SnapshotRef,
    SnapshotRefType,
    Summary,
)
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.table_metadata import TableMetadata, read_metadata_json, write_metadata_json
from icefloe.spec.types import (
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestamptzType,
)
from icefloe.spec.updates import AddSchema, AddSnapshot, SetCurrentSchema, SetSnapshotRef, apply_updates
from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform

from .conftest import java_metadata_files

LOCATION = "s3://bucket/db/t"


def schema() -> Schema:
    # ids deliberately scattered: the builder renumbers them
    return Schema(
        NestedField(50, "id", LongType(), required=True),
        NestedField(40, "ts", TimestamptzType()),
        NestedField(
            30,
            "loc",
            StructType(
                NestedField(31, "lat", IntegerType()), NestedField(32, "tags", ListType(33, StringType()))
            ),
        ),
        NestedField(20, "s", StringType()),
        identifier_field_ids=[50],
    )


def new_metadata(format_version: int = 2, **props: str) -> TableMetadata:
    spec = PartitionSpec(
        PartitionField(40, 7000, DayTransform(), "ts_day"),
        PartitionField(50, 7001, BucketTransform(8), "id_bucket"),
    )
    order = SortOrder(3, [SortField(20, IdentityTransform(), SortDirection.DESC)])
    return TableMetadataBuilder.new_table(
        schema(), spec, order, LOCATION + "/", props, format_version
    ).build()


def snapshot(m: TableMetadata, snapshot_id: int, parent: int | None = None, *, dt: int = 1) -> Snapshot:
    return Snapshot(
        snapshot_id,
        parent,
        m.next_sequence_number(),
        m.last_updated_ms + dt,
        f"{LOCATION}/metadata/snap-{snapshot_id}.avro",
        Summary(Operation.APPEND, {"added-records": "1"}),
        m.current_schema_id,
    )


def commit(m: TableMetadata, snapshot_id: int, location: str = "m.json") -> TableMetadata:
    b = TableMetadataBuilder.from_metadata(m, location)
    b.add_snapshot(snapshot(m, snapshot_id, m.current_snapshot_id))
    b.set_branch_snapshot(snapshot_id)
    return b.build()


# ------------------------------------------------------------------ new tables


def test_new_table_assigns_ids_like_java() -> None:
    m = new_metadata(owner="me", **{"format-version": "2"})
    s = m.schema()
    assert [f.field_id for f in s.fields] == [1, 2, 3, 4]
    assert s.find_field("loc.lat").field_id == 5 and s.find_field("loc.tags").field_id == 6
    assert s.find_field("loc.tags.element").field_id == 7
    assert s.identifier_field_ids == (1,) and s.schema_id == 0
    assert m.last_column_id == 7
    assert [(f.source_id, f.field_id, f.name) for f in m.spec().fields] == [
        (2, 1000, "ts_day"),
        (1, 1001, "id_bucket"),
    ]
    assert m.last_partition_id == 1001 and m.default_spec_id == 0
    assert m.sort_order() == SortOrder(
        1, [SortField(4, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST)]
    )
    assert m.default_sort_order_id == 1
    assert m.properties == {"owner": "me", "write.parquet.compression-codec": "zstd"}
    assert m.location == LOCATION and m.last_sequence_number == 0 and m.format_version == 2
    assert m.current_snapshot_id is None and m.refs == {} and m.metadata_log == ()


def test_new_table_format_version_property_wins() -> None:
    assert new_metadata(2, **{"format-version": "1"}).format_version == 1
    assert new_metadata(3).next_row_id == 0  # format v3 tables start row lineage at 0
    with pytest.raises(UnsupportedFeatureError):
        new_metadata(4)


def test_new_table_records_create_updates() -> None:
    b = TableMetadataBuilder.new_table(schema(), UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, LOCATION, {})
    actions = [u.action for u in b.updates]
    assert actions == [
        "assign-uuid",
        "upgrade-format-version",
        "add-schema",
        "set-current-schema",
        "add-spec",
        "set-default-spec",
        "add-sort-order",
        "set-default-sort-order",
        "set-location",
        "set-properties",
    ]
    assert b.updates[3] == SetCurrentSchema(-1)
    built = b.build()
    replayed = apply_updates(None, b.updates)
    assert write_metadata_json(replayed).replace(str(replayed.last_updated_ms), "T") == write_metadata_json(
        built
    ).replace(str(built.last_updated_ms), "T")


def test_new_table_rejects_unknown_partition_source() -> None:
    spec = PartitionSpec(PartitionField(999, 1000, IdentityTransform(), "x"))
    with pytest.raises(ValidationError, match="999"):
        TableMetadataBuilder.new_table(schema(), spec, UNSORTED_SORT_ORDER, LOCATION)


def _java_new_tables() -> list[Path]:
    return [p for p in java_metadata_files() if p.name == "v1.metadata.json"]


def test_new_table_equals_java(oracle_ref: Path) -> None:
    """Every reference table's first metadata file is Java's ``newTableMetadata`` output: rebuild it
    from a schema with other ids and compare everything but the uuid and the clock."""
    checked = 0
    for path in _java_new_tables():
        java = read_metadata_json(path.read_text())
        if java.format_version > 2:
            continue
        js = java.schema()
        scrambled = assign_fresh_ids(js, 100)
        remap = {f: scrambled.find_field(js.column_name(f)).field_id for f in js.field_ids()}
        spec = PartitionSpec(
            *(
                PartitionField(remap[f.source_id], f.field_id + 50, f.transform, f.name)
                for f in java.spec().fields
            )
        )
        order = java.sort_order()
        if not order.is_unsorted:
            order = SortOrder(
                7,
                [SortField(remap[f.source_id], f.transform, f.direction, f.null_order) for f in order.fields],
            )
        props = {**java.properties, "format-version": str(java.format_version)}
        ours = TableMetadataBuilder.new_table(scrambled, spec, order, java.location, props).build()
        a, b = json.loads(write_metadata_json(ours)), json.loads(write_metadata_json(java))
        for key in ("table-uuid", "last-updated-ms"):
            del a[key], b[key]
        assert a == b, path
        checked += 1
    assert checked > 5


# ------------------------------------------------------------------ changes


def test_commit_snapshots_logs_and_refs() -> None:
    m0 = new_metadata()
    m1 = commit(m0, 11, "v1.json")
    assert m1.current_snapshot_id == 11 and m1.refs[MAIN_BRANCH] == SnapshotRef(11)
    assert m1.last_sequence_number == 1 and m1.last_updated_ms == m1.snapshot_by_id(11).timestamp_ms
    assert [(e.snapshot_id, e.timestamp_ms) for e in m1.snapshot_log] == [(11, m1.last_updated_ms)]
    assert m1.metadata_log == (MetadataLogEntry(m0.last_updated_ms, "v1.json"),)
    m2 = commit(m1, 12, "v2.json")
    assert m2.snapshot_by_id(12).parent_snapshot_id == 11 and m2.last_sequence_number == 2
    assert [e.metadata_file for e in m2.metadata_log] == ["v1.json", "v2.json"]
    assert [e.snapshot_id for e in m2.snapshot_log] == [11, 12]
    assert TableMetadataBuilder.from_metadata(m2, "x").build() is m2


def test_metadata_log_is_trimmed() -> None:
    m = new_metadata(**{"write.metadata.previous-versions-max": "2"})
    for i in range(1, 5):
        m = commit(m, i, f"v{i}.json")
    assert [e.metadata_file for e in m.metadata_log] == ["v3.json", "v4.json"]


def test_add_snapshot_checks() -> None:
    m = commit(new_metadata(), 1)
    b = TableMetadataBuilder.from_metadata(m)
    with pytest.raises(ValidationError, match="already exists"):
        b.add_snapshot(snapshot(m, 1, None))
    stale = Snapshot(2, 1, m.last_sequence_number, m.last_updated_ms, "x", Summary(Operation.APPEND))
    # Only a commit that raced another gets a stale sequence number (e.g. a write to one branch
    # while another branch moved): retryable, so the commit loop re-applies it on the new table.
    with pytest.raises(CommitFailedError, match="sequence number"):
        b.add_snapshot(stale)
    with pytest.raises(NoSuchSnapshotError, match="parent 99"):
        b.add_snapshot(snapshot(m, 2, 99))
    with pytest.raises(ValidationError, match="more than a minute before"):
        b.add_snapshot(snapshot(m, 2, 1, dt=-120_000))
    bad_schema = Snapshot(2, 1, 2, m.last_updated_ms, "x", Summary(Operation.APPEND), schema_id=5)
    with pytest.raises(ValidationError, match="schema id 5"):
        b.add_snapshot(bad_schema)
    assert b.updates == []


def test_refs_branches_and_tags() -> None:
    m = commit(commit(new_metadata(), 1), 2)
    b = TableMetadataBuilder.from_metadata(m)
    b.set_ref("v1", SnapshotRef(1, SnapshotRefType.TAG))
    b.set_ref("dev", SnapshotRef(1, max_snapshot_age_ms=1000))
    with pytest.raises(NoSuchSnapshotError):
        b.set_ref("x", SnapshotRef(42))
    with pytest.raises(ValidationError, match="must be a branch"):
        b.set_ref(MAIN_BRANCH, SnapshotRef(1, SnapshotRefType.TAG))
    m2 = b.build()
    assert m2.snapshot_for_ref("v1").snapshot_id == 1 and m2.refs["dev"].max_snapshot_age_ms == 1000
    assert m2.current_snapshot_id == 2
    # rollback: main moves to an existing snapshot and history records it
    b = TableMetadataBuilder.from_metadata(m2)
    b.set_branch_snapshot(1)
    m3 = b.build()
    assert m3.current_snapshot_id == 1 and m3.snapshot_log[-1].snapshot_id == 1
    b = TableMetadataBuilder.from_metadata(m3)
    b.remove_ref("dev").remove_ref("nope")
    assert "dev" not in b.build().refs


def test_remove_snapshots_drops_refs_and_history() -> None:
    m = commit(commit(commit(new_metadata(), 1), 2), 3)
    b = TableMetadataBuilder.from_metadata(m)
    b.set_ref("old", SnapshotRef(1, SnapshotRefType.TAG))
    m = b.build()
    b = TableMetadataBuilder.from_metadata(m)
    b.remove_snapshots([1, 99])
    m2 = b.build()
    assert [s.snapshot_id for s in m2.snapshots] == [2, 3]
    assert "old" not in m2.refs
    assert [e.snapshot_id for e in m2.snapshot_log] == [2, 3]
    assert b.updates[0].to_json() == {"action": "remove-snapshots", "snapshot-ids": [1]}
    # removing the current snapshot removes main
    b = TableMetadataBuilder.from_metadata(m2)
    b.remove_snapshots([3])
    m3 = b.build()
    assert m3.current_snapshot_id is None and MAIN_BRANCH not in m3.refs


def test_schema_evolution() -> None:
    m = new_metadata()
    evolved = Schema(*m.schema().fields, NestedField(8, "extra", StringType()))
    b = TableMetadataBuilder.from_metadata(m)
    b.add_schema(evolved).set_current_schema(-1)
    m2 = b.build()
    assert m2.current_schema_id == 1 and m2.last_column_id == 8
    assert [type(u) for u in b.updates] == [AddSchema, SetCurrentSchema]
    assert b.updates[1] == SetCurrentSchema(-1)
    # re-adding an existing schema reuses its id
    b = TableMetadataBuilder.from_metadata(m2)
    b.add_schema(m.schema()).set_current_schema(-1)
    m3 = b.build()
    assert m3.current_schema_id == 0 and len(m3.schemas) == 2
    assert b.updates == [SetCurrentSchema(0)]
    with pytest.raises(ValidationError, match="unknown schema id 9"):
        TableMetadataBuilder.from_metadata(m).set_current_schema(9)
    with pytest.raises(UnsupportedFeatureError, match="version 3"):
        TableMetadataBuilder.from_metadata(m).add_schema(Schema(NestedField(1, "t", TimestampNsType())))


def test_partition_spec_evolution() -> None:
    m = new_metadata()
    b = TableMetadataBuilder.from_metadata(m)
    new_spec = PartitionSpec(PartitionField(4, 1002, IdentityTransform(), "s"))
    b.add_partition_spec(new_spec).set_default_spec(-1)
    m2 = b.build()
    assert m2.default_spec_id == 1 and m2.last_partition_id == 1002
    b = TableMetadataBuilder.from_metadata(m2)
    b.add_partition_spec(new_spec)
    assert b.updates == []
    with pytest.raises(PartitionSpecError):
        b.add_partition_spec(PartitionSpec(PartitionField(3, 1003, IdentityTransform(), "loc")))


def test_sort_order_evolution() -> None:
    m = new_metadata()
    b = TableMetadataBuilder.from_metadata(m)
    b.add_sort_order(UNSORTED_SORT_ORDER).set_default_sort_order(-1)
    assert b.build().default_sort_order_id == 0
    b = TableMetadataBuilder.from_metadata(m)
    b.add_sort_order(SortOrder(1, [SortField(1, BucketTransform(4))])).set_default_sort_order(-1)
    assert b.build().default_sort_order_id == 2
    with pytest.raises(SortOrderError):
        TableMetadataBuilder.from_metadata(m).add_sort_order(
            SortOrder(1, [SortField(99, IdentityTransform())])
        )


def test_properties_location_uuid_version() -> None:
    m = new_metadata(1)
    b = TableMetadataBuilder.from_metadata(m)
    with pytest.raises(ValidationError, match="reserved") as exc:
        b.set_properties({"format-version": "2"})
    assert exc.value.hint is not None and "upgrade_format_version" in exc.value.hint
    b.set_properties({"a": "1", "b": "2"}).remove_properties(["b"])
    b.set_location("s3://elsewhere/t/")
    with pytest.raises(ValidationError, match="reassign"):
        b.assign_uuid(uuid.uuid4())
    b.assign_uuid(m.table_uuid)  # type: ignore[arg-type]
    b.upgrade_format_version(2)
    with pytest.raises(UnsupportedFeatureError):
        b.upgrade_format_version(4)
    with pytest.raises(ValidationError, match="downgrade"):
        b.upgrade_format_version(1)
    m2 = b.build()
    assert m2.properties["a"] == "1" and "b" not in m2.properties
    assert m2.location == "s3://elsewhere/t" and m2.format_version == 2
    m3 = TableMetadataBuilder.from_metadata(m2).upgrade_format_version(3).build()
    assert m3.format_version == 3 and m3.next_row_id == 0
    assert m2.next_sequence_number() == 1


def test_v1_commits_use_sequence_number_zero() -> None:
    m = commit(new_metadata(1), 5)
    assert m.snapshot_by_id(5).sequence_number == 0 and m.last_sequence_number == 0
    out = json.loads(write_metadata_json(m))
    assert "sequence-number" not in out["snapshots"][0] and "schema" in out


def test_build_validates() -> None:
    b = TableMetadataBuilder.empty()
    with pytest.raises(InvalidMetadataError, match="location"):
        b.build()
    b.set_location("/tmp/t")
    with pytest.raises(InvalidMetadataError):
        b.build()


def test_replayed_updates_match_builder() -> None:
    m = commit(new_metadata(), 1)
    b = TableMetadataBuilder.from_metadata(m, "v1.json")
    b.add_snapshot(snapshot(m, 2, 1))
    b.set_branch_snapshot(2)
    b.set_ref("tag", SnapshotRef(1, SnapshotRefType.TAG))
    assert [type(u) for u in b.updates] == [AddSnapshot, SetSnapshotRef, SetSnapshotRef]
    built = b.build()
    assert apply_updates(m, b.updates, "v1.json") == built
