"""A table schema covering every primitive type, shared by the expression tests."""

from __future__ import annotations

import pytest

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
    TimestamptzType,
    TimeType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "f", FloatType()),
    NestedField(4, "d", DoubleType()),
    NestedField(5, "dec", DecimalType(9, 2)),
    NestedField(6, "dt", DateType()),
    NestedField(7, "t", TimeType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tstz", TimestamptzType()),
    NestedField(10, "s", StringType()),
    NestedField(11, "u", UUIDType()),
    NestedField(12, "fx", FixedType(3)),
    NestedField(13, "bin", BinaryType()),
    NestedField(14, "b", BooleanType()),
    NestedField(
        15,
        "st",
        StructType(NestedField(16, "a", IntegerType(), required=True), NestedField(17, "Name", StringType())),
    ),
    NestedField(18, "tags", ListType(19, StringType())),
    NestedField(20, "props", MapType(21, StringType(), 22, StringType())),
    NestedField(23, "tsns", TimestampNsType()),
)


@pytest.fixture
def schema() -> Schema:
    return SCHEMA
