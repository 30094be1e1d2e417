"""Sort orders and snapshots: JSON forms and their checks."""

from __future__ import annotations

import pytest

from icefloe.errors import InvalidMetadataError, SortOrderError, UnsupportedFeatureError, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import (
    MetadataLogEntry,
    Operation,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    Summary,
)
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.types import BooleanType, LongType, NestedField, StructType
from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform


def test_sort_order_json() -> None:
    order = SortOrder(
        1,
        [
            SortField(1, IdentityTransform()),
            SortField(2, BucketTransform(4), SortDirection.DESC),
            SortField(1, DayTransform(), SortDirection.ASC, NullOrder.NULLS_LAST),
        ],
    )
    obj = order.to_json()
    assert obj["fields"][1] == {
        "transform": "bucket[4]",
        "source-id": 2,
        "direction": "desc",
        "null-order": "nulls-last",
    }
    assert obj["fields"][0]["null-order"] == "nulls-first"
    assert SortOrder.from_json(obj) == order
    assert SortOrder.from_json({"order-id": 0, "fields": []}) == UNSORTED_SORT_ORDER


def test_sort_order_rules() -> None:
    with pytest.raises(SortOrderError, match="reserved"):
        SortOrder(0, [SortField(1, IdentityTransform())])
    with pytest.raises(SortOrderError, match="no fields"):
        SortOrder(3, [])
    with pytest.raises(SortOrderError):
        SortOrder.from_json(
            {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1, "direction": "up"}]}
        )
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "flag", BooleanType()),
        NestedField(3, "st", StructType(NestedField(4, "x", LongType()))),
    )
    SortOrder(1, [SortField(4, IdentityTransform())]).check_compatible(schema)
    for bad in (
        SortField(9, IdentityTransform()),
        SortField(2, BucketTransform(2)),
        SortField(3, IdentityTransform()),
    ):
        with pytest.raises(SortOrderError):
            SortOrder(1, [bad]).check_compatible(schema)


def test_snapshot_json_by_version() -> None:
    s = Snapshot(
        5, 4, 9, 1000, "/snap.avro", Summary(Operation.OVERWRITE, {"a": "b"}), 1, first_row_id=3, added_rows=2
    )
    v2 = s.to_json(2)
    assert list(v2) == [
        "sequence-number",
        "snapshot-id",
        "parent-snapshot-id",
        "timestamp-ms",
        "summary",
        "manifest-list",
        "schema-id",
    ]
    assert v2["summary"] == {"operation": "overwrite", "a": "b"}
    assert "sequence-number" not in s.to_json(1)
    assert s.to_json(3)["first-row-id"] == 3
    assert Snapshot.from_json(s.to_json(3), 3) == s
    assert s.summary.get("a") == "b" and s.summary.properties == {"a": "b"}


def test_snapshot_json_errors() -> None:
    with pytest.raises(InvalidMetadataError, match="sequence-number"):
        Snapshot.from_json(
            {"snapshot-id": 1, "timestamp-ms": 1, "manifest-list": "x", "summary": {"operation": "append"}}
        )
    with pytest.raises(InvalidMetadataError, match="must be an integer"):
        Snapshot.from_json({"snapshot-id": "1", "timestamp-ms": 1, "manifest-list": "x"}, 1)
    with pytest.raises(InvalidMetadataError, match="manifest-list"):
        Snapshot.from_json({"snapshot-id": 1, "timestamp-ms": 1}, 1)
    with pytest.raises(UnsupportedFeatureError, match="inline"):
        Snapshot.from_json({"snapshot-id": 1, "timestamp-ms": 1, "manifests": ["/a.avro"]}, 1)


def test_refs_and_logs() -> None:
    ref = SnapshotRef(3, SnapshotRefType.BRANCH, 1, 2, 3)
    assert SnapshotRef.from_json(ref.to_json()) == ref
    assert SnapshotRef(3).to_json() == {"snapshot-id": 3, "type": "branch"}
    with pytest.raises(ValidationError):
        SnapshotRef(3, SnapshotRefType.TAG, max_snapshot_age_ms=5)
    with pytest.raises(ValidationError):
        SnapshotRef(3, max_ref_age_ms=0)
    assert SnapshotLogEntry.from_json({"timestamp-ms": 1, "snapshot-id": 2}) == SnapshotLogEntry(1, 2)
    assert MetadataLogEntry.from_json(MetadataLogEntry(1, "/m.json").to_json()) == MetadataLogEntry(
        1, "/m.json"
    )
    with pytest.raises(InvalidMetadataError):
        MetadataLogEntry.from_json({"timestamp-ms": 1})
