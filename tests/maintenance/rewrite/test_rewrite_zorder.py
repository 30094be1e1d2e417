"""Z-order byte rules: Java's ``ZOrderByteUtils`` cases, order preservation (Hypothesis), and the
vectorized Arrow z-values against the single-value reference."""

from __future__ import annotations

import datetime as dt
import math
import struct

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.arrow.rewrite import zorder_values
from icefloe.arrow.schema import schema_to_arrow
from icefloe.errors import SchemaError, ValidationError
from icefloe.maintenance.zorder import ZOrderSpec, interleave_bits, ordered_bytes, zorder_spec, zorder_value
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)
from icefloe.transforms import parse_transform

ONES, ZEROS = 0xFF, 0x00


def test_interleave_like_java() -> None:
    # TestZOrderByteUtil: empty, full (a column without bytes is skipped) and mixed inputs
    assert interleave_bits([bytes(10)] * 4, 40) == bytes(40)
    full = [bytes([ONES, ONES]), bytes([ONES]), b"", bytes([ONES, ONES, ONES])]
    assert interleave_bits(full, 6) == bytes([ONES] * 6)
    mixed = [bytes([1, ONES, ZEROS, 0x0F]), bytes([1, ZEROS, ONES]), bytes([1]), bytes([1])]
    assert interleave_bits(mixed, 9) == bytes([ZEROS, ZEROS, ZEROS, 0x0F, 0xAA, 0xAA, 0x55, 0x55, 0x0F])


def test_value_encodings() -> None:
    assert ordered_bytes(0, LongType()) == bytes([0x80]) + bytes(7)
    assert ordered_bytes(-1, IntegerType()) == bytes([0x7F]) + bytes([0xFF] * 7)
    assert ordered_bytes(1.0, DoubleType()) == bytes.fromhex("bff0000000000000")
    assert ordered_bytes(-1.0, DoubleType()) == bytes.fromhex("400fffffffffffff")
    assert ordered_bytes(None, LongType()) == bytes(8)  # nulls first
    assert ordered_bytes(True, BooleanType()) == bytes([0x81]) + bytes(7)
    assert ordered_bytes("abc", StringType()) == b"abc" + bytes(5)
    # a character that does not fit whole is left out, as Java's CharsetEncoder does
    assert ordered_bytes("abcdefgé", StringType()) == b"abcdefg\x00"
    assert ordered_bytes("abcdefghij", StringType(), 4) == b"abcd"
    assert ordered_bytes(b"\x01\x02", BinaryType()) == b"\x01\x02" + bytes(6)
    # timestamptz as epoch seconds (Spark's cast to long), timestamp as micros, date as days
    ts = dt.datetime(2024, 1, 1, 0, 0, 1, 500_000, tzinfo=dt.UTC)
    assert ordered_bytes(ts, TimestamptzType()) == ordered_bytes(int(ts.timestamp()) // 1, LongType())
    assert ordered_bytes(-1, TimestamptzType()) == ordered_bytes(-1, LongType())  # floor(-1 us) = -1 s
    assert ordered_bytes(1_500_000, TimestampType()) == ordered_bytes(1_500_000, LongType())
    assert ordered_bytes(dt.date(1970, 1, 3), DateType()) == ordered_bytes(2, LongType())


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
def test_longs_keep_their_order(a: int, b: int) -> None:
    ea, eb = ordered_bytes(a, LongType()), ordered_bytes(b, LongType())
    assert (a < b) == (ea < eb) and (a == b) == (ea == eb)


@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_doubles_keep_their_order(a: float, b: float) -> None:
    ea, eb = ordered_bytes(a, DoubleType()), ordered_bytes(b, DoubleType())
    if a < b:
        assert ea < eb
    elif a > b:
        assert ea > eb


@given(st.text(max_size=12), st.text(max_size=12))
def test_strings_keep_their_order_up_to_the_cut(a: str, b: str) -> None:
    ea, eb = ordered_bytes(a, StringType(), 8), ordered_bytes(b, StringType(), 8)
    if a.encode() < b.encode():
        assert ea <= eb


_SCHEMA = Schema(
    NestedField(1, "i", IntegerType(), False),
    NestedField(2, "l", LongType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "s", StringType()),
    NestedField(6, "b", BinaryType()),
    NestedField(7, "day", DateType()),
    NestedField(8, "ts", TimestamptzType()),
    NestedField(9, "ntz", TimestampType()),
    NestedField(10, "flag", BooleanType()),
)

_ROW = st.fixed_dictionaries(
    {
        "i": st.integers(-(2**31), 2**31 - 1),
        "l": st.none() | st.integers(-(2**63), 2**63 - 1),
        "d": st.none() | st.floats(allow_nan=True, allow_infinity=True),
        "f": st.none() | st.floats(width=32, allow_nan=False),
        "s": st.none() | st.text(max_size=10),
        "b": st.none() | st.binary(max_size=10),
        "day": st.none() | st.dates(),
        "ts": st.none()
        | st.datetimes(
            min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
        ),
        "ntz": st.none() | st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)),
        "flag": st.none() | st.booleans(),
    }
)


@given(
    st.lists(_ROW, min_size=1, max_size=30),
    st.lists(st.sampled_from([f.name for f in _SCHEMA.fields]), min_size=1, max_size=4, unique=True),
    st.integers(1, 12),
    st.integers(1, 40),
)
def test_vectorized_z_values_match_the_reference(
    data: list[dict[str, object]], columns: list[str], var_length: int, max_output: int
) -> None:
    spec = zorder_spec(
        _SCHEMA, PartitionSpec(), columns, var_length_contribution=var_length, max_output_size=max_output
    )
    table = pa.Table.from_pylist(data, schema=schema_to_arrow(_SCHEMA))
    got = zorder_values(table, _SCHEMA, spec).to_pylist()
    types = [_SCHEMA.find_type(fid) for fid in spec.field_ids]
    for row, z in zip(data, got, strict=True):
        values = [row[n] for n in spec.names]
        assert z == zorder_value(values, types, spec), (row, columns)


def test_nan_is_javas_canonical_nan() -> None:
    spec = ZOrderSpec((3,), ("d",))
    table = pa.table({"d": pa.array([float("nan")], pa.float64())})
    schema = Schema(NestedField(3, "d", DoubleType()))
    assert zorder_values(table, schema, spec).to_pylist() == [ordered_bytes(float("nan"), DoubleType())]
    assert ordered_bytes(float("nan"), DoubleType()) > ordered_bytes(float("inf"), DoubleType())


def test_columns_are_checked() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), False),
        NestedField(2, "part", StringType()),
        NestedField(3, "amount", DecimalType(10, 2)),
    )
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "part"))
    assert zorder_spec(schema, spec, ["id"]).field_ids == (1,)
    with pytest.raises(SchemaError, match="no such column"):
        zorder_spec(schema, spec, ["nope"])
    with pytest.raises(ValidationError, match="partitioned by it"):
        zorder_spec(schema, spec, ["id", "part"])
    with pytest.raises(ValidationError, match="byte encoding"):
        zorder_spec(schema, spec, ["amount"])
    with pytest.raises(ValidationError, match="without columns"):
        zorder_spec(schema, spec, [])
    with pytest.raises(ValidationError, match="twice"):
        zorder_spec(schema, spec, ["id", "id"])
    clash = Schema(NestedField(1, "ICEZVALUE", LongType()))
    with pytest.raises(ValidationError, match="ICEZVALUE"):
        zorder_spec(clash, PartitionSpec(), ["ICEZVALUE"])


def test_every_nan_has_javas_canonical_z_bytes() -> None:
    """Java's ``doubleToLongBits`` folds every NaN payload into one value; both encoders must too."""
    payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    spec = zorder_spec(_SCHEMA, PartitionSpec(), ["d"])
    table = pa.Table.from_pylist(
        [{"i": 0, "d": payload_nan}, {"i": 0, "d": math.nan}], schema=schema_to_arrow(_SCHEMA)
    )
    vectorized = zorder_values(table, _SCHEMA, spec).to_pylist()
    scalar = [zorder_value([v], [DoubleType()], spec) for v in (payload_nan, math.nan)]
    assert vectorized[0] == vectorized[1] == scalar[0] == scalar[1]
