"""Metadata tables: a table's snapshots, history, refs, manifests, files and partitions as Arrow
tables, with Iceberg Java's table names, column names, field ids and types.

::

    table.inspect.snapshots()          committed_at, snapshot_id, parent_id, operation, ...
    table.inspect.files(snapshot_id=)  one row per live data or delete file of a snapshot
    table.inspect.all_manifests()      every manifest of every snapshot (reference_snapshot_id)

Each table is described once as an Iceberg :class:`Schema` (:meth:`InspectTable.schema`), so the
Arrow API and the Spark data source (``spark.read.format("icefloe").load("ns.t.files")``) serve
the same columns. Rows are built from metadata only, except ``position_deletes``, which reads
the position delete files. ``files``-like tables carry the table's partition as one struct over
the fields of every partition spec (Java's unified partition type) and ``readable_metrics``: the
column metrics decoded to the columns' own types.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from icefloe.errors import InvalidMetadataError, ValidationError
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
    read_manifest_list,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestamptzType,
)
from icefloe.spec.values import from_bytes

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = ["METADATA_TABLES", "InspectTable", "metadata_table_schema"]

#: every metadata table, by its Iceberg Java name
METADATA_TABLES = (
    "snapshots",
    "history",
    "metadata_log_entries",
    "refs",
    "manifests",
    "all_manifests",
    "files",
    "data_files",
    "delete_files",
    "all_files",
    "all_data_files",
    "all_delete_files",
    "entries",
    "all_entries",
    "partitions",
    "position_deletes",
)


def _f(fid: int, name: str, t: IcebergType, required: bool = False) -> NestedField:
    return NestedField(fid, name, t, required)


def _long() -> LongType:
    return LongType()


def _int() -> IntegerType:
    return IntegerType()


def _str() -> StringType:
    return StringType()


_SNAPSHOTS = Schema(
    _f(1, "committed_at", TimestamptzType(), True),
    _f(2, "snapshot_id", _long(), True),
    _f(3, "parent_id", _long()),
    _f(4, "operation", _str()),
    _f(5, "manifest_list", _str()),
    _f(6, "summary", MapType(7, _str(), 8, _str(), True)),
)
_HISTORY = Schema(
    _f(1, "made_current_at", TimestamptzType(), True),
    _f(2, "snapshot_id", _long(), True),
    _f(3, "parent_id", _long()),
    _f(4, "is_current_ancestor", BooleanType(), True),
)
_METADATA_LOG = Schema(
    _f(1, "timestamp", TimestamptzType(), True),
    _f(2, "file", _str(), True),
    _f(3, "latest_snapshot_id", _long()),
    _f(4, "latest_schema_id", _int()),
    _f(5, "latest_sequence_number", _long()),
)
_REFS = Schema(
    _f(1, "name", _str(), True),
    _f(2, "type", _str(), True),
    _f(3, "snapshot_id", _long(), True),
    _f(4, "max_reference_age_in_ms", _long()),
    _f(5, "min_snapshots_to_keep", _int()),
    _f(6, "max_snapshot_age_in_ms", _long()),
)


def _manifests_schema(all_manifests: bool) -> Schema:
    summary = StructType(
        _f(10, "contains_null", BooleanType(), True),
        _f(11, "contains_nan", BooleanType(), all_manifests),
        _f(12, "lower_bound", _str()),
        _f(13, "upper_bound", _str()),
    )
    fields = [
        _f(14, "content", _int(), True),
        _f(1, "path", _str(), True),
        _f(2, "length", _long(), True),
        _f(3, "partition_spec_id", _int(), not all_manifests),
        _f(4, "added_snapshot_id", _long(), not all_manifests),
        _f(5, "added_data_files_count", _int(), not all_manifests),
        _f(6, "existing_data_files_count", _int(), not all_manifests),
        _f(7, "deleted_data_files_count", _int(), not all_manifests),
        _f(15, "added_delete_files_count", _int(), True),
        _f(16, "existing_delete_files_count", _int(), True),
        _f(17, "deleted_delete_files_count", _int(), True),
        _f(8, "partition_summaries", ListType(9, summary, True), not all_manifests),
    ]
    if all_manifests:
        # Iceberg Java 1.10's columns (later versions add key_metadata, id 19).
        fields.append(_f(18, "reference_snapshot_id", _long(), True))
    return Schema(*fields)


def _data_file_fields(partition: StructType | None) -> list[NestedField]:
    fields = [
        _f(134, "content", _int()),
        _f(100, "file_path", _str(), True),
        _f(101, "file_format", _str(), True),
        _f(141, "spec_id", _int()),
    ]
    if partition is not None:
        fields.append(_f(102, "partition", partition, True))
    fields += [
        _f(103, "record_count", _long(), True),
        _f(104, "file_size_in_bytes", _long(), True),
        _f(108, "column_sizes", MapType(117, _int(), 118, _long(), True)),
        _f(109, "value_counts", MapType(119, _int(), 120, _long(), True)),
        _f(110, "null_value_counts", MapType(121, _int(), 122, _long(), True)),
        _f(137, "nan_value_counts", MapType(138, _int(), 139, _long(), True)),
        _f(125, "lower_bounds", MapType(126, _int(), 127, BinaryType(), True)),
        _f(128, "upper_bounds", MapType(129, _int(), 130, BinaryType(), True)),
        _f(131, "key_metadata", BinaryType()),
        _f(132, "split_offsets", ListType(133, _long(), True)),
        _f(135, "equality_ids", ListType(136, _int(), True)),
        _f(140, "sort_order_id", _int()),
        _f(142, "first_row_id", _long()),
        _f(143, "referenced_data_file", _str()),
        _f(144, "content_offset", _long()),
        _f(145, "content_size_in_bytes", _long()),
    ]
    return fields


def _highest_id(fields: Iterable[NestedField]) -> int:
    best = 0
    for f in fields:
        best = max(best, f.field_id)
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            best = max(best, _highest_id(t.fields))
    return best


def _readable_metrics_field(table_schema: Schema, after: int) -> NestedField:
    """Java's ``readable_metrics``: per primitive column (by full name, sorted), its metrics with
    bounds in the column's own type. Field ids continue after ``after``."""
    next_id = after
    columns: list[NestedField] = []
    for fid in sorted(table_schema.leaf_field_ids()):
        t = table_schema.find_field(fid).field_type
        col_id = next_id + 1
        metric_ids = range(col_id + 1, col_id + 7)
        next_id = col_id + 6
        metrics = StructType(
            _f(metric_ids[0], "column_size", _long()),
            _f(metric_ids[1], "value_count", _long()),
            _f(metric_ids[2], "null_value_count", _long()),
            _f(metric_ids[3], "nan_value_count", _long()),
            _f(metric_ids[4], "lower_bound", t),
            _f(metric_ids[5], "upper_bound", t),
        )
        columns.append(_f(col_id, table_schema.column_name(fid), metrics))
    columns.sort(key=lambda f: f.name)
    return _f(next_id + 1, "readable_metrics", StructType(*columns))


def unified_partition_type(metadata: TableMetadata) -> StructType:
    """Java's table partition type: every partition field of every spec whose source column is in
    the current schema, by field id, optional, named as in the newest spec that has it."""
    schema = metadata.schema()
    fields: dict[int, NestedField] = {}
    for spec in sorted(metadata.partition_specs, key=lambda s: s.spec_id, reverse=True):
        for pf in spec.fields:
            source = schema.find_field_or_none(pf.source_id)
            if source is None:
                continue
            result = pf.transform.result_type(source.field_type)
            known = fields.get(pf.field_id)
            if known is None or (str(known.field_type) == "unknown" and str(result) != "unknown"):
                fields[pf.field_id] = NestedField(pf.field_id, pf.name, result, False)
    return StructType(*(fields[k] for k in sorted(fields)))


def metadata_table_schema(metadata: TableMetadata, name: str) -> Schema:
    """The Iceberg schema of metadata table ``name`` of a table with ``metadata``."""
    if name == "snapshots":
        return _SNAPSHOTS
    if name == "history":
        return _HISTORY
    if name == "metadata_log_entries":
        return _METADATA_LOG
    if name == "refs":
        return _REFS
    if name in ("manifests", "all_manifests"):
        return _manifests_schema(name == "all_manifests")
    partition = unified_partition_type(metadata)
    has_partition = bool(partition.fields)
    if name in ("files", "data_files", "delete_files", "all_files", "all_data_files", "all_delete_files"):
        fields = _data_file_fields(partition if has_partition else None)
        return Schema(*fields, _readable_metrics_field(metadata.schema(), _highest_id(fields)))
    if name in ("entries", "all_entries"):
        fields = [
            _f(0, "status", _int(), True),
            _f(1, "snapshot_id", _long()),
            _f(3, "sequence_number", _long()),
            _f(4, "file_sequence_number", _long()),
            _f(2, "data_file", StructType(*_data_file_fields(partition if has_partition else None)), True),
        ]
        return Schema(*fields, _readable_metrics_field(metadata.schema(), _highest_id(fields)))
    if name == "partitions":
        counts = [
            _f(2, "record_count", _long(), True),
            _f(3, "file_count", _int(), True),
            _f(11, "total_data_file_size_in_bytes", _long(), True),
            _f(5, "position_delete_record_count", _long(), True),
            _f(6, "position_delete_file_count", _int(), True),
            _f(7, "equality_delete_record_count", _long(), True),
            _f(8, "equality_delete_file_count", _int(), True),
            _f(9, "last_updated_at", TimestamptzType()),
            _f(10, "last_updated_snapshot_id", _long()),
        ]
        if not has_partition:
            return Schema(*counts)
        return Schema(_f(1, "partition", partition, True), _f(4, "spec_id", _int(), True), *counts)
    if name == "position_deletes":
        # Java's reserved metadata column ids (MetadataColumns).
        fields = [
            _f(2147483546, "file_path", _str(), True),
            _f(2147483545, "pos", _long(), True),
            _f(2147483544, "row", StructType(*metadata.schema().fields)),
        ]
        if has_partition:
            fields.append(_f(2147483642, "partition", partition, True))
        fields += [_f(2147483643, "spec_id", _int(), True), _f(2147483646, "delete_file_path", _str(), True)]
        if metadata.format_version >= 3:
            fields += [
                _f(2147483641, "content_offset", _long()),
                _f(2147483640, "content_size_in_bytes", _long()),
            ]
        return Schema(*fields)
    raise ValidationError(
        f"unknown metadata table {name!r}",
        hint=f"metadata tables are: {', '.join(METADATA_TABLES)}",
        metadata_table=name,
    )


# --------------------------------------------------------------------------- values


def _arrow_value(t: IcebergType, value: Any) -> Any:
    """A value in icefloe's internal representation as pyarrow accepts it for ``t``'s Arrow type."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(t, StructType) and isinstance(value, tuple):
        return {f.name: _arrow_value(f.field_type, v) for f, v in zip(t.fields, value, strict=True)}
    return value


def _decode(t: IcebergType, data: bytes | None) -> Any:
    if data is None or not isinstance(t, PrimitiveType):
        return None
    try:
        return _arrow_value(t, from_bytes(t, data))
    except Exception:  # a bound written for another type (before a promotion): not shown
        return None


def _as_map(d: dict[int, Any] | None) -> list[tuple[int, Any]] | None:
    return None if d is None else sorted(d.items())


class InspectTable:
    """``table.inspect``: one method per metadata table, each returning a ``pyarrow.Table``."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._metadata = table.metadata

    # ------------------------------------------------------------------ plumbing
    def schema(self, name: str) -> Schema:
        """The Iceberg schema of metadata table ``name``."""
        return metadata_table_schema(self._metadata, name)

    def table(self, name: str, snapshot_id: int | None = None) -> pa.Table:
        """Metadata table ``name`` (one of :data:`METADATA_TABLES`) by name."""
        method = getattr(self, name, None) if name in METADATA_TABLES else None
        if method is None:
            self.schema(name)  # raises the typed error
            raise AssertionError(name)  # pragma: no cover
        if name in _SNAPSHOT_TABLES:
            return method(snapshot_id=snapshot_id)  # type: ignore[no-any-return]
        if snapshot_id is not None:
            raise ValidationError(f"metadata table {name!r} covers the whole table, not one snapshot")
        return method()  # type: ignore[no-any-return]

    def _build(self, name: str, rows: Iterable[dict[str, Any]]) -> pa.Table:
        import pyarrow as pa

        from icefloe.arrow.schema import schema_to_arrow

        arrow_schema = schema_to_arrow(self.schema(name))
        return pa.Table.from_pylist(list(rows), schema=arrow_schema)

    def _snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        md = self._metadata
        return md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()

    def _manifests(self, snapshot: Snapshot | None) -> list[ManifestFile]:
        return read_manifest_list(self._table.io, snapshot.manifest_list) if snapshot else []

    def _all_manifests(self) -> list[ManifestFile]:
        """Distinct manifests of every snapshot (by path)."""
        seen: dict[str, ManifestFile] = {}
        for snap in self._metadata.snapshots:
            for m in self._manifests(snap):
                seen.setdefault(m.manifest_path, m)
        return list(seen.values())

    def _entries(self, manifests: Sequence[ManifestFile]) -> Iterator[tuple[ManifestFile, ManifestEntry]]:
        io = self._table.io

        def read(m: ManifestFile) -> list[ManifestEntry]:
            return list(read_manifest(io, m))

        if len(manifests) > 1:
            with ThreadPoolExecutor(max_workers=min(4, len(manifests))) as pool:
                results = list(pool.map(read, manifests))
        else:
            results = [read(m) for m in manifests]
        for m, entries in zip(manifests, results, strict=True):
            for e in entries:
                yield m, e

    def _partition_coercer(self) -> Callable[[DataFile], dict[str, Any] | None]:
        md = self._metadata
        unified = unified_partition_type(md)
        if not unified.fields:
            return lambda f: None
        by_spec: dict[int, list[tuple[int, int]]] = {}
        positions = {f.field_id: i for i, f in enumerate(unified.fields)}
        for spec in md.partition_specs:
            by_spec[spec.spec_id] = [
                (positions[pf.field_id], i) for i, pf in enumerate(spec.fields) if pf.field_id in positions
            ]
        types = [f.field_type for f in unified.fields]
        names = [f.name for f in unified.fields]

        def coerce(f: DataFile) -> dict[str, Any]:
            values: list[Any] = [None] * len(names)
            for target, source in by_spec.get(f.spec_id, []):
                if source < len(f.partition):
                    values[target] = _arrow_value(types[target], f.partition[source])
            return dict(zip(names, values, strict=True))

        return coerce

    def _file_row(
        self, f: DataFile, coerce: Callable[[DataFile], dict[str, Any] | None], with_partition: bool
    ) -> dict[str, Any]:
        row: dict[str, Any] = {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": str(f.file_format.value).upper(),
            "spec_id": f.spec_id,
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "column_sizes": _as_map(f.column_sizes),
            "value_counts": _as_map(f.value_counts),
            "null_value_counts": _as_map(f.null_value_counts),
            "nan_value_counts": _as_map(f.nan_value_counts),
            "lower_bounds": _as_map(f.lower_bounds),
            "upper_bounds": _as_map(f.upper_bounds),
            "key_metadata": f.key_metadata,
            "split_offsets": list(f.split_offsets) if f.split_offsets is not None else None,
            "equality_ids": list(f.equality_ids) if f.equality_ids is not None else None,
            "sort_order_id": f.sort_order_id,
            "first_row_id": f.first_row_id,
            "referenced_data_file": f.referenced_data_file,
            "content_offset": f.content_offset,
            "content_size_in_bytes": f.content_size_in_bytes,
        }
        if with_partition:
            row["partition"] = coerce(f)
        return row

    def _readable_metrics(self, f: DataFile) -> dict[str, Any]:
        schema = self._metadata.schema()
        out: dict[str, Any] = {}
        for fid in schema.leaf_field_ids():
            t = schema.find_field(fid).field_type

            def get(d: dict[int, Any] | None, fid: int = fid) -> Any:
                return None if d is None else d.get(fid)

            out[schema.column_name(fid)] = {
                "column_size": get(f.column_sizes),
                "value_count": get(f.value_counts),
                "null_value_count": get(f.null_value_counts),
                "nan_value_count": get(f.nan_value_counts),
                "lower_bound": _decode(t, get(f.lower_bounds)),
                "upper_bound": _decode(t, get(f.upper_bounds)),
            }
        return out

    # ------------------------------------------------------------------ history and refs
    def snapshots(self) -> pa.Table:
        return self._build(
            "snapshots",
            (
                {
                    "committed_at": s.timestamp_ms * 1000,
                    "snapshot_id": s.snapshot_id,
                    "parent_id": s.parent_snapshot_id,
                    "operation": s.operation.value,
                    "manifest_list": s.manifest_list,
                    "summary": list(s.summary.properties.items()),
                }
                for s in self._metadata.snapshots
            ),
        )

    def history(self) -> pa.Table:
        md = self._metadata
        ancestors = {s.snapshot_id for s in md.ancestors(md.current_snapshot_id)}
        rows = []
        for entry in md.snapshot_log:
            snap = md.snapshots_by_id.get(entry.snapshot_id)
            rows.append(
                {
                    "made_current_at": entry.timestamp_ms * 1000,
                    "snapshot_id": entry.snapshot_id,
                    "parent_id": snap.parent_snapshot_id if snap else None,
                    "is_current_ancestor": entry.snapshot_id in ancestors,
                }
            )
        return self._build("history", rows)

    def metadata_log_entries(self) -> pa.Table:
        md = self._metadata
        entries = [(e.timestamp_ms, e.metadata_file) for e in md.metadata_log]
        entries.append((md.last_updated_ms, self._table.metadata_location))
        rows = []
        for ts, path in entries:
            latest: int | None = None
            for log in md.snapshot_log:
                if log.timestamp_ms <= ts:
                    latest = log.snapshot_id
            snap = md.snapshots_by_id.get(latest) if latest is not None else None
            rows.append(
                {
                    "timestamp": ts * 1000,
                    "file": path,
                    "latest_snapshot_id": latest,
                    "latest_schema_id": snap.schema_id if snap else None,
                    "latest_sequence_number": snap.sequence_number if snap else None,
                }
            )
        return self._build("metadata_log_entries", rows)

    def refs(self) -> pa.Table:
        return self._build(
            "refs",
            (
                {
                    "name": name,
                    "type": ref.ref_type.value.upper(),
                    "snapshot_id": ref.snapshot_id,
                    "max_reference_age_in_ms": ref.max_ref_age_ms,
                    "min_snapshots_to_keep": ref.min_snapshots_to_keep,
                    "max_snapshot_age_in_ms": ref.max_snapshot_age_ms,
                }
                for name, ref in self._metadata.refs.items()
            ),
        )

    # ------------------------------------------------------------------ manifests
    def _manifest_row(self, m: ManifestFile) -> dict[str, Any]:
        md = self._metadata
        data = m.content == ManifestContent.DATA
        spec = md.partition_specs_by_id.get(m.partition_spec_id)
        summaries = None
        if m.partitions is not None and spec is not None:
            summaries = []
            for pf, s in zip(spec.fields, m.partitions, strict=False):
                source = md.schema().find_field_or_none(pf.source_id)
                source_type = source.field_type if source is not None else None
                result_type = pf.transform.result_type(source_type) if source_type is not None else None

                def human(b: bytes | None, pf: Any = pf, st: Any = source_type, rt: Any = result_type) -> Any:
                    if b is None or rt is None:
                        return None
                    try:
                        return pf.transform.to_human_string(st, from_bytes(rt, b))
                    except Exception:
                        return None

                summaries.append(
                    {
                        "contains_null": s.contains_null,
                        "contains_nan": s.contains_nan,
                        "lower_bound": human(s.lower_bound),
                        "upper_bound": human(s.upper_bound),
                    }
                )
        return {
            "content": int(m.content),
            "path": m.manifest_path,
            "length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id,
            "added_snapshot_id": m.added_snapshot_id,
            "added_data_files_count": (m.added_files_count or 0) if data else 0,
            "existing_data_files_count": (m.existing_files_count or 0) if data else 0,
            "deleted_data_files_count": (m.deleted_files_count or 0) if data else 0,
            "added_delete_files_count": 0 if data else (m.added_files_count or 0),
            "existing_delete_files_count": 0 if data else (m.existing_files_count or 0),
            "deleted_delete_files_count": 0 if data else (m.deleted_files_count or 0),
            "partition_summaries": summaries,
        }

    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        snap = self._snapshot(snapshot_id)
        return self._build("manifests", (self._manifest_row(m) for m in self._manifests(snap)))

    def all_manifests(self) -> pa.Table:
        rows = []
        for snap in self._metadata.snapshots:
            for m in self._manifests(snap):
                row = self._manifest_row(m)
                row["reference_snapshot_id"] = snap.snapshot_id
                if row["partition_summaries"] is not None:
                    for s in row["partition_summaries"]:
                        s["contains_nan"] = bool(s["contains_nan"])
                rows.append(row)
        return self._build("all_manifests", rows)

    # ------------------------------------------------------------------ files and entries
    def _files(
        self, name: str, manifests: Sequence[ManifestFile], content: ManifestContent | None
    ) -> pa.Table:
        coerce = self._partition_coercer()
        with_partition = bool(unified_partition_type(self._metadata).fields)
        chosen = [m for m in manifests if content is None or m.content == content]
        rows = []
        for _, e in self._entries(chosen):
            if e.status == ManifestEntryStatus.DELETED:
                continue
            row = self._file_row(e.data_file, coerce, with_partition)
            row["readable_metrics"] = self._readable_metrics(e.data_file)
            rows.append(row)
        return self._build(name, rows)

    def files(self, snapshot_id: int | None = None) -> pa.Table:
        """Live data and delete files of the current snapshot (or ``snapshot_id``)."""
        return self._files("files", self._manifests(self._snapshot(snapshot_id)), None)

    def data_files(self, snapshot_id: int | None = None) -> pa.Table:
        return self._files("data_files", self._manifests(self._snapshot(snapshot_id)), ManifestContent.DATA)

    def delete_files(self, snapshot_id: int | None = None) -> pa.Table:
        manifests = self._manifests(self._snapshot(snapshot_id))
        return self._files("delete_files", manifests, ManifestContent.DELETES)

    def all_files(self) -> pa.Table:
        """Live files of every manifest of every snapshot (a file may appear more than once)."""
        return self._files("all_files", self._all_manifests(), None)

    def all_data_files(self) -> pa.Table:
        return self._files("all_data_files", self._all_manifests(), ManifestContent.DATA)

    def all_delete_files(self) -> pa.Table:
        return self._files("all_delete_files", self._all_manifests(), ManifestContent.DELETES)

    def _entries_table(self, name: str, manifests: Sequence[ManifestFile]) -> pa.Table:
        coerce = self._partition_coercer()
        with_partition = bool(unified_partition_type(self._metadata).fields)
        rows = []
        for _, e in self._entries(manifests):
            rows.append(
                {
                    "status": int(e.status),
                    "snapshot_id": e.snapshot_id,
                    "sequence_number": e.sequence_number,
                    "file_sequence_number": e.file_sequence_number,
                    "data_file": self._file_row(e.data_file, coerce, with_partition),
                    "readable_metrics": self._readable_metrics(e.data_file),
                }
            )
        return self._build(name, rows)

    def entries(self, snapshot_id: int | None = None) -> pa.Table:
        """Every manifest entry (added, existing and deleted) of the current snapshot."""
        return self._entries_table("entries", self._manifests(self._snapshot(snapshot_id)))

    def all_entries(self) -> pa.Table:
        return self._entries_table("all_entries", self._all_manifests())

    # ------------------------------------------------------------------ partitions
    def partitions(self, snapshot_id: int | None = None) -> pa.Table:
        """Per partition (of the unified partition type): counts and sizes of its live files and
        the snapshot that last changed it."""
        md = self._metadata
        coerce = self._partition_coercer()
        with_partition = bool(unified_partition_type(md).fields)
        groups: dict[Any, dict[str, Any]] = {}
        manifests = self._manifests(self._snapshot(snapshot_id))
        for _, e in self._entries(manifests):
            if e.status == ManifestEntryStatus.DELETED:
                continue
            f = e.data_file
            part = coerce(f) if with_partition else None
            key = _freeze(part)
            g = groups.get(key)
            if g is None:
                g = {
                    "partition": part,
                    "spec_id": 0,
                    "record_count": 0,
                    "file_count": 0,
                    "total_data_file_size_in_bytes": 0,
                    "position_delete_record_count": 0,
                    "position_delete_file_count": 0,
                    "equality_delete_record_count": 0,
                    "equality_delete_file_count": 0,
                    "last_updated_at": None,
                    "last_updated_snapshot_id": None,
                }
                groups[key] = g
            snap = md.snapshots_by_id.get(e.snapshot_id) if e.snapshot_id is not None else None
            if snap is not None:
                at = snap.timestamp_ms * 1000
                if g["last_updated_at"] is None or at > g["last_updated_at"]:
                    g["spec_id"] = f.spec_id
                    g["last_updated_at"] = at
                    g["last_updated_snapshot_id"] = snap.snapshot_id
            if f.content == DataFileContent.DATA:
                g["record_count"] += f.record_count
                g["file_count"] += 1
                g["total_data_file_size_in_bytes"] += f.file_size_in_bytes
            elif f.content == DataFileContent.POSITION_DELETES:
                g["position_delete_record_count"] += f.record_count
                g["position_delete_file_count"] += 1
            else:
                g["equality_delete_record_count"] += f.record_count
                g["equality_delete_file_count"] += 1
        return self._build("partitions", groups.values())

    # ------------------------------------------------------------------ position deletes
    def position_deletes(self, snapshot_id: int | None = None) -> pa.Table:
        """Every row of the live position delete files: the deleted ``file_path`` and ``pos``, the
        deleted ``row`` when the file stores it, and the delete file's partition, spec and path."""
        import pyarrow as pa

        from icefloe.arrow.position_deletes import read_position_delete_file
        from icefloe.arrow.schema import schema_to_arrow

        md = self._metadata
        schema = self.schema("position_deletes")
        arrow_schema = schema_to_arrow(schema)
        coerce = self._partition_coercer()
        with_partition = bool(unified_partition_type(md).fields)
        manifests = [
            m for m in self._manifests(self._snapshot(snapshot_id)) if m.content == ManifestContent.DELETES
        ]
        pieces: list[pa.Table] = []
        for _, e in self._entries(manifests):
            f = e.data_file
            if e.status == ManifestEntryStatus.DELETED or f.content != DataFileContent.POSITION_DELETES:
                continue
            if str(f.file_format.value).lower() == "puffin":
                raise InvalidMetadataError(
                    f"{f.file_path} is a deletion vector; icefloe lists position delete files only",
                    file_path=f.file_path,
                )
            extra: dict[str, Any] = {"spec_id": f.spec_id, "delete_file_path": f.file_path}
            if with_partition:
                extra["partition"] = coerce(f)
            pieces.append(read_position_delete_file(self._table.io, f, md.schema(), arrow_schema, extra))
        if not pieces:
            return pa.Table.from_batches([], schema=arrow_schema)
        return pa.concat_tables(pieces)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    return value


_SNAPSHOT_TABLES = frozenset(
    {"manifests", "files", "data_files", "delete_files", "entries", "partitions", "position_deletes"}
)
