"""Vectorized transforms agree with the per-value ones, element by element, nulls included."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow.transforms import murmur3_32_rows, transform_arrow
from icefloe.errors import PartitionSpecError
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
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
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.transforms._decimal import from_unscaled

# Timestamps whose hour count fits Java's int result.
_TS_MICROS = st.integers(-(7 * 10**18), 7 * 10**18)


def _decimal_values(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    return st.integers(-bound, bound).map(lambda n: from_unscaled(n, scale))


# (iceberg type, arrow type, value strategy in the internal representation)
CASES: dict[str, tuple[IcebergType, pa.DataType, st.SearchStrategy[Any]]] = {
    "int": (IntegerType(), pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "long": (LongType(), pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "date": (DateType(), pa.date32(), st.integers(-(2**31), 2**31 - 1)),
    # Years 0000..9999, where the Arrow calendar kernels are used.
    "date_near": (DateType(), pa.date32(), st.integers(-719_528, 2_932_896)),
    "timestamp_near": (
        TimestampType(),
        pa.timestamp("us"),
        st.integers(-62_167_219_200_000_000, 253_402_300_799_999_999),
    ),
    "time": (TimeType(), pa.time64("us"), st.integers(0, 86_400_000_000 - 1)),
    "timestamp": (TimestampType(), pa.timestamp("us"), _TS_MICROS),
    "timestamptz": (TimestamptzType(), pa.timestamp("us", tz="UTC"), _TS_MICROS),
    "timestamp_ns": (TimestampNsType(), pa.timestamp("ns"), st.integers(-(2**63), 2**63 - 1)),
    "timestamptz_ns": (TimestamptzNsType(), pa.timestamp("ns", tz="UTC"), st.integers(-(2**63), 2**63 - 1)),
    "decimal9": (DecimalType(9, 2), pa.decimal128(9, 2), _decimal_values(9, 2)),
    "decimal18": (DecimalType(18, 4), pa.decimal128(18, 4), _decimal_values(18, 4)),
    "decimal38": (DecimalType(38, 10), pa.decimal128(38, 10), _decimal_values(38, 10)),
    "decimal38_0": (DecimalType(38, 0), pa.decimal128(38, 0), _decimal_values(38, 0)),
    "string": (StringType(), pa.string(), st.text(max_size=12)),
    "large_string": (StringType(), pa.large_string(), st.text(max_size=12)),
    "binary": (BinaryType(), pa.binary(), st.binary(max_size=12)),
    "large_binary": (BinaryType(), pa.large_binary(), st.binary(max_size=12)),
    "uuid": (UUIDType(), pa.uuid(), st.uuids()),
    "uuid_fixed": (UUIDType(), pa.binary(16), st.uuids().map(lambda u: u.bytes)),
    "fixed1": (FixedType(1), pa.binary(1), st.binary(min_size=1, max_size=1)),
    "fixed7": (FixedType(7), pa.binary(7), st.binary(min_size=7, max_size=7)),
    "fixed16": (FixedType(16), pa.binary(16), st.binary(min_size=16, max_size=16)),
}

_TIMESTAMPS = ["timestamp_near", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"]
_TEMPORAL = ["date", "date_near", *_TIMESTAMPS]
_BUCKETABLE = list(CASES)
_TRUNCATABLE = [
    "int",
    "long",
    "decimal9",
    "decimal18",
    "decimal38",
    "decimal38_0",
    "string",
    "large_string",
    "binary",
    "large_binary",
]

COMBOS: list[tuple[str, str]] = (
    [("identity", c) for c in CASES]
    + [("void", c) for c in CASES]
    + [("bucket", c) for c in _BUCKETABLE]
    + [("truncate", c) for c in _TRUNCATABLE]
    + [(k, c) for k in ("year", "month", "day") for c in _TEMPORAL]
    + [("hour", c) for c in _TIMESTAMPS]
)


def to_arrow(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    if isinstance(arrow_type, pa.BaseExtensionType):
        storage = to_arrow([None if v is None else v.bytes for v in values], arrow_type.storage_type)
        return pa.ExtensionArray.from_storage(arrow_type, storage)
    if pa.types.is_date32(arrow_type):
        return pa.array(values, pa.int32()).view(arrow_type)
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time64(arrow_type):
        return pa.array(values, pa.int64()).view(arrow_type)
    return pa.array(values, arrow_type)


def to_internal(arr: pa.Array) -> list[Any]:
    if isinstance(arr.type, pa.BaseExtensionType):
        return [None if b is None else uuid.UUID(bytes=b) for b in arr.storage.to_pylist()]
    if pa.types.is_date32(arr.type):
        return arr.view(pa.int32()).to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_timestamp(arr.type) or pa.types.is_time64(arr.type):
        return arr.view(pa.int64()).to_pylist()  # type: ignore[no-any-return]
    return arr.to_pylist()  # type: ignore[no-any-return]


def make_transform(kind: str, param: int) -> Transform:
    return {
        "identity": IdentityTransform(),
        "void": VoidTransform(),
        "bucket": BucketTransform(param),
        "truncate": TruncateTransform(param),
        "year": YearTransform(),
        "month": MonthTransform(),
        "day": DayTransform(),
        "hour": HourTransform(),
    }[kind]


def check(transform: Transform, source_type: IcebergType, arrow_type: pa.DataType, values: list[Any]) -> None:
    arr = to_arrow(values, arrow_type)
    got = transform_arrow(transform, source_type, arr)
    assert len(got) == len(values)
    expected = [transform.apply(source_type, v) for v in values]
    assert to_internal(got) == expected
    if transform.kind.value in ("bucket", "year", "month", "hour"):
        assert got.type == pa.int32()
    elif transform.kind.value == "day":
        assert got.type == pa.date32()
    else:
        assert got.type == arrow_type
    # Sliced arrays (non-zero offsets) and chunked arrays give the same answers.
    if len(values) > 2:
        sliced = transform_arrow(transform, source_type, arr.slice(1, len(values) - 2))
        assert to_internal(sliced) == expected[1:-1]
        chunked = transform_arrow(transform, source_type, pa.chunked_array([arr.slice(0, 2), arr.slice(2)]))
        assert isinstance(chunked, pa.ChunkedArray)
        assert to_internal(chunked.combine_chunks()) == expected


@pytest.mark.parametrize(("kind", "case"), COMBOS, ids=[f"{k}-{c}" for k, c in COMBOS])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_arrow_matches_apply(kind: str, case: str, data: st.DataObject) -> None:
    source_type, arrow_type, values = CASES[case]
    param = data.draw(st.sampled_from([1, 2, 3, 10, 16, 1000, 2**31 - 1]) | st.integers(1, 2**31 - 1))
    transform = make_transform(kind, param)
    rows = data.draw(st.lists(st.none() | values, max_size=20))
    check(transform, source_type, arrow_type, rows)


@pytest.mark.parametrize(
    ("transform", "case", "values"),
    [
        (TruncateTransform(10), "int", [-(2**31), 2**31 - 1, -1, 0, None]),
        (TruncateTransform(10), "long", [-(2**63), 2**63 - 1, -1, 0]),
        (TruncateTransform(7), "decimal38_0", [Decimal(-(10**38) + 1), Decimal(10**38 - 1), Decimal(-1)]),
        (TruncateTransform(2**31 - 1), "decimal38", [Decimal("-1.0000000001"), Decimal("0E-10")]),
        (DayTransform(), "timestamp", [-1, 0, -86_400_000_000, -86_400_000_001, None]),
        (HourTransform(), "timestamp_ns", [-1, 0, -(2**63), 2**63 - 1]),
        (YearTransform(), "date", [-1, 0, -719_162, 2_932_896, -(2**31), 2**31 - 1]),
        (MonthTransform(), "date", [-1, 0, 59, 60, -306, -307]),
        (BucketTransform(16), "string", ["", "iceberg", "日本語", None, "iceberg"]),
        (BucketTransform(16), "decimal9", [Decimal("14.20"), Decimal("-0.01"), Decimal("0.00")]),
        (TruncateTransform(2), "string", ["a\U0001f600b", "日本語", ""]),
    ],
)
def test_edge_values(transform: Transform, case: str, values: list[Any]) -> None:
    source_type, arrow_type, _ = CASES[case]
    check(transform, source_type, arrow_type, values)


@given(st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=5), st.integers(0, 40))
def test_murmur3_rows_matches_mmh3(seeds: list[bytes], length: int) -> None:
    rows = [(s * (length + 1))[:length].ljust(length, b"\x00") for s in seeds]
    matrix = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), length)
    got = murmur3_32_rows(matrix)
    assert [int(h) for h in got] == [mmh3.hash(r, 0, signed=False) for r in rows]


def test_other_arrow_inputs() -> None:
    # Narrow ints, decimal64, string_view, millisecond timestamps.
    narrow = pa.array([34], pa.int16())
    assert transform_arrow(BucketTransform(100), IntegerType(), narrow).to_pylist() == [79]
    dec = pa.array([Decimal("10.65"), None], pa.decimal64(9, 2))
    out = transform_arrow(TruncateTransform(50), DecimalType(9, 2), dec)
    assert out.type == pa.decimal64(9, 2)
    assert out.to_pylist() == [Decimal("10.50"), None]
    sv = pa.array(["iceberg", None], pa.string_view())
    assert transform_arrow(BucketTransform(2**31 - 1), StringType(), sv).to_pylist() == [1210000089, None]
    ms = pa.array([-1, 3_600_000], pa.int64()).view(pa.timestamp("ms"))
    assert transform_arrow(HourTransform(), TimestampType(), ms).to_pylist() == [-1, 1]
    empty = transform_arrow(DayTransform(), TimestampType(), pa.chunked_array([], pa.timestamp("us")))
    assert empty.type == pa.date32() and len(empty) == 0


def test_rejects_bad_inputs() -> None:
    with pytest.raises(PartitionSpecError):
        transform_arrow(DayTransform(), StringType(), pa.array(["2024-01-01"]))
    with pytest.raises(PartitionSpecError):
        transform_arrow(HourTransform(), DateType(), pa.array([1], pa.int32()).view(pa.date32()))
    with pytest.raises(PartitionSpecError):
        transform_arrow(IdentityTransform(), LongType(), [1, 2])


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.binary(), pa.string_view()])
def test_bucket_many_value_lengths(arrow_type: pa.DataType) -> None:
    """Rare long lengths exhaust the vectorization budget and are hashed per distinct value;
    common lengths stay vectorized; both agree with the per-value transform."""
    rare = ["x" * n for n in range(0, 3000, 7)]
    common = [f"{i:08d}" for i in range(200)]
    values: list[Any] = [*rare, None, *common, "é" * 5, None]
    raw = [v.encode() if v is not None and pa.types.is_binary(arrow_type) else v for v in values]
    source_type: IcebergType = BinaryType() if pa.types.is_binary(arrow_type) else StringType()
    got = transform_arrow(BucketTransform(1000), source_type, pa.array(raw, arrow_type))
    assert got.to_pylist() == [BucketTransform(1000).apply(source_type, v) for v in raw]


def test_date64_buckets_by_day() -> None:
    d64 = pa.array([17486 * 86_400_000, None], pa.date64())
    assert transform_arrow(BucketTransform(2**31 - 1), DateType(), d64).to_pylist() == [
        (-653330422 & 0x7FFFFFFF) % (2**31 - 1),
        None,
    ]
