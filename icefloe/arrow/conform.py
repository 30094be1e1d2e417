"""Checking user data against a table schema and converting it to the table's Arrow layout.

Columns match by name (order is free). A column's Arrow type must be the table's type or convert
to it without loss: narrower integers, float32 -> double, timestamp unit widening (and
nanoseconds when no sub-microsecond part is present), string/binary offset and view variants,
dictionary -> values, decimal precision widening at equal scale, fixed_size_binary(16) -> uuid.
Structs, lists and maps are checked recursively. Every error names the column path.

A column (or struct field) the data lacks is filled with its ``write-default`` (format v3) when
it has one, else with nulls; a required one without a write default is an error. Columns of
the v3 ``unknown`` type are null in the conformed batch and never reach a data file:
:func:`file_schema` and :func:`drop_unknown` leave them out.

:func:`check_arrow_schema` checks types once per input schema; :func:`conform_batch` converts a
batch and checks what only the data can tell (nulls in required fields).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow.schema import primitive_to_arrow, schema_to_arrow, type_to_arrow
from icefloe.errors import SchemaError, SchemaMismatchError
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
    UnknownType,
    UUIDType,
)

__all__ = ["check_arrow_schema", "conform_batch", "drop_unknown", "file_schema"]

_LISTS = (
    pa.types.is_list,
    pa.types.is_large_list,
    pa.types.is_fixed_size_list,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
)


def _is_list(t: pa.DataType) -> bool:
    return any(check(t) for check in _LISTS)


def _mismatch(path: str, message: str, hint: str | None = None) -> SchemaMismatchError:
    return SchemaMismatchError(f"column {path!r}: {message}", hint=hint, column=path)


def _unwrap(t: pa.DataType) -> pa.DataType:
    while pa.types.is_dictionary(t):
        t = t.value_type
    return t


def check_arrow_schema(pa_schema: pa.Schema, schema: Schema) -> None:
    """Raise :class:`SchemaMismatchError` when data of ``pa_schema`` cannot be written to a table
    with ``schema``."""
    _check_struct_fields(list(pa_schema), schema.as_struct(), "")


def _check_struct_fields(arrow_fields: list[pa.Field], struct: StructType, prefix: str) -> None:
    names = [f.name for f in arrow_fields]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise _mismatch(prefix + sorted(dupes)[0], "appears more than once in the data")
    by_name = {f.name: f for f in arrow_fields}
    extra = [n for n in names if struct.field_by_name(n) is None]
    if extra:
        known = ", ".join(f.name for f in struct.fields)
        raise _mismatch(
            prefix + extra[0],
            "is not in the table schema",
            hint=f"the table's columns{' under ' + prefix.rstrip('.') if prefix else ''} are: {known}; "
            "drop the column or evolve the schema first",
        )
    for f in struct.fields:
        af = by_name.get(f.name)
        path = prefix + f.name
        if af is None:
            if f.required and f.write_default is None:
                raise _mismatch(
                    path,
                    "is required but missing from the data",
                    hint="add the column to the data, or give it a write default "
                    "(update_schema().update_column_default, format v3)",
                )
            continue
        _check_type(af.type, f.field_type, path)


def _check_type(source: pa.DataType, target: IcebergType, path: str) -> None:
    source = _unwrap(source)
    if pa.types.is_null(source):
        return  # all nulls; required fields are checked on the data
    if isinstance(target, StructType):
        if not pa.types.is_struct(source):
            raise _mismatch(path, f"expected a struct, got {source}")
        _check_struct_fields([source.field(i) for i in range(source.num_fields)], target, path + ".")
    elif isinstance(target, ListType):
        if not _is_list(source):
            raise _mismatch(path, f"expected a list, got {source}")
        _check_type(source.value_type, target.element_type, path + ".element")
    elif isinstance(target, MapType):
        if not pa.types.is_map(source):
            raise _mismatch(path, f"expected a map, got {source}")
        _check_type(source.key_type, target.key_type, path + ".key")
        _check_type(source.item_type, target.value_type, path + ".value")
    elif isinstance(target, PrimitiveType) and not _primitive_allowed(source, target):
        raise _mismatch(
            path,
            f"Arrow type {source} cannot be written to a {target} column",
            hint=f"cast the column to {primitive_to_arrow(target)} or evolve the table schema",
        )


def _primitive_allowed(s: pa.DataType, t: PrimitiveType) -> bool:
    if isinstance(s, pa.BaseExtensionType):
        if isinstance(s, pa.UuidType):
            return isinstance(t, UUIDType)
        s = s.storage_type
    if isinstance(t, BooleanType):
        return bool(pa.types.is_boolean(s))
    if isinstance(t, IntegerType):
        return s in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())
    if isinstance(t, LongType):
        return s in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())
    if isinstance(t, FloatType):
        return bool(pa.types.is_float32(s))
    if isinstance(t, DoubleType):
        return bool(pa.types.is_float32(s) or pa.types.is_float64(s))
    if isinstance(t, DecimalType):
        return bool(
            pa.types.is_decimal(s) and s.scale == t.scale and s.precision - s.scale <= t.precision - t.scale
        )
    if isinstance(t, DateType):
        return bool(pa.types.is_date(s))
    if isinstance(t, TimeType):
        return bool(pa.types.is_time(s))
    if isinstance(t, TimestampType | TimestampNsType):
        return bool(pa.types.is_timestamp(s) and s.tz is None)
    if isinstance(t, TimestamptzType | TimestamptzNsType):
        return bool(pa.types.is_timestamp(s) and s.tz is not None)
    if isinstance(t, UnknownType):
        return bool(pa.types.is_null(s))
    if isinstance(t, StringType):
        return bool(pa.types.is_string(s) or pa.types.is_large_string(s) or pa.types.is_string_view(s))
    if isinstance(t, BinaryType):
        return bool(pa.types.is_binary(s) or pa.types.is_large_binary(s) or pa.types.is_binary_view(s))
    if isinstance(t, UUIDType):
        return bool(pa.types.is_fixed_size_binary(s) and s.byte_width == 16)
    if isinstance(t, FixedType):
        return bool(pa.types.is_fixed_size_binary(s) and s.byte_width == t.length)
    return False


# --------------------------------------------------------------------------- data conversion


def conform_batch(batch: pa.RecordBatch, schema: Schema) -> pa.RecordBatch:
    """Convert a batch (already checked with :func:`check_arrow_schema`) to
    ``schema_to_arrow(schema)``: columns in schema order, missing optional columns as nulls,
    types cast. Raises :class:`SchemaMismatchError` for nulls in required fields and for values
    that do not survive the cast (overflow, sub-microsecond timestamps)."""
    target = schema_to_arrow(schema)
    n = batch.num_rows
    arrays = []
    for f in schema.fields:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            arrays.append(_absent(f, n))
            continue
        arrays.append(_conform(batch.column(idx), f, f.name))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _absent(f: NestedField, n: int) -> pa.Array:
    """The values of a column the data lacks: its write default (format v3), else nulls."""
    target = type_to_arrow(f.field_type)
    default = f.write_default
    if default is None or isinstance(f.field_type, UnknownType):
        return pa.nulls(n, target)
    t = f.field_type
    if isinstance(t, StructType):
        # an empty struct default: each field takes its own write default
        children = [_absent(c, n) for c in t.fields]
        return pa.StructArray.from_arrays(
            children, fields=[target.field(i) for i in range(target.num_fields)]
        )
    if not isinstance(t, PrimitiveType):
        return pa.nulls(n, target)  # list/map defaults are refused when set
    return pa.repeat(_default_scalar(t, default, target), n)


def _default_scalar(t: PrimitiveType, value: object, target: pa.DataType) -> pa.Scalar:
    """An Arrow scalar of ``target`` for a default in icefloe's internal representation."""
    if isinstance(target, pa.BaseExtensionType):  # uuid
        return pa.ExtensionScalar.from_storage(target, getattr(value, "bytes", value))
    if isinstance(t, DateType):
        return pa.scalar(value, pa.int32()).cast(target)
    if isinstance(t, TimeType | TimestampType | TimestamptzType | TimestampNsType | TimestamptzNsType):
        return pa.scalar(value, pa.int64()).cast(target)
    return pa.scalar(value, target)


def file_schema(schema: Schema) -> Schema:
    """``schema`` without its ``unknown`` columns: the schema of the data files a write produces
    (the spec stores no column for ``unknown``)."""
    if not _has_unknown(schema.as_struct()):
        return schema
    struct = _struct_without_unknown(schema.as_struct(), "")
    return Schema(
        *struct.fields, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids
    )


def _has_unknown(t: IcebergType) -> bool:
    return isinstance(t, UnknownType) or any(_has_unknown(f.field_type) for f in getattr(t, "fields", ()))


def _struct_without_unknown(t: StructType, prefix: str) -> StructType:
    out = []
    for f in t.fields:
        ft = f.field_type
        if isinstance(ft, UnknownType):
            continue
        if isinstance(ft, StructType):
            out.append(
                NestedField(
                    f.field_id,
                    f.name,
                    _struct_without_unknown(ft, f"{prefix}{f.name}."),
                    f.required,
                    f.doc,
                    f.initial_default,
                    f.write_default,
                )
            )
        elif _has_unknown(ft):
            raise SchemaError(
                f"column {prefix}{f.name!r} has an unknown type inside a list or map, "
                "which cannot be written",
                hint="promote the unknown type to a concrete type first (update_column)",
                column=prefix + f.name,
            )
        else:
            out.append(f)
    return StructType(*out)


def drop_unknown(batch: pa.RecordBatch, schema: Schema) -> pa.RecordBatch:
    """A batch conformed to ``schema`` without its ``unknown`` columns (see :func:`file_schema`)."""
    target = file_schema(schema)
    if target is schema:
        return batch
    arrays = [
        _drop_unknown_array(batch.column(i), f)
        for i, f in enumerate(schema.fields)
        if not isinstance(f.field_type, UnknownType)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema_to_arrow(target))


def _drop_unknown_array(arr: pa.Array, f: NestedField) -> pa.Array:
    t = f.field_type
    if not isinstance(t, StructType) or not _has_unknown(t):
        return arr
    kept = [(i, c) for i, c in enumerate(t.fields) if not isinstance(c.field_type, UnknownType)]
    target = type_to_arrow(_struct_without_unknown(t, ""))
    children = [_drop_unknown_array(arr.field(i), c) for i, c in kept]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(
        children, fields=[target.field(j) for j in range(target.num_fields)], mask=mask
    )


def _conform(arr: pa.Array, f: NestedField, path: str) -> pa.Array:
    """Convert ``arr`` to the Arrow type of ``f``; check required fields have no nulls.

    ``arr`` has its parents' nulls merged in, so a null here is a null the row really holds.
    """
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if f.required and arr.null_count:
        raise _mismatch(path, f"is required but the data holds {arr.null_count} null value(s)")
    target_type = type_to_arrow(f.field_type)
    t = f.field_type
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target_type)
    if isinstance(t, StructType):
        return _conform_struct(arr, t, target_type, path)
    if isinstance(t, ListType):
        return _conform_list(arr, t, target_type, path)
    if isinstance(t, MapType):
        return _conform_map(arr, t, target_type, path)
    return _cast_primitive(arr, target_type, path)


def _cast_primitive(arr: pa.Array, target_type: pa.DataType, path: str) -> pa.Array:
    if arr.type == target_type:
        return arr
    if isinstance(target_type, pa.BaseExtensionType):
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        return pa.ExtensionArray.from_storage(target_type, storage)
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    try:
        return arr.cast(target_type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _mismatch(path, f"values do not convert from {arr.type} to {target_type}: {e}") from None


def _conform_struct(arr: pa.Array, t: StructType, target_type: pa.DataType, path: str) -> pa.Array:
    children = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    flat = arr.flatten()
    mask = arr.is_null() if arr.null_count else None
    parent_nulls = arr.null_count
    out = []
    for f in t.fields:
        child_path = f"{path}.{f.name}"
        idx = children.get(f.name)
        if idx is None:
            if f.required and f.write_default is None and len(arr) > parent_nulls:
                raise _mismatch(child_path, "is required but missing from the data")
            absent = _absent(f, len(arr))
            out.append(_fill_nulls(absent) if f.required and absent.null_count else absent)
            continue
        child = flat[idx]
        if pa.types.is_dictionary(child.type):
            child = child.dictionary_decode()
        if f.required and child.null_count > parent_nulls:
            raise _mismatch(
                child_path,
                f"is required but the data holds {child.null_count - parent_nulls} null value(s)",
            )
        relaxed = NestedField(f.field_id, f.name, f.field_type, False)
        conformed = _conform(child, relaxed, child_path)
        if f.required and conformed.null_count:
            # These nulls sit under null parents only; the Parquet writer still rejects nulls in a
            # non-nullable column, so give them placeholder values nobody can see.
            conformed = _fill_nulls(conformed)
        out.append(conformed)
    fields = [target_type.field(i) for i in range(target_type.num_fields)]
    return pa.StructArray.from_arrays(out, fields=fields, mask=mask)


def _fill_nulls(arr: pa.Array) -> pa.Array:
    """``arr`` without nulls: each null becomes a placeholder value of the same type, and so
    does every null that a non-nullable field inside it would show once its parent is valid
    (recursively through structs, lists and maps).

    The nulls replaced sit under null parents only, where no reader sees them; the Parquet
    writer still rejects nulls in a non-nullable column, whatever its parent holds."""
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _fill_nulls(arr.storage))
    if pa.types.is_struct(t):
        # flatten() merges the struct's own nulls into its children, which are filled in turn.
        children = [_fill_required(c, t.field(i)) for i, c in enumerate(arr.flatten())]
        return pa.StructArray.from_arrays(children, fields=list(t))
    if pa.types.is_list(t):
        values = _fill_required(_raw_values(arr), t.value_field)
        return pa.ListArray.from_arrays(_relative_offsets(arr), values, type=t)
    if pa.types.is_map(t):
        start = arr.offsets[0].as_py()
        end = arr.offsets[len(arr)].as_py()
        keys = arr.keys.slice(start, end - start)
        items = _fill_required(_raw_values(arr), t.item_field)
        return pa.MapArray.from_arrays(_relative_offsets(arr), keys, items, type=t)
    if not arr.null_count:
        return arr
    return pc.fill_null(arr, _placeholder(t))


def _fill_required(arr: pa.Array, field: pa.Field) -> pa.Array:
    """``arr`` (the values of ``field``) with its nulls filled when the field is not nullable."""
    return _fill_nulls(arr) if not field.nullable and _has_nulls(arr) else arr


def _has_nulls(arr: pa.Array) -> bool:
    """Whether ``arr`` or a non-nullable field inside it holds a null."""
    if arr.null_count:
        return True
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        return False
    if pa.types.is_struct(t):
        return any(not t.field(i).nullable and _has_nulls(c) for i, c in enumerate(arr.flatten()))
    if pa.types.is_list(t):
        return not t.value_field.nullable and _has_nulls(_raw_values(arr))
    if pa.types.is_map(t):
        return not t.item_field.nullable and _has_nulls(_raw_values(arr))
    return False


def _placeholder(t: pa.DataType) -> pa.Scalar:
    """A valid value of the primitive Arrow type ``t``, standing in for a null nobody can see."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    # The other primitives are fixed-width, and all-zero bytes are a value of each of them: 0,
    # 0.0, false, the epoch, a zero-filled fixed/uuid, and a decimal zero whatever its precision
    # and scale (casting the integer 0 instead needs 19 digits before the point).
    width = max(t.bit_width // 8, 1)
    return pa.Array.from_buffers(t, 1, [None, pa.py_buffer(bytes(width))])[0]


def _as_plain_list(arr: pa.Array, path: str) -> pa.Array:
    if pa.types.is_list(arr.type):
        return arr
    value_field = arr.type.value_field
    try:
        return arr.cast(pa.list_(value_field))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _mismatch(path, f"cannot convert {arr.type} to a list: {e}") from None


def _raw_values(arr: pa.Array) -> pa.Array:
    """Child values covered by the slice's offsets (including any hidden under null entries),
    so that relative offsets index into them."""
    start = arr.offsets[0].as_py()
    end = arr.offsets[len(arr)].as_py()
    values = arr.items if pa.types.is_map(arr.type) else arr.values
    return values.slice(start, end - start)


def _relative_offsets(arr: pa.Array) -> pa.Array:
    offsets = arr.offsets
    first = offsets[0].as_py()
    if first:
        offsets = pc.subtract(offsets, pa.scalar(first, offsets.type))
    return offsets


def _conform_list(arr: pa.Array, t: ListType, target_type: pa.DataType, path: str) -> pa.Array:
    arr = _as_plain_list(arr, path)
    elem_path = path + ".element"
    if t.element_required:
        visible = arr.flatten()  # only elements of non-null lists
        if visible.null_count:
            raise _mismatch(elem_path, f"is required but the data holds {visible.null_count} null value(s)")
    elem_field = NestedField(t.element_id, "element", t.element_type, False)
    conformed = _conform(_raw_values(arr), elem_field, elem_path)
    mask = arr.is_null() if arr.null_count else None
    return pa.ListArray.from_arrays(_relative_offsets(arr), conformed, type=target_type, mask=mask)


def _conform_map(arr: pa.Array, t: MapType, target_type: pa.DataType, path: str) -> pa.Array:
    value_path = path + ".value"
    if t.value_required:
        mask = arr.is_null() if arr.null_count else None
        # Values of non-null maps only (MapArray has no flatten kernel).
        visible = pa.ListArray.from_arrays(_relative_offsets(arr), _raw_values(arr), mask=mask).flatten()
        if visible.null_count:
            raise _mismatch(value_path, f"is required but the data holds {visible.null_count} null value(s)")
    start = arr.offsets[0].as_py()
    end = arr.offsets[len(arr)].as_py()
    keys = arr.keys.slice(start, end - start)
    key_field = NestedField(t.key_id, "key", t.key_type, True)
    value_field = NestedField(t.value_id, "value", t.value_type, False)
    keys = _conform(keys, key_field, path + ".key")
    items = _conform(_raw_values(arr), value_field, value_path)
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(_relative_offsets(arr), keys, items, type=target_type, mask=mask)
