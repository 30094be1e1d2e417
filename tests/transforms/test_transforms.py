"""Per-value transforms: the spec's test vectors, Java's partition-path text, parsing, ordering."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import PartitionSpecError, ValidationError
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
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TransformKind,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    bucket_hash,
    parse_transform,
)
from icefloe.transforms._decimal import from_unscaled

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
SPEC_UUID = "f79c3e09-677c-4bbd-a479-3f349cb785e7"


def micros(ts: dt.datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.UTC)
    delta = ts - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def days(d: dt.date) -> int:
    return (d - dt.date(1970, 1, 1)).days


# --------------------------------------------------------------------------- spec vectors


@pytest.mark.parametrize(
    ("source_type", "value", "expected"),
    [
        # Appendix B of the spec: 32-bit hash requirements.
        (IntegerType(), 34, 2017239379),
        (LongType(), 34, 2017239379),
        (DecimalType(9, 2), Decimal("14.20"), -500754589),
        (DecimalType(38, 2), Decimal("14.20"), -500754589),
        (DateType(), days(dt.date(2017, 11, 16)), -653330422),
        (TimeType(), (22 * 3600 + 31 * 60 + 8) * 1_000_000, -662762989),
        (TimestampType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8)), -2047944441),
        (
            TimestamptzType(),
            micros(dt.datetime(2017, 11, 16, 14, 31, 8, tzinfo=dt.timezone(dt.timedelta(hours=-8)))),
            -2047944441,
        ),
        (TimestampType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8, 1)), -1207196810),
        (TimestampNsType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8)) * 1000, -2047944441),
        (TimestamptzNsType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8, 1)) * 1000 + 1, -1207196810),
        (StringType(), "iceberg", 1210000089),
        # ICEBERG-NOTES.md quotes this uuid as f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb; the spec's
        # vector is this one.
        (UUIDType(), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
        (FixedType(4), b"\x00\x01\x02\x03", -188683207),
        (BinaryType(), b"\x00\x01\x02\x03", -188683207),
    ],
)
def test_bucket_hash_spec_vectors(source_type: IcebergType, value: Any, expected: int) -> None:
    assert bucket_hash(source_type, value) == expected


def test_bucket_values() -> None:
    b = BucketTransform(100)
    assert b.apply(IntegerType(), 34) == 79  # (2017239379 & MAX) % 100
    assert b.apply(StringType(), "iceberg") == 1210000089 % 100
    assert BucketTransform(16).apply(DateType(), 17486) == (-653330422 & 0x7FFFFFFF) % 16
    assert b.apply(IntegerType(), None) is None
    # int and long with equal values share a bucket, so int -> long promotion keeps buckets.
    assert b.apply(IntegerType(), -7) == b.apply(LongType(), -7)


def test_bucket_decimal_uses_the_type_scale() -> None:
    # 14.2 in a decimal(9, 2) column is unscaled 1420, whatever exponent the Decimal carries.
    assert bucket_hash(DecimalType(9, 2), Decimal("14.2")) == -500754589
    with pytest.raises(ValueError, match="digits after the point"):
        bucket_hash(DecimalType(9, 2), Decimal("14.205"))


@pytest.mark.parametrize(
    ("source_type", "width", "value", "expected"),
    [
        # The spec's truncate examples.
        (IntegerType(), 10, 1, 0),
        (IntegerType(), 10, -1, -10),
        (LongType(), 10, 1, 0),
        (LongType(), 10, -1, -10),
        (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
        (StringType(), 3, "iceberg", "ice"),
        (BinaryType(), 3, b"\x01\x02\x03\x04", b"\x01\x02\x03"),
        # More: floors, not rounds towards zero.
        (IntegerType(), 10, 0, 0),
        (IntegerType(), 10, 9, 0),
        (IntegerType(), 10, 10, 10),
        (IntegerType(), 10, -10, -10),
        (IntegerType(), 10, -11, -20),
        (DecimalType(9, 2), 10, Decimal("-0.05"), Decimal("-0.10")),
        (DecimalType(38, 0), 7, Decimal("99999999999999999999999999999999999999"), None),
        (StringType(), 2, "日本語", "日本"),
        (StringType(), 2, "a\U0001f600b", "a\U0001f600"),  # code points, not UTF-16 units
        (StringType(), 10, "short", "short"),
        (BinaryType(), 10, b"ab", b"ab"),
    ],
)
def test_truncate(source_type: IcebergType, width: int, value: Any, expected: Any) -> None:
    result = TruncateTransform(width).apply(source_type, value)
    if expected is None:  # compare to exact integer arithmetic
        u = int(value)
        expected = Decimal(u - u % width)
    assert result == expected
    if isinstance(source_type, DecimalType):
        assert result.as_tuple().exponent == -source_type.scale


def test_truncate_int_wraps_like_java() -> None:
    # -2**31 floors to -2**31 - 2, which Java's int arithmetic wraps around.
    assert TruncateTransform(10).apply(IntegerType(), -(2**31)) == 2**31 - 2
    assert TruncateTransform(10).apply(LongType(), -(2**31)) == -(2**31) - 2


@pytest.mark.parametrize(
    ("transform", "source_type", "value", "expected", "human"),
    [
        (YearTransform(), DateType(), days(dt.date(2017, 11, 16)), 47, "2017"),
        (MonthTransform(), DateType(), days(dt.date(2017, 11, 16)), 47 * 12 + 10, "2017-11"),
        (DayTransform(), DateType(), days(dt.date(2017, 11, 16)), 17486, "2017-11-16"),
        (YearTransform(), TimestampType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8)), 47, "2017"),
        (MonthTransform(), TimestamptzType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8)), 574, "2017-11"),
        (DayTransform(), TimestampType(), micros(dt.datetime(2017, 11, 16, 22, 31, 8)), 17486, "2017-11-16"),
        (
            HourTransform(),
            TimestampType(),
            micros(dt.datetime(2017, 11, 16, 22, 31, 8)),
            419686,
            "2017-11-16-22",
        ),
        # Before 1970: floor, never truncate towards zero.
        (YearTransform(), DateType(), -1, -1, "1969"),
        (MonthTransform(), DateType(), -1, -1, "1969-12"),
        (DayTransform(), TimestampType(), -1, -1, "1969-12-31"),
        (HourTransform(), TimestampType(), -1, -1, "1969-12-31-23"),
        (YearTransform(), TimestampType(), -1, -1, "1969"),
        (MonthTransform(), TimestampType(), micros(dt.datetime(1969, 1, 31, 23)), -12, "1969-01"),
        (
            DayTransform(),
            TimestampType(),
            micros(dt.datetime(1900, 3, 1, 0, 0, 0, 1)),
            days(dt.date(1900, 3, 1)),
            "1900-03-01",
        ),
        (YearTransform(), DateType(), days(dt.date(1, 1, 1)), 1 - 1970, "0001"),
        # Nanosecond timestamps are floored to microseconds first.
        (DayTransform(), TimestampNsType(), -1, -1, "1969-12-31"),
        (HourTransform(), TimestamptzNsType(), 3_600_000_000_000, 1, "1970-01-01-01"),
    ],
)
def test_temporal(
    transform: Transform, source_type: IcebergType, value: int, expected: int, human: str
) -> None:
    assert transform.apply(source_type, value) == expected
    assert transform.to_human_string(source_type, expected) == human


@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
def test_temporal_matches_datetime(ts: dt.datetime) -> None:
    us = micros(ts)
    assert YearTransform().apply(TimestampType(), us) == ts.year - 1970
    assert MonthTransform().apply(TimestampType(), us) == (ts.year - 1970) * 12 + ts.month - 1
    assert DayTransform().apply(TimestampType(), us) == days(ts.date())
    assert YearTransform().apply(DateType(), days(ts.date())) == ts.year - 1970
    assert DayTransform().to_human_string(TimestampType(), days(ts.date())) == ts.date().isoformat()
    hour = HourTransform().apply(TimestampType(), us)
    expected = f"{ts.year:04d}-{ts.month:02d}-{ts.day:02d}-{ts.hour:02d}"
    assert HourTransform().to_human_string(TimestampType(), hour) == expected


# --------------------------------------------------------------------------- human strings


@pytest.mark.parametrize(
    ("source_type", "value", "expected"),
    [
        (DateType(), 19753, "2024-01-31"),
        (TimeType(), 10 * 3_600_000_000, "10:00"),
        (TimeType(), 10 * 3_600_000_000 + 5_000_000, "10:00:05"),
        (TimeType(), 10 * 3_600_000_000 + 5_120_000, "10:00:05.120"),
        (TimeType(), 10 * 3_600_000_000 + 5_000_001, "10:00:05.000001"),
        (TimestampType(), micros(dt.datetime(2024, 1, 31, 10, 15, 30)), "2024-01-31T10:15:30"),
        (TimestampType(), micros(dt.datetime(2024, 1, 31)), "2024-01-31T00:00:00"),
        (TimestampType(), micros(dt.datetime(2024, 1, 31, 10, 15, 30, 500000)), "2024-01-31T10:15:30.5"),
        (
            TimestamptzType(),
            micros(dt.datetime(2024, 1, 31, 10, 15, 30, 123456)),
            "2024-01-31T10:15:30.123456+00:00",
        ),
        (TimestampType(), -1, "1969-12-31T23:59:59.999999"),
        (TimestampNsType(), 1, "1970-01-01T00:00:00.000000001"),
        (TimestamptzNsType(), 0, "1970-01-01T00:00:00+00:00"),
        (BinaryType(), b"\x00\x01\x02\x03", "AAECAw=="),
        (FixedType(2), b"\xff\xfe", "//4="),
        (StringType(), "a b/c", "a b/c"),
        (BooleanType(), True, "true"),
        (IntegerType(), -5, "-5"),
        (LongType(), 2**40, str(2**40)),
        (DecimalType(10, 2), Decimal("1.5"), "1.50"),
        (DecimalType(10, 2), Decimal("-0.01"), "-0.01"),
        (DecimalType(20, 10), Decimal("0"), "0E-10"),  # like BigDecimal.toString
        (DoubleType(), 1.0, "1.0"),
        (DoubleType(), 1e10, "1.0E10"),
        (DoubleType(), 0.0001, "1.0E-4"),
        (DoubleType(), 1234567.5, "1234567.5"),
        (DoubleType(), -0.0, "-0.0"),
        (DoubleType(), float("nan"), "NaN"),
        (DoubleType(), float("-inf"), "-Infinity"),
        (FloatType(), 0.1, "0.1"),
        (FloatType(), 3.4028234663852886e38, "3.4028235E38"),
        (UUIDType(), uuid.UUID(SPEC_UUID), SPEC_UUID),
        (StringType(), None, "null"),
    ],
)
def test_identity_human_string(source_type: IcebergType, value: Any, expected: str) -> None:
    assert IdentityTransform().to_human_string(source_type, value) == expected


def test_other_human_strings() -> None:
    assert BucketTransform(16).to_human_string(StringType(), 3) == "3"
    assert TruncateTransform(4).to_human_string(BinaryType(), b"\x00\x01") == "AAE="
    assert VoidTransform().to_human_string(LongType(), None) == "null"
    assert DayTransform().to_human_string(TimestampType(), None) == "null"
    assert MonthTransform().to_human_string(DateType(), -13) == "1968-12"


# --------------------------------------------------------------------------- types, parsing, equality


def test_can_transform_and_result_types() -> None:
    for t in (BooleanType(), FloatType(), DoubleType()):
        assert not BucketTransform(4).can_transform(t)
    for t in (
        IntegerType(),
        LongType(),
        DecimalType(9, 2),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzNsType(),
        StringType(),
        UUIDType(),
        FixedType(3),
        BinaryType(),
    ):
        assert BucketTransform(4).can_transform(t)
        assert BucketTransform(4).result_type(t) == IntegerType()
    assert not TruncateTransform(4).can_transform(FixedType(4))
    assert not TruncateTransform(4).can_transform(DoubleType())
    assert TruncateTransform(4).result_type(DecimalType(9, 2)) == DecimalType(9, 2)
    assert not DayTransform().can_transform(StringType())
    assert not HourTransform().can_transform(DateType())
    assert DayTransform().result_type(TimestampType()) == DateType()
    assert YearTransform().result_type(DateType()) == IntegerType()
    assert MonthTransform().result_type(TimestamptzType()) == IntegerType()
    assert HourTransform().result_type(TimestampType()) == IntegerType()
    assert IdentityTransform().result_type(UUIDType()) == UUIDType()
    assert not IdentityTransform().can_transform(StructType())
    assert not IdentityTransform().can_transform(ListType(1, IntegerType()))
    assert VoidTransform().result_type(StringType()) == StringType()
    assert VoidTransform().apply(StringType(), "x") is None
    with pytest.raises(PartitionSpecError, match="cannot be applied"):
        DayTransform().apply(StringType(), "2024-01-01")
    with pytest.raises(PartitionSpecError, match="not boolean, float or double"):
        BucketTransform(4).result_type(DoubleType())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("identity", IdentityTransform()),
        ("bucket[16]", BucketTransform(16)),
        ("truncate[4]", TruncateTransform(4)),
        ("year", YearTransform()),
        ("month", MonthTransform()),
        ("day", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
        ("BUCKET[ 8 ]", BucketTransform(8)),
        (" Day ", DayTransform()),
    ],
)
def test_parse_transform(text: str, expected: Transform) -> None:
    parsed = parse_transform(text)
    assert parsed == expected
    assert hash(parsed) == hash(expected)
    assert parse_transform(str(parsed)) == parsed


@pytest.mark.parametrize("text", ["bucket", "bucket[0]", "truncate[-1]", "days", "zorder", "bucket[x]", ""])
def test_parse_transform_rejects(text: str) -> None:
    with pytest.raises(PartitionSpecError):
        parse_transform(text)


def test_equality_and_kind() -> None:
    assert BucketTransform(16) == BucketTransform(16)
    assert BucketTransform(16) != BucketTransform(8)
    assert BucketTransform(16) != TruncateTransform(16)
    assert DayTransform() != HourTransform()
    assert len({BucketTransform(16), BucketTransform(16), TruncateTransform(16), DayTransform()}) == 3
    assert BucketTransform(16).kind is TransformKind.BUCKET
    assert BucketTransform(16).num_buckets == 16
    assert TruncateTransform(5).width == 5
    assert IdentityTransform().is_identity and VoidTransform().is_void
    assert DayTransform().is_temporal and not BucketTransform(2).is_temporal
    assert DayTransform().dedup_name == HourTransform().dedup_name == "time"
    assert BucketTransform(2).dedup_name == "bucket[2]"
    with pytest.raises(PartitionSpecError, match="number of buckets"):
        BucketTransform(0)
    with pytest.raises(PartitionSpecError, match="truncate width"):
        TruncateTransform(-3)


def test_order() -> None:
    order_preserving = [
        IdentityTransform(),
        TruncateTransform(4),
        YearTransform(),
        MonthTransform(),
        DayTransform(),
        HourTransform(),
    ]
    assert all(t.preserves_order for t in order_preserving)
    assert not BucketTransform(4).preserves_order
    assert not VoidTransform().preserves_order
    assert IdentityTransform().satisfies_order_of(DayTransform())
    assert IdentityTransform().satisfies_order_of(TruncateTransform(3))
    assert not IdentityTransform().satisfies_order_of(BucketTransform(3))
    assert HourTransform().satisfies_order_of(DayTransform())
    assert HourTransform().satisfies_order_of(YearTransform())
    assert DayTransform().satisfies_order_of(MonthTransform())
    assert not DayTransform().satisfies_order_of(HourTransform())
    assert not YearTransform().satisfies_order_of(MonthTransform())
    assert not DayTransform().satisfies_order_of(IdentityTransform())
    assert BucketTransform(4).satisfies_order_of(BucketTransform(4))
    assert not BucketTransform(4).satisfies_order_of(BucketTransform(8))
    assert TruncateTransform(4).satisfies_order_of(TruncateTransform(4))


@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40), st.integers(1, 1000))
def test_monotone_transforms(a: int, b: int, width: int) -> None:
    lo, hi = min(a, b), max(a, b)
    for t, typ in [
        (TruncateTransform(width), LongType()),
        (DayTransform(), TimestampType()),
        (HourTransform(), TimestampType()),
        (MonthTransform(), TimestampType()),
        (YearTransform(), TimestampType()),
        (MonthTransform(), DateType()),
    ]:
        assert t.apply(typ, lo) <= t.apply(typ, hi)
    assert TruncateTransform(width).apply(LongType(), lo) <= lo


@given(st.text(max_size=20), st.integers(1, 10))
def test_truncate_string_is_a_prefix(s: str, width: int) -> None:
    out = TruncateTransform(width).apply(StringType(), s)
    assert s.startswith(out)
    assert len(out) == min(len(s), width)


# --------------------------------------------------------------------------- cross-check: PyIceberg


_PYICEBERG_CASES = [
    # Away from the minimum, where we wrap like Java and PyIceberg does not.
    ("int", IntegerType(), st.integers(-(2**31) + 1000, 2**31 - 1)),
    ("long", LongType(), st.integers(-(2**63) + 1000, 2**63 - 1)),
    # Within datetime's range, which PyIceberg needs.
    ("date", DateType(), st.integers(-719_162 + 1, 2_932_896 - 1)),
    ("timestamp", TimestampType(), st.integers(-62_135_510_400_000_000, 253_402_214_400_000_000)),
    ("string", StringType(), st.text(max_size=10)),
    ("binary", BinaryType(), st.binary(max_size=10)),
    ("uuid", UUIDType(), st.uuids()),
    # Decimals at the column's scale, as icefloe always holds them (PyIceberg hashes whatever
    # exponent the Decimal carries).
    (
        "decimal",
        DecimalType(12, 3),
        st.integers(-(10**12) + 1, 10**12 - 1).map(lambda n: from_unscaled(n, 3)),
    ),
]


@pytest.mark.parametrize(
    ("name", "source_type", "values"), _PYICEBERG_CASES, ids=[c[0] for c in _PYICEBERG_CASES]
)
@given(data=st.data())
def test_matches_pyiceberg(name: str, source_type: IcebergType, values: Any, data: st.DataObject) -> None:
    """An independent implementation agrees on bucket and truncate (and temporal) results."""
    from pyiceberg import transforms as pt
    from pyiceberg import types as ptypes

    py_type = {
        "int": ptypes.IntegerType(),
        "long": ptypes.LongType(),
        "date": ptypes.DateType(),
        "timestamp": ptypes.TimestampType(),
        "string": ptypes.StringType(),
        "binary": ptypes.BinaryType(),
        "uuid": ptypes.UUIDType(),
        "decimal": ptypes.DecimalType(12, 3),
    }[name]
    value = data.draw(values)
    n = data.draw(st.integers(1, 1000))
    assert BucketTransform(n).apply(source_type, value) == pt.BucketTransform(n).transform(py_type)(value)
    if TruncateTransform(n).can_transform(source_type):
        theirs = pt.TruncateTransform(n).transform(py_type)(value)
        assert TruncateTransform(n).apply(source_type, value) == theirs
    if DayTransform().can_transform(source_type):
        for ours, theirs in [
            (YearTransform(), pt.YearTransform()),
            (MonthTransform(), pt.MonthTransform()),
            (DayTransform(), pt.DayTransform()),
        ]:
            assert ours.apply(source_type, value) == theirs.transform(py_type)(value)


@pytest.mark.parametrize(
    ("transform", "source_type", "value"),
    [
        (DayTransform(), TimestampType(), dt.datetime(2024, 1, 1)),
        (YearTransform(), DateType(), dt.date(2024, 1, 1)),
        (BucketTransform(4), StringType(), b"bytes"),
        (BucketTransform(4), LongType(), "34"),
        (BucketTransform(4), LongType(), 2**63),
        (BucketTransform(4), DecimalType(9, 2), 14.2),
        (TruncateTransform(4), StringType(), 1234),
        (TruncateTransform(4), IntegerType(), True),
        (TruncateTransform(4), BinaryType(), "text"),
    ],
)
def test_values_must_be_internal(transform: Transform, source_type: IcebergType, value: Any) -> None:
    with pytest.raises(ValidationError):
        transform.apply(source_type, value)
