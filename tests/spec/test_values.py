"""Single values: binary and JSON serialization, bound truncation, Python conversion."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Context, Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import SchemaError, ValidationError
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
    UUIDType,
)
from icefloe.spec.values import (
    bound_decoder,
    from_bytes,
    from_json_value,
    from_python,
    to_bytes,
    to_json_value,
    to_python,
    truncate_lower_bound,
    truncate_upper_bound,
)

MIN_DAY = dt.date(1, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal()
MAX_DAY = dt.date(9999, 12, 31).toordinal() - dt.date(1970, 1, 1).toordinal()
MICROS_PER_DAY = 86_400_000_000


def values_of(t: IcebergType) -> st.SearchStrategy[Any]:
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegerType):
        return st.integers(IntegerType.min, IntegerType.max)
    if isinstance(t, LongType):
        return st.integers(LongType.min, LongType.max)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
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
        # LongType.min is numpy's NaT; to_python refuses it (tested below).
        return st.integers(LongType.min + 1, LongType.max)
    if isinstance(t, StringType):
        return st.text()
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, BinaryType):
        return st.binary()
    raise AssertionError(t)


PRIMITIVES: list[IcebergType] = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(9, 2),
    DecimalType(38, 10),
    DecimalType(1, 0),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    TimestampNsType(),
    TimestamptzNsType(),
    StringType(),
    UUIDType(),
    FixedType(3),
    BinaryType(),
]

typed_values = st.sampled_from(PRIMITIVES).flatmap(lambda t: st.tuples(st.just(t), values_of(t)))


# ------------------------------------------------------------------ binary


@given(typed_values)
def test_bytes_round_trip(tv: tuple[IcebergType, Any]) -> None:
    t, v = tv
    assert from_bytes(t, to_bytes(t, v)) == v


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (BooleanType(), True, "01"),
        (BooleanType(), False, "00"),
        (IntegerType(), 34, "22000000"),
        (DateType(), 17486, "4e440000"),
        (LongType(), 34, "2200000000000000"),
        (TimestampType(), 1, "0100000000000000"),
        (FloatType(), 1.0, "0000803f"),
        (DoubleType(), 1.0, "000000000000f03f"),
        (StringType(), "iceberg", "69636562657267"),
        (UUIDType(), uuid.UUID("f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb"), "f79c3e09677c4d4cb5e9ec2cc3d1a2cb"),
        (BinaryType(), b"\x00\x01\x02\x03", "00010203"),
        (DecimalType(4, 2), Decimal("14.20"), "058c"),
        (DecimalType(9, 0), Decimal("0"), "00"),
        (DecimalType(9, 0), Decimal("-1"), "ff"),
        (DecimalType(9, 0), Decimal("127"), "7f"),
        (DecimalType(9, 0), Decimal("128"), "0080"),
        (DecimalType(9, 0), Decimal("-128"), "80"),
        (DecimalType(9, 0), Decimal("-129"), "ff7f"),
        (DecimalType(38, 0), Decimal(10**37), (10**37).to_bytes(16, "big").hex()),
        (DecimalType(38, 10), Decimal("-1234567890123456789012345678.0123456789"), None),
    ],
)
def test_binary_vectors(t: IcebergType, value: Any, expected: str | None) -> None:
    if expected is not None:
        assert to_bytes(t, value).hex() == expected
    assert from_bytes(t, to_bytes(t, value)) == value
    assert str(from_bytes(t, to_bytes(t, value))) == str(value)


def test_promoted_bounds_read_back() -> None:
    # Bounds written before int -> long / float -> double promotion keep their 4-byte form.
    assert from_bytes(LongType(), to_bytes(IntegerType(), -5)) == -5
    assert from_bytes(DoubleType(), to_bytes(FloatType(), 1.5)) == 1.5


@given(
    st.sampled_from([IntegerType(), LongType(), DoubleType(), StringType()]).flatmap(
        lambda t: st.tuples(st.just(t), values_of(t))
    )
)
def test_bytes_agree_with_pyiceberg(tv: tuple[IcebergType, Any]) -> None:
    from pyiceberg import conversions, types

    t, v = tv
    theirs = {
        IntegerType: types.IntegerType(),
        LongType: types.LongType(),
        DoubleType: types.DoubleType(),
        StringType: types.StringType(),
    }[type(t)]
    assert to_bytes(t, v) == conversions.to_bytes(theirs, v)


@given(
    st.integers(1, 38)
    .flatmap(lambda p: st.tuples(st.just(p), st.integers(0, p)))
    .flatmap(lambda ps: st.tuples(st.just(DecimalType(*ps)), values_of(DecimalType(*ps))))
)
def test_decimal_bytes_agree_with_pyiceberg(tv: tuple[DecimalType, Decimal]) -> None:
    from pyiceberg import conversions, types

    t, v = tv
    assert to_bytes(t, v) == conversions.to_bytes(types.DecimalType(t.precision, t.scale), v)


def test_bad_bytes() -> None:
    with pytest.raises(ValidationError):
        from_bytes(IntegerType(), b"\x00")
    with pytest.raises(ValidationError):
        from_bytes(BooleanType(), b"")
    with pytest.raises(ValidationError):
        to_bytes(IntegerType(), 2**40)
    with pytest.raises(SchemaError):
        to_bytes(StructType(), ())


# ------------------------------------------------------------------ truncation


@given(st.text(), st.integers(1, 8))
def test_string_truncation_brackets_value(v: str, width: int) -> None:
    lower = truncate_lower_bound(StringType(), v, width)
    assert len(lower) <= width and lower <= v
    upper = truncate_upper_bound(StringType(), v, width)
    if upper is not None:
        assert len(upper) <= width
        assert upper.encode("utf-8") >= v.encode("utf-8") or v.startswith(upper)
        assert upper >= v[:width]
        if len(v) > width:
            assert upper > v


@given(st.binary(), st.integers(1, 8))
def test_binary_truncation_brackets_value(v: bytes, width: int) -> None:
    lower = truncate_lower_bound(BinaryType(), v, width)
    assert len(lower) <= width and lower <= v
    upper = truncate_upper_bound(BinaryType(), v, width)
    if upper is not None:
        assert len(upper) <= width and upper >= v[:width]
        if len(v) > width:
            assert upper > v


def test_truncate_upper_vectors() -> None:
    s = StringType()
    assert truncate_upper_bound(s, "abcd", 2) == "ac"
    assert truncate_upper_bound(s, "ab", 2) == "ab"
    assert truncate_upper_bound(s, "a\U0010ffffz", 2) == "b"
    assert truncate_upper_bound(s, "\U0010ffff\U0010ffffz", 2) is None
    # the next code point after U+D7FF skips the surrogate block
    assert truncate_upper_bound(s, "\ud7ffz", 1) == "\ue000"
    b = BinaryType()
    assert truncate_upper_bound(b, b"\x01\xff\xff", 2) == b"\x02"
    assert truncate_upper_bound(b, b"\xff\xff\x00", 2) is None
    assert truncate_lower_bound(b, b"\x01\x02\x03", 2) == b"\x01\x02"
    with pytest.raises(ValidationError):
        truncate_upper_bound(s, "abc", 0)


# ------------------------------------------------------------------ JSON


@given(typed_values)
def test_json_round_trip(tv: tuple[IcebergType, Any]) -> None:
    t, v = tv
    assert from_json_value(t, to_json_value(t, v)) == v


@pytest.mark.parametrize(
    ("t", "value", "text"),
    [
        (BooleanType(), True, True),
        (IntegerType(), 34, 34),
        (DoubleType(), 1.5, 1.5),
        (DecimalType(4, 2), Decimal("14.20"), "14.20"),
        (DateType(), 17486, "2017-11-16"),
        (TimeType(), 81068123456, "22:31:08.123456"),
        (TimestampType(), 1510871468123456, "2017-11-16T22:31:08.123456"),
        (TimestamptzType(), 1510871468123456, "2017-11-16T22:31:08.123456+00:00"),
        (TimestampNsType(), 1510871468123456789, "2017-11-16T22:31:08.123456789"),
        (TimestamptzNsType(), 1510871468123456789, "2017-11-16T22:31:08.123456789+00:00"),
        (StringType(), "iceberg", "iceberg"),
        (
            UUIDType(),
            uuid.UUID("f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb"),
            "f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb",
        ),
        (FixedType(4), b"\x00\x01\x02\xff", "000102FF"),
        (BinaryType(), b"\x00\x01\x02\xff", "000102FF"),
    ],
)
def test_json_spec_examples(t: IcebergType, value: Any, text: Any) -> None:
    assert to_json_value(t, value) == text
    assert from_json_value(t, text) == value


def test_json_reads_other_spellings() -> None:
    assert from_json_value(BinaryType(), "000102ff") == b"\x00\x01\x02\xff"
    assert from_json_value(TimestamptzType(), "2017-11-16T22:31:08Z") == 1510871468000000
    assert from_json_value(TimestamptzType(), "2017-11-17T00:31:08+02:00") == 1510871468000000
    assert from_json_value(TimestampType(), "2017-11-16T22:31:08.1") == 1510871468100000
    assert from_json_value(TimeType(), "22:31") == 81060000000
    assert from_json_value(DecimalType(5, 2), "1E+2") == Decimal("100.00")


@pytest.mark.parametrize(
    ("t", "bad"),
    [
        (TimestampType(), "2017-11-16T22:31:08+00:00"),
        (TimestamptzType(), "2017-11-16T22:31:08"),
        (DateType(), "2017-13-01"),
        (IntegerType(), "1"),
        (IntegerType(), True),
        (IntegerType(), 2**31),
        (DecimalType(4, 2), "1.234"),
        (DecimalType(4, 2), 1.5),
        (FixedType(2), "00"),
        (UUIDType(), "not-a-uuid"),
        (BinaryType(), "xyz"),
    ],
)
def test_json_rejects(t: IcebergType, bad: Any) -> None:
    with pytest.raises(ValidationError):
        from_json_value(t, bad)


def test_json_nested() -> None:
    t = StructType(
        NestedField(1, "a", IntegerType()),
        NestedField(2, "l", ListType(3, StringType())),
        NestedField(4, "m", MapType(5, StringType(), 6, DateType())),
    )
    value = (1, ["x", "y"], {"k": 17486})
    obj = to_json_value(t, value)
    assert obj == {"1": 1, "2": ["x", "y"], "4": {"keys": ["k"], "values": ["2017-11-16"]}}
    assert from_json_value(t, obj) == value


# ------------------------------------------------------------------ Python objects


def test_from_python_temporal() -> None:
    assert from_python(DateType(), dt.date(2017, 11, 16)) == 17486
    assert from_python(DateType(), "2017-11-16") == 17486
    assert from_python(DateType(), np.datetime64("2017-11-16")) == 17486
    assert from_python(TimeType(), dt.time(22, 31, 8, 123456)) == 81068123456
    naive = dt.datetime(2017, 11, 16, 22, 31, 8, 123456)
    assert from_python(TimestampType(), naive) == 1510871468123456
    assert from_python(TimestampType(), "2017-11-16 22:31:08.123456") == 1510871468123456
    aware = dt.datetime(2017, 11, 17, 0, 31, 8, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert from_python(TimestamptzType(), aware) == 1510871468123456
    assert from_python(TimestampNsType(), naive) == 1510871468123456000
    assert (
        from_python(TimestampNsType(), np.datetime64("2017-11-16T22:31:08.123456789")) == 1510871468123456789
    )
    assert from_python(TimestampType(), np.datetime64("2017-11-16T22:31:08.123456")) == 1510871468123456


def test_from_python_pandas_timestamp_keeps_nanos() -> None:
    import pandas as pd

    ts = pd.Timestamp("2017-11-16T22:31:08.123456789")
    assert from_python(TimestampNsType(), ts) == 1510871468123456789
    with pytest.raises(ValidationError):
        from_python(TimestampType(), ts)


@pytest.mark.parametrize(
    ("t", "bad"),
    [
        (TimestamptzType(), dt.datetime(2020, 1, 1)),
        (TimestampType(), dt.datetime(2020, 1, 1, tzinfo=dt.UTC)),
        (DateType(), dt.datetime(2020, 1, 1)),
        (TimestampType(), dt.date(2020, 1, 1)),
        (TimestampType(), np.datetime64("2017-11-16T22:31:08.123456789")),
        (IntegerType(), 1.0),
        (IntegerType(), True),
        (LongType(), 2**63),
        (BooleanType(), 1),
        (StringType(), b"x"),
        (FixedType(2), b"abc"),
        (DecimalType(4, 2), Decimal("1.234")),
        (DecimalType(4, 2), Decimal("123.4")),
        (DecimalType(4, 2), "NaN"),
        (DecimalType(4, 2), object()),
        (UUIDType(), 5),
        (DateType(), np.datetime64("NaT")),
        (DateType(), np.datetime64("2017-11-16T10:00")),
    ],
)
def test_from_python_rejects(t: IcebergType, bad: Any) -> None:
    with pytest.raises(ValidationError):
        from_python(t, bad)


def test_from_python_decimal_forms() -> None:
    t = DecimalType(6, 2)
    assert from_python(t, Decimal("14.2")) == Decimal("14.20")
    assert str(from_python(t, "14.2")) == "14.20"
    assert from_python(t, 14) == Decimal("14.00")
    assert from_python(t, 0.1) == Decimal("0.10")
    assert from_python(t, np.float64(0.25)) == Decimal("0.25")


def test_from_python_misc() -> None:
    u = uuid.uuid4()
    assert from_python(UUIDType(), str(u)) == u
    assert from_python(UUIDType(), u.bytes) == u
    assert from_python(IntegerType(), np.int32(7)) == 7
    assert from_python(DoubleType(), np.float32(0.5)) == 0.5
    assert from_python(BooleanType(), np.bool_(True)) is True
    assert from_python(BinaryType(), bytearray(b"ab")) == b"ab"
    assert from_python(StringType(), None) is None
    with pytest.raises(SchemaError):
        from_python(ListType(1, IntegerType()), [1])


@given(typed_values)
def test_python_round_trip(tv: tuple[IcebergType, Any]) -> None:
    t, v = tv
    assert from_python(t, to_python(t, v)) == v


def test_to_python_types() -> None:
    assert to_python(DateType(), 17486) == dt.date(2017, 11, 16)
    assert to_python(TimestamptzType(), 0) == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert to_python(TimestampType(), -1) == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert to_python(TimeType(), 1) == dt.time(0, 0, 0, 1)
    assert to_python(TimestampNsType(), 5) == np.datetime64(5, "ns")


def test_smallest_ns_timestamp_is_not_a_datetime64() -> None:
    from icefloe.errors import ValidationError

    with pytest.raises(ValidationError, match="datetime64"):
        to_python(TimestampNsType(), LongType.min)


_DECODER_TYPES = [IntegerType(), DateType(), LongType(), TimeType(), TimestampType(), TimestamptzNsType()]


@given(data=st.data(), t=st.sampled_from([*_DECODER_TYPES, StringType(), DecimalType(9, 2), DoubleType()]))
def test_bound_decoder_agrees_with_from_bytes(data: st.DataObject, t: IcebergType) -> None:
    value = data.draw(values_of(t))
    raw = to_bytes(t, value)
    assert repr(bound_decoder(t)(t, raw)) == repr(from_bytes(t, raw))


def test_bound_decoder_keeps_promotion_and_typed_errors() -> None:
    assert bound_decoder(LongType())(LongType(), to_bytes(IntegerType(), -5)) == -5  # int bound of a long
    for t in _DECODER_TYPES:
        with pytest.raises(ValidationError):
            bound_decoder(t)(t, b"\x01\x02\x03")
