"""Hypothesis strategies and fixtures shared by the manifest tests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.spec.partition import PartitionField, PartitionSpec
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
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
)

PRIMITIVES: list[IcebergType] = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(9, 2),
    DecimalType(38, 10),
    DecimalType(9, 2),  # a repeated named Avro type must be referenced, not redefined
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    StringType(),
    UUIDType(),
    FixedType(4),
    BinaryType(),
]

SCHEMA = Schema(
    *(NestedField(i + 1, f"c{i + 1}", t, False) for i, t in enumerate(PRIMITIVES)),
    # a name Avro cannot hold as it is
    NestedField(100, "1st col-x", LongType(), False),
)

_IDENTITY = [
    PartitionField(i + 1, 1000 + i, IdentityTransform(), f"c{i + 1}") for i in range(len(PRIMITIVES))
]
ALL_TYPES_SPEC = PartitionSpec(
    *_IDENTITY,
    PartitionField(3, 1100, BucketTransform(8), "c3_bucket"),
    PartitionField(11, 1101, DayTransform(), "c11_day"),
    PartitionField(12, 1102, MonthTransform(), "c12_month"),
    PartitionField(13, 1103, TruncateTransform(3), "c13_trunc"),
    PartitionField(100, 1104, IdentityTransform(), "1st col-x"),
    spec_id=3,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)


def decimals(t: DecimalType) -> st.SearchStrategy[Decimal]:
    bound = 10**t.precision - 1
    return st.integers(-bound, bound).map(
        lambda u: Decimal((1 if u < 0 else 0, tuple(int(d) for d in str(abs(u))), -t.scale))
    )


def values(t: IcebergType) -> st.SearchStrategy[Any]:
    """Internal-representation values of ``t`` (no NaN: NaN != NaN breaks equality checks)."""
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegerType | DateType):
        return INT32
    if isinstance(t, LongType | TimestampType | TimestamptzType):
        return INT64
    if isinstance(t, TimeType):
        return st.integers(0, 86_400_000_000 - 1)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        return decimals(t)
    if isinstance(t, StringType):
        return TEXT
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, BinaryType):
        return st.binary(max_size=20)
    raise AssertionError(t)


def partitions(struct: StructType) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(*(st.none() | values(f.field_type) for f in struct.fields))


COUNTS = st.none() | st.dictionaries(st.integers(1, 2000), st.integers(0, 2**40), max_size=5)
BOUNDS = st.none() | st.dictionaries(st.integers(1, 2000), st.binary(max_size=16), max_size=5)


@st.composite
def data_files(
    draw: st.DrawFn,
    struct: StructType,
    spec_id: int,
    *,
    content: DataFileContent = DataFileContent.DATA,
    format_version: int = 2,
) -> DataFile:
    v3 = format_version >= 3
    v2 = format_version >= 2
    opt = st.none() | INT64.filter(lambda x: x >= 0)
    return DataFile(
        content=content,
        file_path=draw(TEXT.map(lambda s: f"s3://bucket/data/{s}.parquet")),
        file_format=draw(st.sampled_from(list(FileFormat))),
        partition=draw(partitions(struct)),
        record_count=draw(st.integers(0, 2**40)),
        file_size_in_bytes=draw(st.integers(0, 2**40)),
        column_sizes=draw(COUNTS),
        value_counts=draw(COUNTS),
        null_value_counts=draw(COUNTS),
        nan_value_counts=draw(COUNTS),
        lower_bounds=draw(BOUNDS),
        upper_bounds=draw(BOUNDS),
        key_metadata=draw(st.none() | st.binary(max_size=8)),
        split_offsets=draw(st.none() | st.lists(INT64.filter(lambda x: x >= 0), max_size=3).map(tuple)),
        equality_ids=(
            draw(st.lists(st.integers(1, 100), min_size=1, max_size=3).map(tuple))
            if content == DataFileContent.EQUALITY_DELETES
            else None
        ),
        sort_order_id=draw(st.none() | st.integers(0, 10)),
        first_row_id=draw(opt) if v3 and content == DataFileContent.DATA else None,
        referenced_data_file=(
            draw(st.none() | TEXT) if v2 and content == DataFileContent.POSITION_DELETES else None
        ),
        content_offset=draw(opt) if v3 and content != DataFileContent.DATA else None,
        content_size_in_bytes=draw(opt) if v3 and content != DataFileContent.DATA else None,
        spec_id=spec_id,
    )
