"""Iceberg <-> Spark type mapping and the Arrow layout conversions (no SparkSession needed)."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as hs
from pyspark.sql import types as st

from icefloe.arrow.spark_layout import (
    from_spark_batch,
    to_spark_batch,
    uuid_bytes_to_text,
    uuid_text_to_bytes,
)
from icefloe.errors import SchemaError, SchemaMismatchError
from icefloe.spark.types import FIELD_ID_KEY, to_iceberg_schema, to_spark_schema
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
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
    UUIDType,
)

EXPECTED = [
    (BooleanType(), st.BooleanType()),
    (IntegerType(), st.IntegerType()),
    (LongType(), st.LongType()),
    (FloatType(), st.FloatType()),
    (DoubleType(), st.DoubleType()),
    (DecimalType(38, 10), st.DecimalType(38, 10)),
    (DateType(), st.DateType()),
    (TimeType(), st.TimeType(6)),
    (TimestampType(), st.TimestampNTZType()),
    (TimestamptzType(), st.TimestampType()),
    (TimestampNsType(), st.TimestampNTZType()),
    (TimestamptzNsType(), st.TimestampType()),
    (StringType(), st.StringType()),
    (UUIDType(), st.StringType()),
    (FixedType(3), st.BinaryType()),
    (BinaryType(), st.BinaryType()),
]


@pytest.mark.parametrize(("iceberg", "spark"), EXPECTED, ids=[str(i) for i, _ in EXPECTED])
def test_primitive_to_spark(iceberg: object, spark: st.DataType) -> None:
    schema = Schema(NestedField(1, "c", iceberg, required=True))  # type: ignore[arg-type]
    out = to_spark_schema(schema)
    assert out.fields[0].dataType == spark
    assert out.fields[0].nullable is False


def test_nested_types_and_field_ids() -> None:
    schema = Schema(
        NestedField(1, "s", StructType(NestedField(4, "a", IntegerType(), True, doc="the a")), False),
        NestedField(2, "l", ListType(5, StringType(), element_required=False), True),
        NestedField(3, "m", MapType(6, StringType(), 7, LongType(), value_required=True), False),
    )
    out = to_spark_schema(schema, with_field_ids=True)
    s, lst, m = out.fields
    assert s.metadata[FIELD_ID_KEY] == 1 and s.nullable
    inner = s.dataType.fields[0]  # type: ignore[attr-defined]
    assert inner.metadata == {FIELD_ID_KEY: 4, "comment": "the a"} and not inner.nullable
    assert lst.dataType == st.ArrayType(st.StringType(), containsNull=True) and not lst.nullable
    assert m.dataType == st.MapType(st.StringType(), st.LongType(), valueContainsNull=False)
    assert to_spark_schema(schema).fields[0].metadata == {}


def test_spark_to_iceberg_every_type() -> None:
    spark = st.StructType(
        [
            st.StructField("b", st.BooleanType(), False),
            st.StructField("i8", st.ByteType()),
            st.StructField("i16", st.ShortType()),
            st.StructField("i", st.IntegerType()),
            st.StructField("l", st.LongType()),
            st.StructField("f", st.FloatType()),
            st.StructField("d", st.DoubleType()),
            st.StructField("dec", st.DecimalType(9, 2)),
            st.StructField("date", st.DateType()),
            st.StructField("t", st.TimeType(6)),
            st.StructField("ntz", st.TimestampNTZType()),
            st.StructField("ts", st.TimestampType()),
            st.StructField("s", st.StringType()),
            st.StructField("c", st.CharType(3)),
            st.StructField("bin", st.BinaryType()),
            st.StructField("st", st.StructType([st.StructField("x", st.LongType(), False)])),
            st.StructField("arr", st.ArrayType(st.IntegerType(), containsNull=False)),
            st.StructField("map", st.MapType(st.StringType(), st.DoubleType())),
        ]
    )
    schema = to_iceberg_schema(spark)
    types = {f.name: f.field_type for f in schema.fields}
    assert types["i8"] == IntegerType() and types["i16"] == IntegerType()
    assert types["ntz"] == TimestampType() and types["ts"] == TimestamptzType()
    assert types["t"] == TimeType() and types["c"] == StringType()
    assert types["dec"] == DecimalType(9, 2)
    assert schema.fields[0].required
    # top-level ids first, as Iceberg assigns them
    assert [f.field_id for f in schema.fields] == list(range(1, 19))
    assert isinstance(types["arr"], ListType) and types["arr"].element_required
    assert isinstance(types["map"], MapType) and not types["map"].value_required


def test_spark_round_trip_of_iceberg_types() -> None:
    fields = [NestedField(i + 1, f"c{i}", t, required=i % 2 == 0) for i, (t, _) in enumerate(EXPECTED)]
    back = to_iceberg_schema(to_spark_schema(Schema(*fields)))
    lossless = {
        TimestampNsType(): TimestampType(),
        TimestamptzNsType(): TimestamptzType(),
        UUIDType(): StringType(),
        FixedType(3): BinaryType(),
    }
    for f, g in zip(fields, back.fields, strict=True):
        assert g.field_type == lossless.get(f.field_type, f.field_type)
        assert g.required == f.required


def test_unsupported_spark_type_names_the_column() -> None:
    spark = st.StructType(
        [st.StructField("outer", st.StructType([st.StructField("iv", st.DayTimeIntervalType())]))]
    )
    with pytest.raises(SchemaError, match=r"outer\.iv"):
        to_iceberg_schema(spark)


@given(hs.lists(hs.one_of(hs.none(), hs.uuids()), max_size=20), hs.integers(0, 3))
def test_uuid_text_round_trip(values: list[uuid.UUID | None], offset: int) -> None:
    arr = pa.array([v.bytes if v else None for v in values], pa.binary(16)).slice(min(offset, len(values)))
    text = uuid_bytes_to_text(arr)
    assert text.to_pylist() == [str(v) if v else None for v in values[min(offset, len(values)) :]]
    assert uuid_text_to_bytes(text, "u").equals(arr)


def test_uuid_text_rejects_garbage() -> None:
    with pytest.raises(SchemaMismatchError, match="'u'"):
        uuid_text_to_bytes(pa.array(["not-a-uuid"]), "u")
    with pytest.raises(SchemaMismatchError, match="'u'"):
        uuid_text_to_bytes(pa.array(["zz" * 16]), "u")


def test_nested_uuid_and_fixed_conversions() -> None:
    schema = Schema(
        NestedField(
            1,
            "s",
            StructType(NestedField(2, "u", UUIDType(), False), NestedField(3, "f", FixedType(2), False)),
        ),
        NestedField(4, "l", ListType(5, UUIDType(), element_required=False)),
        NestedField(6, "m", MapType(7, StringType(), 8, FixedType(2), value_required=False)),
    )
    u = uuid.uuid4()
    spark_layout = pa.schema(
        [
            pa.field("s", pa.struct([pa.field("u", pa.string()), pa.field("f", pa.binary())])),
            pa.field("l", pa.list_(pa.field("element", pa.string()))),
            pa.field("m", pa.map_(pa.string(), pa.binary())),
        ]
    )
    spark_side = pa.RecordBatch.from_pylist(
        [
            {"s": {"u": str(u), "f": b"ab"}, "l": [str(u), None], "m": [("k", b"cd")]},
            {"s": None, "l": None, "m": None},
        ],
        schema=spark_layout,
    )
    table_side = from_spark_batch(spark_side, schema)
    assert table_side.column(0).type.field("u").type == pa.binary(16)
    assert table_side.column(1).to_pylist() == [[u.bytes, None], None]
    assert table_side.column(2).type.item_type == pa.binary(2)
    back = to_spark_batch(table_side, schema, spark_layout)
    assert back.schema == spark_layout
    assert back.column(0).to_pylist() == [{"u": str(u), "f": b"ab"}, None]
    with pytest.raises(SchemaMismatchError, match=r"'m\.value'"):
        bad = pa.RecordBatch.from_pylist(
            [{"m": [("k", b"toolong")]}], schema=pa.schema([spark_layout.field("m")])
        )
        from_spark_batch(bad, schema)
