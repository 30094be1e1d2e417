"""Table metadata JSON: Java's files read and written back byte for byte, v1 legacy forms, the
spec's invariants (one broken-metadata case per rule), time travel, and Hypothesis round trips."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import InvalidMetadataError, NoSuchSnapshotError, UnsupportedFeatureError
from icefloe.spec.metadata_builder import TableMetadataBuilder
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import MAIN_BRANCH, Operation, Snapshot, SnapshotRef, SnapshotRefType, Summary
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.table_metadata import TableMetadata, read_metadata_json, write_metadata_json
from icefloe.spec.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform

from .conftest import java_metadata_files

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"


def v2_doc() -> dict[str, Any]:
    """A valid v2 metadata document with two snapshots, a branch and a tag."""
    return {
        "format-version": 2,
        "table-uuid": UUID,
        "location": "s3://bucket/t",
        "last-sequence-number": 2,
        "last-updated-ms": 1_700_000_002_000,
        "last-column-id": 3,
        "current-schema-id": 0,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [
                    {"id": 1, "name": "id", "required": True, "type": "long"},
                    {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
                    {"id": 3, "name": "s", "required": False, "type": "string"},
                ],
            }
        ],
        "default-spec-id": 0,
        "partition-specs": [
            {
                "spec-id": 0,
                "fields": [{"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}],
            }
        ],
        "last-partition-id": 1000,
        "default-sort-order-id": 1,
        "sort-orders": [
            {"order-id": 0, "fields": []},
            {
                "order-id": 1,
                "fields": [
                    {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}
                ],
            },
        ],
        "properties": {"owner": "me"},
        "current-snapshot-id": 2,
        "refs": {"main": {"snapshot-id": 2, "type": "branch"}, "t1": {"snapshot-id": 1, "type": "tag"}},
        "snapshots": [
            {
                "sequence-number": 1,
                "snapshot-id": 1,
                "timestamp-ms": 1_700_000_001_000,
                "summary": {"operation": "append", "added-data-files": "1"},
                "manifest-list": "s3://bucket/t/metadata/snap-1.avro",
                "schema-id": 0,
            },
            {
                "sequence-number": 2,
                "snapshot-id": 2,
                "parent-snapshot-id": 1,
                "timestamp-ms": 1_700_000_002_000,
                "summary": {"operation": "overwrite"},
                "manifest-list": "s3://bucket/t/metadata/snap-2.avro",
                "schema-id": 0,
            },
        ],
        "statistics": [],
        "partition-statistics": [],
        "snapshot-log": [
            {"timestamp-ms": 1_700_000_001_000, "snapshot-id": 1},
            {"timestamp-ms": 1_700_000_002_000, "snapshot-id": 2},
        ],
        "metadata-log": [
            {
                "timestamp-ms": 1_700_000_000_000,
                "metadata-file": "s3://bucket/t/metadata/00000-a.metadata.json",
            }
        ],
    }


def read(doc: dict[str, Any]) -> TableMetadata:
    return read_metadata_json(json.dumps(doc))


# ------------------------------------------------------------------ golden: Iceberg Java 1.10


def test_java_metadata_round_trips_byte_for_byte(oracle_ref: Path) -> None:
    files = java_metadata_files()
    for path in files:
        text = path.read_text()
        metadata = read_metadata_json(text)
        assert write_metadata_json(metadata) == text, path
        assert read_metadata_json(write_metadata_json(metadata)) == metadata, path


def test_java_v1_table_facts(oracle_ref: Path) -> None:
    files = sorted(
        (oracle_ref / "simple_v1" / "metadata").glob("v*.metadata.json"), key=lambda p: len(p.name)
    )
    first, last = read_metadata_json(files[0].read_text()), read_metadata_json(files[-1].read_text())
    assert first.format_version == 1 and first.current_snapshot() is None and first.refs == {}
    assert first.last_sequence_number == 0 and first.next_sequence_number() == 0
    assert first.spec().fields[0].field_id == 1000 and first.last_partition_id == 1000
    snap = last.current_snapshot()
    assert snap is not None and snap.sequence_number == 0 and snap.operation is Operation.OVERWRITE
    assert last.refs[MAIN_BRANCH] == SnapshotRef(snap.snapshot_id)
    assert snap.parent_snapshot_id is not None
    parent = last.snapshot_by_id(snap.parent_snapshot_id)
    log = last.snapshot_log
    assert last.snapshot_as_of(log[0].timestamp_ms) == parent
    assert last.snapshot_as_of(log[1].timestamp_ms - 1) == parent
    assert last.snapshot_as_of(log[1].timestamp_ms + 10**9) == snap
    with pytest.raises(NoSuchSnapshotError, match="no snapshot") as exc:
        last.snapshot_as_of(log[0].timestamp_ms - 1)
    assert exc.value.hint is not None and str(log[0].timestamp_ms) in exc.value.hint


def test_java_refs_and_evolution_facts(oracle_ref: Path) -> None:
    def latest(table: str) -> TableMetadata:
        files = sorted(
            (oracle_ref / table / "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:-14])
        )
        return read_metadata_json(files[-1].read_text())

    refs = latest("snapshots_refs")
    assert refs.refs["tag_first"].ref_type is SnapshotRefType.TAG
    assert refs.refs["dev"].is_branch
    assert refs.snapshot_for_ref("dev").snapshot_id == refs.refs["dev"].snapshot_id
    assert refs.snapshot_for_ref(MAIN_BRANCH) == refs.current_snapshot()
    with pytest.raises(NoSuchSnapshotError, match="no branch or tag named 'nope'"):
        refs.snapshot_for_ref("nope")
    assert refs.next_sequence_number() == refs.last_sequence_number + 1

    evo = latest("partition_evolution")
    assert [s.spec_id for s in evo.partition_specs] == [0, 1, 2]
    assert evo.spec().spec_id == 2 and evo.last_partition_id == 1002
    assert [str(f.transform) for f in evo.spec_by_id(0).fields] == ["day"]

    schema_evo = latest("schema_evolution")
    assert len(schema_evo.schemas) > 1
    assert schema_evo.schema().schema_id == schema_evo.current_schema_id
    assert schema_evo.last_column_id >= max(s.highest_field_id for s in schema_evo.schemas)

    v3 = latest("mor_v3_dv")
    assert v3.format_version == 3 and v3.next_row_id is not None and v3.next_row_id > 0
    assert all(s.first_row_id is not None for s in v3.snapshots)


# ------------------------------------------------------------------ v2 and v1 forms


def test_v2_document_round_trip() -> None:
    doc = v2_doc()
    m = read(doc)
    assert json.loads(write_metadata_json(m)) == doc
    assert m.table_uuid == uuid.UUID(UUID)
    assert m.sort_order().fields == (
        SortField(1, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
    )
    assert m.current_snapshot() == m.snapshot_by_id(2)
    assert [s.snapshot_id for s in m.ancestors(2)] == [2, 1]
    assert m.snapshot_by_id(1).summary["added-data-files"] == "1"


def test_v2_without_snapshots_writes_minus_one() -> None:
    doc = v2_doc()
    for key in ("refs", "snapshots", "snapshot-log"):
        doc[key] = {} if key == "refs" else []
    doc["current-snapshot-id"] = None
    m = read(doc)
    assert m.current_snapshot_id is None and m.current_snapshot() is None
    assert json.loads(write_metadata_json(m))["current-snapshot-id"] == -1


def test_legacy_v1_document() -> None:
    doc = {
        "format-version": 1,
        "location": "/tmp/t",
        "last-updated-ms": 1_600_000_000_000,
        "last-column-id": 2,
        "schema": {
            "type": "struct",
            "fields": [
                {"id": 1, "name": "id", "required": True, "type": "int"},
                {"id": 2, "name": "data", "required": False, "type": "string"},
            ],
        },
        "partition-spec": [{"name": "data", "transform": "identity", "source-id": 2}],
        "properties": {},
        "current-snapshot-id": 7,
        "snapshots": [
            {
                "snapshot-id": 7,
                "timestamp-ms": 1_600_000_000_000,
                "manifest-list": "/tmp/t/metadata/snap-7.avro",
            }
        ],
    }
    m = read(doc)
    assert m.format_version == 1 and m.table_uuid is None
    assert m.last_sequence_number == 0 and m.snapshot_by_id(7).sequence_number == 0
    assert m.snapshot_by_id(7).operation is Operation.APPEND
    assert m.spec() == PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "data"))
    assert m.last_partition_id == 1000
    assert m.sort_order() == UNSORTED_SORT_ORDER
    assert m.refs == {MAIN_BRANCH: SnapshotRef(7)}
    out = json.loads(write_metadata_json(m))
    assert out["schema"]["fields"] == doc["schema"]["fields"]  # type: ignore[index]
    assert out["partition-spec"] == [
        {"name": "data", "transform": "identity", "source-id": 2, "field-id": 1000}
    ]
    assert "last-sequence-number" not in out and "sequence-number" not in out["snapshots"][0]
    assert read_metadata_json(write_metadata_json(m)) == m


def test_v3_fields_are_kept() -> None:
    doc = v2_doc()
    doc["format-version"] = 3
    doc["next-row-id"] = 30
    for i, snap in enumerate(doc["snapshots"]):
        snap["first-row-id"], snap["added-rows"] = 10 * i, 10
    m = read(doc)
    assert m.next_row_id == 30 and m.snapshot_by_id(2).first_row_id == 10
    assert json.loads(write_metadata_json(m)) == doc


# ------------------------------------------------------------------ broken metadata, one per rule


def _broken(**changes: Any) -> Any:
    def apply(doc: dict[str, Any]) -> None:
        for path, value in changes.items():
            *parents, last = path.split("__")
            target: Any = doc
            for p in parents:
                target = target[int(p)] if p.isdigit() else target[p.replace("_", "-")]
            if value is _DELETE:
                del target[last.replace("_", "-")]
            else:
                target[int(last) if last.isdigit() else last.replace("_", "-")] = value

    return apply


_DELETE = object()

BROKEN: dict[str, Any] = {
    "current_snapshot_id_disagrees_with_main_ref": _broken(current_snapshot_id=1),
    "main_ref_without_current_snapshot": _broken(current_snapshot_id=-1),
    "ref_points_at_unknown_snapshot": _broken(refs__t1={"snapshot-id": 99, "type": "tag"}),
    "current_snapshot_is_unknown": _broken(
        current_snapshot_id=99, refs__main={"snapshot-id": 99, "type": "branch"}
    ),
    "main_ref_is_a_tag": _broken(refs__main={"snapshot-id": 2, "type": "tag"}),
    "current_schema_id_unknown": _broken(current_schema_id=5),
    "default_spec_id_unknown": _broken(default_spec_id=5),
    "default_sort_order_id_unknown": _broken(default_sort_order_id=5),
    "sequence_number_above_last_sequence_number": _broken(last_sequence_number=1),
    "sequence_number_not_increasing_along_parent_chain": _broken(snapshots__1__sequence_number=1),
    "last_column_id_below_highest_field_id": _broken(last_column_id=2),
    "last_partition_id_below_highest_partition_field_id": _broken(last_partition_id=999),
    "duplicate_snapshot_id": _broken(snapshots__1__snapshot_id=1),
    "duplicate_schema_id": lambda d: d["schemas"].append(copy.deepcopy(d["schemas"][0])),
    "missing_table_uuid_in_v2": _broken(table_uuid=_DELETE),
    "missing_last_sequence_number_in_v2": _broken(last_sequence_number=_DELETE),
    "missing_schemas_in_v2": _broken(schemas=_DELETE),
    "missing_sort_orders_in_v2": _broken(sort_orders=_DELETE),
    "snapshot_without_summary_in_v2": _broken(snapshots__0__summary=_DELETE),
    "snapshot_without_manifest_list_in_v2": _broken(snapshots__0__manifest_list=_DELETE),
    "unknown_snapshot_operation": _broken(snapshots__0__summary={"operation": "merge"}),
    "unknown_ref_type": _broken(refs__t1={"snapshot-id": 1, "type": "label"}),
    "tag_with_min_snapshots_to_keep": _broken(
        refs__t1={"snapshot-id": 1, "type": "tag", "min-snapshots-to-keep": 1}
    ),
    "last_updated_before_snapshot_log": _broken(last_updated_ms=1_600_000_000_000),
    "snapshot_log_out_of_order": _broken(snapshot_log__0__timestamp_ms=1_800_000_000_000),
    "non_integer_last_column_id": _broken(last_column_id="3"),
    "invalid_table_uuid": _broken(table_uuid="nope"),
    "invalid_schema_type": _broken(schemas__0__fields__0__type="longer"),
    "invalid_partition_transform": _broken(partition_specs__0__fields__0__transform="weekly"),
    "format_version_zero": _broken(format_version=0),
    "missing_format_version": _broken(format_version=_DELETE),
}


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_broken_metadata_is_rejected(rule: str) -> None:
    doc = v2_doc()
    BROKEN[rule](doc)
    with pytest.raises(InvalidMetadataError):
        read(doc)


def test_broken_cases_start_from_valid_metadata() -> None:
    read(v2_doc())


def test_unknown_format_version_is_unsupported() -> None:
    doc = v2_doc()
    doc["format-version"] = 4
    with pytest.raises(UnsupportedFeatureError, match="format version 4"):
        read(doc)


def test_not_json() -> None:
    with pytest.raises(InvalidMetadataError, match="not valid JSON"):
        read_metadata_json("{nope")
    with pytest.raises(InvalidMetadataError, match="JSON object"):
        read_metadata_json("[]")


def test_snapshot_as_of_uses_main_history() -> None:
    m = read(v2_doc())
    assert m.snapshot_as_of(1_700_000_001_500).snapshot_id == 1
    assert m.snapshot_as_of(1_700_000_002_000).snapshot_id == 2
    with pytest.raises(NoSuchSnapshotError):
        m.snapshot_as_of(1_700_000_000_999)


# ------------------------------------------------------------------ Hypothesis round trip

_TYPES = [LongType(), IntegerType(), StringType(), DateType(), DoubleType(), TimestamptzType()]


@st.composite
def table_metadata(draw: st.DrawFn) -> TableMetadata:
    n = draw(st.integers(1, 5))
    types = draw(st.lists(st.sampled_from(_TYPES), min_size=n, max_size=n))
    schema = Schema(*(NestedField(i + 1, f"c{i}", t, draw(st.booleans())) for i, t in enumerate(types)))
    partition_fields = []
    for i, t in enumerate(types):
        choice = draw(st.sampled_from(["none", "identity", "bucket", "other"]))
        if choice == "identity":
            partition_fields.append(
                PartitionField(i + 1, 1000 + len(partition_fields), IdentityTransform(), f"c{i}")
            )
        elif choice == "bucket" and not isinstance(t, DoubleType):
            partition_fields.append(
                PartitionField(
                    i + 1,
                    1000 + len(partition_fields),
                    BucketTransform(draw(st.integers(1, 64))),
                    f"c{i}_bucket",
                )
            )
        elif choice == "other" and isinstance(t, StringType):
            partition_fields.append(
                PartitionField(i + 1, 1000 + len(partition_fields), TruncateTransform(4), f"c{i}_trunc")
            )
        elif choice == "other" and isinstance(t, DateType | TimestamptzType):
            partition_fields.append(
                PartitionField(i + 1, 1000 + len(partition_fields), DayTransform(), f"c{i}_day")
            )
    spec = PartitionSpec(*partition_fields)
    order = (
        SortOrder(1, [SortField(1, IdentityTransform(), draw(st.sampled_from(SortDirection)))])
        if draw(st.booleans())
        else UNSORTED_SORT_ORDER
    )
    props = draw(
        st.dictionaries(
            st.text(min_size=1, max_size=8).filter(lambda k: k != "format-version"),
            st.text(max_size=8),
            max_size=3,
        )
    )
    version = draw(st.sampled_from([1, 2]))
    b = TableMetadataBuilder.new_table(schema, spec, order, "s3://b/t", props, format_version=version)
    m = b.build()
    t0 = m.last_updated_ms
    parent: int | None = None
    ids = draw(st.lists(st.integers(1, 2**63 - 1), unique=True, max_size=4))
    for k, sid in enumerate(ids):
        b = TableMetadataBuilder.from_metadata(m, f"s3://b/t/metadata/{k:05d}.metadata.json")
        snap = Snapshot(
            sid,
            parent,
            m.next_sequence_number(),
            t0 + k + 1,
            f"s3://b/t/metadata/snap-{sid}.avro",
            Summary(draw(st.sampled_from(Operation)), {"k": str(k)}),
            m.current_schema_id,
        )
        b.add_snapshot(snap)
        if draw(st.booleans()):
            b.set_ref(
                f"tag{k}",
                SnapshotRef(sid, SnapshotRefType.TAG, max_ref_age_ms=draw(st.none() | st.integers(1, 10**9))),
            )
        b.set_branch_snapshot(sid)
        m = b.build()
        parent = sid
    return m


@given(table_metadata())
def test_metadata_json_round_trip(m: TableMetadata) -> None:
    text = write_metadata_json(m)
    back = read_metadata_json(text)
    assert back == m
    assert write_metadata_json(back) == text
