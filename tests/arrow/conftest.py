"""Shared helpers for the Arrow layer tests: a table with every type, table metadata, file IO."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

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
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

ALL_TYPES = Schema(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType(), required=True),
    NestedField(3, "l", LongType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(10, 2)),
    NestedField(7, "date", DateType()),
    NestedField(8, "time", TimeType()),
    NestedField(9, "ts", TimestampType()),
    NestedField(10, "tstz", TimestamptzType()),
    NestedField(11, "s", StringType()),
    NestedField(12, "u", UUIDType()),
    NestedField(13, "fx", FixedType(3)),
    NestedField(14, "bin", BinaryType()),
    NestedField(
        15,
        "st",
        StructType(NestedField(16, "x", IntegerType(), required=True), NestedField(17, "y", StringType())),
    ),
    NestedField(18, "li", ListType(19, LongType(), element_required=False)),
    NestedField(20, "m", MapType(21, StringType(), 22, DoubleType(), value_required=False)),
)


def make_metadata(
    location: str,
    schema: Schema,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
):  # type: ignore[no-untyped-def]
    from icefloe.spec.partition import build_partition_spec
    from icefloe.spec.sort_order import UNSORTED_SORT_ORDER
    from icefloe.spec.table_metadata import TableMetadata

    spec = build_partition_spec(schema, list(partition_by))
    return TableMetadata(
        format_version=2,
        table_uuid=uuid.uuid4(),
        location=location,
        last_sequence_number=0,
        last_updated_ms=int(time.time() * 1000),
        last_column_id=schema.highest_field_id,
        schemas=(schema,),
        current_schema_id=schema.schema_id,
        partition_specs=(spec,),
        default_spec_id=spec.spec_id,
        last_partition_id=max([999, *(f.field_id for f in spec.fields)]),
        properties=dict(properties or {}),
        sort_orders=(UNSORTED_SORT_ORDER,),
        default_sort_order_id=0,
    )


@pytest.fixture
def io():  # type: ignore[no-untyped-def]
    from icefloe.io.local import LocalFileIO

    return LocalFileIO()


@pytest.fixture
def location(tmp_path: Path) -> str:
    return str(tmp_path / "tbl")


@pytest.fixture
def all_types() -> Schema:
    return ALL_TYPES


@pytest.fixture
def meta_factory(location: str):  # type: ignore[no-untyped-def]
    def factory(
        schema: Schema, partition_by: Sequence[str] = (), properties: Mapping[str, str] | None = None
    ):  # type: ignore[no-untyped-def]
        return make_metadata(location, schema, partition_by, properties)

    return factory
