"""Grouped reads of small files (icefloe.arrow._scan_groups): the same rows, in the same order,
as reading each task on its own with read_task, across schema evolution, files without field
ids, nested projection, residuals and position deletes; errors still name the file."""

from __future__ import annotations

import itertools
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.arrow import _scan_groups as groups
from icefloe.arrow.apply_deletes import DeleteLoader
from icefloe.arrow.reader import read_task
from icefloe.arrow.schema import schema_to_arrow
from icefloe.errors import CorruptFileError, FileIOError, SchemaError
from icefloe.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, parse
from icefloe.io.local import LocalFileIO
from icefloe.manifest import DataFile, DataFileContent, FileFormat
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
)

OLD = Schema(
    NestedField(1, "a", IntegerType()),
    NestedField(2, "b", StringType()),
    NestedField(3, "gone", IntegerType()),
    NestedField(6, "f", FloatType()),
    NestedField(7, "dec", DecimalType(5, 2)),
)
NEW = Schema(
    NestedField(2, "renamed", StringType()),
    NestedField(1, "a", LongType()),  # promoted int -> long
    NestedField(4, "added", StringType()),
    NestedField(5, "with_default", IntegerType(), initial_default=42),
    NestedField(6, "f", DoubleType()),
    NestedField(7, "dec", DecimalType(10, 2)),
)
NEW_WRITTEN = Schema(*[f for f in NEW.fields if f.field_id != 5])  # what files of NEW hold


def _write(path: Path, table: pa.Table, **kwargs: Any) -> DataFile:
    pq.write_table(table, str(path), store_schema=False, **kwargs)
    return DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=table.num_rows,
        file_size_in_bytes=os.path.getsize(path),
    )


def _old_rows(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "a": list(range(start, start + n)),
            "b": [f"b{i % 7}" if i % 5 else None for i in range(start, start + n)],
            "gone": [i * 10 for i in range(start, start + n)],
            "f": [i / 4 for i in range(start, start + n)],
            "dec": [Decimal(i) / 4 for i in range(start, start + n)],
        },
        schema=schema_to_arrow(OLD),
    )


def _new_rows(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "renamed": [f"b{i % 7}" for i in range(start, start + n)],
            "a": list(range(start, start + n)),
            "added": [f"x{i}" if i % 3 else None for i in range(start, start + n)],
            "f": [i / 8 for i in range(start, start + n)],
            "dec": [Decimal(i) / 4 for i in range(start, start + n)],
        },
        schema=schema_to_arrow(NEW_WRITTEN),
    )


def _position_deletes(path: Path, deleted: dict[str, list[int]]) -> DataFile:
    rows = [(p, pos) for p, positions in deleted.items() for pos in sorted(positions)]
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {"PARQUET:field_id": "2147483546"}),
            pa.field("pos", pa.int64(), False, {"PARQUET:field_id": "2147483545"}),
        ]
    )
    table = pa.table({"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows]}, schema=schema)
    pq.write_table(table, str(path))
    return DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=table.num_rows,
        file_size_in_bytes=os.path.getsize(path),
        content=DataFileContent.POSITION_DELETES,
    )


def _expected(
    io: LocalFileIO, tasks: list[FileScanTask], projected: Schema, table_schema: Schema, **kw: Any
) -> pa.Table:
    batches = [
        b
        for t in tasks
        for b in read_task(io, t, projected, table_schema, delete_loader=DeleteLoader(), **kw)
        if b.num_rows
    ]
    return pa.Table.from_batches(batches, schema=schema_to_arrow(projected))


def _check(
    io: LocalFileIO,
    tasks: list[FileScanTask],
    projected: Schema,
    table_schema: Schema,
    batch_size: int = 131_072,
    **kw: Any,
) -> pa.Table:
    """Grouped table and grouped stream both equal reading task by task (rows, order, schema)."""
    expected = _expected(io, tasks, projected, table_schema, batch_size=batch_size, **kw)
    opts = groups.ReadOptions(
        projected, table_schema, batch_size=batch_size, delete_loader=DeleteLoader(), **kw
    )
    table = groups.read_table(io, tasks, opts)
    assert table.schema.equals(expected.schema, check_metadata=True)
    assert table.to_pylist() == expected.to_pylist()
    opts = groups.ReadOptions(
        projected, table_schema, batch_size=batch_size, delete_loader=DeleteLoader(), **kw
    )
    streamed = list(groups.stream_batches(io, tasks, opts))
    for b in streamed:
        assert b.num_rows > 0
        assert b.schema.equals(expected.schema, check_metadata=True)
    assert pa.Table.from_batches(streamed, schema=expected.schema).to_pylist() == expected.to_pylist()
    return table


def _task(
    f: DataFile, residual: BooleanExpression | None = None, deletes: tuple[DataFile, ...] = ()
) -> FileScanTask:
    return FileScanTask(f, residual if residual is not None else AlwaysTrue(), deletes)


@pytest.fixture
def io() -> LocalFileIO:
    return LocalFileIO()


@pytest.fixture
def evolved(tmp_path: Path) -> list[DataFile]:
    """Files of the old and the new schema, interleaved (several groups, in plan order)."""
    files = []
    for i in range(9):
        writer = _old_rows if i % 3 != 2 else _new_rows
        files.append(_write(tmp_path / f"f{i}.parquet", writer(i * 50, 50)))
    return files


def test_evolution_resolves_by_id_across_groups(io: LocalFileIO, evolved: list[DataFile]) -> None:
    out = _check(io, [_task(f) for f in evolved], NEW, NEW)
    assert out.num_rows == 450
    assert out.column("with_default").to_pylist() == [42] * 450
    assert out.column("a").to_pylist() == list(range(450))  # plan order, row order within files
    renamed = out.column("renamed").to_pylist()
    assert renamed[1] == "b1" and renamed[0] is None  # old files' "b" is "renamed" by id


def test_files_are_grouped_by_physical_schema_and_residual(io: LocalFileIO, evolved: list[DataFile]) -> None:
    tasks = [_task(f, parse("a < 200") if i >= 6 else None) for i, f in enumerate(evolved)]
    residuals = groups._Residuals(NEW, True)
    units = list(groups._units(groups._open(io, tasks), residuals))
    assert [len(u.tasks) for u in units if isinstance(u, groups._Group)] == [2, 1, 2, 1, 2, 1]
    assert not any(isinstance(u, groups._Single) for u in units)


def test_residuals_on_renamed_and_promoted_columns(io: LocalFileIO, evolved: list[DataFile]) -> None:
    for text in ("renamed = 'b3'", "a >= 120 and f < 30.0", "added is null or renamed != 'b2'", "dec > 20"):
        tasks = [_task(f, parse(text)) for f in evolved]
        _check(io, tasks, NEW, NEW)
        narrow = NEW.select(["with_default", "added"])
        _check(io, tasks, narrow, NEW)  # residual columns read, then dropped


def test_always_false_residual_skips_the_file(io: LocalFileIO, evolved: list[DataFile]) -> None:
    tasks = [_task(f, AlwaysFalse() if i % 2 else None) for i, f in enumerate(evolved)]
    assert _check(io, tasks, NEW, NEW).num_rows == 250


def test_projection_of_only_missing_columns_keeps_row_counts(
    io: LocalFileIO, evolved: list[DataFile]
) -> None:
    only_missing = NEW.select(["with_default"])
    assert _check(io, [_task(f) for f in evolved], only_missing, NEW).num_rows == 450


def test_files_without_field_ids_use_the_name_mapping(io: LocalFileIO, tmp_path: Path) -> None:
    files = [
        _write(tmp_path / f"n{i}.parquet", pa.table({"old_name": [i, i + 1], "st": [{"x": i}, {"x": i + 1}]}))
        for i in range(4)
    ]
    schema = Schema(
        NestedField(1, "new_name", LongType()),
        NestedField(2, "st", StructType(NestedField(3, "x", LongType()))),
    )
    mapping = json.dumps(
        [
            {"field-id": 1, "names": ["old_name", "new_name"]},
            {"field-id": 2, "names": ["st"], "fields": [{"field-id": 3, "names": ["x"]}]},
        ]
    )
    tasks = [_task(f) for f in files]
    out = _check(io, tasks, schema, schema, name_mapping=mapping)
    assert out.column("new_name").to_pylist() == [0, 1, 1, 2, 2, 3, 3, 4]
    unmapped = _check(io, tasks, schema, schema)  # by name against the table schema
    assert unmapped.column("new_name").to_pylist() == [None] * 8
    _check(io, [_task(f, parse("new_name > 1")) for f in files], schema, schema, name_mapping=mapping)


NESTED = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "st", StructType(NestedField(3, "a", IntegerType()), NestedField(4, "b", StringType()))),
    NestedField(5, "li", ListType(6, StructType(NestedField(7, "p", IntegerType())), False)),
    NestedField(9, "m", MapType(10, StringType(), 11, IntegerType(), False)),
)


def test_nested_columns_and_nested_projection(io: LocalFileIO, tmp_path: Path) -> None:
    files = []
    for i in range(5):
        rows = [
            {"id": j, "st": {"a": j, "b": f"s{j}"}, "li": [{"p": j}, {"p": -j}], "m": {"k": j}}
            for j in range(i * 10, i * 10 + 10)
        ]
        files.append(
            _write(tmp_path / f"n{i}.parquet", pa.Table.from_pylist(rows, schema=schema_to_arrow(NESTED)))
        )
    tasks = [_task(f) for f in files]
    _check(io, tasks, NESTED, NESTED)
    _check(io, tasks, NESTED.select(["st.b", "m"]), NESTED)
    _check(io, [_task(f, parse("st.a > 12")) for f in files], NESTED.select(["id"]), NESTED)


def test_position_deletes_across_files_and_batches(io: LocalFileIO, tmp_path: Path) -> None:
    files = [_write(tmp_path / f"d{i}.parquet", _new_rows(i * 100, 100), row_group_size=30) for i in range(6)]
    one = _position_deletes(
        tmp_path / "del-1.parquet", {files[0].file_path: [0, 29, 30, 99], files[2].file_path: [5]}
    )
    two = _position_deletes(
        tmp_path / "del-2.parquet", {files[2].file_path: [6, 7, 95], files[5].file_path: [99]}
    )
    # Deletes for a file not in the scan, positions past the end: ignored.
    other = _position_deletes(
        tmp_path / "del-3.parquet", {str(tmp_path / "nope.parquet"): [1], files[4].file_path: [500]}
    )
    tasks = [
        _task(files[0], deletes=(one,)),
        _task(files[1]),
        _task(files[2], deletes=(one, two)),
        _task(files[3]),
        _task(files[4], deletes=(other,)),
        _task(files[5], deletes=(two,)),
    ]
    for batch_size in (7, 64, 131_072):
        out = _check(io, tasks, NEW, NEW, batch_size=batch_size)
        assert out.num_rows == 600 - 9
        gone = set(range(600)) - set(out.column("a").to_pylist())
        assert gone == {0, 29, 30, 99, 205, 206, 207, 295, 599}
    _check(
        io,
        [_task(t.file, parse("a > 20"), t.delete_files) for t in tasks],
        NEW,
        NEW,
        batch_size=16,
    )


def test_equality_deletes_and_large_files_use_the_per_file_path(
    io: LocalFileIO, evolved: list[DataFile], monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = sorted(f.file_size_in_bytes for f in evolved)
    monkeypatch.setattr(groups, "GROUPED_FILE_MAX_BYTES", sizes[len(sizes) // 2])
    tasks = [_task(f) for f in evolved]
    units = list(groups._units(groups._open(io, tasks), groups._Residuals(NEW, True)))
    assert any(isinstance(u, groups._Single) for u in units) and any(
        isinstance(u, groups._Group) for u in units
    )
    _check(io, tasks, NEW, NEW)


def test_a_corrupt_file_in_a_group_is_named(io: LocalFileIO, evolved: list[DataFile], tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    good = Path(evolved[0].file_path).read_bytes()
    bad.write_bytes(good[:4] + b"\x00" * (len(good) - 12) + good[-8:])  # footer intact, pages not
    broken = DataFile(
        file_path=str(bad),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=50,
        file_size_in_bytes=len(good),
    )
    tasks = [_task(evolved[1]), _task(broken), _task(evolved[3])]
    opts = groups.ReadOptions(NEW, NEW, delete_loader=DeleteLoader())
    with pytest.raises(CorruptFileError, match=r"bad\.parquet"):
        groups.read_table(io, tasks, opts)
    with pytest.raises(CorruptFileError, match=r"bad\.parquet"):
        list(groups.stream_batches(io, tasks, opts))
    missing = DataFile(
        file_path=str(tmp_path / "missing.parquet"),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=1,
        file_size_in_bytes=10,
    )
    with pytest.raises(FileIOError) as e:
        groups.read_table(io, [_task(evolved[1]), _task(missing)], opts)
    assert e.value.context["not_found"]


def test_a_required_column_missing_is_an_error(io: LocalFileIO, evolved: list[DataFile]) -> None:
    schema = Schema(*NEW.fields, NestedField(8, "req", IntegerType(), required=True))
    opts = groups.ReadOptions(schema, schema, delete_loader=DeleteLoader())
    with pytest.raises(SchemaError, match="'req'"):
        groups.read_table(io, [_task(f) for f in evolved], opts)


def test_many_files_keep_plan_order_and_row_order(io: LocalFileIO, tmp_path: Path) -> None:
    files = [_write(tmp_path / f"o{i}.parquet", _new_rows(i * 37, 37), row_group_size=10) for i in range(80)]
    deletes = _position_deletes(tmp_path / "del.parquet", {f.file_path: [3, 17] for f in files[::3]})
    tasks = [
        _task(f, parse("renamed != 'b3'") if i % 2 else None, (deletes,) if i % 3 == 0 else ())
        for i, f in enumerate(files)
    ]
    # Reverse the plan: output follows the tasks, not the file names.
    tasks.reverse()
    out = _check(io, tasks, NEW, NEW, batch_size=16)
    a = out.column("a").to_pylist()
    files_in_order = [x // 37 for x in a]
    assert sorted(set(files_in_order), reverse=True) == list(dict.fromkeys(files_in_order))
    assert all(x < y for x, y in itertools.pairwise(a) if x // 37 == y // 37)


def test_residual_on_a_sibling_of_a_projected_struct_child(io: LocalFileIO, tmp_path: Path) -> None:
    """The residual reads st.a, the projection only st.b: the struct is narrowed by id."""
    files = []
    for i in range(4):
        rows = [{"id": j, "st": {"a": j, "b": f"s{j}"}, "li": [], "m": {}} for j in range(i * 5, i * 5 + 5)]
        files.append(
            _write(tmp_path / f"s{i}.parquet", pa.Table.from_pylist(rows, schema=schema_to_arrow(NESTED)))
        )
    out = _check(
        io, [_task(f, parse("st.a > 6 and id < 18")) for f in files], NESTED.select(["st.b"]), NESTED
    )
    assert out.column("st").to_pylist() == [{"b": f"s{j}"} for j in range(7, 18)]


def test_nan_rows_are_kept_by_filters_that_keep_nan(io: LocalFileIO, tmp_path: Path) -> None:
    """Parquet statistics leave NaN out; a filter on a float column must not prune by them."""
    schema = Schema(NestedField(1, "x", DoubleType()), NestedField(2, "id", LongType()))
    files = [
        _write(
            tmp_path / f"x{i}.parquet",
            pa.table({"x": [5.0, float("nan"), 5.0], "id": [i, i, i]}, schema=schema_to_arrow(schema)),
        )
        for i in range(3)
    ]
    ids = schema.select(["id"])  # NaN != NaN would fail the row comparison
    assert _check(io, [_task(f, parse("x != 5")) for f in files], ids, schema).num_rows == 3
    assert _check(io, [_task(f, parse("x is nan")) for f in files], ids, schema).num_rows == 3
