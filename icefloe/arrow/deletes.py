"""Writing row-level delete files (merge-on-read) as Parquet.

::

    position deletes: {data file path -> row positions}
      -> per path: sorted, de-duplicated int64 positions (numpy)
      -> rows (file_path, pos) in (file_path, pos) order, written in chunks
      -> roll to a new file at write.target-file-size-bytes
      -> DataFile(content=POSITION_DELETES, referenced_data_file when one data file is covered)

    equality deletes: Arrow rows holding (at least) the equality columns
      -> checked against the table schema (equality columns: primitive, not float/double,
         not inside a list or map) -> conformed to the table's Arrow layout (field ids)
      -> rolled files, DataFile(content=EQUALITY_DELETES, equality_ids)

Metrics follow Java's position delete writer: ``file_path`` and ``pos`` bounds are kept in full
only when a file references a single data file (readers then scope it to that file without
opening it) and dropped otherwise; value/null counts of both columns are never stored.
Equality delete files get the table's metrics modes for their columns.

Files are named like data files with a ``-deletes`` suffix and use the table's write properties;
naming, opening and closing are shared with :mod:`icefloe.arrow.writer`.
"""

from __future__ import annotations

import contextlib
import uuid as uuid_mod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from icefloe.arrow.conform import check_arrow_schema, conform_batch
from icefloe.arrow.metrics import FULL, FileMetrics, MetricsConfig
from icefloe.arrow.schema import schema_to_arrow
from icefloe.arrow.writer import (
    ArrowData,
    _OpenFile,
    close_parquet_file,
    file_location,
    open_parquet_file,
    parquet_file_entry,
    raise_typed,
    write_options,
)
from icefloe.errors import SchemaError, UnsupportedFeatureError, ValidationError
from icefloe.io import FileIO
from icefloe.manifest import DataFile, DataFileContent
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import DoubleType, FloatType, LongType, NestedField, PrimitiveType, StringType

__all__ = [
    "DELETE_FILE_PATH_ID",
    "DELETE_FILE_POS_ID",
    "POSITION_DELETE_SCHEMA",
    "write_equality_deletes",
    "write_position_deletes",
]

DELETE_FILE_PATH_ID = 2147483546
DELETE_FILE_POS_ID = 2147483545

POSITION_DELETE_SCHEMA = Schema(
    NestedField(
        DELETE_FILE_PATH_ID,
        "file_path",
        StringType(),
        required=True,
        doc="Path of a file in which a deleted row is stored",
    ),
    NestedField(
        DELETE_FILE_POS_ID,
        "pos",
        LongType(),
        required=True,
        doc="Ordinal position of a deleted row in the data file",
    ),
)
_POSITION_ARROW = schema_to_arrow(POSITION_DELETE_SCHEMA)
_POSITION_FIELD_IDS = (DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID)
# Rows per batch handed to the Parquet writer; also how often the rolling size is checked.
_CHUNK_ROWS = 1 << 20


class _RollingDeleteWriter:
    """Writes batches of one partition into files of about the target size."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        schema: Schema,
        spec: PartitionSpec,
        partition: tuple[Any, ...],
        metrics_config: MetricsConfig,
        target_file_size_bytes: int | None,
        write_uuid: str | uuid_mod.UUID | None,
        table_schema: Schema,
    ) -> None:
        self.io = io
        self.schema = schema
        self.arrow_schema = schema_to_arrow(schema)
        self.spec = spec
        self.partition = partition
        self.metrics_config = metrics_config
        self.options = write_options(metadata, target_file_size_bytes)
        self.write_uuid = str(write_uuid or uuid_mod.uuid4())
        self.table_schema = table_schema
        self.count = 0
        self.current: _OpenFile | None = None
        self.written: list[str] = []
        self.closed: list[tuple[str, int, FileMetrics]] = []

    def write(self, batch: pa.RecordBatch) -> bool:
        """Write one batch; True when the file it went to was closed (rolled) after it."""
        if self.current is None:
            self.count += 1
            path = file_location(
                self.options,
                self.spec,
                self.table_schema,
                self.partition,
                self.write_uuid,
                self.count,
                "-deletes",
            )
            self.written.append(path)
            self.current = open_parquet_file(
                self.io, path, self.schema, self.arrow_schema, self.options, self.metrics_config
            )
        f = self.current
        rows = pa.Table.from_batches([batch], schema=self.arrow_schema)
        row_group = max(1, min(rows.num_rows, _row_group_rows(batch, self.options.row_group_size)))
        f.writer.write_table(rows, row_group_size=row_group)
        f.metrics.update(batch)
        if f.sink.tell() >= self.options.target_file_size:
            self.close()
            return True
        return False

    def close(self) -> None:
        f = self.current
        if f is None:
            return
        self.current = None
        size, metrics = close_parquet_file(f)
        self.closed.append((f.path, size, metrics))

    def abort(self) -> None:
        f = self.current
        if f is not None:
            with contextlib.suppress(Exception):  # best effort on the error path
                f.writer.close()
                f.sink.close()
                f.stream.close()
        for path in self.written:
            with contextlib.suppress(Exception):
                self.io.delete(path)


def _row_group_rows(batch: pa.RecordBatch, row_group_bytes: int) -> int:
    per_row = max(1, batch.nbytes // max(batch.num_rows, 1))
    return int(max(1, row_group_bytes // per_row))


def _spec(metadata: TableMetadata, spec_id: int | None) -> PartitionSpec:
    return metadata.spec() if spec_id is None else metadata.spec_by_id(spec_id)


def _check_partition(spec: PartitionSpec, partition: Sequence[Any]) -> tuple[Any, ...]:
    part = tuple(partition)
    if len(part) != len(spec.fields):
        raise ValidationError(
            f"partition {part!r} has {len(part)} values but spec {spec.spec_id} has "
            f"{len(spec.fields)} fields",
            hint="pass the partition tuple of the data files the deletes belong to",
        )
    return part


def _positions(value: Any, path: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if isinstance(value, pa.Array):
        if value.null_count:
            raise ValidationError(f"positions for {path} contain nulls")
        value = value.to_numpy(zero_copy_only=False)
    arr = np.asarray(value)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValidationError(
            f"positions for {path} must be integers, got {arr.dtype}",
            hint="pass a pyarrow int64 array or a numpy integer array",
        )
    arr = arr.astype(np.int64, copy=False).ravel()
    if arr.size and int(arr.min()) < 0:
        raise ValidationError(f"positions for {path} must be >= 0")
    out: np.ndarray[Any, np.dtype[np.int64]] = np.unique(arr)  # sorted, without duplicates
    return out


def _position_batches(
    deletes: Mapping[str, Any], chunk_rows: int
) -> Iterable[tuple[pa.RecordBatch, set[str]]]:
    """Batches of (file_path, pos) in (file_path, pos) order with the paths each one covers;
    positions of many data files share a batch so that small deletes make few row groups."""
    paths = sorted(deletes)
    for path in paths:
        if not isinstance(path, str) or not path:
            raise ValidationError(f"data file paths must be non-empty strings, got {path!r}")
    per_path = [_positions(deletes[p], p) for p in paths]
    counts = np.fromiter((len(a) for a in per_path), dtype=np.int64, count=len(per_path))
    if not counts.sum():
        return
    positions = np.concatenate(per_path)
    path_index: np.ndarray[Any, Any] = np.repeat(np.arange(len(paths), dtype=np.int32), counts)
    dictionary = pa.array(paths, pa.string())
    for start in range(0, len(positions), chunk_rows):
        idx = path_index[start : start + chunk_rows]
        file_path = pa.DictionaryArray.from_arrays(pa.array(idx), dictionary).dictionary_decode()
        pos = pa.array(positions[start : start + chunk_rows], pa.int64())
        covered = {paths[i] for i in np.unique(idx).tolist()}
        yield pa.RecordBatch.from_arrays([file_path, pos], schema=_POSITION_ARROW), covered


def write_position_deletes(
    io: FileIO,
    metadata: TableMetadata,
    deletes: Mapping[str, Any],
    *,
    spec_id: int | None = None,
    partition: Sequence[Any] = (),
    target_file_size_bytes: int | None = None,
    write_uuid: str | uuid_mod.UUID | None = None,
) -> list[DataFile]:
    """Write position delete files for data files of one partition and return their entries
    (not yet committed).

    ``deletes`` maps a data file path to the positions (0-based row ordinals in that file) to
    delete: a pyarrow integer array or anything numpy turns into integers. All data files must
    belong to ``spec_id``/``partition`` (the delete files get the same), because readers only
    look for position deletes in the data file's own partition. No positions writes no file.
    """
    if metadata.format_version >= 3:
        raise UnsupportedFeatureError(
            "format v3 tables take deletion vectors, not new position delete files",
            hint="write deletion vectors with icefloe.arrow.deletion_vectors.write_deletion_vectors "
            "(table.delete does on merge-on-read v3 tables)",
        )
    spec = _spec(metadata, spec_id)
    part = _check_partition(spec, partition)
    # Java's position delete writer keeps both columns at full metrics (bounds are only useful
    # untruncated: a file path compared with a prefix proves nothing about equality).
    config = MetricsConfig(FULL, {})
    writer = _RollingDeleteWriter(
        io,
        metadata,
        POSITION_DELETE_SCHEMA,
        spec,
        part,
        config,
        target_file_size_bytes,
        write_uuid,
        metadata.schema(),
    )
    referenced: list[set[str]] = []
    current_refs: set[str] = set()
    try:
        # Rolling is checked after each chunk; position deletes take at most ~8 bytes a row on
        # disk, so a chunk never overshoots the target by much.
        chunk_rows = max(1024, min(_CHUNK_ROWS, writer.options.target_file_size // 8))
        for batch, covered in _position_batches(deletes, chunk_rows):
            current_refs.update(covered)
            if writer.write(batch):
                referenced.append(current_refs)
                current_refs = set()
        writer.close()
        if current_refs:
            referenced.append(current_refs)
    except BaseException as e:
        writer.abort()
        raise_typed(e, "delete files")
    out = []
    for (path, size, m), refs in zip(writer.closed, referenced, strict=True):
        single = next(iter(refs)) if len(refs) == 1 else None
        lower, upper = dict(m.lower_bounds), dict(m.upper_bounds)
        if single is None:
            for fid in _POSITION_FIELD_IDS:
                lower.pop(fid, None)
                upper.pop(fid, None)
        out.append(
            parquet_file_entry(
                DataFileContent.POSITION_DELETES,
                path,
                size,
                m,
                partition=part,
                spec_id=spec.spec_id,
                value_counts=_without(m.value_counts, _POSITION_FIELD_IDS),
                null_value_counts=_without(m.null_value_counts, _POSITION_FIELD_IDS),
                nan_value_counts=_without(m.nan_value_counts, _POSITION_FIELD_IDS),
                lower_bounds=lower or None,
                upper_bounds=upper or None,
                referenced_data_file=single,
            )
        )
    return out


def _without(counts: dict[int, int], ids: Iterable[int]) -> dict[int, int] | None:
    drop = set(ids)
    kept = {k: v for k, v in counts.items() if k not in drop}
    return kept or None


def _equality_field_ids(schema: Schema, equality_ids: Sequence[int | str]) -> tuple[int, ...]:
    if not equality_ids:
        raise ValidationError("equality deletes need at least one equality column")
    out: list[int] = []
    for ref in equality_ids:
        if isinstance(ref, bool) or not isinstance(ref, int | str):
            raise ValidationError(f"equality column {ref!r} must be a field id or a column name")
        f = schema.find_field(ref)  # raises SchemaError for unknown columns
        t = f.field_type
        name = schema.column_name(f.field_id)
        if not isinstance(t, PrimitiveType):
            raise SchemaError(
                f"equality column {name!r} is a {t}, not a primitive type",
                hint="equality deletes compare primitive columns (a nested struct's primitive "
                "fields may be used)",
                column=name,
            )
        if isinstance(t, FloatType | DoubleType):
            raise SchemaError(
                f"equality column {name!r} is {t}; floating-point columns cannot be equality keys",
                hint="NaN and -0.0 make float equality ambiguous; use an exact column as the key",
                column=name,
            )
        if schema.is_in_repeated(f.field_id):
            raise SchemaError(
                f"equality column {name!r} is inside a list or map",
                hint="equality columns must be top-level or inside structs only",
                column=name,
            )
        if f.field_id in out:
            raise ValidationError(f"equality column {name!r} is listed twice")
        out.append(f.field_id)
    return tuple(out)


def _arrow_batches(data: ArrowData) -> tuple[pa.Schema | None, Iterable[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data]
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data
    return None, data


def write_equality_deletes(
    io: FileIO,
    metadata: TableMetadata,
    data: ArrowData,
    equality_ids: Sequence[int | str],
    *,
    spec_id: int | None = None,
    partition: Sequence[Any] = (),
    schema: Schema | None = None,
    target_file_size_bytes: int | None = None,
    write_uuid: str | uuid_mod.UUID | None = None,
) -> list[DataFile]:
    """Write equality delete files: every table row whose ``equality_ids`` columns equal those of a
    row of ``data`` (nulls equal nulls) and that was committed before the delete is deleted.

    ``data`` holds table columns by name (at least the equality columns; others are written
    too). ``equality_ids`` are field ids or column names of ``schema`` (the table's current
    schema by default). Deletes of an unpartitioned spec apply to the whole table; those of a
    partitioned spec only to data files of the same ``partition``.
    """
    schema = schema if schema is not None else metadata.schema()
    eq_ids = _equality_field_ids(schema, equality_ids)
    spec = _spec(metadata, spec_id)
    part = _check_partition(spec, partition)
    input_schema, batches = _arrow_batches(data)
    if input_schema is None:
        batches = list(batches)
        if not batches:
            return []
        input_schema = batches[0].schema
    delete_schema = schema.select(list(input_schema.names))
    missing = [schema.column_name(i) for i in eq_ids if delete_schema.find_field_or_none(i) is None]
    if missing:
        raise SchemaError(
            f"equality delete rows lack the equality column(s) {', '.join(missing)}",
            hint="include every equality column in the delete rows",
        )
    check_arrow_schema(input_schema, delete_schema)
    config = MetricsConfig.from_properties(metadata.properties, delete_schema)
    writer = _RollingDeleteWriter(
        io, metadata, delete_schema, spec, part, config, target_file_size_bytes, write_uuid, schema
    )
    try:
        for batch in batches:
            if not isinstance(batch, pa.RecordBatch):
                raise ValidationError(f"expected pyarrow RecordBatches, got {type(batch).__name__}")
            if batch.schema != input_schema:
                check_arrow_schema(batch.schema, delete_schema)
            if batch.num_rows:
                writer.write(conform_batch(batch, delete_schema))
        writer.close()
    except BaseException as e:
        writer.abort()
        raise_typed(e, "delete files")
    return [
        parquet_file_entry(
            DataFileContent.EQUALITY_DELETES,
            path,
            size,
            m,
            partition=part,
            spec_id=spec.spec_id,
            equality_ids=eq_ids,
        )
        for path, size, m in writer.closed
    ]
