"""Conversion between Iceberg schemas and Arrow schemas.

Iceberg field ids travel in Arrow field metadata under ``PARQUET:field_id``, which is where
pyarrow's Parquet reader and writer put the Parquet schema's field ids; list elements and map
keys/values carry their ids on the child fields.

Type choices, picked so that what we write reads back from Parquet with the same Arrow type:

* string -> ``pa.string()``, binary -> ``pa.binary()`` (pyarrow reads Parquet BYTE_ARRAY back as the
  32-bit offset types by default; large/view variants are accepted on input and cast).
* uuid -> ``pa.uuid()`` (the ``arrow.uuid`` extension type): pyarrow writes it as
  FIXED_LEN_BYTE_ARRAY(16) with the UUID logical type, as Iceberg Java does, and reads it back as
  the extension type.
* fixed[L] -> ``fixed_size_binary(L)``; time -> ``time64('us')``; timestamp -> ``timestamp('us')``;
  timestamptz -> ``timestamp('us', tz='UTC')``; the v3 nanosecond types -> ``timestamp('ns')``
  (``timestamp('ns', tz='UTC')`` with zone).
* the v3 ``unknown`` type -> ``pa.null()`` (its values are always null; it is never written to
  data files).

Arrow -> Iceberg depends on the table's format version: on v3 ``timestamp('ns')`` becomes
``timestamp_ns`` and ``pa.null()`` ``unknown``; v1/v2 cannot store either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import pyarrow as pa

from icefloe.errors import SchemaError
from icefloe.spec.schema import Schema, assign_fresh_ids
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

__all__ = [
    "FIELD_ID_KEY",
    "arrow_to_schema",
    "field_id_of",
    "field_to_arrow",
    "primitive_to_arrow",
    "project_to_arrow",
    "schema_to_arrow",
    "type_to_arrow",
]

FIELD_ID_KEY = b"PARQUET:field_id"

TimestampNsMode = Literal["error", "downcast", "keep"]


def primitive_to_arrow(t: PrimitiveType) -> pa.DataType:
    """The Arrow type icefloe uses for an Iceberg primitive type."""
    if isinstance(t, BooleanType):
        return pa.bool_()
    if isinstance(t, IntegerType):
        return pa.int32()
    if isinstance(t, LongType):
        return pa.int64()
    if isinstance(t, FloatType):
        return pa.float32()
    if isinstance(t, DoubleType):
        return pa.float64()
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, DateType):
        return pa.date32()
    if isinstance(t, TimeType):
        return pa.time64("us")
    if isinstance(t, TimestampType):
        return pa.timestamp("us")
    if isinstance(t, TimestamptzType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(t, TimestampNsType):
        return pa.timestamp("ns")
    if isinstance(t, TimestamptzNsType):
        return pa.timestamp("ns", tz="UTC")
    if isinstance(t, StringType):
        return pa.string()
    if isinstance(t, UUIDType):
        return pa.uuid()
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, BinaryType):
        return pa.binary()
    if isinstance(t, UnknownType):
        return pa.null()
    raise SchemaError(f"Iceberg type {t} has no Arrow equivalent in icefloe yet")


def _metadata(field_id: int, include_field_ids: bool) -> dict[bytes, bytes] | None:
    return {FIELD_ID_KEY: str(field_id).encode()} if include_field_ids else None


def field_to_arrow(f: NestedField, include_field_ids: bool = True) -> pa.Field:
    """An Arrow field for an Iceberg field: name, nullability (optional), field id metadata."""
    return pa.field(
        f.name,
        type_to_arrow(f.field_type, include_field_ids),
        nullable=not f.required,
        metadata=_metadata(f.field_id, include_field_ids),
    )


def type_to_arrow(t: IcebergType, include_field_ids: bool = True) -> pa.DataType:
    if isinstance(t, StructType):
        return pa.struct([field_to_arrow(f, include_field_ids) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(field_to_arrow(t.element_field, include_field_ids))
    if isinstance(t, MapType):
        return pa.map_(
            field_to_arrow(t.key_field, include_field_ids),
            field_to_arrow(t.value_field, include_field_ids),
        )
    if isinstance(t, PrimitiveType):
        return primitive_to_arrow(t)
    raise SchemaError(f"unknown Iceberg type {t!r}")


def schema_to_arrow(schema: Schema | StructType, include_field_ids: bool = True) -> pa.Schema:
    """The Arrow schema of ``schema``; every field (including list elements and map keys and
    values) carries its Iceberg id as ``PARQUET:field_id`` unless ``include_field_ids`` is false."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    return pa.schema([field_to_arrow(f, include_field_ids) for f in struct.fields])


def project_to_arrow(schema: Schema, field_ids: Iterable[int], include_field_ids: bool = True) -> pa.Schema:
    """The Arrow schema of ``schema`` projected to ``field_ids`` (see :meth:`Schema.select_ids`)."""
    return schema_to_arrow(schema.select_ids(field_ids), include_field_ids)


def field_id_of(f: pa.Field) -> int | None:
    """The Iceberg field id stored in an Arrow field's metadata, if any."""
    md = f.metadata
    if not md or FIELD_ID_KEY not in md:
        return None
    try:
        return int(md[FIELD_ID_KEY])
    except ValueError:
        raise SchemaError(
            f"column {f.name!r} has an invalid field id {md[FIELD_ID_KEY]!r}", column=f.name
        ) from None


# --------------------------------------------------------------------------- Arrow -> Iceberg


class _ArrowConverter:
    """Builds Iceberg types from Arrow types; tracks whether every field had an id."""

    def __init__(self, timestamp_ns: TimestampNsMode, format_version: int) -> None:
        self.timestamp_ns = timestamp_ns
        self.format_version = format_version
        self.all_ids = True
        self.next_temp_id = 0

    def field(self, f: pa.Field, path: str, name: str | None = None) -> NestedField:
        fid = field_id_of(f)
        if fid is None:
            self.all_ids = False
            self.next_temp_id += 1
            fid = -self.next_temp_id  # placeholder, replaced by assign_fresh_ids
        ftype = self.type(f.type, path)
        # unknown is always optional (its values are null); Arrow allows a non-nullable null field
        required = not f.nullable and not isinstance(ftype, UnknownType)
        return NestedField(fid, name or f.name, ftype, required=required)

    def type(self, t: pa.DataType, path: str) -> IcebergType:
        if pa.types.is_dictionary(t):
            return self.type(t.value_type, path)
        if pa.types.is_struct(t):
            return StructType(
                *(self.field(t.field(i), f"{path}.{t.field(i).name}") for i in range(t.num_fields))
            )
        if pa.types.is_map(t):
            key = self.field(t.key_field, f"{path}.key", "key")
            value = self.field(t.item_field, f"{path}.value", "value")
            return MapType(key.field_id, key.field_type, value.field_id, value.field_type, value.required)
        if (
            pa.types.is_list(t)
            or pa.types.is_large_list(t)
            or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t)
        ):
            elem = self.field(t.value_field, f"{path}.element", "element")
            return ListType(elem.field_id, elem.field_type, elem.required)
        return self.primitive(t, path)

    def primitive(self, t: pa.DataType, path: str) -> PrimitiveType:
        if isinstance(t, pa.BaseExtensionType):
            if isinstance(t, pa.UuidType):
                return UUIDType()
            return self.primitive(t.storage_type, path)
        if pa.types.is_boolean(t):
            return BooleanType()
        if pa.types.is_null(t):
            if self.format_version >= 3:
                return UnknownType()
            raise SchemaError(
                f"column {path!r} has Arrow type null, which only format v3 tables store (type unknown)",
                hint="cast the column to the type it will hold, or use a table with format-version 3",
                column=path,
            )
        if t in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()):
            return IntegerType()
        if t in (pa.int64(), pa.uint32()):
            return LongType()
        if pa.types.is_float32(t):
            return FloatType()
        if pa.types.is_float64(t):
            return DoubleType()
        if pa.types.is_decimal(t):
            if t.precision > 38:
                raise SchemaError(
                    f"column {path!r}: decimal precision {t.precision} exceeds Iceberg's maximum of 38",
                    column=path,
                )
            return DecimalType(t.precision, t.scale)
        if pa.types.is_date(t):
            return DateType()
        if pa.types.is_time(t):
            return TimeType()
        if pa.types.is_timestamp(t):
            return self.timestamp(t, path)
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return StringType()
        if pa.types.is_fixed_size_binary(t):
            return FixedType(t.byte_width)
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            return BinaryType()
        raise SchemaError(
            f"column {path!r} has Arrow type {t}, which Iceberg cannot store",
            hint="cast the column to a supported type (e.g. float16 -> float32, duration -> int64) "
            "before writing",
            column=path,
        )

    def timestamp(self, t: pa.TimestampType, path: str) -> PrimitiveType:
        tz = t.tz is not None
        if t.unit == "ns":
            if self.timestamp_ns == "keep":
                return TimestamptzNsType() if tz else TimestampNsType()
            if self.timestamp_ns == "error":
                raise SchemaError(
                    f"column {path!r} has nanosecond timestamps, which Iceberg v2 cannot store",
                    hint="create the table with properties={'format-version': '3'} (timestamp_ns "
                    "types), cast it to timestamp('us') first, or pass timestamp_ns='downcast' "
                    "(microsecond columns; values with sub-microsecond parts are rejected when written)",
                    column=path,
                )
        return TimestamptzType() if tz else TimestampType()


def arrow_to_schema(
    pa_schema: pa.Schema, *, timestamp_ns: TimestampNsMode | None = None, format_version: int = 2
) -> Schema:
    """An Iceberg schema for an Arrow schema.

    Field ids come from ``PARQUET:field_id`` metadata when every field (including list elements
    and map keys/values) has one; otherwise fresh ids are assigned the way a new table gets them.
    Non-nullable Arrow fields become required. Dictionary types become their value type, large and
    view types their plain equivalent, unsigned 8/16-bit integers ``int`` and uint32 ``long``.
    Nanosecond timestamps raise :class:`SchemaError` unless ``timestamp_ns`` is ``"downcast"``
    (microsecond types) or ``"keep"`` (the v3 ``timestamp_ns`` types); it defaults to ``"keep"``
    for ``format_version`` 3 and ``"error"`` below. On v3, ``pa.null()`` becomes ``unknown``
    (always optional); below v3 it is a :class:`SchemaError`.
    """
    if timestamp_ns is None:
        timestamp_ns = "keep" if format_version >= 3 else "error"
    conv = _ArrowConverter(timestamp_ns, format_version)
    fields = [conv.field(f, f.name) for f in pa_schema]
    if conv.all_ids:
        return Schema(*fields)
    # Placeholder ids are negative and unique, so the temporary schema is valid.
    return assign_fresh_ids(Schema(*fields))
