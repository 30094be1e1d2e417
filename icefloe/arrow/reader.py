"""Reading the rows of a scan task from a Parquet data file.

::

    FileScanTask -> open the file, map its columns to field ids (Parquet ids, else name mapping,
    else names) -> pick the row groups starting in [start, start + length)
    -> drop the row groups whose statistics rule the residual out
    -> stream batches of the needed top-level columns (projection + residual columns)
    -> per batch: build the table layout by field id (renames, promotion, missing columns as
       nulls or initial defaults, nested projection) -> drop deleted rows and rows failing the
       residual (one filter) -> project

Output batches have exactly ``schema_to_arrow(projected_schema)``; batches left empty by the
residual are skipped. Row-level deletes (``task.delete_files``) are computed per batch by
:mod:`icefloe.arrow.apply_deletes` as a keep mask: each batch knows the file position of its first
row (row groups are read in contiguous runs starting at their first row index, so skipped row
groups do not shift positions), and equality columns the projection lacks are read too and dropped
afterwards (also those dropped from the table since the delete: the data files still hold them by
field id).

Format v3 row lineage: ``_row_id`` and ``_last_updated_sequence_number`` in ``projected_schema``
(:mod:`icefloe.scan.row_lineage`) are read by their reserved field ids like any column, and their
nulls are filled per batch before deletes and the residual drop rows (:func:`inherit_lineage`),
while each row's file position is still known.

Row-group pruning reuses :class:`InclusiveMetricsEvaluator`: each row group's Parquet column
statistics are presented as the metrics of a one-row-group data file, so a row group is skipped
exactly when planning would skip a file with those metrics.

A file that does not decode (no footer, a damaged page even in a later row group, not Parquet at
all) raises :class:`~icefloe.errors.CorruptFileError` naming it, a missing one ``FileIOError``
(``not_found``): the decode calls run inside ``icefloe.io._decode.decoding``, entered once per file
and once per stream of batches, never per batch.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.arrow._name_mapping import (
    MappedField,
    annotate_field_ids,
    has_field_ids,
    mapping_from_schema,
    parse_name_mapping,
)
from icefloe.arrow.apply_deletes import DeleteFilter, DeleteLoader
from icefloe.arrow.expression import Mask, arrow_mask
from icefloe.arrow.metrics import row_group_start
from icefloe.arrow.schema import field_id_of, schema_to_arrow, type_to_arrow
from icefloe.errors import CorruptFileError, IcefloeError, SchemaError, UnsupportedFeatureError
from icefloe.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from icefloe.expressions.visitors.inclusive_metrics import InclusiveMetricsEvaluator
from icefloe.expressions.visitors.referenced_fields import referenced_field_ids
from icefloe.expressions.visitors.strict_metrics import StrictMetricsEvaluator
from icefloe.io import FileIO
from icefloe.io._decode import DATA_FILE, PARQUET_READ, decoding
from icefloe.manifest import FileFormat
from icefloe.scan.row_lineage import LINEAGE_FIELD_IDS, ROW_ID_FIELD
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.spec.values import from_json_value, to_bytes, unscaled_to_decimal

if TYPE_CHECKING:
    from icefloe.manifest import DataFile
    from icefloe.scan.task import FileScanTask

__all__ = ["DEFAULT_BATCH_SIZE", "inherit_lineage", "read_task", "to_table_layout"]

DEFAULT_BATCH_SIZE = 131_072


def read_task(
    io: FileIO,
    task: FileScanTask,
    projected_schema: Schema,
    table_schema: Schema,
    case_sensitive: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    name_mapping: str | Sequence[Any] | None = None,
    delete_loader: DeleteLoader | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream the rows of ``task`` that its delete files keep and that satisfy its residual, as
    ``projected_schema``. ``delete_loader`` caches delete-file reads (a process-wide one by default).

    Columns are resolved by field id. ``name_mapping`` (the table's
    ``schema.name-mapping.default``) assigns ids to files written without them; without it such
    files are matched by column name against ``table_schema``.
    """
    residual: BooleanExpression | None = task.residual
    if isinstance(residual, AlwaysFalse):
        return
    if isinstance(residual, AlwaysTrue) or residual is None:
        residual = None
    else:
        residual = bind(table_schema, residual, case_sensitive)
    deletes: DeleteFilter | None = None
    if task.delete_files:
        deletes = DeleteFilter(io, task.file, task.delete_files, table_schema, delete_loader)
        if deletes.is_noop():
            deletes = None
    read_schema = projected_schema
    extra = set() if residual is None else referenced_field_ids(residual)
    if deletes is not None:
        extra |= deletes.equality_field_ids
    extra -= projected_schema.field_ids()
    if extra:
        # The deletes' schema also has the equality columns dropped from the table since.
        source = table_schema if deletes is None else deletes.schema
        read_schema = source.select_ids(projected_schema.field_ids() | extra)
        lineage = [f for f in projected_schema.fields if f.field_id in LINEAGE_FIELD_IDS]
        if lineage:  # metadata columns, not columns of the table schema
            read_schema = Schema(*read_schema.fields, *lineage)

    path = task.file.file_path
    if task.file.file_format != FileFormat.PARQUET:
        raise UnsupportedFeatureError(
            f"data file {path} is {task.file.file_format.value}; only Parquet data files can be read",
            file=path,
        )
    with decoding(path, DATA_FILE):
        stream = io.new_input(path).open()
    try:
        with decoding(path, DATA_FILE):
            pf = pq.ParquetFile(stream, **PARQUET_READ)
        yield from _read(
            pf, task, projected_schema, read_schema, residual, batch_size, name_mapping, table_schema, deletes
        )
    finally:
        stream.close()


def _read(
    pf: pq.ParquetFile,
    task: FileScanTask,
    projected_schema: Schema,
    read_schema: Schema,
    residual: BooleanExpression | None,
    batch_size: int,
    name_mapping: str | Sequence[Any] | None,
    table_schema: Schema,
    deletes: DeleteFilter | None = None,
) -> Iterator[pa.RecordBatch]:
    path = task.file.file_path
    with decoding(path, DATA_FILE):
        file_schema = pf.schema_arrow
        meta = pf.metadata
    annotated = not has_field_ids(file_schema)
    if annotated:
        mapping: Sequence[MappedField] = (
            parse_name_mapping(name_mapping)
            if name_mapping is not None
            else mapping_from_schema(table_schema)
        )
        file_schema = annotate_field_ids(file_schema, mapping)
    by_id = {fid: f for f in file_schema if (fid := field_id_of(f)) is not None}
    wanted = [by_id[f.field_id] for f in read_schema.fields if f.field_id in by_id]
    columns = [f.name for f in wanted]

    end = None if task.length is None else task.start + task.length
    if task.start == 0 and (end is None or end >= task.file.file_size_in_bytes):
        # The whole file: no need to look at the row groups' offsets (which also keeps corrupt
        # column-chunk metadata away from pyarrow accessors that abort the process on it).
        row_groups = list(range(meta.num_row_groups))
    else:
        row_groups = [
            i
            for i in range(meta.num_row_groups)
            if task.start <= row_group_start(meta.row_group(i))
            and (end is None or row_group_start(meta.row_group(i)) < end)
        ]
    # Row groups whose statistics prove that every row matches the residual skip the filter.
    exact: frozenset[int] = frozenset()
    if residual is not None and PRUNE_ROW_GROUPS:
        with decoding(path, DATA_FILE):  # statistics come from the footer
            verdicts = prune_row_groups(meta, row_groups, file_schema, read_schema, residual, task.file)
        row_groups = [i for i, _ in verdicts]
        exact = frozenset(i for i, all_match in verdicts if all_match)
    if not row_groups:
        return
    read_arrow = schema_to_arrow(read_schema)
    filter_mask = None if residual is None else arrow_mask(residual, read_schema)
    projected_arrow = read_arrow if read_schema is projected_schema else schema_to_arrow(projected_schema)
    lineage_columns = [
        (i, f.field_id) for i, f in enumerate(read_schema.fields) if f.field_id in LINEAGE_FIELD_IDS
    ]

    for first_row, raw, all_match in _positioned_batches(pf, row_groups, columns, batch_size, exact, path):
        n = raw.num_rows
        file_cols: dict[int, tuple[pa.Array, pa.Field]] = {}
        for i, f in enumerate(wanted):
            arr = raw.column(i)
            if annotated:
                arr = arr.view(f.type)  # same layout; carries the mapped ids on nested fields
            file_cols[field_id_of(f)] = (arr, f)  # type: ignore[index]
        if read_schema.fields:
            try:
                arrays = [project_file_column(file_cols.get(f.field_id), f, n) for f in read_schema.fields]
            except _DamagedColumn as e:
                raise CorruptFileError.of(path, DATA_FILE, str(e)) from None
            batch = pa.RecordBatch.from_arrays(arrays, schema=read_arrow)
        else:
            batch = raw.select([])  # keeps the row count
        if lineage_columns:
            batch = inherit_lineage(batch, lineage_columns, task, first_row)
        keep = None if deletes is None else deletes.keep_mask(batch, read_schema, first_row)
        mask = None if all_match else filter_mask
        if keep is not None or mask is not None:
            batch = _filter(batch, keep, mask)
        if batch.num_rows == 0:
            continue
        if read_schema is not projected_schema:
            batch = to_table_layout(batch, projected_schema, projected_arrow)
        yield batch


def inherit_lineage(
    batch: pa.RecordBatch, columns: Sequence[tuple[int, int]], task: FileScanTask, first_row: int
) -> pa.RecordBatch:
    """Row lineage (format v3) of a batch whose first row is at file position ``first_row``: the
    nulls of the ``(column index, field id)`` lineage columns inherit, values the file holds win.
    ``_row_id`` inherits ``first_row_id + position`` (stays null when the file has no
    ``first_row_id``: written before a v2 table was upgraded and not listed by a v3 snapshot since);
    ``_last_updated_sequence_number`` the file's data sequence number."""
    n = batch.num_rows
    arrays = list(batch.columns)
    for index, field_id in columns:
        column = arrays[index]
        if column.null_count == 0:
            continue
        if field_id == ROW_ID_FIELD.field_id:
            first_row_id = task.file.first_row_id
            if first_row_id is None:
                continue
            start = first_row_id + first_row
            inherited = pa.array(np.arange(start, start + n, dtype=np.int64))
        else:
            if task.data_sequence_number is None:
                continue
            inherited = pa.array(np.full(n, task.data_sequence_number, dtype=np.int64))
        arrays[index] = inherited if column.null_count == n else pc.coalesce(column, inherited)
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def _positioned_batches(
    pf: pq.ParquetFile,
    row_groups: list[int],
    columns: list[str],
    batch_size: int,
    exact: frozenset[int] = frozenset(),
    path: str = "",
) -> Iterator[tuple[int, pa.RecordBatch, bool]]:
    """Batches with the file position of their first row (what position deletes refer to) and
    whether all their rows lie in the row groups of ``exact``. Each contiguous run of row groups is
    streamed from its first row index on (one reader per run: batches may span row groups).
    A page that does not decode raises :class:`CorruptFileError` naming ``path``."""
    meta = pf.metadata
    first_rows = [0]
    for i in range(meta.num_row_groups):
        first_rows.append(first_rows[-1] + meta.row_group(i).num_rows)
    runs: list[list[int]] = []
    for i in row_groups:
        if runs and runs[-1][-1] + 1 == i:
            runs[-1].append(i)
        else:
            runs.append([i])
    # Row ranges covered by consecutive exact row groups.
    spans: list[tuple[int, int]] = []
    for i in sorted(exact):
        if spans and spans[-1][1] == first_rows[i]:
            spans[-1] = (spans[-1][0], first_rows[i + 1])
        else:
            spans.append((first_rows[i], first_rows[i + 1]))
    # Pages are decoded lazily: a damaged page of a later row group fails in the middle of the
    # stream. Only the decoder raises in here (the consumer's code runs outside this generator).
    with decoding(path, DATA_FILE):
        for run in runs:
            position = first_rows[run[0]]
            for raw in _raw_batches(pf, run, columns, batch_size):
                end = position + raw.num_rows
                yield position, raw, any(lo <= position and end <= hi for lo, hi in spans)
                position = end


def _raw_batches(
    pf: pq.ParquetFile, row_groups: list[int], columns: list[str], batch_size: int
) -> Iterator[pa.RecordBatch]:
    if columns:
        yield from pf.iter_batches(batch_size=batch_size, row_groups=row_groups, columns=columns)
        return
    # Nothing to read (only missing columns projected): produce empty-column batches of the
    # row groups' row counts.
    for i in row_groups:
        remaining = pf.metadata.row_group(i).num_rows
        while remaining > 0:
            n = min(batch_size, remaining)
            # A batch without columns still carries its row count.
            yield pa.RecordBatch.from_arrays([pa.nulls(n)], names=["_"]).select([])
            remaining -= n


def _filter(
    batch: pa.RecordBatch, keep: np.ndarray[Any, np.dtype[np.bool_]] | None, mask: Mask | None
) -> pa.RecordBatch:
    """Drop deleted rows and rows failing the residual with one copy of the batch."""
    if mask is None:
        assert keep is not None
        selection = pa.array(keep)
    else:
        selection = mask(batch)
        if keep is not None:
            selection = pc.and_(selection, pa.array(keep))
    if batch.num_columns == 0:
        return batch.filter(selection)  # only the row count to keep
    # Column by column: RecordBatch.filter is often slower than filtering its columns.
    return pa.RecordBatch.from_arrays([c.filter(selection) for c in batch.columns], schema=batch.schema)


# --------------------------------------------------------------------------- row-group pruning

# Internal switch: tests turn pruning off to compare against reading every row group.
PRUNE_ROW_GROUPS = True


def prune_row_groups(
    meta: pq.FileMetaData,
    row_groups: list[int],
    file_schema: pa.Schema,
    read_schema: Schema,
    residual: BooleanExpression,
    data_file: DataFile,
) -> list[tuple[int, bool]]:
    """The row groups whose column statistics leave a row matching ``residual`` possible, each
    with whether the statistics prove that every one of its rows matches.

    Each row group's Parquet statistics (min/max, null count) become the metrics of a one-row-group
    "file" for :class:`InclusiveMetricsEvaluator` and :class:`StrictMetricsEvaluator`, so row
    groups are ruled out (and filters skipped) by the same rules as files during planning.
    Statistics that are absent or cannot be mapped safely to the column's Iceberg type count as
    unknown (the row group is read and filtered). Parquet statistics carry no NaN count, which the
    evaluators then treat as unknown too.
    """
    leaves = _leaf_field_ids(file_schema)
    if len(leaves) != meta.num_columns:
        return [(i, False) for i in row_groups]  # a layout we do not understand: read everything
    column_of = {fid: i for i, fid in enumerate(leaves) if fid is not None}
    columns: list[_ColumnStats] = []
    for fid in referenced_field_ids(residual):
        if read_schema.is_in_repeated(fid):
            continue
        field = read_schema.find_field(fid)
        if not isinstance(field.field_type, PrimitiveType):
            continue
        index = column_of.get(fid)
        if index is None:
            columns.append(_MissingColumn(field, top_level=field in read_schema.fields))
        else:
            columns.append(_FileColumn(fid, index, field.field_type, meta.schema.column(index)))
    evaluator = InclusiveMetricsEvaluator(read_schema, residual)
    strict = StrictMetricsEvaluator(read_schema, residual)
    kept: list[tuple[int, bool]] = []
    for i in row_groups:
        rg = meta.row_group(i)
        values: dict[int, int] = {}
        nulls: dict[int, int] = {}
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for c in columns:
            c.add(rg, values, nulls, lower, upper)
        metrics = replace(
            data_file,
            record_count=rg.num_rows,
            value_counts=values,
            null_value_counts=nulls,
            nan_value_counts=None,
            lower_bounds=lower,
            upper_bounds=upper,
        )
        if evaluator.eval(metrics):
            kept.append((i, strict.eval(metrics)))
    return kept


def _leaf_field_ids(schema: pa.Schema) -> list[int | None]:
    """The field id of every Parquet leaf column, in column order; None for leaves inside lists and
    maps (their statistics span many values per row) and leaves without an id."""
    out: list[int | None] = []

    def walk(f: pa.Field, repeated: bool) -> None:
        t = f.type
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), repeated)
        elif pa.types.is_map(t):
            walk(t.key_field, True)
            walk(t.item_field, True)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_field, True)
        else:
            out.append(None if repeated else field_id_of(f))

    for f in schema:
        walk(f, False)
    return out


class _ColumnStats:
    def add(
        self,
        rg: pq.RowGroupMetaData,
        values: dict[int, int],
        nulls: dict[int, int],
        lower: dict[int, bytes],
        upper: dict[int, bytes],
    ) -> None:
        raise NotImplementedError


class _MissingColumn(_ColumnStats):
    """A column the file lacks: read as its initial default or as nulls (see :func:`_missing`)."""

    def __init__(self, field: NestedField, top_level: bool) -> None:
        self.field_id = field.field_id
        self.known = True
        self.bound: bytes | None = None
        self.top_level = top_level
        t = field.field_type
        assert isinstance(t, PrimitiveType)
        if field.initial_default is not None:
            try:
                self.bound = to_bytes(t, _default_value(t, field.initial_default))
            except IcefloeError:
                self.known = False
        elif field.required:
            self.known = False  # reading raises; do not hide that by pruning

    def add(
        self,
        rg: pq.RowGroupMetaData,
        values: dict[int, int],
        nulls: dict[int, int],
        lower: dict[int, bytes],
        upper: dict[int, bytes],
    ) -> None:
        if not self.known:
            return
        fid = self.field_id
        values[fid] = rg.num_rows
        if self.bound is None:
            nulls[fid] = rg.num_rows
            return
        lower[fid] = upper[fid] = self.bound
        if self.top_level:
            nulls[fid] = 0  # below a struct, a null parent makes the default null


class _FileColumn(_ColumnStats):
    """A column chunk's statistics as Iceberg metrics of the column's (possibly promoted) type."""

    def __init__(self, field_id: int, index: int, t: PrimitiveType, parquet: Any) -> None:
        self.field_id = field_id
        self.index = index
        self.t = t
        self.convert = _converter(t, parquet)

    def add(
        self,
        rg: pq.RowGroupMetaData,
        values: dict[int, int],
        nulls: dict[int, int],
        lower: dict[int, bytes],
        upper: dict[int, bytes],
    ) -> None:
        stats = rg.column(self.index).statistics
        if stats is None:
            return
        fid = self.field_id
        values[fid] = rg.num_rows  # a leaf outside lists and maps has one value per row
        if stats.has_null_count:
            nulls[fid] = stats.null_count
        if self.convert is None or not stats.has_min_max:
            return
        lo = self.convert(stats.min_raw, False)
        hi = self.convert(stats.max_raw, True)
        if lo is not None:
            lower[fid] = to_bytes(self.t, lo)
        if hi is not None:
            upper[fid] = to_bytes(self.t, hi)


Converter = Callable[[Any, bool], Any]


def _converter(t: PrimitiveType, parquet: Any) -> Converter | None:
    """How to turn a Parquet statistic (its physical value) into an internal value of ``t``, or
    None when the column's statistics cannot be trusted or mapped for ``t``. The bool says whether
    the value is an upper bound (rounding must widen the interval, never narrow it)."""
    return _converter_for(t, parquet.physical_type, parquet.logical_type.to_json())


@lru_cache(maxsize=512)
def _converter_for(t: PrimitiveType, physical: str, logical_json: str) -> Converter | None:
    logical = json.loads(logical_json)
    kind = logical.get("Type", "None")

    def same(v: Any, upper: bool) -> Any:
        return v

    def floating(v: Any, upper: bool) -> Any:
        return None if math.isnan(v) else float(v)

    if isinstance(t, BooleanType):
        return same if physical == "BOOLEAN" else None
    if isinstance(t, IntegerType | LongType):
        ok = physical in ("INT32", "INT64") if isinstance(t, LongType) else physical == "INT32"
        signed = kind == "None" or (kind == "Int" and logical.get("isSigned", True))
        return same if ok and signed else None
    if isinstance(t, FloatType):
        return floating if physical == "FLOAT" else None
    if isinstance(t, DoubleType):
        return floating if physical in ("FLOAT", "DOUBLE") else None
    if isinstance(t, DateType):
        return same if physical == "INT32" and kind == "Date" else None
    if isinstance(t, TimeType | TimestampType | TimestamptzType | TimestampNsType | TimestamptzNsType):
        expected = "Time" if isinstance(t, TimeType) else "Timestamp"
        unit = _UNITS.get(logical.get("timeUnit", ""))
        if kind != expected or unit is None or physical not in ("INT32", "INT64"):
            return None
        target = 1_000_000_000 if isinstance(t, TimestampNsType | TimestamptzNsType) else 1_000_000
        return _rescale(unit, target)
    if isinstance(t, StringType):
        return _utf8 if physical == "BYTE_ARRAY" and kind in ("None", "String") else None
    if isinstance(t, BinaryType):
        return same if physical == "BYTE_ARRAY" and kind == "None" else None
    if isinstance(t, FixedType):
        return same if physical == "FIXED_LEN_BYTE_ARRAY" and kind == "None" else None
    if isinstance(t, UUIDType):
        ok = physical == "FIXED_LEN_BYTE_ARRAY" and kind in ("None", "UUID")
        return (lambda v, upper: uuid.UUID(bytes=bytes(v)) if len(v) == 16 else None) if ok else None
    if isinstance(t, DecimalType):
        if kind != "Decimal" or logical.get("scale") != t.scale:
            return None
        scale = t.scale

        def decimal(v: Any, upper: bool) -> Any:
            unscaled = v if isinstance(v, int) else int.from_bytes(v, "big", signed=True)
            return unscaled_to_decimal(unscaled, scale)

        return decimal
    return None


_UNITS = {"milliseconds": 1_000, "microseconds": 1_000_000, "nanoseconds": 1_000_000_000}


def _rescale(unit: int, target: int) -> Converter:
    def convert(v: Any, upper: bool) -> Any:
        if unit <= target:
            return v * (target // unit)
        # Reading truncates to the coarser unit; floor/ceil keep every truncated value inside.
        step = unit // target
        return -(-v // step) if upper else v // step

    return convert


def _utf8(v: Any, upper: bool) -> Any:
    try:
        return bytes(v).decode("utf-8")
    except UnicodeDecodeError:
        return None  # a bound truncated inside a character


def to_table_layout(
    batch: pa.RecordBatch, schema: Schema, arrow_schema: pa.Schema | None = None
) -> pa.RecordBatch:
    """Project a batch whose fields carry field ids onto ``schema`` by id (``arrow_schema``:
    ``schema_to_arrow(schema)`` when the caller has it)."""
    cols = {field_id_of(f): (batch.column(i), f) for i, f in enumerate(batch.schema)}
    arrays = [_project(cols.get(f.field_id), f, batch.num_rows, f.name) for f in schema.fields]
    return pa.RecordBatch.from_arrays(
        arrays, schema=arrow_schema if arrow_schema is not None else schema_to_arrow(schema)
    )


# --------------------------------------------------------------------------- by-id projection


class _DamagedColumn(pa.ArrowInvalid):  # type: ignore[misc]
    """A top-level column of a data file breaks the table's schema (an ArrowInvalid, so the
    grouped scan falls back to the per-file reader, which names the file)."""


def project_file_column(source: tuple[pa.Array, pa.Field] | None, target: NestedField, n: int) -> pa.Array:
    """``_project`` of a top-level column read from a data file, which must hold no null where
    the table's schema says required (nested fields may be null under a null parent)."""
    if source is not None and target.required and source[0].null_count:
        raise _DamagedColumn(f"null in required column {target.name!r}")
    return _project(source, target, n, target.name)


def _project(source: tuple[pa.Array, pa.Field] | None, target: NestedField, n: int, path: str) -> pa.Array:
    if source is None:
        return _missing(target, n, path)
    arr = source[0]
    t = target.field_type
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    kind_ok = {
        StructType: pa.types.is_struct,
        ListType: lambda a: (
            pa.types.is_list(a) or pa.types.is_large_list(a) or pa.types.is_fixed_size_list(a)
        ),
        MapType: pa.types.is_map,
    }.get(type(t))
    if kind_ok is not None and not kind_ok(arr.type):
        raise SchemaError(
            f"column {path!r}: the file holds {arr.type}, which cannot be read as {t}", column=path
        )
    if isinstance(t, StructType):
        return _project_struct(arr, t, path)
    if isinstance(t, ListType):
        return _project_list(arr, t, path)
    if isinstance(t, MapType):
        return _project_map(arr, t, path)
    assert isinstance(t, PrimitiveType)
    return _promote(arr, t, path)


def _promote(arr: pa.Array, t: PrimitiveType, path: str) -> pa.Array:
    target = type_to_arrow(t)
    if arr.type == target:
        return arr
    if isinstance(target, pa.BaseExtensionType):
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        return pa.ExtensionArray.from_storage(target, storage.cast(target.storage_type))
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    # Other writers store nanosecond (or INT96) timestamps; reading truncates them to microseconds.
    safe = not (pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target))
    try:
        return arr.cast(target, safe=safe)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(
            f"column {path!r}: the file's {arr.type} values cannot be read as {t}: {e}", column=path
        ) from None


def _children_by_id(typ: pa.DataType) -> dict[int, int]:
    return {fid: i for i in range(typ.num_fields) if (fid := field_id_of(typ.field(i))) is not None}


def _project_struct(arr: pa.Array, t: StructType, path: str) -> pa.Array:
    index = _children_by_id(arr.type)
    flat = arr.flatten()
    out = []
    for f in t.fields:
        i = index.get(f.field_id)
        src = None if i is None else (flat[i], arr.type.field(i))
        out.append(_project(src, f, len(arr), f"{path}.{f.name}"))
    target = type_to_arrow(t)
    fields = [target.field(i) for i in range(target.num_fields)]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(out, fields=fields, mask=mask)


def _relative(arr: pa.Array) -> tuple[pa.Array, int, int]:
    offsets = arr.offsets
    start = offsets[0].as_py()
    end = offsets[len(arr)].as_py()
    if start:
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return offsets, start, end


def _project_list(arr: pa.Array, t: ListType, path: str) -> pa.Array:
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        arr = arr.cast(pa.list_(arr.type.value_field))
    offsets, start, end = _relative(arr)
    values = arr.values.slice(start, end - start)
    src_field = arr.type.value_field
    elem = NestedField(t.element_id, "element", t.element_type, t.element_required)
    src = (values, src_field) if field_id_of(src_field) in (None, t.element_id) else None
    projected = _project(src, elem, len(values), path + ".element")
    mask = arr.is_null() if arr.null_count else None
    target = type_to_arrow(t)
    if pa.types.is_large_list(arr.type):
        offsets = offsets.cast(pa.int32())
    return pa.ListArray.from_arrays(offsets, projected, type=target, mask=mask)


def _project_map(arr: pa.Array, t: MapType, path: str) -> pa.Array:
    offsets, start, end = _relative(arr)
    keys = arr.keys.slice(start, end - start)
    items = arr.items.slice(start, end - start)
    key = NestedField(t.key_id, "key", t.key_type, True)
    value = NestedField(t.value_id, "value", t.value_type, t.value_required)
    k = _project((keys, arr.type.key_field), key, len(keys), path + ".key")
    v = _project((items, arr.type.item_field), value, len(items), path + ".value")
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(offsets, k, v, type=type_to_arrow(t), mask=mask)


def _missing(f: NestedField, n: int, path: str) -> pa.Array:
    """A column the file does not have: its initial default, else nulls."""
    target = type_to_arrow(f.field_type)
    default = f.initial_default
    if default is None:
        if f.required:
            raise SchemaError(
                f"required column {path!r} (id {f.field_id}) is missing from the data file "
                "and has no initial default",
                column=path,
            )
        return pa.nulls(n, target)
    if not isinstance(f.field_type, PrimitiveType):
        raise UnsupportedFeatureError(f"column {path!r}: initial defaults of nested types are not supported")
    value = _default_value(f.field_type, default)
    return pa.repeat(_scalar(f.field_type, value, target), n)


def _default_value(t: PrimitiveType, default: Any) -> Any:
    """``initial_default`` as an internal value; schemas read from JSON may hold the JSON form."""
    if isinstance(default, str) and not isinstance(t, StringType):
        return from_json_value(t, default)
    return default


def _scalar(t: IcebergType, value: Any, target: pa.DataType) -> pa.Scalar:
    if isinstance(target, pa.BaseExtensionType):
        return pa.ExtensionScalar.from_storage(target, value.bytes)
    if pa.types.is_date32(target):
        return pa.scalar(value, pa.int32()).cast(target)
    if pa.types.is_temporal(target):
        return pa.scalar(value, pa.int64()).cast(target)
    return pa.scalar(value, target)
