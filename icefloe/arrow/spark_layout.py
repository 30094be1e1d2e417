"""Arrow batches between icefloe's table layout and the layout Spark's Arrow exchange expects.

Most types need only a cast (nullability, field names, unit widening). Three need real work, all
vectorized with numpy: uuid (16 bytes <-> 36-character text), fixed (binary <-> fixed-size binary,
checking the length) and time/timestamp units.

It lives here, not in ``icefloe.spark``, because it is Arrow compute work (and needs no pyspark):
``icefloe.spark`` calls it on both sides of Spark's Python data source.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import SchemaMismatchError
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    TimestampNsType,
    TimestamptzNsType,
    UUIDType,
)

__all__ = ["from_spark_batch", "to_spark_batch", "uuid_text_to_bytes", "uuid_bytes_to_text"]

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Positions of the 32 hex digits inside the 36-character canonical form.
_DIGIT_POS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])
_NIBBLE: np.ndarray = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i


def uuid_bytes_to_text(arr: pa.Array) -> pa.Array:
    """16-byte uuids (extension or fixed_size_binary(16)) -> canonical lowercase text."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16 : (arr.offset + n) * 16]
    raw = raw.reshape(n, 16)
    digits: np.ndarray = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 0x0F]
    text: np.ndarray = np.full((n, 36), ord("-"), dtype=np.uint8)
    text[:, _DIGIT_POS] = digits
    offsets: np.ndarray = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    out = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text.tobytes()))
    if arr.null_count:
        out = pc.if_else(arr.is_null(), pa.scalar(None, pa.string()), out)
    return out


def uuid_text_to_bytes(arr: pa.Array, path: str) -> pa.Array:
    """Uuid text (with or without dashes, any case) -> fixed_size_binary(16)."""
    arr = arr.cast(pa.string())
    plain = pc.replace_substring(arr, "-", "")
    filled = plain.fill_null("0" * 32)
    lengths = pc.binary_length(filled)
    if len(filled) and not pc.all(pc.equal(lengths, 32)).as_py():
        raise SchemaMismatchError(f"column {path!r}: a value is not a uuid", column=path)
    n = len(filled)
    offsets = np.frombuffer(filled.buffers()[1], dtype=np.int32)
    start = int(offsets[filled.offset]) if n else 0
    data = np.frombuffer(filled.buffers()[2], dtype=np.uint8)[start : start + 32 * n].reshape(n, 32)
    nibbles = _NIBBLE[data]
    if (nibbles == 255).any():
        raise SchemaMismatchError(f"column {path!r}: a value is not a uuid", column=path)
    raw = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    out = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(raw.tobytes())])
    if arr.null_count:
        out = pc.if_else(arr.is_null(), pa.scalar(None, pa.binary(16)), out)
    return out


def _needs_work(t: IcebergType) -> bool:
    if isinstance(t, UUIDType | FixedType):
        return True
    if isinstance(t, StructType):
        return any(_needs_work(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return _needs_work(t.element_type)
    if isinstance(t, MapType):
        return _needs_work(t.key_type) or _needs_work(t.value_type)
    return False


def _needs_work_for_spark(t: IcebergType) -> bool:
    """:func:`_needs_work`, or a struct with a required field somewhere: that field holds nulls
    where the struct is null (or where flatten() folded a parent's nulls in), which a cast to its
    non-nullable Spark field refuses."""
    if isinstance(t, StructType):
        return any(f.required or _needs_work_for_spark(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return _needs_work_for_spark(t.element_type)
    if isinstance(t, MapType):
        return _needs_work_for_spark(t.key_type) or _needs_work_for_spark(t.value_type)
    return _needs_work(t) or isinstance(t, TimestampNsType | TimestamptzNsType)


def _null_mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _without_validity(arr: pa.Array) -> pa.Array:
    """``arr`` with no value null: the values of a required field, whose nulls can only sit under
    a null parent (where no reader looks), keep what their slots hold."""
    if not arr.null_count:
        return arr
    t = arr.type
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        children = [arr.field(i) for i in range(t.num_fields)]
        children = [c if fields[i].nullable else _without_validity(c) for i, c in enumerate(children)]
        return pa.StructArray.from_arrays(children, fields=fields)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, arr.items, type=t)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(arr.offsets, arr.values, type=t)
    return pa.Array.from_buffers(t, len(arr), [None, *arr.buffers()[1:]], offset=arr.offset)


# --------------------------------------------------------------------------- table -> Spark


def _to_spark(arr: pa.Array, t: IcebergType, target: pa.DataType) -> pa.Array:
    if not _needs_work_for_spark(t):
        return arr.cast(target, safe=False)
    if isinstance(t, TimestampNsType | TimestamptzNsType):
        # Spark has microseconds: floor to the earlier microsecond (a cast rounds toward zero,
        # which moves instants before 1970 later), as Iceberg Java converts nanoseconds
        nanos = arr.cast(pa.int64())
        micros = pc.divide(nanos, 1000)
        below = pc.less(pc.subtract(nanos, pc.multiply(micros, 1000)), 0)
        return pc.subtract(micros, below.cast(pa.int64())).cast(target)
    if isinstance(t, UUIDType):
        return uuid_bytes_to_text(arr)
    if isinstance(t, FixedType):
        return arr.cast(pa.binary())
    if isinstance(t, StructType):
        # flatten() folds the struct's nulls into its children, whose slots there hold garbage.
        flat = arr.flatten()
        fields = [target.field(i) for i in range(target.num_fields)]
        children = [_to_spark(flat[i], f.field_type, fields[i].type) for i, f in enumerate(t.fields)]
        # A required child is null (now) where the struct is: Arrow refuses to view nulls as a
        # non-nullable field, so those slots keep whatever value they hold instead.
        children = [c if fields[i].nullable else _without_validity(c) for i, c in enumerate(children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=_null_mask(arr))
    if isinstance(t, ListType):
        values = _to_spark(arr.values, t.element_type, target.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=_null_mask(arr))
    if isinstance(t, MapType):
        keys = _to_spark(arr.keys, t.key_type, target.key_type)
        items = _to_spark(arr.items, t.value_type, target.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=_null_mask(arr))
    return arr.cast(target)


def to_spark_batch(batch: pa.RecordBatch, schema: Schema, target: pa.Schema) -> pa.RecordBatch:
    """A batch in ``schema_to_arrow(schema)`` layout -> exactly ``target`` (Spark's Arrow schema
    for ``to_spark_schema(schema)``)."""
    columns = [
        _to_spark(batch.column(i), f.field_type, target.field(i).type) for i, f in enumerate(schema.fields)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)


# --------------------------------------------------------------------------- Spark -> table


def _from_spark(arr: pa.Array, f: NestedField, path: str) -> pa.Array:
    t = f.field_type
    if not _needs_work(t):
        return arr
    if isinstance(t, UUIDType):
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            return uuid_text_to_bytes(arr, path)
        return arr
    if isinstance(t, FixedType):
        if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
            lengths = pc.binary_length(arr)
            if pc.all(pc.or_kleene(pc.equal(lengths, t.length), arr.is_null())).as_py() is False:
                raise SchemaMismatchError(
                    f"column {path!r}: a value is not exactly {t.length} bytes long (fixed[{t.length}])",
                    column=path,
                )
            return arr.cast(pa.binary(t.length))
        return arr
    if isinstance(t, StructType) and pa.types.is_struct(arr.type):
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        children = []
        flat = arr.flatten()
        for i, name in enumerate(names):
            child_field = t.field_by_name(name)
            child = flat[i]
            if child_field is not None:
                child = _from_spark(child, child_field, f"{path}.{name}")
            children.append(child)
        return pa.StructArray.from_arrays(children, names=names, mask=_null_mask(arr))
    if isinstance(t, ListType) and pa.types.is_list(arr.type):
        values = _from_spark(arr.values, t.element_field, path + ".element")
        return pa.ListArray.from_arrays(arr.offsets, values, mask=_null_mask(arr))
    if isinstance(t, MapType) and pa.types.is_map(arr.type):
        keys = _from_spark(arr.keys, t.key_field, path + ".key")
        items = _from_spark(arr.items, t.value_field, path + ".value")
        return pa.MapArray.from_arrays(arr.offsets, keys, items, mask=_null_mask(arr))
    return arr


def from_spark_batch(batch: pa.RecordBatch, schema: Schema) -> pa.RecordBatch:
    """A batch as Spark hands it to a writer -> a batch icefloe's writer accepts for ``schema``
    (uuid text -> bytes, binary -> fixed); columns the table lacks are left for the writer's
    schema check to report."""
    columns = []
    for i, name in enumerate(batch.schema.names):
        f = schema.as_struct().field_by_name(name)
        col = batch.column(i)
        columns.append(_from_spark(col, f, name) if f is not None else col)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
