from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.arrow.schema import FIELD_ID_KEY, arrow_to_schema, project_to_arrow, schema_to_arrow
from icefloe.errors import SchemaError
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DecimalType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzType,
)


def test_every_type_maps_to_the_arrow_type_parquet_reads_back(all_types: Schema) -> None:
    s = schema_to_arrow(all_types)
    assert s.field("b").type == pa.bool_()
    assert s.field("i").type == pa.int32() and not s.field("i").nullable
    assert s.field("l").type == pa.int64()
    assert s.field("f").type == pa.float32()
    assert s.field("d").type == pa.float64()
    assert s.field("dec").type == pa.decimal128(10, 2)
    assert s.field("date").type == pa.date32()
    assert s.field("time").type == pa.time64("us")
    assert s.field("ts").type == pa.timestamp("us")
    assert s.field("tstz").type == pa.timestamp("us", tz="UTC")
    assert s.field("s").type == pa.string()
    assert s.field("u").type == pa.uuid()
    assert s.field("fx").type == pa.binary(3)
    assert s.field("bin").type == pa.binary()
    st_type = s.field("st").type
    assert st_type.field("x").metadata == {FIELD_ID_KEY: b"16"} and not st_type.field("x").nullable
    assert s.field("li").type.value_field.metadata == {FIELD_ID_KEY: b"19"}
    m = s.field("m").type
    assert m.key_field.metadata == {FIELD_ID_KEY: b"21"}
    assert m.item_field.metadata == {FIELD_ID_KEY: b"22"} and m.item_field.nullable
    assert s.field("m").metadata == {FIELD_ID_KEY: b"20"}


def test_round_trip_keeps_ids_and_nullability(all_types: Schema) -> None:
    assert arrow_to_schema(schema_to_arrow(all_types)) == all_types


def test_without_field_ids_metadata_is_absent_and_fresh_ids_are_assigned(all_types: Schema) -> None:
    plain = schema_to_arrow(all_types, include_field_ids=False)
    assert all(f.metadata is None for f in plain)
    converted = arrow_to_schema(plain)
    # Same shape; ids assigned the way a new table gets them (top level first).
    assert [f.field_id for f in converted.fields] == list(range(1, len(all_types.fields) + 1))
    assert converted.find_field("st.x").required
    assert schema_to_arrow(converted, include_field_ids=False) == plain


def test_input_variants_are_accepted() -> None:
    s = arrow_to_schema(
        pa.schema(
            [
                pa.field("a", pa.large_string()),
                pa.field("b", pa.string_view()),
                pa.field("c", pa.dictionary(pa.int32(), pa.string())),
                pa.field("d", pa.timestamp("ms")),
                pa.field("e", pa.timestamp("s", tz="Europe/Paris")),
                pa.field("f", pa.large_list(pa.int16())),
                pa.field("g", pa.large_binary()),
                pa.field("h", pa.uint32(), nullable=False),
                pa.field("i", pa.date64()),
            ]
        )
    )
    types = {f.name: f.field_type for f in s.fields}
    assert types["a"] == types["b"] == types["c"] == StringType()
    assert types["d"] == TimestampType()
    assert types["e"] == TimestamptzType()
    assert isinstance(types["f"], ListType) and types["f"].element_type == IntegerType()
    assert types["h"] == LongType() and s.find_field("h").required


@pytest.mark.parametrize(
    "arrow_type", [pa.float16(), pa.duration("us"), pa.dense_union([pa.field("x", pa.int8())]), pa.uint64()]
)
def test_unsupported_types_name_the_column(arrow_type: pa.DataType) -> None:
    with pytest.raises(SchemaError, match=r"'outer.bad'"):
        arrow_to_schema(pa.schema([pa.field("outer", pa.struct([pa.field("bad", arrow_type)]))]))


def test_nanosecond_timestamps() -> None:
    schema = pa.schema([pa.field("t", pa.timestamp("ns"))])
    with pytest.raises(SchemaError, match="nanosecond") as info:
        arrow_to_schema(schema)
    assert info.value.hint and "downcast" in info.value.hint
    assert arrow_to_schema(schema, timestamp_ns="downcast").fields[0].field_type == TimestampType()
    assert arrow_to_schema(schema, timestamp_ns="keep").fields[0].field_type == TimestampNsType()


def test_project_to_arrow_keeps_parents_of_selected_nested_fields(all_types: Schema) -> None:
    projected = project_to_arrow(all_types, [17, 2])
    assert projected.names == ["i", "st"]
    assert projected.field("st").type.names == ["y"]


def test_partial_field_ids_get_fresh_ids() -> None:
    schema = pa.schema([pa.field("a", pa.int32(), metadata={FIELD_ID_KEY: b"7"}), pa.field("b", pa.int32())])
    assert [f.field_id for f in arrow_to_schema(schema).fields] == [1, 2]


primitive = st.sampled_from([IntegerType(), LongType(), StringType(), DecimalType(9, 3), TimestampType()])


@st.composite
def iceberg_types(draw: st.DrawFn, depth: int = 2):  # type: ignore[no-untyped-def]
    kind = draw(st.sampled_from(["p", "p", "s", "l", "m"] if depth else ["p"]))
    if kind == "p":
        return draw(primitive)
    if kind == "s":
        n = draw(st.integers(1, 3))
        return ("struct", [(draw(iceberg_types(depth - 1)), draw(st.booleans())) for _ in range(n)])
    if kind == "l":
        return ("list", draw(iceberg_types(depth - 1)), draw(st.booleans()))
    return ("map", draw(primitive), draw(iceberg_types(depth - 1)), draw(st.booleans()))


def _build(spec, counter):  # type: ignore[no-untyped-def]
    def nid() -> int:
        counter[0] += 1
        return counter[0]

    if not isinstance(spec, tuple):
        return spec
    if spec[0] == "struct":
        return StructType(
            *(NestedField(nid(), f"f{i}", _build(t, counter), req) for i, (t, req) in enumerate(spec[1]))
        )
    if spec[0] == "list":
        return ListType(nid(), _build(spec[1], counter), spec[2])
    return MapType(nid(), spec[1], nid(), _build(spec[2], counter), spec[3])


@given(st.lists(st.tuples(iceberg_types(), st.booleans()), min_size=1, max_size=4))
def test_round_trip_property(columns) -> None:  # type: ignore[no-untyped-def]
    counter = [100]
    schema = Schema(
        *(NestedField(i + 1, f"c{i}", _build(t, counter), req) for i, (t, req) in enumerate(columns))
    )
    assert arrow_to_schema(schema_to_arrow(schema)) == schema
