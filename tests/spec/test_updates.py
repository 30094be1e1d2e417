"""Commit requirements and updates: REST JSON forms, validation messages, replay."""

from __future__ import annotations

import uuid

import pytest

from icefloe.errors import CommitFailedError, ValidationError
from icefloe.spec.metadata_builder import TableMetadataBuilder
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import MAIN_BRANCH, Operation, Snapshot, SnapshotRef, SnapshotRefType, Summary
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUID,
    MetadataUpdate,
    RemoveProperties,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    TableRequirement,
    UpgradeFormatVersion,
    apply_updates,
    requirement_from_json,
    update_from_json,
)
from icefloe.transforms import BucketTransform, IdentityTransform

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
U = uuid.UUID("9c12d441-03fe-4693-9a96-a0705ddf69c1")


def table() -> TableMetadata:
    m = TableMetadataBuilder.new_table(
        SCHEMA,
        PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket")),
        UNSORTED_SORT_ORDER,
        "/t",
    ).build()
    b = TableMetadataBuilder.from_metadata(m, "/t/metadata/00000.metadata.json")
    b.add_snapshot(
        Snapshot(10, None, 1, m.last_updated_ms + 1, "/t/metadata/snap-10.avro", Summary(Operation.APPEND))
    )
    b.set_branch_snapshot(10)
    return b.build()


SNAPSHOT = Snapshot(7, 6, 3, 1_700_000_000_000, "/m.avro", Summary(Operation.DELETE, {"x": "1"}), 0)
UPDATES: list[tuple[MetadataUpdate, dict[str, object]]] = [
    (AssignUUID(U), {"action": "assign-uuid", "uuid": str(U)}),
    (UpgradeFormatVersion(2), {"action": "upgrade-format-version", "format-version": 2}),
    (AddSchema(SCHEMA, 2), {"action": "add-schema", "schema": SCHEMA.to_json(), "last-column-id": 2}),
    (SetCurrentSchema(-1), {"action": "set-current-schema", "schema-id": -1}),
    (
        AddPartitionSpec(PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "s"), spec_id=1)),
        {
            "action": "add-spec",
            "spec": {
                "spec-id": 1,
                "fields": [{"name": "s", "transform": "identity", "source-id": 2, "field-id": 1000}],
            },
        },
    ),
    (SetDefaultSpec(1), {"action": "set-default-spec", "spec-id": 1}),
    (
        AddSortOrder(SortOrder(1, [SortField(2, IdentityTransform())])),
        {
            "action": "add-sort-order",
            "sort-order": {
                "order-id": 1,
                "fields": [
                    {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"}
                ],
            },
        },
    ),
    (SetDefaultSortOrder(1), {"action": "set-default-sort-order", "sort-order-id": 1}),
    (
        AddSnapshot(SNAPSHOT),
        {
            "action": "add-snapshot",
            "snapshot": {
                "sequence-number": 3,
                "snapshot-id": 7,
                "parent-snapshot-id": 6,
                "timestamp-ms": 1_700_000_000_000,
                "summary": {"operation": "delete", "x": "1"},
                "manifest-list": "/m.avro",
                "schema-id": 0,
            },
        },
    ),
    (
        SetSnapshotRef("b", SnapshotRef(7, SnapshotRefType.BRANCH, 2, 1000, 5000)),
        {
            "action": "set-snapshot-ref",
            "ref-name": "b",
            "snapshot-id": 7,
            "type": "branch",
            "min-snapshots-to-keep": 2,
            "max-snapshot-age-ms": 1000,
            "max-ref-age-ms": 5000,
        },
    ),
    (RemoveSnapshots((1, 2)), {"action": "remove-snapshots", "snapshot-ids": [1, 2]}),
    (RemoveSnapshotRef("b"), {"action": "remove-snapshot-ref", "ref-name": "b"}),
    (SetProperties({"a": "1"}), {"action": "set-properties", "updates": {"a": "1"}}),
    (RemoveProperties(["a"]), {"action": "remove-properties", "removals": ["a"]}),
    (SetLocation("/x"), {"action": "set-location", "location": "/x"}),
]


@pytest.mark.parametrize(("update", "expected"), UPDATES, ids=[u.action for u, _ in UPDATES])
def test_update_json(update: MetadataUpdate, expected: dict[str, object]) -> None:
    assert update.to_json() == expected
    assert update_from_json(expected).to_json() == expected


REQUIREMENTS: list[tuple[TableRequirement, dict[str, object]]] = [
    (AssertCreate(), {"type": "assert-create"}),
    (AssertTableUUID(U), {"type": "assert-table-uuid", "uuid": str(U)}),
    (AssertRefSnapshotId("main", 10), {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 10}),
    (AssertRefSnapshotId("b", None), {"type": "assert-ref-snapshot-id", "ref": "b", "snapshot-id": None}),
    (AssertLastAssignedFieldId(2), {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2}),
    (AssertCurrentSchemaId(0), {"type": "assert-current-schema-id", "current-schema-id": 0}),
    (
        AssertLastAssignedPartitionId(1000),
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
    ),
    (AssertDefaultSpecId(0), {"type": "assert-default-spec-id", "default-spec-id": 0}),
    (AssertDefaultSortOrderId(0), {"type": "assert-default-sort-order-id", "default-sort-order-id": 0}),
]


@pytest.mark.parametrize(
    ("req", "expected"), REQUIREMENTS, ids=[r.type + str(i) for i, (r, _) in enumerate(REQUIREMENTS)]
)
def test_requirement_json(req: TableRequirement, expected: dict[str, object]) -> None:
    assert req.to_json() == expected
    assert requirement_from_json(expected) == req


def test_requirements_hold_on_the_table() -> None:
    m = table()
    for req in [
        AssertTableUUID(m.table_uuid),
        AssertRefSnapshotId(MAIN_BRANCH, 10),
        AssertRefSnapshotId("dev", None),
        AssertLastAssignedFieldId(2),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(1000),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(0),
    ]:
        req.validate(m)
    AssertCreate().validate(None)


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (AssertCreate(), "already exists"),
        (AssertTableUUID(U), "table uuid is"),
        (AssertRefSnapshotId(MAIN_BRANCH, 9), "branch main is at snapshot 10, expected 9"),
        (AssertRefSnapshotId(MAIN_BRANCH, None), "branch main was created concurrently"),
        (AssertRefSnapshotId("dev", 10), "branch dev is missing"),
        (AssertLastAssignedFieldId(1), "last assigned field id is 2, expected 1"),
        (AssertCurrentSchemaId(1), "current schema id is 0, expected 1"),
        (AssertLastAssignedPartitionId(999), "last assigned partition id is 1000, expected 999"),
        (AssertDefaultSpecId(1), "default partition spec id is 0, expected 1"),
        (AssertDefaultSortOrderId(1), "default sort order id is 0, expected 1"),
    ],
)
def test_requirement_failures_say_what_moved(req: TableRequirement, message: str) -> None:
    with pytest.raises(CommitFailedError, match=message) as exc:
        req.validate(table())
    assert exc.value.retryable


def test_tag_moved_message() -> None:
    m = table()
    b = TableMetadataBuilder.from_metadata(m)
    b.set_ref("v1", SnapshotRef(10, SnapshotRefType.TAG))
    with pytest.raises(CommitFailedError, match="tag v1 is at snapshot 10, expected 3"):
        AssertRefSnapshotId("v1", 3).validate(b.build())


def test_requirements_on_missing_table() -> None:
    with pytest.raises(CommitFailedError, match="does not exist"):
        AssertCurrentSchemaId(0).validate(None)


def test_apply_updates_commits() -> None:
    m = table()
    snap = Snapshot(11, 10, 2, m.last_updated_ms + 5, "/t/metadata/snap-11.avro", Summary(Operation.APPEND))
    out = apply_updates(
        m,
        [AddSnapshot(snap), SetSnapshotRef(MAIN_BRANCH, SnapshotRef(11)), SetProperties({"k": "v"})],
        "/t/v2.json",
    )
    assert out.current_snapshot_id == 11 and out.properties["k"] == "v"
    assert out.metadata_log[-1].metadata_file == "/t/v2.json"


def test_bad_json() -> None:
    with pytest.raises(ValidationError, match="unknown table update action"):
        update_from_json({"action": "frobnicate"})
    with pytest.raises(ValidationError, match="missing 'schema-id'"):
        update_from_json({"action": "set-current-schema"})
    with pytest.raises(ValidationError, match="unknown table requirement"):
        requirement_from_json({"type": "assert-nothing"})
    with pytest.raises(ValidationError):
        update_from_json({"action": "add-spec", "spec": {"spec-id": 0, "fields": [{"transform": "weekly"}]}})
