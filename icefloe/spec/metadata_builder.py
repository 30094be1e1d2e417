"""The only way to change table metadata: a builder that checks each change and records it.

A builder starts from a new table (:meth:`TableMetadataBuilder.new_table`), from an existing
table's metadata (:meth:`TableMetadataBuilder.from_metadata`) or from nothing
(:meth:`TableMetadataBuilder.empty`, for replaying a REST create-table request). Each change method
validates against the state so far and records a :class:`~icefloe.spec.updates.MetadataUpdate`
(``builder.updates``), so the same changes can be sent to a catalog and replayed there
(:func:`icefloe.spec.updates.apply_updates`). ``build()`` adds the bookkeeping (last-updated-ms,
metadata-log, snapshot-log) and returns a :class:`TableMetadata`, whose constructor checks the
spec's invariants.

As in Iceberg Java, ``-1`` passed to ``set_current_schema``/``set_default_spec``/
``set_default_sort_order`` means "the one added last in this builder".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.errors import (
    CommitFailedError,
    InvalidMetadataError,
    NoSuchSnapshotError,
    SchemaError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.properties import check_properties, int_property
from icefloe.spec.schema import Schema, assign_fresh_ids
from icefloe.spec.snapshot import (
    MAIN_BRANCH,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
)
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder
from icefloe.spec.table_metadata import WRITABLE_FORMAT_VERSIONS, TableMetadata
from icefloe.spec.types import IcebergType, TimestampNsType, TimestamptzNsType, UnknownType
from icefloe.spec.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
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
    UpgradeFormatVersion,
)

__all__ = ["RESERVED_PROPERTIES", "TableMetadataBuilder"]

LAST_ADDED = -1

RESERVED_PROPERTIES = frozenset(
    {
        "format-version",
        "uuid",
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)
"""Properties Java reports from metadata and never stores; setting them is an error."""

PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
_PREVIOUS_VERSIONS_MAX_DEFAULT = 100
_NEW_TABLE_DEFAULTS = {"write.parquet.compression-codec": "zstd"}
_FIRST_PARTITION_FIELD_ID = 1000
_NO_PARTITION_ID = 999
_CLOCK_SKEW_MS = 60_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _v3_only_feature(t: IcebergType) -> str | None:
    """What in type ``t`` needs format v3 (nanosecond timestamps, unknown, field defaults), or None."""
    if isinstance(t, TimestampNsType | TimestamptzNsType):
        return "nanosecond timestamps"
    if isinstance(t, UnknownType):
        return "the unknown type"
    for f in getattr(t, "fields", ()):
        if f.initial_default is not None or f.write_default is not None:
            return f"column defaults (field {f.name!r})"
        found = _v3_only_feature(f.field_type)
        if found is not None:
            return found
    return None


class TableMetadataBuilder:
    """Accumulates checked changes to table metadata; see the module docstring."""

    def __init__(self, base: TableMetadata | None, current_location: str | None, format_version: int) -> None:
        self._base = base
        self._current_location = current_location
        self.updates: list[MetadataUpdate] = []
        self._added_schema_ids: set[int] = set()
        self._added_spec_ids: set[int] = set()
        self._added_order_ids: set[int] = set()
        self._added_snapshot_ids: set[int] = set()
        self._last_added_schema_id: int | None = None
        self._last_added_spec_id: int | None = None
        self._last_added_order_id: int | None = None
        self._last_updated_ms: int | None = None
        if base is None:
            self.format_version = format_version
            self.table_uuid: uuid.UUID | None = None
            self.location: str | None = None
            self.last_sequence_number = 0
            self.last_column_id = 0
            self.schemas: dict[int, Schema] = {}
            self.current_schema_id = -1
            self.specs: dict[int, PartitionSpec] = {}
            self.default_spec_id = -1
            self.last_partition_id = _NO_PARTITION_ID
            self.sort_orders: dict[int, SortOrder] = {}
            self.default_sort_order_id = -1
            self.properties: dict[str, str] = {}
            self.current_snapshot_id: int | None = None
            self.snapshots: dict[int, Snapshot] = {}
            self.refs: dict[str, SnapshotRef] = {}
            self.snapshot_log: list[SnapshotLogEntry] = []
            self.metadata_log: list[MetadataLogEntry] = []
            self.statistics: list[Mapping[str, Any]] = []
            self.partition_statistics: list[Mapping[str, Any]] = []
            self.next_row_id: int | None = 0 if format_version >= 3 else None
        else:
            self.format_version = base.format_version
            self.table_uuid = base.table_uuid
            self.location = base.location
            self.last_sequence_number = base.last_sequence_number
            self.last_column_id = base.last_column_id
            self.schemas = {s.schema_id: s for s in base.schemas}
            self.current_schema_id = base.current_schema_id
            self.specs = {s.spec_id: s for s in base.partition_specs}
            self.default_spec_id = base.default_spec_id
            self.last_partition_id = base.last_partition_id
            self.sort_orders = {o.order_id: o for o in base.sort_orders}
            self.default_sort_order_id = base.default_sort_order_id
            self.properties = dict(base.properties)
            self.current_snapshot_id = base.current_snapshot_id
            self.snapshots = {s.snapshot_id: s for s in base.snapshots}
            self.refs = dict(base.refs)
            self.snapshot_log = list(base.snapshot_log)
            self.metadata_log = list(base.metadata_log)
            self.statistics = list(base.statistics)
            self.partition_statistics = list(base.partition_statistics)
            self.next_row_id = base.next_row_id

    # ------------------------------------------------------------------ starting points
    @classmethod
    def from_metadata(cls, base: TableMetadata, current_location: str | None = None) -> TableMetadataBuilder:
        """Changes to ``base``, whose metadata file is ``current_location`` (it goes into the
        metadata-log when the result is written)."""
        return cls(base, current_location, base.format_version)

    @classmethod
    def empty(cls, format_version: int = 2) -> TableMetadataBuilder:
        """A builder with nothing in it (REST create-table requests build tables from updates)."""
        _check_writable(format_version)
        return cls(None, None, format_version)

    @classmethod
    def new_table(
        cls,
        schema: Schema,
        spec: PartitionSpec,
        sort_order: SortOrder,
        location: str,
        properties: Mapping[str, str] | None = None,
        format_version: int = 2,
    ) -> TableMetadataBuilder:
        """A new table's metadata, ids assigned the way Iceberg Java's ``newTableMetadata`` does:
        column ids afresh from 1 (breadth-first), schema id 0, partition field ids from 1000 in spec
        order, spec id 0, sort order id 1 (0 when unsorted); spec and sort order columns are
        matched to the renumbered schema by name. A ``format-version`` property wins over the
        argument; reserved properties are dropped; Java's new-table defaults are added.
        Call :meth:`build` on the result."""
        props = dict(properties or {})
        if "format-version" in props:
            try:
                format_version = int(props["format-version"])
            except ValueError:
                raise ValidationError(
                    f"invalid format-version property {props['format-version']!r}"
                ) from None
        _check_writable(format_version)
        fresh = assign_fresh_ids(schema, 1).with_schema_id(0)

        def fresh_source(source_id: int, what: str) -> int:
            try:
                name = schema.column_name(source_id)
            except SchemaError:
                raise SchemaError(
                    f"{what} refers to column id {source_id}, which is not in the schema"
                ) from None
            return fresh.find_field(name).field_id

        fresh_spec = PartitionSpec(
            *(
                PartitionField(
                    fresh_source(f.source_id, f"partition field {f.name!r}"),
                    _FIRST_PARTITION_FIELD_ID + i,
                    f.transform,
                    f.name,
                )
                for i, f in enumerate(spec.fields)
            ),
            spec_id=0,
        )
        if sort_order.is_unsorted:
            fresh_order = UNSORTED_SORT_ORDER
        else:
            fresh_order = SortOrder(
                1,
                [
                    SortField(fresh_source(f.source_id, "sort field"), f.transform, f.direction, f.null_order)
                    for f in sort_order.fields
                ],
            )
        persisted = dict(_NEW_TABLE_DEFAULTS)
        persisted.update({k: v for k, v in props.items() if k not in RESERVED_PROPERTIES})

        b = cls(None, None, format_version)
        b.assign_uuid(uuid.uuid4())
        b.updates.append(UpgradeFormatVersion(format_version))
        b.add_schema(fresh)
        b.set_current_schema(LAST_ADDED)
        b.add_partition_spec(fresh_spec)
        b.set_default_spec(LAST_ADDED)
        b.add_sort_order(fresh_order)
        b.set_default_sort_order(LAST_ADDED)
        b.set_location(location)
        b.set_properties(persisted)
        return b

    # ------------------------------------------------------------------ schemas
    def _current_schema(self) -> Schema:
        if self.current_schema_id not in self.schemas and self._last_added_schema_id in self.schemas:
            # a table built from REST updates may set its current schema after adding its spec and
            # sort order (DuckDB sends set-current-schema last): check them against the new schema
            return self.schemas[self._last_added_schema_id]
        if self.current_schema_id not in self.schemas:
            raise ValidationError("the table has no current schema yet", hint="add and set a schema first")
        return self.schemas[self.current_schema_id]

    def add_schema(self, schema: Schema, last_column_id: int | None = None) -> TableMetadataBuilder:
        """Add ``schema`` (reusing the id of an identical schema if there is one)."""
        v3_only = _v3_only_feature(schema.as_struct()) if self.format_version < 3 else None
        if v3_only is not None:
            raise UnsupportedFeatureError(
                f"{v3_only}: only format version 3 tables hold them, this table is v{self.format_version}",
                hint="upgrade the table first: table.upgrade_format_version(3)",
            )
        new_last = max(self.last_column_id, schema.highest_field_id, last_column_id or 0)
        existing = next((sid for sid, s in self.schemas.items() if s == schema), None)
        if existing is not None:
            self._last_added_schema_id = existing
            self.last_column_id = new_last
            return self
        schema_id = max(self.schemas, default=-1) + 1
        added = schema.with_schema_id(schema_id)
        self.schemas[schema_id] = added
        self.last_column_id = new_last
        self._last_added_schema_id = schema_id
        self._added_schema_ids.add(schema_id)
        self.updates.append(AddSchema(added, new_last))
        return self

    def set_current_schema(self, schema_id: int) -> TableMetadataBuilder:
        resolved = self._resolve_last("schema", schema_id, self._last_added_schema_id)
        if resolved not in self.schemas:
            raise ValidationError(f"cannot set current schema to unknown schema id {resolved}")
        if resolved == self.current_schema_id:
            return self
        self.current_schema_id = resolved
        recorded = LAST_ADDED if resolved in self._added_schema_ids else resolved
        self.updates.append(SetCurrentSchema(recorded))
        return self

    # ------------------------------------------------------------------ partition specs
    def add_partition_spec(self, spec: PartitionSpec) -> TableMetadataBuilder:
        """Add ``spec`` (reusing the id of a spec with the same fields if there is one)."""
        spec.check_compatibility(self._current_schema())
        existing = next((sid for sid, s in self.specs.items() if s.compatible_with(spec)), None)
        if existing is not None:
            self._last_added_spec_id = existing
            return self
        spec_id = max(self.specs, default=-1) + 1
        added = PartitionSpec(*spec.fields, spec_id=spec_id)
        self.specs[spec_id] = added
        self.last_partition_id = max(
            self.last_partition_id, max((f.field_id for f in spec.fields), default=_NO_PARTITION_ID)
        )
        self._last_added_spec_id = spec_id
        self._added_spec_ids.add(spec_id)
        self.updates.append(AddPartitionSpec(added))
        return self

    def set_default_spec(self, spec_id: int) -> TableMetadataBuilder:
        resolved = self._resolve_last("partition spec", spec_id, self._last_added_spec_id)
        if resolved not in self.specs:
            raise ValidationError(f"cannot set default partition spec to unknown spec id {resolved}")
        if resolved == self.default_spec_id:
            return self
        self.default_spec_id = resolved
        self.updates.append(SetDefaultSpec(LAST_ADDED if resolved in self._added_spec_ids else resolved))
        return self

    # ------------------------------------------------------------------ sort orders
    def add_sort_order(self, order: SortOrder) -> TableMetadataBuilder:
        """Add ``order`` (reusing the id of an order with the same fields; unsorted is always 0)."""
        if order.is_unsorted:
            order_id = 0
            if 0 in self.sort_orders:
                self._last_added_order_id = 0
                return self
            added = UNSORTED_SORT_ORDER
        else:
            order.check_compatible(self._current_schema())
            existing = next((oid for oid, o in self.sort_orders.items() if o.same_order(order)), None)
            if existing is not None:
                self._last_added_order_id = existing
                return self
            order_id = max(max(self.sort_orders, default=0) + 1, 1)
            added = order.with_order_id(order_id)
        self.sort_orders[order_id] = added
        self._last_added_order_id = order_id
        self._added_order_ids.add(order_id)
        self.updates.append(AddSortOrder(added))
        return self

    def set_default_sort_order(self, order_id: int) -> TableMetadataBuilder:
        resolved = self._resolve_last("sort order", order_id, self._last_added_order_id)
        if resolved not in self.sort_orders:
            raise ValidationError(f"cannot set default sort order to unknown order id {resolved}")
        if resolved == self.default_sort_order_id:
            return self
        self.default_sort_order_id = resolved
        self.updates.append(
            SetDefaultSortOrder(LAST_ADDED if resolved in self._added_order_ids else resolved)
        )
        return self

    # ------------------------------------------------------------------ snapshots and refs
    def add_snapshot(self, snapshot: Snapshot) -> TableMetadataBuilder:
        sid = snapshot.snapshot_id
        if sid in self.snapshots:
            raise ValidationError(f"snapshot {sid} already exists in the table")
        if not self.schemas or not self.specs:
            raise ValidationError("cannot add a snapshot before the table has a schema and a partition spec")
        if self.format_version >= 2 and snapshot.sequence_number <= self.last_sequence_number:
            # Only a commit racing another one gets here (a write to another branch, or a staged
            # snapshot, moved the table's sequence number): retryable on the refreshed table.
            raise CommitFailedError(
                f"snapshot {sid} has sequence number {snapshot.sequence_number}, not above the table's "
                f"last sequence number {self.last_sequence_number}",
                hint="the table changed since the snapshot was prepared; refresh and retry",
            )
        if self.format_version == 1 and snapshot.sequence_number != 0:
            raise ValidationError(
                f"format v1 snapshots have sequence number 0, got {snapshot.sequence_number}"
            )
        parent = snapshot.parent_snapshot_id
        if parent is not None and parent not in self.snapshots:
            raise NoSuchSnapshotError(
                f"snapshot {sid}'s parent {parent} is not in the table",
                hint="the parent may have been expired concurrently; refresh and retry",
            )
        if snapshot.schema_id is not None and snapshot.schema_id not in self.schemas:
            raise ValidationError(f"snapshot {sid} refers to unknown schema id {snapshot.schema_id}")
        if self._base is not None and snapshot.timestamp_ms < self._base.last_updated_ms - _CLOCK_SKEW_MS:
            raise ValidationError(
                f"snapshot {sid}'s timestamp {snapshot.timestamp_ms} is more than a minute before the "
                f"table's last update at {self._base.last_updated_ms}",
                hint="check the clock of the machine writing the snapshot",
            )
        if self.format_version >= 3 and self.next_row_id is not None:
            if snapshot.first_row_id is None or snapshot.added_rows is None:
                raise ValidationError(f"v3 snapshot {sid} needs first-row-id and added-rows")
            if snapshot.first_row_id < self.next_row_id:
                raise ValidationError(
                    f"snapshot {sid}'s first-row-id {snapshot.first_row_id} is below the table's "
                    f"next-row-id {self.next_row_id}"
                )
            self.next_row_id += snapshot.added_rows
        self.snapshots[sid] = snapshot
        self._added_snapshot_ids.add(sid)
        self._last_updated_ms = snapshot.timestamp_ms
        self.last_sequence_number = snapshot.sequence_number
        self.updates.append(AddSnapshot(snapshot))
        return self

    def set_ref(self, name: str, ref: SnapshotRef) -> TableMetadataBuilder:
        """Point branch or tag ``name`` at ``ref.snapshot_id``. Moving ``main`` makes that snapshot
        current and adds a snapshot-log entry."""
        if ref.snapshot_id not in self.snapshots:
            raise NoSuchSnapshotError(
                f"cannot set ref {name!r} to unknown snapshot {ref.snapshot_id}", ref=name
            )
        if name == MAIN_BRANCH and not ref.is_branch:
            raise ValidationError("'main' must be a branch, not a tag")
        if self.refs.get(name) == ref:
            return self
        self.refs[name] = ref
        if ref.snapshot_id in self._added_snapshot_ids:
            self._last_updated_ms = self.snapshots[ref.snapshot_id].timestamp_ms
        if name == MAIN_BRANCH:
            self.current_snapshot_id = ref.snapshot_id
            if self._last_updated_ms is None:
                self._last_updated_ms = _now_ms()
            self.snapshot_log.append(SnapshotLogEntry(self._last_updated_ms, ref.snapshot_id))
        self.updates.append(SetSnapshotRef(name, ref))
        return self

    def set_branch_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> TableMetadataBuilder:
        """Move ``branch`` to ``snapshot_id``, keeping its retention settings (creates it if new)."""
        old = self.refs.get(branch)
        if old is not None and not old.is_branch:
            raise ValidationError(f"{branch!r} is a tag, not a branch")
        ref = SnapshotRef(
            snapshot_id,
            SnapshotRefType.BRANCH,
            old.min_snapshots_to_keep if old else None,
            old.max_snapshot_age_ms if old else None,
            old.max_ref_age_ms if old else None,
        )
        return self.set_ref(branch, ref)

    def remove_ref(self, name: str) -> TableMetadataBuilder:
        if name not in self.refs:
            return self
        del self.refs[name]
        if name == MAIN_BRANCH:
            self.current_snapshot_id = None
        self.updates.append(RemoveSnapshotRef(name))
        return self

    def remove_snapshots(self, snapshot_ids: Iterable[int]) -> TableMetadataBuilder:
        """Remove snapshots (expiry). Refs pointing at them go too, and so do their statistics."""
        removed = [sid for sid in dict.fromkeys(snapshot_ids) if sid in self.snapshots]
        if not removed:
            return self
        gone = set(removed)
        for sid in removed:
            del self.snapshots[sid]
        for name in [n for n, r in self.refs.items() if r.snapshot_id in gone]:
            del self.refs[name]
            if name == MAIN_BRANCH:
                self.current_snapshot_id = None
        self.statistics = [s for s in self.statistics if s.get("snapshot-id") not in gone]
        self.partition_statistics = [s for s in self.partition_statistics if s.get("snapshot-id") not in gone]
        self.updates.append(RemoveSnapshots(tuple(removed)))
        return self

    # ------------------------------------------------------------------ properties and the rest
    def set_properties(self, updates: Mapping[str, str]) -> TableMetadataBuilder:
        reserved = sorted(k for k in updates if k in RESERVED_PROPERTIES)
        if reserved:
            raise ValidationError(
                f"cannot set reserved table properties: {', '.join(reserved)}",
                hint="use upgrade_format_version to change the format version"
                if "format-version" in reserved
                else None,
            )
        if not updates:
            return self
        check_properties(updates)
        self.properties.update({str(k): str(v) for k, v in updates.items()})
        self.updates.append(SetProperties(dict(updates)))
        return self

    def remove_properties(self, keys: Iterable[str]) -> TableMetadataBuilder:
        keys = tuple(keys)
        if not keys:
            return self
        for k in keys:
            self.properties.pop(k, None)
        self.updates.append(RemoveProperties(keys))
        return self

    def set_location(self, location: str) -> TableMetadataBuilder:
        location = location.rstrip("/") if location != "/" else location
        if location == self.location:
            return self
        self.location = location
        self.updates.append(SetLocation(location))
        return self

    def upgrade_format_version(self, format_version: int) -> TableMetadataBuilder:
        if format_version == self.format_version:
            return self
        _check_writable(format_version)
        fresh = self._base is None and not self.schemas
        if format_version < self.format_version and not fresh:
            raise ValidationError(
                f"cannot downgrade table format version from {self.format_version} to {format_version}",
                hint="format versions only move forward; copy the data into a new table instead",
            )
        self.format_version = format_version
        if format_version >= 3 and self.next_row_id is None:
            # row lineage starts at the upgrade: rows written before it get ids when a v3
            # snapshot first lists their manifests (Java's upgrade does the same)
            self.next_row_id = 0
        self.updates.append(UpgradeFormatVersion(format_version))
        return self

    def assign_uuid(self, table_uuid: uuid.UUID | str) -> TableMetadataBuilder:
        new = table_uuid if isinstance(table_uuid, uuid.UUID) else uuid.UUID(str(table_uuid))
        if new == self.table_uuid:
            return self
        if self.table_uuid is not None:
            raise ValidationError(f"cannot reassign the table uuid {self.table_uuid} to {new}")
        self.table_uuid = new
        self.updates.append(AssignUUID(new))
        return self

    # ------------------------------------------------------------------ build
    def _resolve_last(self, what: str, given: int, last_added: int | None) -> int:
        if given != LAST_ADDED:
            return given
        if last_added is None:
            raise ValidationError(f"cannot use the last added {what} (-1): no {what} was added")
        return last_added

    def build(self) -> TableMetadata:
        """The resulting metadata; the base itself if nothing changed."""
        if self._base is not None and not self.updates:
            return self._base
        if self.location is None:
            raise InvalidMetadataError("table metadata needs a location", hint="call set_location")
        if self.table_uuid is None:
            self.assign_uuid(uuid.uuid4())
        last_updated_ms = self._last_updated_ms if self._last_updated_ms is not None else _now_ms()

        metadata_log = list(self.metadata_log)
        if self._base is not None and self._current_location is not None:
            metadata_log.append(MetadataLogEntry(self._base.last_updated_ms, self._current_location))
        keep = max(1, int_property(self.properties, PREVIOUS_VERSIONS_MAX, _PREVIOUS_VERSIONS_MAX_DEFAULT))
        metadata_log = metadata_log[-keep:]

        # History before a removed snapshot is dropped with it (Java does the same).
        snapshot_log: list[SnapshotLogEntry] = []
        for entry in self.snapshot_log:
            if entry.snapshot_id in self.snapshots:
                snapshot_log.append(entry)
            else:
                snapshot_log.clear()

        return TableMetadata(
            format_version=self.format_version,
            table_uuid=self.table_uuid,
            location=self.location,
            last_sequence_number=self.last_sequence_number,
            last_updated_ms=last_updated_ms,
            last_column_id=self.last_column_id,
            schemas=tuple(self.schemas.values()),
            current_schema_id=self.current_schema_id,
            partition_specs=tuple(self.specs.values()),
            default_spec_id=self.default_spec_id,
            last_partition_id=self.last_partition_id,
            properties=dict(self.properties),
            current_snapshot_id=self.current_snapshot_id,
            snapshots=tuple(self.snapshots.values()),
            snapshot_log=tuple(snapshot_log),
            metadata_log=tuple(metadata_log),
            sort_orders=tuple(self.sort_orders.values()),
            default_sort_order_id=self.default_sort_order_id,
            refs=dict(self.refs),
            statistics=tuple(self.statistics),
            partition_statistics=tuple(self.partition_statistics),
            next_row_id=self.next_row_id if self.format_version >= 3 else None,
        )


def _check_writable(format_version: int) -> None:
    if format_version not in WRITABLE_FORMAT_VERSIONS:
        if format_version > max(WRITABLE_FORMAT_VERSIONS):
            raise UnsupportedFeatureError(
                f"icefloe cannot write format version {format_version} tables yet (it writes v1 to v3)",
                hint="create the table with format-version 2 or 3",
            )
        raise ValidationError(f"invalid table format version {format_version}")
