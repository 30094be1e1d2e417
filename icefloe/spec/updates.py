"""A commit's two halves: requirements (what must still hold) and updates (what to change).

The JSON forms are the REST catalog spec's (``{"action": "add-snapshot", ...}`` and
``{"type": "assert-ref-snapshot-id", ...}``), so the same objects serve local catalogs and REST.
A catalog commits by checking every requirement against the table's current metadata
(:meth:`TableRequirement.validate`, raising the retryable :class:`CommitFailedError`) and then
replaying the updates on it (:func:`apply_updates`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from icefloe.errors import CommitFailedError, IcefloeError, ValidationError
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import Snapshot, SnapshotRef, SnapshotRefType
from icefloe.spec.sort_order import SortOrder

if TYPE_CHECKING:
    from icefloe.spec.metadata_builder import TableMetadataBuilder
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "AssignUUID",
    "MetadataUpdate",
    "RemoveProperties",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetProperties",
    "SetSnapshotRef",
    "TableRequirement",
    "UpgradeFormatVersion",
    "apply_updates",
    "requirement_from_json",
    "update_from_json",
]


def _get(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in obj:
        raise ValidationError(f"{what} is missing {key!r}: {dict(obj)}")
    return obj[key]


# ---------------------------------------------------------------------------------------------
# updates


class MetadataUpdate:
    """One change to table metadata."""

    action: ClassVar[str]

    def apply(self, builder: TableMetadataBuilder) -> None:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, **self._body()}

    def _body(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class AssignUUID(MetadataUpdate):
    uuid: uuid.UUID
    action: ClassVar[str] = "assign-uuid"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.assign_uuid(self.uuid)

    def _body(self) -> dict[str, Any]:
        return {"uuid": str(self.uuid)}


@dataclass(frozen=True)
class UpgradeFormatVersion(MetadataUpdate):
    format_version: int
    action: ClassVar[str] = "upgrade-format-version"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.upgrade_format_version(self.format_version)

    def _body(self) -> dict[str, Any]:
        return {"format-version": self.format_version}


@dataclass(frozen=True)
class AddSchema(MetadataUpdate):
    schema: Schema
    last_column_id: int | None = None
    action: ClassVar[str] = "add-schema"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.add_schema(self.schema, self.last_column_id)

    def _body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.schema.to_json()}
        if self.last_column_id is not None:
            out["last-column-id"] = self.last_column_id
        return out


@dataclass(frozen=True)
class SetCurrentSchema(MetadataUpdate):
    schema_id: int
    """-1 means the schema added last in the same commit."""
    action: ClassVar[str] = "set-current-schema"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.set_current_schema(self.schema_id)

    def _body(self) -> dict[str, Any]:
        return {"schema-id": self.schema_id}


@dataclass(frozen=True)
class AddPartitionSpec(MetadataUpdate):
    spec: PartitionSpec
    action: ClassVar[str] = "add-spec"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.add_partition_spec(self.spec)

    def _body(self) -> dict[str, Any]:
        return {"spec": self.spec.to_json()}


@dataclass(frozen=True)
class SetDefaultSpec(MetadataUpdate):
    spec_id: int
    action: ClassVar[str] = "set-default-spec"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.set_default_spec(self.spec_id)

    def _body(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id}


@dataclass(frozen=True)
class AddSortOrder(MetadataUpdate):
    sort_order: SortOrder
    action: ClassVar[str] = "add-sort-order"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.add_sort_order(self.sort_order)

    def _body(self) -> dict[str, Any]:
        return {"sort-order": self.sort_order.to_json()}


@dataclass(frozen=True)
class SetDefaultSortOrder(MetadataUpdate):
    sort_order_id: int
    action: ClassVar[str] = "set-default-sort-order"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.set_default_sort_order(self.sort_order_id)

    def _body(self) -> dict[str, Any]:
        return {"sort-order-id": self.sort_order_id}


@dataclass(frozen=True)
class AddSnapshot(MetadataUpdate):
    snapshot: Snapshot
    action: ClassVar[str] = "add-snapshot"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.add_snapshot(self.snapshot)

    def _body(self) -> dict[str, Any]:
        # REST always carries the v2+ form; a v1 table just has sequence number 0.
        return {"snapshot": self.snapshot.to_json(format_version=3)}


@dataclass(frozen=True)
class SetSnapshotRef(MetadataUpdate):
    ref_name: str
    ref: SnapshotRef
    action: ClassVar[str] = "set-snapshot-ref"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.set_ref(self.ref_name, self.ref)

    def _body(self) -> dict[str, Any]:
        return {"ref-name": self.ref_name, **self.ref.to_json()}


@dataclass(frozen=True)
class RemoveSnapshots(MetadataUpdate):
    snapshot_ids: Sequence[int]
    action: ClassVar[str] = "remove-snapshots"

    def __post_init__(self) -> None:
        object.__setattr__(self, "snapshot_ids", tuple(self.snapshot_ids))

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.remove_snapshots(self.snapshot_ids)

    def _body(self) -> dict[str, Any]:
        return {"snapshot-ids": list(self.snapshot_ids)}


@dataclass(frozen=True)
class RemoveSnapshotRef(MetadataUpdate):
    ref_name: str
    action: ClassVar[str] = "remove-snapshot-ref"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.remove_ref(self.ref_name)

    def _body(self) -> dict[str, Any]:
        return {"ref-name": self.ref_name}


@dataclass(frozen=True)
class SetProperties(MetadataUpdate):
    updates: Mapping[str, str] = field(hash=False)
    action: ClassVar[str] = "set-properties"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.set_properties(self.updates)

    def _body(self) -> dict[str, Any]:
        return {"updates": dict(self.updates)}


@dataclass(frozen=True)
class RemoveProperties(MetadataUpdate):
    removals: Sequence[str]
    action: ClassVar[str] = "remove-properties"

    def __post_init__(self) -> None:
        object.__setattr__(self, "removals", tuple(self.removals))

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.remove_properties(self.removals)

    def _body(self) -> dict[str, Any]:
        return {"removals": list(self.removals)}


@dataclass(frozen=True)
class SetLocation(MetadataUpdate):
    location: str
    action: ClassVar[str] = "set-location"

    def apply(self, builder: TableMetadataBuilder) -> None:
        builder.set_location(self.location)

    def _body(self) -> dict[str, Any]:
        return {"location": self.location}


def update_from_json(obj: Mapping[str, Any]) -> MetadataUpdate:
    """Parse one REST ``TableUpdate`` object."""
    action = obj.get("action") if isinstance(obj, Mapping) else None
    what = f"{action} update"
    try:
        if action == "assign-uuid":
            return AssignUUID(uuid.UUID(str(_get(obj, "uuid", what))))
        if action == "upgrade-format-version":
            return UpgradeFormatVersion(int(_get(obj, "format-version", what)))
        if action == "add-schema":
            last = obj.get("last-column-id")
            return AddSchema(
                Schema.from_json(_get(obj, "schema", what)), int(last) if last is not None else None
            )
        if action == "set-current-schema":
            return SetCurrentSchema(int(_get(obj, "schema-id", what)))
        if action == "add-spec":
            return AddPartitionSpec(PartitionSpec.from_json(_get(obj, "spec", what)))
        if action == "set-default-spec":
            return SetDefaultSpec(int(_get(obj, "spec-id", what)))
        if action == "add-sort-order":
            return AddSortOrder(SortOrder.from_json(_get(obj, "sort-order", what)))
        if action == "set-default-sort-order":
            return SetDefaultSortOrder(int(_get(obj, "sort-order-id", what)))
        if action == "add-snapshot":
            return AddSnapshot(Snapshot.from_json(_get(obj, "snapshot", what), format_version=3))
        if action == "set-snapshot-ref":
            return SetSnapshotRef(str(_get(obj, "ref-name", what)), SnapshotRef.from_json(obj))
        if action == "remove-snapshots":
            return RemoveSnapshots(tuple(int(i) for i in _get(obj, "snapshot-ids", what)))
        if action == "remove-snapshot-ref":
            return RemoveSnapshotRef(str(_get(obj, "ref-name", what)))
        if action == "set-properties":
            return SetProperties({str(k): str(v) for k, v in _get(obj, "updates", what).items()})
        if action == "remove-properties":
            return RemoveProperties(tuple(str(k) for k in _get(obj, "removals", what)))
        if action == "set-location":
            return SetLocation(str(_get(obj, "location", what)))
    except ValidationError:
        raise
    except IcefloeError as e:
        raise ValidationError(f"invalid {what}: {e.message}") from None
    except (TypeError, ValueError, AttributeError) as e:
        raise ValidationError(f"invalid {what}: {e}") from None
    raise ValidationError(f"unknown table update action {action!r}")


def apply_updates(
    base: TableMetadata | None, updates: Sequence[MetadataUpdate], current_location: str | None = None
) -> TableMetadata:
    """Replay ``updates`` on ``base`` (``None`` for a table being created) and build the result."""
    from icefloe.spec.metadata_builder import TableMetadataBuilder

    if base is None:
        builder = TableMetadataBuilder.empty()
    else:
        builder = TableMetadataBuilder.from_metadata(base, current_location)
    for update in updates:
        update.apply(builder)
    return builder.build()


# ---------------------------------------------------------------------------------------------
# requirements


class TableRequirement:
    """A fact about the table that a commit relies on."""

    type: ClassVar[str]

    def validate(self, metadata: TableMetadata | None) -> None:
        """Raise :class:`CommitFailedError` unless the requirement holds for ``metadata`` (``None``
        when the table does not exist)."""
        if metadata is None:
            raise CommitFailedError(f"requirement {self.type} failed: the table does not exist")
        self._check(metadata)

    def _check(self, metadata: TableMetadata) -> None:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self._body()}

    def _body(self) -> dict[str, Any]:
        return {}


def _moved(what: str, actual: object, expected: object) -> CommitFailedError:
    return CommitFailedError(
        f"{what} is {actual}, expected {expected}: the table changed concurrently",
        hint="refresh the table and retry the operation",
    )


@dataclass(frozen=True)
class AssertCreate(TableRequirement):
    type: ClassVar[str] = "assert-create"

    def validate(self, metadata: TableMetadata | None) -> None:
        if metadata is not None:
            raise CommitFailedError("requirement assert-create failed: the table already exists")


@dataclass(frozen=True)
class AssertTableUUID(TableRequirement):
    uuid: uuid.UUID | None
    """``None`` only for old v1 tables that have no uuid."""
    type: ClassVar[str] = "assert-table-uuid"

    def _check(self, metadata: TableMetadata) -> None:
        if metadata.table_uuid != self.uuid:
            raise CommitFailedError(
                f"table uuid is {metadata.table_uuid}, expected {self.uuid}: the table was replaced",
                hint="reload the table",
            )

    def _body(self) -> dict[str, Any]:
        return {"uuid": str(self.uuid) if self.uuid is not None else None}


@dataclass(frozen=True)
class AssertRefSnapshotId(TableRequirement):
    """Branch or tag ``ref`` is at ``snapshot_id`` (``None``: the ref must not exist)."""

    ref: str
    snapshot_id: int | None
    type: ClassVar[str] = "assert-ref-snapshot-id"

    def _check(self, metadata: TableMetadata) -> None:
        current = metadata.refs.get(self.ref)
        if current is None and self.snapshot_id is None:
            return
        kind = "tag" if current is not None and current.ref_type is SnapshotRefType.TAG else "branch"
        if current is None:
            raise CommitFailedError(
                f"{kind} {self.ref} is missing, expected it at snapshot {self.snapshot_id}: "
                "it was removed concurrently",
                hint="refresh the table and retry the operation",
            )
        if self.snapshot_id is None:
            raise CommitFailedError(
                f"{kind} {self.ref} was created concurrently (at snapshot {current.snapshot_id})",
                hint="refresh the table and retry the operation",
            )
        if current.snapshot_id != self.snapshot_id:
            raise _moved(f"{kind} {self.ref}", f"at snapshot {current.snapshot_id}", self.snapshot_id)

    def _body(self) -> dict[str, Any]:
        return {"ref": self.ref, "snapshot-id": self.snapshot_id}


@dataclass(frozen=True)
class AssertLastAssignedFieldId(TableRequirement):
    last_assigned_field_id: int
    type: ClassVar[str] = "assert-last-assigned-field-id"

    def _check(self, metadata: TableMetadata) -> None:
        if metadata.last_column_id != self.last_assigned_field_id:
            raise _moved("last assigned field id", metadata.last_column_id, self.last_assigned_field_id)

    def _body(self) -> dict[str, Any]:
        return {"last-assigned-field-id": self.last_assigned_field_id}


@dataclass(frozen=True)
class AssertCurrentSchemaId(TableRequirement):
    current_schema_id: int
    type: ClassVar[str] = "assert-current-schema-id"

    def _check(self, metadata: TableMetadata) -> None:
        if metadata.current_schema_id != self.current_schema_id:
            raise _moved("current schema id", metadata.current_schema_id, self.current_schema_id)

    def _body(self) -> dict[str, Any]:
        return {"current-schema-id": self.current_schema_id}


@dataclass(frozen=True)
class AssertLastAssignedPartitionId(TableRequirement):
    last_assigned_partition_id: int
    type: ClassVar[str] = "assert-last-assigned-partition-id"

    def _check(self, metadata: TableMetadata) -> None:
        if metadata.last_partition_id != self.last_assigned_partition_id:
            raise _moved(
                "last assigned partition id", metadata.last_partition_id, self.last_assigned_partition_id
            )

    def _body(self) -> dict[str, Any]:
        return {"last-assigned-partition-id": self.last_assigned_partition_id}


@dataclass(frozen=True)
class AssertDefaultSpecId(TableRequirement):
    default_spec_id: int
    type: ClassVar[str] = "assert-default-spec-id"

    def _check(self, metadata: TableMetadata) -> None:
        if metadata.default_spec_id != self.default_spec_id:
            raise _moved("default partition spec id", metadata.default_spec_id, self.default_spec_id)

    def _body(self) -> dict[str, Any]:
        return {"default-spec-id": self.default_spec_id}


@dataclass(frozen=True)
class AssertDefaultSortOrderId(TableRequirement):
    default_sort_order_id: int
    type: ClassVar[str] = "assert-default-sort-order-id"

    def _check(self, metadata: TableMetadata) -> None:
        if metadata.default_sort_order_id != self.default_sort_order_id:
            raise _moved("default sort order id", metadata.default_sort_order_id, self.default_sort_order_id)

    def _body(self) -> dict[str, Any]:
        return {"default-sort-order-id": self.default_sort_order_id}


def requirement_from_json(obj: Mapping[str, Any]) -> TableRequirement:
    """Parse one REST ``TableRequirement`` object."""
    kind = obj.get("type") if isinstance(obj, Mapping) else None
    what = f"{kind} requirement"
    try:
        if kind == "assert-create":
            return AssertCreate()
        if kind == "assert-table-uuid":
            u = _get(obj, "uuid", what)
            return AssertTableUUID(uuid.UUID(str(u)) if u is not None else None)
        if kind == "assert-ref-snapshot-id":
            sid = obj.get("snapshot-id")
            return AssertRefSnapshotId(str(_get(obj, "ref", what)), int(sid) if sid is not None else None)
        if kind == "assert-last-assigned-field-id":
            return AssertLastAssignedFieldId(int(_get(obj, "last-assigned-field-id", what)))
        if kind == "assert-current-schema-id":
            return AssertCurrentSchemaId(int(_get(obj, "current-schema-id", what)))
        if kind == "assert-last-assigned-partition-id":
            return AssertLastAssignedPartitionId(int(_get(obj, "last-assigned-partition-id", what)))
        if kind == "assert-default-spec-id":
            return AssertDefaultSpecId(int(_get(obj, "default-spec-id", what)))
        if kind == "assert-default-sort-order-id":
            return AssertDefaultSortOrderId(int(_get(obj, "default-sort-order-id", what)))
    except ValidationError:
        raise
    except (TypeError, ValueError) as e:
        raise ValidationError(f"invalid {what}: {e}") from None
    raise ValidationError(f"unknown table requirement type {kind!r}")
