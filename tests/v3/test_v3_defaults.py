"""Format v3 column defaults: ``initial-default`` fills rows written before a column was added,
``write-default`` fills writes that lack the column; the spec's JSON single-value serialization
of every primitive default; the typed errors for bad defaults and for v2 tables."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import SchemaError, SchemaMismatchError, UnsupportedFeatureError
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
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
    type_from_json,
    type_to_json,
)

BASE = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.struct([pa.field("a", pa.int32())]))]
)
UID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

# (type, the default as given, the internal value, its JSON form per the spec's appendix D)
CASES: list[tuple[IcebergType, Any, Any, Any]] = [
    (BooleanType(), True, True, True),
    (IntegerType(), 34, 34, 34),
    (LongType(), -(2**40), -(2**40), -(2**40)),
    (FloatType(), 1.5, 1.5, 1.5),
    (DoubleType(), -0.25, -0.25, -0.25),
    (DecimalType(9, 2), Decimal("14.2"), Decimal("14.20"), "14.20"),
    (DecimalType(38, 10), "0.0000000001", Decimal("1E-10"), "0.0000000001"),
    (DateType(), dt.date(2017, 11, 16), 17486, "2017-11-16"),
    (TimeType(), "22:31:08.123456", 81068123456, "22:31:08.123456"),
    (
        TimestampType(),
        dt.datetime(2017, 11, 16, 22, 31, 8, 123456),
        1510871468123456,
        "2017-11-16T22:31:08.123456",
    ),
    (
        TimestamptzType(),
        dt.datetime(2017, 11, 16, 14, 31, 8, 123456, tzinfo=dt.timezone(dt.timedelta(hours=-8))),
        1510871468123456,
        "2017-11-16T22:31:08.123456+00:00",
    ),
    (
        TimestampNsType(),
        "2017-11-16T22:31:08.123456789",
        1510871468123456789,
        "2017-11-16T22:31:08.123456789",
    ),
    (
        TimestamptzNsType(),
        "2017-11-16T22:31:08.123456789+00:00",
        1510871468123456789,
        "2017-11-16T22:31:08.123456789+00:00",
    ),
    (StringType(), "iceberg", "iceberg", "iceberg"),
    (UUIDType(), str(UID).upper(), UID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\xff", b"\x00\x01\x02\xff", "000102FF"),
    (BinaryType(), bytearray(b"\x00\x01\x02\xff"), b"\x00\x01\x02\xff", "000102FF"),
]


def _ids(case: tuple[IcebergType, Any, Any, Any]) -> str:
    return str(case[0])


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_default_json_per_spec(catalog: Any, case: tuple[IcebergType, Any, Any, Any]) -> None:
    t_type, given_value, internal, json_form = case
    t = catalog.create_table("ns.t", schema=BASE, properties={"format-version": "3"})
    with t.update_schema() as u:
        u.add_column("c", t_type, default=given_value)
    field = t.schema().find_field("c")
    assert field.initial_default == internal and field.write_default == internal
    stored = json.loads(Path(t.metadata_location.removeprefix("file://")).read_text())
    (schema_json,) = [s for s in stored["schemas"] if s["schema-id"] == stored["current-schema-id"]]
    (c,) = [f for f in schema_json["fields"] if f["name"] == "c"]
    assert c["initial-default"] == json_form and c["write-default"] == json_form
    assert catalog.load_table("ns.t").schema().find_field("c") == field  # parsed back


def test_json_reads_other_spellings_of_defaults() -> None:
    struct = type_from_json(
        {
            "type": "struct",
            "fields": [
                {"id": 1, "name": "b", "required": False, "type": "binary", "initial-default": "000102ff"},
                {"id": 2, "name": "f", "required": False, "type": "double", "write-default": 1},
                {
                    "id": 3,
                    "name": "s",
                    "required": False,
                    "initial-default": {},
                    "write-default": {},
                    "type": {
                        "type": "struct",
                        "fields": [
                            {"id": 4, "name": "x", "required": False, "type": "int", "initial-default": 0}
                        ],
                    },
                },
            ],
        }
    )
    assert isinstance(struct, StructType)
    b, f, s = struct.fields
    assert b.initial_default == b"\x00\x01\x02\xff"
    assert f.write_default == 1.0 and isinstance(f.write_default, float)
    assert s.initial_default == () and s.write_default == ()
    again = type_to_json(struct)
    assert again["fields"][2]["initial-default"] == {}
    assert type_from_json(json.loads(json.dumps(again))) == struct


@pytest.mark.parametrize(
    ("field_json", "match"),
    [
        ({"type": "int", "initial-default": "7"}, "initial-default"),
        ({"type": "date", "write-default": 17486}, "write-default"),
        ({"type": "fixed[2]", "initial-default": "000102"}, "fixed"),
        ({"type": "uuid", "initial-default": "not-a-uuid"}, "uuid"),
        ({"type": "timestamp", "initial-default": "2017-11-16T22:31:08+00:00"}, "zone"),
    ],
)
def test_malformed_json_defaults_are_schema_errors(field_json: dict[str, Any], match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        type_from_json(
            {"type": "struct", "fields": [{"id": 1, "name": "c", "required": False, **field_json}]}
        )


# ------------------------------------------------------------------ Hypothesis: JSON round trips

MIN_DAY = dt.date(1, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal()
MAX_DAY = dt.date(9999, 12, 31).toordinal() - dt.date(1970, 1, 1).toordinal()
MICROS_PER_DAY = 86_400_000_000


def _values(t: IcebergType) -> st.SearchStrategy[Any]:
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegerType):
        return st.integers(IntegerType.min, IntegerType.max)
    if isinstance(t, LongType):
        return st.integers(LongType.min, LongType.max)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False, allow_infinity=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(t, DecimalType):
        bound = 10**t.precision - 1
        return st.integers(-bound, bound).map(lambda u: Decimal(u).scaleb(-t.scale, Context(prec=100)))
    if isinstance(t, DateType):
        return st.integers(MIN_DAY, MAX_DAY)
    if isinstance(t, TimeType):
        return st.integers(0, MICROS_PER_DAY - 1)
    if isinstance(t, TimestampType | TimestamptzType):
        return st.integers(MIN_DAY * MICROS_PER_DAY, (MAX_DAY + 1) * MICROS_PER_DAY - 1)
    if isinstance(t, TimestampNsType | TimestamptzNsType):
        return st.integers(LongType.min, LongType.max)
    if isinstance(t, StringType):
        return st.text()
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    return st.binary()


TYPES = [case[0] for case in CASES] + [DecimalType(1, 0), DecimalType(38, 0), DecimalType(20, 19)]


@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(st.just(t), _values(t), _values(t))))
def test_default_json_round_trip(case: tuple[IcebergType, Any, Any]) -> None:
    t, initial, write = case
    struct = StructType(NestedField(1, "c", t, False, None, initial, write))
    text = json.dumps(type_to_json(struct), allow_nan=False)  # strict JSON
    back = type_from_json(json.loads(text))
    assert back == struct
    field = back.fields[0]
    if isinstance(t, DecimalType):
        encoded = json.loads(text)["fields"][0]["initial-default"]
        assert "E" not in encoded and "e" not in encoded  # plain notation
        assert len(encoded.partition(".")[2]) == t.scale  # exactly the scale's digits
        assert Decimal(encoded) == initial
    if isinstance(t, FloatType | DoubleType):
        assert math.copysign(1.0, field.initial_default) == math.copysign(1.0, initial)


# ------------------------------------------------------------------ reads and writes


def test_initial_default_fills_old_rows_and_write_default_new_ones(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=BASE, properties={"format-version": "3"})
    struct_type = BASE.field("s").type
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"a": 1}, None], struct_type)}))
    with t.update_schema() as u:
        u.add_column("region", pa.string(), required=True, default="EU")
        u.add_column("day", "date", default=dt.date(2024, 2, 29))
        u.add_column("s.b", "long", default=7)
    old = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    assert old[1] == {"id": 1, "s": {"a": 1, "b": 7}, "region": "EU", "day": dt.date(2024, 2, 29)}
    assert old[2] == {
        "id": 2,
        "s": None,
        "region": "EU",
        "day": dt.date(2024, 2, 29),
    }  # null struct stays null
    # an append without the new columns stores their write defaults (also inside a struct)
    t.append(pa.table({"id": pa.array([3], pa.int64()), "s": pa.array([{"a": 3}], struct_type)}))
    with t.update_schema() as u:
        u.update_column_default("region", "US")
        u.update_column_default("day", None)
    field = t.schema().find_field("region")
    assert (field.initial_default, field.write_default) == ("EU", "US")
    assert t.schema().find_field("day").initial_default == (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days
    t.append(pa.table({"id": pa.array([4], pa.int64())}))
    t.append(pa.table({"id": pa.array([5], pa.int64()), "region": ["NZ"], "day": [None]}))
    rows = {r["id"]: (r["region"], r["day"], r["s"]) for r in t.scan().to_arrow().to_pylist()}
    assert rows == {
        1: ("EU", dt.date(2024, 2, 29), {"a": 1, "b": 7}),
        2: ("EU", dt.date(2024, 2, 29), None),
        3: ("EU", dt.date(2024, 2, 29), {"a": 3, "b": 7}),
        4: ("US", None, None),  # the write default now; day has none any more
        5: ("NZ", None, None),  # values given win
    }
    # the data files of the later appends hold the values: rows 1 and 2 are the only defaulted ones
    assert sorted(t.scan(row_filter="region = 'EU'").to_arrow()["id"].to_pylist()) == [1, 2, 3]


def test_defaults_prune_old_files_by_their_initial_default(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=BASE, properties={"format-version": "3"})
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with t.update_schema() as u:
        u.add_column("n", "int", default=5)
    t.append(pa.table({"id": pa.array([2], pa.int64()), "n": pa.array([9], pa.int32())}))
    assert t.scan(row_filter="n = 5").to_arrow()["id"].to_pylist() == [1]
    assert t.scan(row_filter="n = 9").to_arrow()["id"].to_pylist() == [2]


def test_required_column_needs_a_default(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=BASE, properties={"format-version": "3"})
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(SchemaError, match="required"):
        t.update_schema().add_column("r", "string", required=True)
    with t.update_schema() as u:
        u.add_column("r", "string", required=True, default="x")
    with t.update_schema() as u:
        u.update_column_default("r", None)
    # a required column without a write default must be in every write (spec: the writer fails)
    with pytest.raises(SchemaMismatchError, match="'r'"):
        t.append(pa.table({"id": pa.array([2], pa.int64())}))
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "s": None, "r": "x"}]


def test_defaults_are_refused_on_v2(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=BASE)
    with pytest.raises(SchemaError, match="version 3"):
        t.update_schema().add_column("c", "int", default=1)
    with pytest.raises(SchemaError, match="version 3"):
        t.update_schema().update_column_default("id", 1)
    schema = Schema(NestedField(1, "c", IntegerType(), False, None, 1, 1))
    with pytest.raises(UnsupportedFeatureError, match="defaults"):
        catalog.create_table("ns.t2", schema=schema)
    assert t.refresh().schema() == t.schema() and not catalog.table_exists("ns.t2")


@pytest.mark.parametrize(
    ("field_type", "default", "match"),
    [
        ("int", "abc", "int"),
        ("int", 2**40, "int"),
        ("int", True, "int"),
        ("fixed[4]", b"\x00", "fixed"),
        ("double", float("nan"), "NaN"),
        ("date", dt.datetime(2024, 1, 1), "date"),
        ("decimal(5, 2)", Decimal("1.234"), "digits"),
        ("decimal(3, 2)", Decimal("12.5"), "decimal"),
        ("timestamp", "2024-01-01T00:00:00+00:00", "zone"),
        ("timestamptz", "2024-01-01T00:00:00", "zone"),
        ("uuid", "xyz", "uuid"),
        ("string", 5, "string"),
    ],
)
def test_bad_defaults_are_schema_errors(catalog: Any, field_type: str, default: Any, match: str) -> None:
    t = catalog.create_table("ns.t", schema=BASE, properties={"format-version": "3"})
    with pytest.raises(SchemaError, match=match):
        t.update_schema().add_column("c", field_type, default=default)
    with t.update_schema() as u:
        u.add_column("c", field_type)
    with pytest.raises(SchemaError, match=match):
        t.update_schema().update_column_default("c", default)
    assert t.refresh().schema().find_field("c").write_default is None


def test_default_edge_cases(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t",
        schema=pa.schema([*BASE, pa.field("l", pa.list_(pa.int32()))]),
        properties={"format-version": "3"},
    )
    with pytest.raises(SchemaError, match="no such column"):
        t.update_schema().update_column_default("nope", 1)
    with pytest.raises(SchemaError, match="element"):
        t.update_schema().update_column_default("l.element", 1)
    with pytest.raises(UnsupportedFeatureError):
        t.update_schema().add_column("m", pa.list_(pa.int32()), default=[1])
    with pytest.raises(SchemaError, match="struct"):
        t.update_schema().add_column("st", pa.struct([pa.field("x", pa.int32())]), default={"x": 1})
    # an unchanged write default is no change at all
    with t.update_schema() as u:
        u.add_column("c", "long", default=3)
    before = t.metadata_location
    with t.update_schema() as u:
        u.update_column_default("c", 3)
    assert t.metadata_location == before
