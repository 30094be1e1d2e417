"""Reading the rows of a scan task from a Parquet data file.

::

    FileScanTask -> open the file, map its columns to field ids (Parquet ids, else name mapping,
    else names) -> pick the row groups starting in [start, start + length)
    -> stream batches of the needed top-level columns (projection + residual columns)
    -> per batch: build the table layout by field id (renames, promotion, missing columns as
       nulls or initial defaults, nested projection) -> apply the residual -> project

Output batches have exactly ``schema_to_arrow(projected_schema)``; batches left empty by the
residual are skipped. Row-level deletes (``task.delete_files``) are applied per batch before the
residual, by :mod:`icefloe.arrow.apply_deletes`: each batch knows the file position of its first row
(row groups are read in contiguous runs starting at their first row index), and equality columns
the projection lacks are read too and dropped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

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
from icefloe.arrow.metrics import row_group_start
from icefloe.arrow.schema import field_id_of, schema_to_arrow, type_to_arrow
from icefloe.errors import SchemaError, UnsupportedFeatureError
from icefloe.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from icefloe.expressions.visitors.referenced_fields import referenced_field_ids
from icefloe.io import FileIO
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
)
from icefloe.spec.values import from_json_value

if TYPE_CHECKING:
    from icefloe.scan.task import FileScanTask

__all__ = ["DEFAULT_BATCH_SIZE", "read_task", "to_table_layout"]

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
        read_schema = table_schema.select_ids(projected_schema.field_ids() | extra)

    stream = io.new_input(task.file.file_path).open()
    try:
        pf = pq.ParquetFile(stream)
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
    file_schema = pf.schema_arrow
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

    meta = pf.metadata
    end = None if task.length is None else task.start + task.length
    row_groups = [
        i
        for i in range(meta.num_row_groups)
        if task.start <= row_group_start(meta.row_group(i))
        and (end is None or row_group_start(meta.row_group(i)) < end)
    ]
    if not row_groups:
        return
    read_arrow = schema_to_arrow(read_schema)
    filter_expr = None
    if residual is not None:
        from icefloe.arrow.expression import to_arrow_expression

        filter_expr = to_arrow_expression(residual, read_schema)

    for first_row, raw in _positioned_batches(pf, row_groups, columns, batch_size):
        n = raw.num_rows
        file_cols: dict[int, tuple[pa.Array, pa.Field]] = {}
        for i, f in enumerate(wanted):
            arr = raw.column(i)
            if annotated:
                arr = arr.view(f.type)  # same layout; carries the mapped ids on nested fields
            file_cols[field_id_of(f)] = (arr, f)  # type: ignore[index]
        if read_schema.fields:
            arrays = [_project(file_cols.get(f.field_id), f, n, f.name) for f in read_schema.fields]
            batch = pa.RecordBatch.from_arrays(arrays, schema=read_arrow)
        else:
            batch = raw.select([])  # keeps the row count
        if deletes is not None:
            keep = deletes.keep_mask(batch, read_schema, first_row)
            if keep is not None:
                batch = batch.filter(pa.array(keep))
        if filter_expr is not None:
            table = pa.Table.from_batches([batch]).filter(filter_expr)
            if table.num_rows == 0:
                continue
            batch = table.combine_chunks().to_batches()[0]
        if batch.num_rows == 0:
            continue
        if read_schema is not projected_schema:
            batch = to_table_layout(batch, projected_schema)
        yield batch


def _positioned_batches(
    pf: pq.ParquetFile, row_groups: list[int], columns: list[str], batch_size: int
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Batches with the file position of their first row (what position deletes refer to): each
    contiguous run of row groups is streamed from its first row index on."""
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
    for run in runs:
        position = first_rows[run[0]]
        for raw in _raw_batches(pf, run, columns, batch_size):
            yield position, raw
            position += raw.num_rows


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


def to_table_layout(batch: pa.RecordBatch, schema: Schema) -> pa.RecordBatch:
    """Project a batch whose fields carry field ids onto ``schema`` by id."""
    cols = {field_id_of(f): (batch.column(i), f) for i, f in enumerate(batch.schema)}
    arrays = [_project(cols.get(f.field_id), f, batch.num_rows, f.name) for f in schema.fields]
    return pa.RecordBatch.from_arrays(arrays, schema=schema_to_arrow(schema))


# --------------------------------------------------------------------------- by-id projection


def _project(source: tuple[pa.Array, pa.Field] | None, target: NestedField, n: int, path: str) -> pa.Array:
    if source is None:
        return _missing(target, n, path)
    arr = source[0]
    t = target.field_type
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
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
