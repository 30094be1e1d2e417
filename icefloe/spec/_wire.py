"""Private: the JSON wire forms of table metadata, v1, v2 and v3.

Each version's differences live here and nowhere else: v1's single ``schema``/``partition-spec``
fields and missing sequence numbers, v2's required fields, v3's row-lineage fields. Parsing turns a
file into the keyword arguments of the one :class:`~icefloe.spec.table_metadata.TableMetadata`;
writing lays fields out in the order Iceberg Java 1.10 writes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from icefloe.errors import IcefloeError, InvalidMetadataError, UnsupportedFeatureError
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import (
    MAIN_BRANCH,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortOrder

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["metadata_from_json", "metadata_to_json"]

_FIRST_PARTITION_FIELD_ID = 1000

# Fields the spec requires, per format version (v1 alternatives are checked separately).
_REQUIRED: dict[int, tuple[str, ...]] = {
    1: ("format-version", "location", "last-updated-ms", "last-column-id"),
    2: (
        "format-version",
        "table-uuid",
        "location",
        "last-sequence-number",
        "last-updated-ms",
        "last-column-id",
        "schemas",
        "current-schema-id",
        "partition-specs",
        "default-spec-id",
        "last-partition-id",
        "sort-orders",
        "default-sort-order-id",
    ),
}
_REQUIRED[3] = (*_REQUIRED[2], "next-row-id")


def _int(obj: Mapping[str, Any], key: str) -> int:
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidMetadataError(f"table metadata field {key!r} must be an integer, got {v!r}")
    return v


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InvalidMetadataError(f"table metadata field {key!r} must be a list, got {type(v).__name__}")
    return v


def _schemas(obj: Mapping[str, Any], version: int) -> tuple[tuple[Schema, ...], int]:
    if version >= 2 or "schemas" in obj:
        schemas = tuple(Schema.from_json(s) for s in _list(obj, "schemas"))
        if "current-schema-id" in obj:
            return schemas, _int(obj, "current-schema-id")
        if "schema" in obj:  # v1 writers that listed schemas without a current id
            current = Schema.from_json(obj["schema"])
            return schemas, current.schema_id
        raise InvalidMetadataError("table metadata has 'schemas' but no 'current-schema-id'")
    if "schema" not in obj:
        raise InvalidMetadataError("v1 table metadata needs 'schema' or 'schemas'")
    schema = Schema.from_json(obj["schema"])
    return (schema,), schema.schema_id


def _legacy_spec(fields: list[Any]) -> PartitionSpec:
    """A v1 ``partition-spec`` field list; field ids, when missing, are assigned from 1000 on."""
    with_ids = []
    for i, f in enumerate(fields):
        if not isinstance(f, dict):
            raise InvalidMetadataError(f"invalid partition field {f!r}")
        with_ids.append({**f, "field-id": f.get("field-id", _FIRST_PARTITION_FIELD_ID + i)})
    return PartitionSpec.from_json({"spec-id": 0, "fields": with_ids})


def _specs(obj: Mapping[str, Any], version: int) -> tuple[tuple[PartitionSpec, ...], int]:
    if version >= 2 or "partition-specs" in obj:
        specs = tuple(PartitionSpec.from_json(s) for s in _list(obj, "partition-specs"))
        default = _int(obj, "default-spec-id") if "default-spec-id" in obj else 0
        return specs, default
    if "partition-spec" not in obj:
        raise InvalidMetadataError("v1 table metadata needs 'partition-spec' or 'partition-specs'")
    return (_legacy_spec(_list(obj, "partition-spec")),), 0


def metadata_from_json(obj: Any) -> dict[str, Any]:
    """Keyword arguments for ``TableMetadata`` from a parsed metadata file."""
    if not isinstance(obj, dict):
        raise InvalidMetadataError("table metadata must be a JSON object")
    if "format-version" not in obj:
        raise InvalidMetadataError("table metadata has no 'format-version'")
    version = _int(obj, "format-version")
    if version not in _REQUIRED:
        if version > max(_REQUIRED):
            raise UnsupportedFeatureError(
                f"table format version {version} is not supported (icefloe reads 1 to 3)",
                hint="upgrade icefloe",
                format_version=version,
            )
        raise InvalidMetadataError(f"invalid table format version {version}")
    missing = [k for k in _REQUIRED[version] if obj.get(k) is None]
    if missing:
        raise InvalidMetadataError(
            f"format v{version} table metadata is missing required field(s): {', '.join(missing)}"
        )
    try:
        return _parse(obj, version)
    except (InvalidMetadataError, UnsupportedFeatureError):
        raise
    except IcefloeError as e:
        # A bad schema or spec inside a metadata file makes the file invalid.
        raise InvalidMetadataError(f"invalid table metadata: {e.message}", hint=e.hint) from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InvalidMetadataError(f"invalid table metadata: {type(e).__name__}: {e}") from None


def _parse(obj: dict[str, Any], version: int) -> dict[str, Any]:
    schemas, current_schema_id = _schemas(obj, version)
    specs, default_spec_id = _specs(obj, version)
    if "last-partition-id" in obj:
        last_partition_id = _int(obj, "last-partition-id")
    else:
        last_partition_id = max(
            (f.field_id for s in specs for f in s.fields), default=_FIRST_PARTITION_FIELD_ID - 1
        )
    if "sort-orders" in obj:
        sort_orders = tuple(SortOrder.from_json(o) for o in _list(obj, "sort-orders"))
        default_sort_order_id = _int(obj, "default-sort-order-id")
    else:
        sort_orders, default_sort_order_id = (UNSORTED_SORT_ORDER,), 0

    properties = obj.get("properties") or {}
    if not isinstance(properties, dict):
        raise InvalidMetadataError("table metadata 'properties' must be an object")

    current_snapshot_id = obj.get("current-snapshot-id")
    if current_snapshot_id is not None:
        current_snapshot_id = _int(obj, "current-snapshot-id")
        if current_snapshot_id == -1:
            current_snapshot_id = None

    snapshots = tuple(Snapshot.from_json(s, version) for s in _list(obj, "snapshots"))
    refs_obj = obj.get("refs")
    if refs_obj is not None:
        if not isinstance(refs_obj, dict):
            raise InvalidMetadataError("table metadata 'refs' must be an object")
        refs = {str(name): SnapshotRef.from_json(r) for name, r in refs_obj.items()}
    else:
        refs = {}
    # Writers before refs existed only wrote current-snapshot-id; it is the main branch.
    if current_snapshot_id is not None and MAIN_BRANCH not in refs:
        refs[MAIN_BRANCH] = SnapshotRef(current_snapshot_id)

    table_uuid = obj.get("table-uuid")
    try:
        parsed_uuid = uuid.UUID(str(table_uuid)) if table_uuid is not None else None
    except ValueError:
        raise InvalidMetadataError(f"invalid table-uuid {table_uuid!r}") from None

    location = obj["location"]
    if not isinstance(location, str):
        raise InvalidMetadataError(f"table metadata 'location' must be a string, got {location!r}")

    return {
        "format_version": version,
        "table_uuid": parsed_uuid,
        "location": location,
        "last_sequence_number": _int(obj, "last-sequence-number") if version >= 2 else 0,
        "last_updated_ms": _int(obj, "last-updated-ms"),
        "last_column_id": _int(obj, "last-column-id"),
        "schemas": schemas,
        "current_schema_id": current_schema_id,
        "partition_specs": specs,
        "default_spec_id": default_spec_id,
        "last_partition_id": last_partition_id,
        "properties": {str(k): str(v) for k, v in properties.items()},
        "current_snapshot_id": current_snapshot_id,
        "snapshots": snapshots,
        "snapshot_log": tuple(SnapshotLogEntry.from_json(e) for e in _list(obj, "snapshot-log")),
        "metadata_log": tuple(MetadataLogEntry.from_json(e) for e in _list(obj, "metadata-log")),
        "sort_orders": sort_orders,
        "default_sort_order_id": default_sort_order_id,
        "refs": refs,
        "statistics": tuple(_list(obj, "statistics")),
        "partition_statistics": tuple(_list(obj, "partition-statistics")),
        "next_row_id": _int(obj, "next-row-id") if version >= 3 else None,
    }


def metadata_to_json(m: TableMetadata) -> dict[str, Any]:
    """The metadata file's JSON object for ``m.format_version``, keys in Java's order."""
    v = m.format_version
    out: dict[str, Any] = {"format-version": v}
    if m.table_uuid is not None:
        out["table-uuid"] = str(m.table_uuid)
    out["location"] = m.location
    if v >= 2:
        out["last-sequence-number"] = m.last_sequence_number
    out["last-updated-ms"] = m.last_updated_ms
    out["last-column-id"] = m.last_column_id
    if v == 1:
        out["schema"] = m.schema().to_json()
    out["current-schema-id"] = m.current_schema_id
    out["schemas"] = [s.to_json() for s in m.schemas]
    if v == 1:
        out["partition-spec"] = m.spec().to_json()["fields"]
    out["default-spec-id"] = m.default_spec_id
    out["partition-specs"] = [s.to_json() for s in m.partition_specs]
    out["last-partition-id"] = m.last_partition_id
    out["default-sort-order-id"] = m.default_sort_order_id
    out["sort-orders"] = [o.to_json() for o in m.sort_orders]
    out["properties"] = dict(m.properties)
    # Java 1.10 writes -1 for a table without a current snapshot in v1/v2, null in v3.
    no_snapshot = None if v >= 3 else -1
    out["current-snapshot-id"] = m.current_snapshot_id if m.current_snapshot_id is not None else no_snapshot
    if v >= 3:
        out["next-row-id"] = m.next_row_id if m.next_row_id is not None else 0
    out["refs"] = {name: ref.to_json() for name, ref in m.refs.items()}
    out["snapshots"] = [s.to_json(v) for s in m.snapshots]
    out["statistics"] = [dict(s) for s in m.statistics]
    out["partition-statistics"] = [dict(s) for s in m.partition_statistics]
    out["snapshot-log"] = [e.to_json() for e in m.snapshot_log]
    out["metadata-log"] = [e.to_json() for e in m.metadata_log]
    return out
