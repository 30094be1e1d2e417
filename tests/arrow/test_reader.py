"""read_task: by-id column resolution, evolution, promotion, residuals, row-group splits."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import os
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.arrow.reader import read_task
from icefloe.arrow.schema import schema_to_arrow
from icefloe.arrow.writer import write_data_files
from icefloe.errors import InvalidMetadataError, SchemaError
from icefloe.expressions import AlwaysFalse, AlwaysTrue, parse
from icefloe.manifest import DataFile, FileFormat
from icefloe.scan.task import FileScanTask
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)


def write_parquet(path: Path, table: pa.Table, **kwargs) -> DataFile:  # type: ignore[no-untyped-def]
    pq.write_table(table, str(path), store_schema=False, **kwargs)
    return DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=table.num_rows,
        file_size_in_bytes=os.path.getsize(path),
    )


def read(
    io, data_file: DataFile, projected: Schema, table_schema: Schema, residual=None, **kwargs
) -> pa.Table:  # type: ignore[no-untyped-def]
    task = FileScanTask(
        data_file, residual if residual is not None else AlwaysTrue(), **kwargs.pop("task", {})
    )
    batches = list(read_task(io, task, projected, table_schema, **kwargs))
    expected = schema_to_arrow(projected)
    for b in batches:
        assert b.schema.equals(expected, check_metadata=True)
    return pa.Table.from_batches(batches, schema=expected)


def full_row(i: int) -> dict[str, object]:
    return {
        "b": i % 2 == 0,
        "i": i,
        "l": i * 10**10,
        "f": 1.5 * i,
        "d": -2.25 * i,
        "dec": Decimal(f"{i}.25"),
        "date": dt.date(2024, 1, 1) + dt.timedelta(days=i),
        "time": dt.time(12, 0, i),
        "ts": dt.datetime(2024, 1, 1, 0, 0, i),
        "tstz": dt.datetime(2024, 1, 1, 0, 0, i, tzinfo=dt.UTC),
        "s": f"s{i}",
        "u": uuid.UUID(int=i).bytes,
        "fx": bytes([i, i, i]),
        "bin": bytes([i] * i),
        "st": {"x": i, "y": None if i % 3 else "y"},
        "li": [i, None] if i % 2 else None,
        "m": [("k", float(i)), ("z", None)],
    }


def test_every_type_round_trips(io, meta_factory, all_types) -> None:  # type: ignore[no-untyped-def]
    table = pa.Table.from_pylist(
        [full_row(i) for i in range(5)] + [{"i": 99}], schema=schema_to_arrow(all_types)
    )
    files = write_data_files(io, meta_factory(all_types), table)
    (f,) = files
    out = read(io, f, all_types, all_types)
    assert out.equals(table)


def test_renamed_added_and_dropped_columns_resolve_by_id(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    old = Schema(
        NestedField(1, "a", IntegerType()),
        NestedField(2, "b", StringType()),
        NestedField(3, "gone", IntegerType()),
    )
    f = write_parquet(
        tmp_path / "f.parquet",
        pa.table({"a": [1, 2], "b": ["x", "y"], "gone": [7, 8]}, schema=schema_to_arrow(old)),
    )
    new = Schema(
        NestedField(2, "renamed", StringType()),
        NestedField(1, "a", LongType()),  # promoted int -> long
        NestedField(4, "added", StringType()),
        NestedField(5, "with_default", IntegerType(), initial_default=42),
    )
    out = read(io, f, new, new)
    assert out.to_pylist() == [
        {"renamed": "x", "a": 1, "added": None, "with_default": 42},
        {"renamed": "y", "a": 2, "added": None, "with_default": 42},
    ]


def test_required_column_missing_without_default_is_an_error(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = write_parquet(
        tmp_path / "f.parquet",
        pa.table({"a": [1]}, schema=schema_to_arrow(Schema(NestedField(1, "a", IntegerType())))),
    )
    schema = Schema(NestedField(1, "a", IntegerType()), NestedField(2, "req", IntegerType(), required=True))
    with pytest.raises(SchemaError, match="'req'"):
        read(io, f, schema, schema)


def test_type_promotion(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    old = Schema(
        NestedField(1, "i", IntegerType()),
        NestedField(2, "f", FloatType()),
        NestedField(3, "d", DecimalType(5, 2)),
    )
    t = pa.table(
        {"i": [1, None], "f": [1.5, None], "d": [Decimal("1.25"), None]}, schema=schema_to_arrow(old)
    )
    f = write_parquet(tmp_path / "f.parquet", t)
    new = Schema(
        NestedField(1, "i", LongType()),
        NestedField(2, "f", DoubleType()),
        NestedField(3, "d", DecimalType(10, 2)),
    )
    out = read(io, f, new, new)
    assert out.to_pylist() == [{"i": 1, "f": 1.5, "d": Decimal("1.25")}, {"i": None, "f": None, "d": None}]


NESTED = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "st", StructType(NestedField(3, "a", IntegerType()), NestedField(4, "b", StringType()))),
    NestedField(
        5,
        "li",
        ListType(
            6, StructType(NestedField(7, "p", IntegerType()), NestedField(8, "q", IntegerType())), False
        ),
    ),
    NestedField(
        9,
        "m",
        MapType(
            10,
            StringType(),
            11,
            StructType(NestedField(12, "v", IntegerType()), NestedField(13, "w", IntegerType())),
            False,
        ),
    ),
)


def test_nested_projection_by_id(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [
        {"id": 1, "st": {"a": 1, "b": "x"}, "li": [{"p": 1, "q": 2}, None], "m": [("k", {"v": 1, "w": 2})]},
        {"id": 2, "st": None, "li": None, "m": None},
    ]
    f = write_parquet(tmp_path / "f.parquet", pa.Table.from_pylist(rows, schema=schema_to_arrow(NESTED)))
    projected = NESTED.select_ids([4, 7, 12])
    out = read(io, f, projected, NESTED)
    assert out.to_pylist() == [
        {"st": {"b": "x"}, "li": [{"p": 1}, None], "m": [("k", {"v": 1})]},
        {"st": None, "li": None, "m": None},
    ]
    # Evolution inside nested types: a renamed struct child and an added one.
    evolved = Schema(
        NestedField(
            2, "st", StructType(NestedField(4, "bee", StringType()), NestedField(20, "new", IntegerType()))
        ),
    )
    assert read(io, f, evolved, evolved).to_pylist() == [{"st": {"bee": "x", "new": None}}, {"st": None}]


def test_residual_filters_rows_on_columns_outside_the_projection(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = Schema(
        NestedField(1, "id", LongType()), NestedField(2, "x", DoubleType()), NestedField(3, "s", StringType())
    )
    t = pa.table(
        {"id": [1, 2, 3, 4], "x": [1.0, math.nan, None, 4.0], "s": ["a", "b", "c", None]},
        schema=schema_to_arrow(schema),
    )
    f = write_parquet(tmp_path / "f.parquet", t)
    projected = schema.select(["id"])
    assert read(io, f, projected, schema, parse("x > 1.5")).column("id").to_pylist() == [4]
    assert read(io, f, projected, schema, parse("s IS NULL OR x < 2")).column("id").to_pylist() == [1, 4]
    assert read(io, f, projected, schema, parse("S = 'c'"), case_sensitive=False).column(
        "id"
    ).to_pylist() == [3]
    assert read(io, f, projected, schema, AlwaysFalse()).num_rows == 0


def test_row_group_splits_cover_every_row_once(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = Schema(NestedField(1, "id", LongType()))
    t = pa.table({"id": list(range(1000))}, schema=schema_to_arrow(schema))
    f = write_parquet(tmp_path / "f.parquet", t, row_group_size=100)
    meta = pq.ParquetFile(f.file_path).metadata
    starts = [
        meta.row_group(i).column(0).dictionary_page_offset or meta.row_group(i).column(0).data_page_offset
        for i in range(meta.num_row_groups)
    ]
    assert len(starts) == 10
    # Split at arbitrary byte positions: each row group belongs to the split its start falls in.
    cuts = [0, starts[3] - 1, starts[3] + 1, starts[7], f.file_size_in_bytes]
    seen: list[int] = []
    for lo, hi in itertools.pairwise(cuts):
        seen += read(io, f, schema, schema, task={"start": lo, "length": hi - lo}).column("id").to_pylist()
    assert seen == list(range(1000))
    assert read(io, f, schema, schema, task={"start": starts[2], "length": 1}).column(
        "id"
    ).to_pylist() == list(range(200, 300))


def test_batches_are_bounded(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    schema = Schema(NestedField(1, "id", LongType()))
    f = write_parquet(
        tmp_path / "f.parquet", pa.table({"id": list(range(1000))}, schema=schema_to_arrow(schema))
    )
    batches = list(read_task(io, FileScanTask(f, AlwaysTrue()), schema, schema, batch_size=64))
    assert max(b.num_rows for b in batches) <= 64 and sum(b.num_rows for b in batches) == 1000


def test_projection_of_only_missing_columns_keeps_row_count(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = write_parquet(
        tmp_path / "f.parquet",
        pa.table(
            {"a": pa.array([1, 2, 3], pa.int32())},
            schema=schema_to_arrow(Schema(NestedField(1, "a", IntegerType()))),
        ),
    )
    schema = Schema(NestedField(1, "a", IntegerType()), NestedField(2, "new", StringType()))
    assert read(io, f, schema.select(["new"]), schema).to_pylist() == [{"new": None}] * 3
    assert read(io, f, Schema(), schema).num_rows == 3


def test_files_without_field_ids_match_by_name_or_name_mapping(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = write_parquet(tmp_path / "f.parquet", pa.table({"old_name": [1, 2], "st": [{"x": 1}, {"x": 2}]}))
    schema = Schema(
        NestedField(1, "new_name", LongType()),
        NestedField(2, "st", StructType(NestedField(3, "x", LongType()))),
    )
    assert read(io, f, schema, schema).to_pylist() == [
        {"new_name": None, "st": {"x": 1}},
        {"new_name": None, "st": {"x": 2}},
    ]
    mapping = json.dumps(
        [
            {"field-id": 1, "names": ["old_name", "new_name"]},
            {"field-id": 2, "names": ["st"], "fields": [{"field-id": 3, "names": ["x"]}]},
        ]
    )
    assert read(io, f, schema, schema, name_mapping=mapping).to_pylist() == [
        {"new_name": 1, "st": {"x": 1}},
        {"new_name": 2, "st": {"x": 2}},
    ]


def test_data_file_listed_as_delete_file_is_rejected(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Applying deletes is tested in tests/arrow/test_deletes.py.
    schema = Schema(NestedField(1, "id", LongType()))
    f = write_parquet(tmp_path / "f.parquet", pa.table({"id": [1]}, schema=schema_to_arrow(schema)))
    with pytest.raises(InvalidMetadataError, match="not a delete file"):
        list(read_task(io, FileScanTask(f, AlwaysTrue(), delete_files=(f,)), schema, schema))


def test_nanosecond_timestamps_from_other_writers_are_read_as_microseconds(io, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = write_parquet(
        tmp_path / "f.parquet",
        pa.table({"ts": pa.array([1_500, None], pa.timestamp("ns"))}),
        coerce_timestamps=None,
    )
    schema = Schema(NestedField(1, "ts", TimestampType()))
    out = read(io, f, schema, schema)
    assert out.column("ts").cast(pa.int64()).to_pylist() == [1, None]
