"""Applying row-level deletes to the batches of one data file, vectorized.

::

    task.delete_files ─┬─ position deletes ─▶ sorted int64 positions deleted in this data file
                       │      (small delete files: read once, indexed by path, cached;
                       │       large ones: only row groups whose file_path stats admit the path;
                       │       v3 deletion vectors: one ranged read of the Puffin blob)
                       └─ equality deletes ─▶ per set of equality ids: the delete rows' key
                              columns as dense integer codes (nulls are values: null = null)

    per batch (rows [p, p + n) of the data file):
        keep = ~isin(p + arange(n), positions)     (searchsorted on the sorted positions)
             & ~(key codes of the batch found among the delete keys)

Multi-column keys are combined one column at a time and re-densified after each step (sorted
unique codes + searchsorted), so the codes never overflow and matching stays O(n log d).

Equality deletes keep applying after their columns are dropped from the table (the spec: a
dropped column stays in the data files by id). Such a column is read from the data files by its
field id, under a placeholder name, typed as the delete file types it (widened to the widest type
it may have been promoted to), compared, and left out of the output.

Delete-file reads are cached in a small LRU (by path, bounded by bytes) shared by the tasks that a
process reads, so a delete file covering many data files (or a data file split into several tasks)
is read once. A delete file that does not decode raises
:class:`~icefloe.errors.CorruptFileError` naming it: the data files it covers cannot be read
without it (the rows it deletes would come back).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.arrow._name_mapping import annotate_field_ids, has_field_ids, mapping_from_schema
from icefloe.arrow.schema import arrow_to_schema, field_id_of, type_to_arrow
from icefloe.errors import CorruptFileError, InvalidMetadataError, SchemaError, UnsupportedFeatureError
from icefloe.io import FileIO
from icefloe.io._decode import EQUALITY_DELETE_FILE, PARQUET_READ, POSITION_DELETE_FILE, decoding
from icefloe.io.puffin import deletion_vector_positions, read_blob
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StructType,
)

__all__ = ["DeleteFilter", "DeleteLoader", "default_delete_loader"]

_PATH_ID = 2147483546
_POS_ID = 2147483545
_EMPTY_POSITIONS: np.ndarray[Any, np.dtype[np.int64]] = np.zeros(0, dtype=np.int64)

Int64Array = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class _PositionsByPath:
    """A whole position delete file: for each referenced data file, its sorted positions."""

    positions: dict[str, Int64Array]
    nbytes: int


@dataclass(frozen=True)
class _EqualityRows:
    """The key columns of one equality delete file, in the order of its equality ids, and the
    file's own columns leading to them (see :func:`_equality_fields`)."""

    columns: tuple[pa.Array, ...]
    nbytes: int
    fields: tuple[pa.Field, ...]


class DeleteLoader:
    """Reads delete files and caches what it read (thread-safe; an LRU bounded by bytes).

    ``whole_file_rows``: position delete files with at most this many rows are read whole and
    indexed by data file path (cached); larger ones are read per data file, using row-group
    statistics on ``file_path`` to skip row groups, and not cached.
    """

    def __init__(self, max_cached_bytes: int = 256 * 1024 * 1024, whole_file_rows: int = 4_000_000) -> None:
        self.max_cached_bytes = max_cached_bytes
        self.whole_file_rows = whole_file_rows
        self._cache: OrderedDict[str, _PositionsByPath | _EqualityRows] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()
        self.files_read = 0

    # ------------------------------------------------------------------ cache
    def _get(self, key: str) -> _PositionsByPath | _EqualityRows | None:
        with self._lock:
            value = self._cache.get(key)
            if value is not None:
                self._cache.move_to_end(key)
            return value

    def _put(self, key: str, value: _PositionsByPath | _EqualityRows) -> None:
        if value.nbytes > self.max_cached_bytes:
            return
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self._cached_bytes -= old.nbytes
            self._cache[key] = value
            self._cached_bytes += value.nbytes
            while self._cached_bytes > self.max_cached_bytes and self._cache:
                _, evicted = self._cache.popitem(last=False)
                self._cached_bytes -= evicted.nbytes

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._cached_bytes = 0

    # ------------------------------------------------------------------ position deletes
    def positions(self, io: FileIO, data_path: str, delete_files: Sequence[DataFile]) -> Int64Array:
        """Sorted, distinct positions of ``data_path`` deleted by any of ``delete_files``."""
        parts: list[Int64Array] = []
        for d in delete_files:
            if d.content != DataFileContent.POSITION_DELETES:
                continue
            if d.file_format == FileFormat.PUFFIN:
                parts.append(self._read_deletion_vector(io, d, data_path))
                continue
            _check_parquet(d)
            if d.record_count <= self.whole_file_rows:
                cached = self._get(d.file_path)
                if not isinstance(cached, _PositionsByPath):
                    cached = self._read_whole_position_file(io, d)
                    self._put(d.file_path, cached)
                found = cached.positions.get(data_path)
                if found is not None:
                    parts.append(found)
            else:
                parts.append(self._read_positions_for(io, d, data_path))
        if not parts:
            return _EMPTY_POSITIONS
        if len(parts) == 1:
            return parts[0]
        out: Int64Array = np.unique(np.concatenate(parts))
        return out

    def wants_whole_position_file(self, d: DataFile) -> bool:
        """Whether ``d`` is a position delete file read whole (and cached) that is not cached yet:
        what a bulk reader (:mod:`icefloe.arrow._scan_groups`) may read ahead for this loader."""
        return (
            d.content == DataFileContent.POSITION_DELETES
            and d.file_format == FileFormat.PARQUET
            and d.record_count <= self.whole_file_rows
            and not isinstance(self._get(d.file_path), _PositionsByPath)
        )

    def add_position_file(self, d: DataFile, table: pa.Table) -> None:
        """Cache a position delete file read elsewhere: ``table`` holds its (file_path, pos)
        columns, in that order (types are checked here)."""
        _check_position_types(table, d)
        self.files_read += 1
        self._put(d.file_path, _index_positions(table, d.file_path))

    def _read_deletion_vector(self, io: FileIO, d: DataFile, data_path: str) -> Int64Array:
        if d.referenced_data_file != data_path:
            raise InvalidMetadataError(
                f"deletion vector in {d.file_path} references {d.referenced_data_file}, not {data_path}"
            )
        if d.content_offset is None or d.content_size_in_bytes is None:
            raise InvalidMetadataError(
                f"deletion vector in {d.file_path} for {data_path} lacks content_offset/content_size_in_bytes"
            )
        blob = read_blob(io, d.file_path, d.content_offset, d.content_size_in_bytes)
        self.files_read += 1
        positions: Int64Array = deletion_vector_positions(
            blob, f"deletion vector for {data_path}", path=d.file_path
        )
        if len(positions) != d.record_count:
            raise InvalidMetadataError(
                f"deletion vector for {data_path} holds {len(positions)} positions, its manifest entry "
                f"says {d.record_count}"
            )
        return positions

    def _read_whole_position_file(self, io: FileIO, d: DataFile) -> _PositionsByPath:
        with decoding(d.file_path, POSITION_DELETE_FILE), io.new_input(d.file_path).open() as stream:
            pf = pq.ParquetFile(stream, **PARQUET_READ)
            path_col, pos_col = _position_columns(pf, d)
            # Paths repeat: read them dictionary-encoded (reusing the footer already parsed).
            pf = pq.ParquetFile(stream, metadata=pf.metadata, read_dictionary=[path_col], **PARQUET_READ)
            table = pf.read(columns=[path_col, pos_col])
            _check_position_types(table, d)
        self.files_read += 1
        return _index_positions(table, d.file_path)

    def _read_positions_for(self, io: FileIO, d: DataFile, data_path: str) -> Int64Array:
        with decoding(d.file_path, POSITION_DELETE_FILE), io.new_input(d.file_path).open() as stream:
            pf = pq.ParquetFile(stream, **PARQUET_READ)
            path_col, pos_col = _position_columns(pf, d)
            path_index = pf.schema_arrow.get_field_index(path_col)
            meta = pf.metadata
            wanted = []
            for i in range(meta.num_row_groups):
                stats = meta.row_group(i).column(path_index).statistics
                if stats is not None and stats.has_min_max and not (stats.min <= data_path <= stats.max):
                    continue
                wanted.append(i)
            self.files_read += 1
            if not wanted:
                return _EMPTY_POSITIONS
            table = pf.read_row_groups(wanted, columns=[path_col, pos_col])
            _check_position_types(table, d)
        selected = table.filter(pc.equal(table.column(0), pa.scalar(data_path, pa.string())))
        pos = selected.column(1).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64)
        out: Int64Array = np.unique(pos)
        return out

    # ------------------------------------------------------------------ equality deletes
    def equality_rows(self, io: FileIO, d: DataFile, table_schema: Schema) -> _EqualityRows:
        cached = self._get(d.file_path)
        if isinstance(cached, _EqualityRows):
            return cached
        rows = self._read_equality_rows(io, d, table_schema)
        self._put(d.file_path, rows)
        return rows

    def _read_equality_rows(self, io: FileIO, d: DataFile, table_schema: Schema) -> _EqualityRows:
        from icefloe.arrow.reader import to_table_layout

        _check_parquet(d)
        eq_ids = tuple(d.equality_ids or ())
        with decoding(d.file_path, EQUALITY_DELETE_FILE), io.new_input(d.file_path).open() as stream:
            pf = pq.ParquetFile(stream, **PARQUET_READ)
            file_schema = pf.schema_arrow
            annotated = not has_field_ids(file_schema)
            if annotated:
                file_schema = annotate_field_ids(file_schema, mapping_from_schema(table_schema))
            eq_fields = _equality_fields(file_schema, eq_ids)
            key_schema = _with_equality_columns(table_schema, eq_fields, eq_ids, d.file_path).select_ids(
                eq_ids
            )
            top_ids = {f.field_id for f in key_schema.fields}
            columns = [f.name for f in file_schema if field_id_of(f) in top_ids]
            table = pf.read(columns=columns)
        self.files_read += 1
        if annotated:
            fields = [file_schema.field(name) for name in columns]
            table = pa.Table.from_arrays(
                [table.column(i).combine_chunks().view(f.type) for i, f in enumerate(fields)],
                schema=pa.schema(fields),
            )
        batch = table.combine_chunks().to_batches()
        if not batch:
            return _EqualityRows(tuple(pa.array([], _leaf_type(key_schema, i)) for i in eq_ids), 0, eq_fields)
        laid_out = to_table_layout(batch[0], key_schema)
        columns_by_id = tuple(_storage(leaf_column(laid_out, key_schema, i)) for i in eq_ids)
        return _EqualityRows(columns_by_id, int(sum(c.nbytes for c in columns_by_id)), eq_fields)


def _index_positions(table: pa.Table, path: str | None = None) -> _PositionsByPath:
    """A position delete file's (file_path, pos) columns indexed by data file path."""
    paths = table.column(0).combine_chunks()
    if not pa.types.is_dictionary(paths.type):
        paths = paths.dictionary_encode()
    codes = paths.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(paths.dictionary)):
        # A damaged dictionary page: pyarrow hands out indices past the dictionary.
        raise CorruptFileError.of(path, POSITION_DELETE_FILE, "file_path dictionary indices out of range")
    pos = table.column(1).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    order = np.lexsort((pos, codes))  # files are written sorted; do not rely on it
    codes, pos = codes[order], pos[order]
    present, starts, counts = np.unique(codes, return_index=True, return_counts=True)
    names = paths.dictionary.to_pylist()
    # A loop over distinct data files (not rows): one slice each.
    by_path: dict[str, Int64Array] = {}
    for code, s, c in zip(present.tolist(), starts.tolist(), counts.tolist(), strict=True):
        chunk = pos[s : s + c]
        if len(chunk) > 1 and not bool(np.all(chunk[1:] > chunk[:-1])):
            chunk = np.unique(chunk)
        by_path[names[code]] = chunk
    nbytes = int(pos.nbytes) + sum(len(n) for n in names) + 64 * len(names)
    return _PositionsByPath(by_path, nbytes)


def _check_parquet(d: DataFile) -> None:
    if d.file_format != FileFormat.PARQUET:
        raise UnsupportedFeatureError(
            f"delete file {d.file_path} is {d.file_format}; only Parquet delete files can be read",
            file=d.file_path,
        )


def _position_columns(pf: pq.ParquetFile, d: DataFile) -> tuple[str, str]:
    by_id = {field_id_of(f): f.name for f in pf.schema_arrow}
    path_col = by_id.get(_PATH_ID, "file_path")
    pos_col = by_id.get(_POS_ID, "pos")
    names = set(pf.schema_arrow.names)
    if path_col not in names or pos_col not in names:
        raise CorruptFileError.of(
            d.file_path,
            POSITION_DELETE_FILE,
            "it lacks the file_path/pos columns",
            hint="the file is not a position delete file; restore the right file or remove it from the table",
        )
    return path_col, pos_col


def _check_position_types(table: pa.Table, d: DataFile) -> None:
    """``file_path`` must be text and ``pos`` an integer (other types would be misread silently)."""
    path_type, pos_type = table.schema.field(0).type, table.schema.field(1).type
    if pa.types.is_dictionary(path_type):
        path_type = path_type.value_type
    if not (pa.types.is_string(path_type) or pa.types.is_large_string(path_type)) or not pa.types.is_integer(
        pos_type
    ):
        raise CorruptFileError.of(
            d.file_path,
            POSITION_DELETE_FILE,
            f"file_path is {path_type} and pos is {pos_type}, not string and long",
        )
    if table.column(0).null_count or table.column(1).null_count:
        # Both columns are required: a null cannot name a deleted row.
        raise CorruptFileError.of(d.file_path, POSITION_DELETE_FILE, "null in the file_path or pos column")


# --------------------------------------------------------------------------- dropped equality columns

_DROPPED_NAME = "__icefloe_dropped_{}"


def _equality_fields(file_schema: pa.Schema, eq_ids: Iterable[int]) -> tuple[pa.Field, ...]:
    """The top-level columns of a delete file that hold its equality fields, each pruned to the
    path leading to them (as the file has them: names, types, field ids)."""
    wanted = set(eq_ids)

    def prune(f: pa.Field) -> pa.Field | None:
        try:
            fid = field_id_of(f)
        except SchemaError:
            return None  # an unreadable id is no equality field's
        if fid is None:
            return None
        if fid in wanted:
            return f
        if not pa.types.is_struct(f.type):
            return None
        children = [c for i in range(f.type.num_fields) if (c := prune(f.type.field(i))) is not None]
        return f.with_type(pa.struct(children)) if children else None

    return tuple(nf for f in file_schema if (nf := prune(f)) is not None)


def _with_equality_columns(
    schema: Schema, fields: Sequence[pa.Field], eq_ids: Iterable[int], delete_path: str
) -> Schema:
    """``schema`` plus the equality fields of a delete file (whose own columns leading to them
    are ``fields``, see :func:`_equality_fields`) that it no longer has: columns dropped since the
    delete was written, which the delete still applies to. Each comes back where the delete file
    has it, optional, under a placeholder name (a new column may have taken the old name), typed
    as the delete file has it, widened to the widest type it may have been promoted to: data
    files of every schema version then read it without loss."""
    missing = {i for i in eq_ids if schema.find_field_or_none(i) is None}
    if not missing:
        return schema
    found: set[int] = set()

    def prune(f: pa.Field) -> NestedField | None:
        fid = field_id_of(f)
        assert fid is not None  # _equality_fields keeps fields with ids only
        name = f.name if schema.find_field_or_none(fid) is not None else _DROPPED_NAME.format(fid)
        if fid in missing:
            found.add(fid)
            try:
                t = arrow_to_schema(pa.schema([f]), timestamp_ns="keep").fields[0].field_type
            except SchemaError as e:
                raise SchemaError(
                    f"equality delete file {delete_path}: the dropped column {f.name!r} (id {fid}) it "
                    f"compares has a type Iceberg cannot hold: {e}",
                    file=delete_path,
                ) from None
            return NestedField(fid, name, _widest(t))
        if pa.types.is_struct(f.type):
            children = [c for i in range(f.type.num_fields) if (c := prune(f.type.field(i))) is not None]
            if children:
                return NestedField(fid, name, StructType(*children))
        return None

    extra = StructType(*[c for c in (prune(f) for f in fields) if c is not None])
    if missing - found:
        raise SchemaError(
            f"equality delete file {delete_path} compares field id(s) {sorted(missing - found)}, which "
            "neither the read schema nor the delete file (by field id) has",
            hint="read with a schema that still has the equality columns",
        )
    merged = _merge_struct(schema.as_struct(), extra)
    return Schema(
        *merged.fields, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids
    )


def _merge_struct(struct: StructType, extra: StructType) -> StructType:
    """``struct`` with the fields of ``extra`` added by id (structs present in both merged)."""
    added = {f.field_id: f for f in extra.fields}
    out = []
    for f in struct.fields:
        more = added.pop(f.field_id, None)
        if (
            more is not None
            and isinstance(f.field_type, StructType)
            and isinstance(more.field_type, StructType)
        ):
            f = replace(f, field_type=_merge_struct(f.field_type, more.field_type))
        out.append(f)
    out.extend(added.values())
    return StructType(*out)


def _widest(t: IcebergType) -> IcebergType:
    """The widest type that a column of type ``t`` may have had before or after ``t``."""
    if isinstance(t, IntegerType):
        return LongType()
    if isinstance(t, FloatType):
        return DoubleType()
    if isinstance(t, DecimalType):
        return DecimalType(38, t.scale)
    return t


def _storage_type(t: IcebergType) -> pa.DataType:
    arrow = type_to_arrow(t)
    return arrow.storage_type if isinstance(arrow, pa.BaseExtensionType) else arrow


def _leaf_type(schema: Schema, field_id: int) -> pa.DataType:
    from icefloe.arrow.schema import type_to_arrow

    return type_to_arrow(schema.find_field(field_id).field_type)


def _cast(arr: pa.Array, t: pa.DataType) -> pa.Array:
    return arr if arr.type == t else arr.cast(t)


def _storage(arr: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def leaf_column(batch: pa.RecordBatch, schema: Schema, field_id: int) -> pa.Array:
    """The values of field ``field_id`` (top level or inside structs) of a batch laid out as
    ``schema``; a null struct makes its children null."""
    path: list[NestedField] = []
    current: int | None = field_id
    while current is not None:
        path.append(schema.find_field(current))
        current = schema.parent_id(current)
    path.reverse()
    arr: pa.Array = batch.column(schema.fields.index(path[0]))
    parent_type = path[0].field_type
    for f in path[1:]:
        assert isinstance(parent_type, StructType)
        index = [c.field_id for c in parent_type.fields].index(f.field_id)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = arr.flatten()[index]  # flatten() merges the struct's validity into its children
        parent_type = f.field_type
    return arr


# --------------------------------------------------------------------------- equality matching


class _KeySet:
    """Delete keys of one set of equality ids, encoded for vectorized membership tests."""

    def __init__(self, field_ids: tuple[int, ...], columns: Sequence[pa.Array]) -> None:
        self.field_ids = field_ids
        self.value_sets: list[pa.Array] = []
        self.steps: list[Int64Array] = []  # sorted unique combined codes after each column
        acc: Int64Array | None = None
        for col in columns:
            values = pc.unique(col)
            self.value_sets.append(values)
            codes = _codes(col, values)
            if acc is None:
                acc = codes
            else:
                acc = acc * len(values) + codes
            uniq: Int64Array = np.unique(acc)
            self.steps.append(uniq)
            acc = np.searchsorted(uniq, acc).astype(np.int64)

    def matches(self, columns: Sequence[pa.Array]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Which rows have a key equal (null-safe) to some delete row's key."""
        acc: Int64Array | None = None
        for col, values, uniq in zip(columns, self.value_sets, self.steps, strict=True):
            codes = _codes(_storage(col), values)
            if acc is None:
                combined = codes
                missing = codes < 0
            else:
                missing = (acc < 0) | (codes < 0)
                combined = acc * len(values) + codes
            # uniq is never empty: key sets are only built from delete rows.
            pos = np.minimum(np.searchsorted(uniq, combined), len(uniq) - 1)
            found = ~missing & (uniq[pos] == combined)
            acc = np.where(found, pos, -1).astype(np.int64)
        assert acc is not None
        out: np.ndarray[Any, np.dtype[np.bool_]] = acc >= 0
        return out


def _codes(col: pa.Array, values: pa.Array) -> Int64Array:
    """Index of each value in ``values`` (nulls match a null there), -1 when absent."""
    idx = pc.index_in(col, value_set=values, skip_nulls=False)
    out: Int64Array = pc.fill_null(idx, -1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return out


# --------------------------------------------------------------------------- per task


class DeleteFilter:
    """The deletes of one data file, ready to mask its batches."""

    def __init__(
        self,
        io: FileIO,
        data_file: DataFile,
        delete_files: Sequence[DataFile],
        table_schema: Schema,
        loader: DeleteLoader | None = None,
    ) -> None:
        loader = loader if loader is not None else default_delete_loader()
        self.table_schema = table_schema
        for d in delete_files:
            if d.content == DataFileContent.DATA:
                raise InvalidMetadataError(
                    f"{d.file_path} is a data file, not a delete file, but is listed as deletes of "
                    f"{data_file.file_path}",
                    file=d.file_path,
                )
        position_files = [d for d in delete_files if d.content == DataFileContent.POSITION_DELETES]
        equality_files = [d for d in delete_files if d.content == DataFileContent.EQUALITY_DELETES]
        self.positions = loader.positions(io, data_file.file_path, position_files)
        grouped: dict[tuple[int, ...], list[_EqualityRows]] = {}
        self._equality_fields: list[tuple[tuple[pa.Field, ...], tuple[int, ...], str]] = []
        for d in equality_files:
            ids = tuple(d.equality_ids or ())
            if not ids:
                raise InvalidMetadataError(f"equality delete file {d.file_path} has no equality_ids")
            rows = loader.equality_rows(io, d, table_schema)
            self._equality_fields.append((rows.fields, ids, d.file_path))
            grouped.setdefault(ids, []).append(rows)
        # The table schema plus the dropped columns the equality deletes compare: batches are
        # read as (a projection of) this schema.
        self.schema = schema = self.extend(table_schema)
        self.key_sets: list[_KeySet] = []
        for ids, parts in grouped.items():
            if not any(len(p.columns[0]) for p in parts):
                continue
            # Delete files written under older schemas (or rows cached under one) hold narrower
            # types; compare in the type the batches have.
            types = [_storage_type(schema.find_field(i).field_type) for i in ids]
            columns = [
                pa.concat_arrays([_cast(p.columns[k], types[k]) for p in parts]) for k in range(len(ids))
            ]
            self.key_sets.append(_KeySet(ids, columns))

    def extend(self, schema: Schema) -> Schema:
        """``schema`` plus the columns these equality deletes compare that it does not have
        (see :func:`_with_equality_columns`)."""
        for fields, ids, path in self._equality_fields:
            schema = _with_equality_columns(schema, fields, ids, path)
        return schema

    @property
    def equality_field_ids(self) -> set[int]:
        """Columns a batch must carry for the equality deletes to be applied."""
        return {i for k in self.key_sets for i in k.field_ids}

    def is_noop(self) -> bool:
        return len(self.positions) == 0 and not self.key_sets

    def keep_mask(
        self, batch: pa.RecordBatch, batch_schema: Schema, first_row: int
    ) -> np.ndarray[Any, np.dtype[np.bool_]] | None:
        """Rows of ``batch`` (rows ``first_row ..`` of the data file, laid out as
        ``batch_schema``) that no delete removes; None when none is removed."""
        n = batch.num_rows
        keep: np.ndarray[Any, np.dtype[np.bool_]] | None = None
        if len(self.positions):
            lo = int(np.searchsorted(self.positions, first_row, side="left"))
            hi = int(np.searchsorted(self.positions, first_row + n, side="left"))
            if hi > lo:
                keep = np.ones(n, dtype=np.bool_)
                keep[self.positions[lo:hi] - first_row] = False
        for ks in self.key_sets:
            cols = [leaf_column(batch, batch_schema, i) for i in ks.field_ids]
            hit = ks.matches(cols)
            if hit.any():
                keep = ~hit if keep is None else keep & ~hit
        return keep


_DEFAULT_LOADER: DeleteLoader | None = None
_DEFAULT_LOCK = threading.Lock()


def default_delete_loader() -> DeleteLoader:
    """The process-wide loader (delete files are immutable, so caching by path is safe)."""
    global _DEFAULT_LOADER
    with _DEFAULT_LOCK:
        if _DEFAULT_LOADER is None:
            _DEFAULT_LOADER = DeleteLoader()
        return _DEFAULT_LOADER
