"""Input validation: data is checked against the table schema by name before anything is written."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from icefloe.arrow.conform import check_arrow_schema, conform_batch
from icefloe.arrow.schema import schema_to_arrow
from icefloe.errors import SchemaMismatchError
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(
        3,
        "loc",
        StructType(NestedField(4, "lat", DoubleType(), required=True), NestedField(5, "tag", StringType())),
    ),
    NestedField(6, "tags", ListType(7, StringType(), element_required=True)),
    NestedField(8, "props", MapType(9, StringType(), 10, IntegerType(), value_required=False)),
)


def conform(table: pa.Table, schema: Schema = SCHEMA) -> pa.RecordBatch:
    check_arrow_schema(table.schema, schema)
    return conform_batch(table.combine_chunks().to_batches()[0], schema)


def test_column_order_is_free_and_missing_optional_columns_become_null() -> None:
    t = pa.table({"name": ["a", None], "id": pa.array([1, 2], pa.int32())})
    out = conform(t)
    assert out.schema == schema_to_arrow(SCHEMA)
    assert out.column("id").to_pylist() == [1, 2]
    assert out.column("loc").null_count == 2
    assert out.column("tags").to_pylist() == [None, None]


def test_extra_column_is_rejected_with_its_path() -> None:
    with pytest.raises(SchemaMismatchError, match="'extra'") as info:
        conform(pa.table({"id": [1], "extra": [1]}))
    assert info.value.context["column"] == "extra"
    with pytest.raises(SchemaMismatchError, match=r"'loc.alt'"):
        conform(pa.table({"id": [1], "loc": [{"lat": 1.0, "alt": 2.0}]}))


def test_missing_required_column() -> None:
    with pytest.raises(SchemaMismatchError, match=r"'id'.*required"):
        conform(pa.table({"name": ["a"]}))


def test_null_in_required_column_names_it() -> None:
    with pytest.raises(SchemaMismatchError, match=r"'id'.*1 null"):
        conform(pa.table({"id": [1, None]}))


def test_null_in_required_struct_child_counts_only_rows_with_a_struct() -> None:
    ok = conform(pa.table({"id": [1, 2], "loc": [None, {"lat": 1.0, "tag": None}]}))
    assert ok.column("loc").to_pylist() == [None, {"lat": 1.0, "tag": None}]
    with pytest.raises(SchemaMismatchError, match=r"'loc.lat'"):
        conform(pa.table({"id": [1, 2], "loc": [None, {"lat": None, "tag": "x"}]}))


def test_null_list_element_in_required_element() -> None:
    assert conform(pa.table({"id": [1, 2], "tags": [None, ["a"]]})).column("tags").to_pylist() == [
        None,
        ["a"],
    ]
    with pytest.raises(SchemaMismatchError, match=r"'tags.element'"):
        conform(pa.table({"id": [1], "tags": [["a", None]]}))


def test_safe_casts_are_applied_recursively() -> None:
    t = pa.table(
        {
            "id": pa.array([1], pa.int16()),
            "name": pa.array(["x"], pa.large_string()).dictionary_encode(),
            "loc": pa.array([{"lat": 1.5}], pa.struct([("lat", pa.float32())])),
            "tags": pa.array([["a", "b"]], pa.large_list(pa.string_view())),
            "props": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int8())),
        }
    )
    out = conform(t)
    assert out.schema == schema_to_arrow(SCHEMA)
    assert out.to_pylist() == [
        {"id": 1, "name": "x", "loc": {"lat": 1.5, "tag": None}, "tags": ["a", "b"], "props": [("k", 1)]}
    ]


def test_sliced_nested_input_keeps_its_rows() -> None:
    props = pa.array([[("k", 1)], None, [("j", 2)]], pa.map_(pa.string(), pa.int32()))
    t = pa.table({"id": [1, 2, 3], "tags": [["a"], None, ["b", "c"]], "props": props})
    out = conform_batch(t.to_batches()[0].slice(1, 2), SCHEMA)
    assert out.column("tags").to_pylist() == [None, ["b", "c"]]
    assert out.column("props").to_pylist() == [None, [("j", 2)]]


@pytest.mark.parametrize(
    ("arrow_type", "value"),
    [
        (pa.int64(), 1),  # long -> int narrowing
        (pa.float64(), 1.0),  # double -> float
        (pa.string(), "1"),
        (pa.timestamp("us", tz="UTC"), 0),  # tz-aware into timestamp
    ],
)
def test_unsafe_type_changes_are_rejected(arrow_type: pa.DataType, value: object) -> None:
    schema = Schema(NestedField(1, "c", IntegerType() if arrow_type != pa.float64() else _float()))
    if pa.types.is_timestamp(arrow_type):
        schema = Schema(NestedField(1, "c", TimestampType()))
    with pytest.raises(SchemaMismatchError, match="'c'") as info:
        check_arrow_schema(pa.schema([pa.field("c", arrow_type)]), schema)
    assert info.value.hint


def _float():  # type: ignore[no-untyped-def]
    from icefloe.spec.types import FloatType

    return FloatType()


def test_timestamp_units_widen_and_tz_converts() -> None:
    schema = Schema(NestedField(1, "ts", TimestampType()), NestedField(2, "tz", TimestamptzType()))
    t = pa.table(
        {
            "ts": pa.array([1], pa.timestamp("s")),
            "tz": pa.array(
                [dt.datetime(2024, 1, 1, 1, tzinfo=dt.UTC)], pa.timestamp("ms", tz="Europe/Paris")
            ),
        }
    )
    out = conform(t, schema)
    assert out.column("ts").cast(pa.int64()).to_pylist() == [1_000_000]
    assert out.column("tz").type == pa.timestamp("us", tz="UTC")
    assert out.column("tz")[0].as_py() == dt.datetime(2024, 1, 1, 1, tzinfo=dt.UTC)


def test_nanoseconds_with_sub_microsecond_part_are_rejected() -> None:
    schema = Schema(NestedField(1, "ts", TimestampType()))
    assert conform(pa.table({"ts": pa.array([1000], pa.timestamp("ns"))}), schema).column("ts").cast(
        pa.int64()
    ).to_pylist() == [1]
    with pytest.raises(SchemaMismatchError, match="'ts'"):
        conform(pa.table({"ts": pa.array([1001], pa.timestamp("ns"))}), schema)


def test_decimal_widening_and_uuid_from_fixed() -> None:
    schema = Schema(NestedField(1, "d", DecimalType(12, 2)), NestedField(2, "u", UUIDType()))
    t = pa.table(
        {"d": pa.array([Decimal("1.25")], pa.decimal128(5, 2)), "u": pa.array([b"\x01" * 16], pa.binary(16))}
    )
    out = conform(t, schema)
    assert out.column("d").type == pa.decimal128(12, 2)
    assert out.column("u").type == pa.uuid()
    with pytest.raises(SchemaMismatchError, match="'d'"):
        check_arrow_schema(pa.schema([pa.field("d", pa.decimal128(12, 3))]), schema)


def test_overflowing_values_are_rejected() -> None:
    schema = Schema(NestedField(1, "c", IntegerType()))
    with pytest.raises(SchemaMismatchError, match="'c'"):
        conform(pa.table({"c": pa.array([2**31], pa.uint32())}), Schema(NestedField(1, "c", IntegerType())))
    check_arrow_schema(pa.schema([pa.field("c", pa.uint16())]), schema)


def test_null_typed_column_fills_optional_fields() -> None:
    out = conform(pa.table({"id": [1], "name": pa.nulls(1)}))
    assert out.column("name").type == pa.string() and out.column("name").null_count == 1


def test_duplicate_column_names_are_rejected() -> None:
    t = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["id", "id"])
    with pytest.raises(SchemaMismatchError, match="more than once"):
        check_arrow_schema(t.schema, SCHEMA)


def test_null_map_value_in_required_value() -> None:
    schema = Schema(NestedField(1, "m", MapType(2, StringType(), 3, IntegerType(), value_required=True)))
    typ = pa.map_(pa.string(), pa.int32())
    ok = conform(pa.table({"m": pa.array([None, [("a", 1)]], typ)}), schema)
    assert ok.column("m").to_pylist() == [None, [("a", 1)]]
    with pytest.raises(SchemaMismatchError, match=r"'m\.value'"):
        conform(pa.table({"m": pa.array([[("a", None)]], typ)}), schema)
