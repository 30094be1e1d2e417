"""Iceberg <-> Spark SQL types, both ways, for every type.

=====================  ==========================  ===========================================
Iceberg                Spark                       note
=====================  ==========================  ===========================================
boolean                BooleanType
int                    IntegerType                 Spark ByteType/ShortType write to int too
long                   LongType
float / double         FloatType / DoubleType
decimal(P, S)          DecimalType(P, S)
date                   DateType
time                   TimeType(6)                 Spark 4.1+ TIME; microseconds
timestamp              TimestampNTZType            no time zone (wall clock)
timestamptz            TimestampType               an instant (Spark's session zone for display)
timestamp_ns(tz)       TimestampNTZType (Type)     v3; read truncated to microseconds, written
                                                   from microseconds (Spark has no nanoseconds)
unknown                NullType                    v3; always null
string                 StringType                  Char/Varchar write to string
uuid                   StringType                  canonical 36-character text, as Iceberg Java
fixed(L) / binary      BinaryType                  fixed: writes must have exactly L bytes
struct / list / map    StructType / ArrayType / MapType (required -> not nullable)
=====================  ==========================  ===========================================

``to_spark_schema(schema, with_field_ids=True)`` puts each field's id in the StructField metadata
(``parquet.field.id``), which Spark's Parquet reader uses to resolve columns by id.
"""

from __future__ import annotations

from pyspark.sql import types as st

from icefloe.errors import SchemaError
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

__all__ = ["FIELD_ID_KEY", "to_iceberg_schema", "to_iceberg_type", "to_spark_schema", "to_spark_type"]

FIELD_ID_KEY = "parquet.field.id"

_PRIMITIVES: dict[type[IcebergType], st.DataType] = {
    BooleanType: st.BooleanType(),
    IntegerType: st.IntegerType(),
    LongType: st.LongType(),
    FloatType: st.FloatType(),
    DoubleType: st.DoubleType(),
    DateType: st.DateType(),
    TimestampType: st.TimestampNTZType(),
    TimestamptzType: st.TimestampType(),
    TimestampNsType: st.TimestampNTZType(),
    TimestamptzNsType: st.TimestampType(),
    StringType: st.StringType(),
    UUIDType: st.StringType(),
    FixedType: st.BinaryType(),
    BinaryType: st.BinaryType(),
    UnknownType: st.NullType(),
}


def to_spark_type(t: IcebergType, with_field_ids: bool = False) -> st.DataType:
    if isinstance(t, StructType):
        return st.StructType([_to_spark_field(f, with_field_ids) for f in t.fields])
    if isinstance(t, ListType):
        return st.ArrayType(
            to_spark_type(t.element_type, with_field_ids), containsNull=not t.element_required
        )
    if isinstance(t, MapType):
        return st.MapType(
            to_spark_type(t.key_type, with_field_ids),
            to_spark_type(t.value_type, with_field_ids),
            valueContainsNull=not t.value_required,
        )
    if isinstance(t, DecimalType):
        return st.DecimalType(t.precision, t.scale)
    if isinstance(t, TimeType):
        return st.TimeType(6)
    spark = _PRIMITIVES.get(type(t))
    if spark is None:
        raise SchemaError(f"Iceberg type {t} has no Spark equivalent")
    return spark


def _to_spark_field(f: NestedField, with_field_ids: bool) -> st.StructField:
    metadata: dict[str, object] = {}
    if with_field_ids:
        metadata[FIELD_ID_KEY] = f.field_id
    if f.doc:
        metadata["comment"] = f.doc
    try:
        data_type = to_spark_type(f.field_type, with_field_ids)
    except SchemaError as e:
        raise SchemaError(f"column {f.name!r}: {e.message}", column=f.name) from None
    return st.StructField(f.name, data_type, nullable=not f.required, metadata=metadata)


def to_spark_schema(schema: Schema | StructType, with_field_ids: bool = False) -> st.StructType:
    """The Spark schema of an Iceberg schema (see the module table)."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    result = to_spark_type(struct, with_field_ids)
    assert isinstance(result, st.StructType)
    return result


# --------------------------------------------------------------------------- Spark -> Iceberg


class _IdCounter:
    def __init__(self, start: int) -> None:
        self.next = start

    def __call__(self) -> int:
        n = self.next
        self.next += 1
        return n


def _primitive_from_spark(t: st.DataType, path: str) -> IcebergType:
    if isinstance(t, st.BooleanType):
        return BooleanType()
    if isinstance(t, st.ByteType | st.ShortType | st.IntegerType):
        return IntegerType()
    if isinstance(t, st.LongType):
        return LongType()
    if isinstance(t, st.FloatType):
        return FloatType()
    if isinstance(t, st.DoubleType):
        return DoubleType()
    if isinstance(t, st.DecimalType):
        return DecimalType(t.precision, t.scale)
    if isinstance(t, st.DateType):
        return DateType()
    if isinstance(t, st.TimeType):
        return TimeType()
    if isinstance(t, st.TimestampNTZType):
        return TimestampType()
    if isinstance(t, st.TimestampType):
        return TimestamptzType()
    if isinstance(t, st.StringType | st.CharType | st.VarcharType):
        return StringType()
    if isinstance(t, st.BinaryType):
        return BinaryType()
    raise SchemaError(
        f"column {path!r}: Spark type {t.simpleString()} has no Iceberg equivalent",
        hint="cast the column to a supported type (see the type table in docs/spark.md)",
        column=path,
    )


def _from_spark(t: st.DataType, path: str, next_id: _IdCounter) -> IcebergType:
    if isinstance(t, st.StructType):
        ids = [next_id() for _ in t.fields]
        fields = [
            NestedField(
                fid,
                f.name,
                _from_spark(f.dataType, f"{path}.{f.name}" if path else f.name, next_id),
                required=not f.nullable,
                doc=f.metadata.get("comment") if f.metadata else None,
            )
            for fid, f in zip(ids, t.fields, strict=True)
        ]
        return StructType(*fields)
    if isinstance(t, st.ArrayType):
        element_id = next_id()
        return ListType(
            element_id, _from_spark(t.elementType, path + ".element", next_id), not t.containsNull
        )
    if isinstance(t, st.MapType):
        key_id, value_id = next_id(), next_id()
        return MapType(
            key_id,
            _from_spark(t.keyType, path + ".key", next_id),
            value_id,
            _from_spark(t.valueType, path + ".value", next_id),
            not t.valueContainsNull,
        )
    return _primitive_from_spark(t, path)


def to_iceberg_type(t: st.DataType, start_id: int = 1) -> IcebergType:
    return _from_spark(t, "", _IdCounter(start_id))


def to_iceberg_schema(spark_schema: st.StructType) -> Schema:
    """An Iceberg schema for a Spark schema, with fresh field ids (top-level fields first, as
    Iceberg assigns them). Spark's TimestampType is an instant (timestamptz), TimestampNTZType a
    wall-clock timestamp."""
    struct = _from_spark(spark_schema, "", _IdCounter(1))
    assert isinstance(struct, StructType)
    return Schema(*struct.fields)
