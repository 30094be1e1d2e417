"""Table metadata: the one immutable in-memory model of a table's ``*.metadata.json``.

Whatever format version a file has, it is parsed by the private wire layer
(:mod:`icefloe.spec._wire`) into this single model; every :class:`TableMetadata` that exists has
passed the spec's invariants (checked in ``__post_init__``), so code holding one never re-checks
them. Changes go through :class:`icefloe.spec.metadata_builder.TableMetadataBuilder`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from icefloe.errors import (
    CorruptFileError,
    IcefloeError,
    InvalidMetadataError,
    NoSuchSnapshotError,
    UnsupportedFeatureError,
)
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import (
    MAIN_BRANCH,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from icefloe.spec.sort_order import SortOrder

__all__ = [
    "SUPPORTED_FORMAT_VERSIONS",
    "WRITABLE_FORMAT_VERSIONS",
    "TableMetadata",
    "read_metadata_json",
    "write_metadata_json",
]

# CorruptFileError.file_kind of metadata files (the same words as icefloe.io._decode, which the
# spec layer does not import).
_TABLE_METADATA = "table metadata"

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
"""Format versions icefloe can read."""
WRITABLE_FORMAT_VERSIONS = (1, 2, 3)
"""Format versions icefloe creates tables in and commits to."""

# Java tolerates this much clock skew between log entries before calling metadata invalid.
_CLOCK_SKEW_MS = 60_000
_NO_PARTITION_ID = 999


@dataclass(frozen=True, eq=True)
class TableMetadata:
    format_version: int
    table_uuid: uuid.UUID | None
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    sort_orders: tuple[SortOrder, ...] = ()
    default_sort_order_id: int = 0
    refs: Mapping[str, SnapshotRef] = field(default_factory=dict, hash=False)
    statistics: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    partition_statistics: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    next_row_id: int | None = None
    """v3 row lineage: the first row id the next snapshot assigns."""

    def __post_init__(self) -> None:
        _validate(self)
        # Older specs may use columns dropped since: they learn the types those had (the files
        # written under them hold partition values of those types).
        current = self.schemas_by_id[self.current_schema_id]
        newest_first = sorted(self.schemas, key=lambda s: s.schema_id, reverse=True)
        specs = tuple(s.with_dropped_source_types(current, newest_first) for s in self.partition_specs)
        if any(a is not b for a, b in zip(specs, self.partition_specs, strict=True)):
            object.__setattr__(self, "partition_specs", specs)
            self.__dict__.pop("specs_by_id", None)

    # ------------------------------------------------------------------ indexes
    @cached_property
    def schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @cached_property
    def specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    @property
    def partition_specs_by_id(self) -> dict[int, PartitionSpec]:
        return self.specs_by_id

    @cached_property
    def sort_orders_by_id(self) -> dict[int, SortOrder]:
        return {o.order_id: o for o in self.sort_orders}

    @cached_property
    def snapshots_by_id(self) -> dict[int, Snapshot]:
        return {s.snapshot_id: s for s in self.snapshots}

    # ------------------------------------------------------------------ accessors
    def schema(self) -> Schema:
        return self.schemas_by_id[self.current_schema_id]

    def schema_by_id(self, schema_id: int) -> Schema:
        s = self.schemas_by_id.get(schema_id)
        if s is None:
            raise InvalidMetadataError(f"table has no schema with id {schema_id}", schema_id=schema_id)
        return s

    def spec(self) -> PartitionSpec:
        return self.specs_by_id[self.default_spec_id]

    def spec_by_id(self, spec_id: int) -> PartitionSpec:
        s = self.specs_by_id.get(spec_id)
        if s is None:
            raise InvalidMetadataError(f"table has no partition spec with id {spec_id}", spec_id=spec_id)
        return s

    def sort_order(self) -> SortOrder:
        return self.sort_orders_by_id[self.default_sort_order_id]

    def sort_order_by_id(self, order_id: int) -> SortOrder:
        o = self.sort_orders_by_id.get(order_id)
        if o is None:
            raise InvalidMetadataError(f"table has no sort order with id {order_id}", order_id=order_id)
        return o

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        s = self.snapshots_by_id.get(snapshot_id)
        if s is None:
            raise NoSuchSnapshotError(
                f"table has no snapshot with id {snapshot_id}",
                hint="it may have been expired; list the table's snapshots to see which exist",
                snapshot_id=snapshot_id,
            )
        return s

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshots_by_id[self.current_snapshot_id]

    def snapshot_for_ref(self, name: str) -> Snapshot:
        ref = self.refs.get(name)
        if ref is None:
            if name == MAIN_BRANCH:
                raise NoSuchSnapshotError("the table has no snapshot yet", hint="write data first", ref=name)
            raise NoSuchSnapshotError(
                f"table has no branch or tag named {name!r}",
                hint=f"known refs: {', '.join(sorted(self.refs)) or 'none'}",
                ref=name,
            )
        return self.snapshots_by_id[ref.snapshot_id]

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot:
        """The snapshot that was current on ``main`` at ``timestamp_ms``: the last snapshot-log entry
        at or before it (like Java's time travel)."""
        found: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                found = entry.snapshot_id
        if found is None:
            first = self.snapshot_log[0].timestamp_ms if self.snapshot_log else None
            raise NoSuchSnapshotError(
                f"no snapshot of the table is as old as timestamp {timestamp_ms}",
                hint=(
                    f"the oldest snapshot in the table's history is from {first} ms"
                    if first is not None
                    else "the table has no snapshot history"
                ),
                timestamp_ms=timestamp_ms,
            )
        return self.snapshot_by_id(found)

    def ancestors(self, snapshot_id: int | None) -> Iterator[Snapshot]:
        """The snapshot and its ancestors, newest first, stopping at the first one not in the
        table (expired)."""
        while snapshot_id is not None:
            snap = self.snapshots_by_id.get(snapshot_id)
            if snap is None:
                return
            yield snap
            snapshot_id = snap.parent_snapshot_id

    def next_sequence_number(self) -> int:
        return 0 if self.format_version == 1 else self.last_sequence_number + 1

    def property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    def to_json(self) -> dict[str, Any]:
        from icefloe.spec._wire import metadata_to_json

        return metadata_to_json(self)


def read_metadata_json(data: str | bytes, location: str | None = None) -> TableMetadata:
    """Parse a ``*.metadata.json`` file (format v1, v2 or v3) read from ``location``.

    Text that is not table metadata (not JSON, truncated, missing fields, fields of the wrong type,
    broken invariants) raises :class:`CorruptFileError` naming ``location``; a format version
    newer than icefloe reads raises :class:`UnsupportedFeatureError`."""
    from icefloe.spec._wire import metadata_from_json

    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise CorruptFileError.of(location, _TABLE_METADATA, f"not valid JSON: {e}") from e
    try:
        return TableMetadata(**metadata_from_json(obj))
    except (UnsupportedFeatureError, CorruptFileError):
        raise
    except IcefloeError as e:
        raise CorruptFileError.of(location, _TABLE_METADATA, e.message, hint=e.hint) from e
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError, RecursionError) as e:
        raise CorruptFileError.of(
            location, _TABLE_METADATA, f"invalid table metadata: {type(e).__name__}: {e}"
        ) from e


def write_metadata_json(metadata: TableMetadata) -> str:
    """The table metadata file's text, laid out the way Iceberg Java writes it."""
    return json.dumps(metadata.to_json(), separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# invariants


def _fail(message: str, **context: Any) -> InvalidMetadataError:
    return InvalidMetadataError(message, **context)


def _unique(kind: str, ids: list[int]) -> None:
    seen: set[int] = set()
    for i in ids:
        if i in seen:
            raise _fail(f"duplicate {kind} id {i} in table metadata")
        seen.add(i)


def _validate(m: TableMetadata) -> None:
    if m.format_version not in SUPPORTED_FORMAT_VERSIONS:
        if isinstance(m.format_version, int) and m.format_version > max(SUPPORTED_FORMAT_VERSIONS):
            raise UnsupportedFeatureError(
                f"table format version {m.format_version} is not supported (icefloe reads 1 to 3)",
                hint="upgrade icefloe",
                format_version=m.format_version,
            )
        raise _fail(f"invalid table format version {m.format_version!r}")
    if m.format_version >= 2 and m.table_uuid is None:
        raise _fail(f"format v{m.format_version} table metadata needs a table-uuid")
    if m.format_version >= 3:
        if m.next_row_id is None or m.next_row_id < 0:
            raise _fail(f"format v3 table metadata needs a next-row-id >= 0, got {m.next_row_id}")
        for snap in m.snapshots:
            # row lineage: every snapshot's row ids lie below the table's next-row-id
            if snap.first_row_id is not None and snap.first_row_id + (snap.added_rows or 0) > m.next_row_id:
                raise _fail(
                    f"snapshot {snap.snapshot_id} assigns row ids up to "
                    f"{snap.first_row_id + (snap.added_rows or 0)}, above next-row-id {m.next_row_id}",
                    snapshot_id=snap.snapshot_id,
                )

    # schemas, specs, sort orders
    if not m.schemas:
        raise _fail("table metadata has no schema")
    _unique("schema", [s.schema_id for s in m.schemas])
    if m.current_schema_id not in m.schemas_by_id:
        raise _fail(
            f"current-schema-id {m.current_schema_id} is not one of the table's schemas "
            f"{sorted(m.schemas_by_id)}"
        )
    highest = max(s.highest_field_id for s in m.schemas)
    if m.last_column_id < highest:
        raise _fail(f"last-column-id {m.last_column_id} is lower than the highest field id {highest}")

    if not m.partition_specs:
        raise _fail("table metadata has no partition spec")
    _unique("partition spec", [s.spec_id for s in m.partition_specs])
    if m.default_spec_id not in m.specs_by_id:
        raise _fail(
            f"default-spec-id {m.default_spec_id} is not one of the table's partition specs "
            f"{sorted(m.specs_by_id)}"
        )
    highest_partition = max(
        (f.field_id for s in m.partition_specs for f in s.fields), default=_NO_PARTITION_ID
    )
    if m.last_partition_id < highest_partition:
        raise _fail(
            f"last-partition-id {m.last_partition_id} is lower than the highest partition field id "
            f"{highest_partition}"
        )

    # Field ids are never reused: a partition or sort field's source is in some schema of the
    # table (a void partition field may outlive its dropped source).
    known_ids = set().union(*(s.field_ids() for s in m.schemas))
    current_schema = m.schemas_by_id[m.current_schema_id]
    for spec in m.partition_specs:
        for pf in spec.fields:
            if pf.transform.kind.value == "void":
                continue
            if pf.source_id not in known_ids:
                raise _fail(
                    f"partition spec {spec.spec_id} field {pf.name!r} refers to source column id "
                    f"{pf.source_id}, which no schema of the table has",
                    spec_id=spec.spec_id,
                )
            source = current_schema.find_field_or_none(pf.source_id)
            if (
                spec.spec_id == m.default_spec_id
                and source is not None
                and not (source.field_type.is_primitive and pf.transform.can_transform(source.field_type))
            ):
                raise _fail(
                    f"partition field {pf.name!r}: {pf.transform} does not apply to column "
                    f"{current_schema.column_name(pf.source_id)!r} of type {source.field_type}",
                    spec_id=spec.spec_id,
                )
    for order in m.sort_orders:
        for sf in order.fields:
            if sf.source_id not in known_ids:
                raise _fail(
                    f"sort order {order.order_id} refers to source column id {sf.source_id}, which no "
                    "schema of the table has",
                    order_id=order.order_id,
                )

    if not m.sort_orders:
        raise _fail("table metadata has no sort order")
    _unique("sort order", [o.order_id for o in m.sort_orders])
    if m.default_sort_order_id not in m.sort_orders_by_id:
        raise _fail(
            f"default-sort-order-id {m.default_sort_order_id} is not one of the table's sort orders "
            f"{sorted(m.sort_orders_by_id)}"
        )

    # snapshots and refs
    _unique("snapshot", [s.snapshot_id for s in m.snapshots])
    by_id = m.snapshots_by_id
    for snap in m.snapshots:
        if snap.schema_id is not None and snap.schema_id not in m.schemas_by_id:
            raise _fail(
                f"snapshot {snap.snapshot_id} was written with schema {snap.schema_id}, which is not one "
                f"of the table's schemas {sorted(m.schemas_by_id)}",
                snapshot_id=snap.snapshot_id,
            )
    for name, ref in m.refs.items():
        if ref.snapshot_id not in by_id:
            raise _fail(f"ref {name!r} points at unknown snapshot {ref.snapshot_id}", ref=name)
    main = m.refs.get(MAIN_BRANCH)
    if m.current_snapshot_id is not None:
        if m.current_snapshot_id not in by_id:
            raise _fail(f"current-snapshot-id {m.current_snapshot_id} is not a snapshot of the table")
        if main is None:
            raise _fail(f"current-snapshot-id is {m.current_snapshot_id} but there is no main branch")
        if main.snapshot_id != m.current_snapshot_id:
            raise _fail(
                f"current-snapshot-id {m.current_snapshot_id} disagrees with the main branch "
                f"(snapshot {main.snapshot_id})"
            )
    elif main is not None:
        raise _fail(f"main branch points at snapshot {main.snapshot_id} but current-snapshot-id is unset")
    if main is not None and not main.is_branch:
        raise _fail("'main' must be a branch, not a tag")

    if m.format_version >= 2:
        for snap in m.snapshots:
            if snap.sequence_number > m.last_sequence_number:
                raise _fail(
                    f"snapshot {snap.snapshot_id} has sequence number {snap.sequence_number}, "
                    f"above last-sequence-number {m.last_sequence_number}",
                    snapshot_id=snap.snapshot_id,
                )
            parent = by_id.get(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
            if parent is not None and parent.sequence_number >= snap.sequence_number:
                raise _fail(
                    f"snapshot {snap.snapshot_id} has sequence number {snap.sequence_number}, not above "
                    f"its parent {parent.snapshot_id}'s {parent.sequence_number}",
                    snapshot_id=snap.snapshot_id,
                )

    # logs: sorted, and not from the future of last-updated-ms (with Java's clock-skew allowance)
    previous = None
    for entry in m.snapshot_log:
        if previous is not None and entry.timestamp_ms < previous - _CLOCK_SKEW_MS:
            raise _fail("snapshot-log entries are not sorted by timestamp")
        previous = entry.timestamp_ms
    if previous is not None and m.last_updated_ms < previous - _CLOCK_SKEW_MS:
        raise _fail(
            f"last-updated-ms {m.last_updated_ms} is before the last snapshot-log entry at {previous}"
        )
    previous = None
    for meta in m.metadata_log:
        if previous is not None and meta.timestamp_ms < previous - _CLOCK_SKEW_MS:
            raise _fail("metadata-log entries are not sorted by timestamp")
        previous = meta.timestamp_ms
    if previous is not None and m.last_updated_ms < previous - _CLOCK_SKEW_MS:
        raise _fail(
            f"last-updated-ms {m.last_updated_ms} is before the last metadata-log entry at {previous}"
        )
