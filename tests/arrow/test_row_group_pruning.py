"""Row-group pruning in read_task: skipping row groups by their Parquet statistics never changes the
rows read, and a selective filter on sorted data decodes only the row groups it needs."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow import reader
from icefloe.arrow.reader import read_task
from icefloe.arrow.schema import schema_to_arrow
from icefloe.expressions import AlwaysTrue, BooleanExpression, and_, col, not_, or_
from icefloe.io.local import LocalFileIO
from icefloe.manifest import DataFile, FileFormat
from icefloe.scan.task import FileScanTask
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
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    UUIDType,
)

IO = LocalFileIO()

# What the files hold; the table reads some columns promoted and has columns the files lack.
FILE_SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "f", FloatType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "d", DateType()),
    NestedField(5, "ts", TimestampType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "st", StructType(NestedField(8, "x", IntegerType()))),
    NestedField(11, "bin", BinaryType()),
    NestedField(12, "u", UUIDType()),
)
TABLE_SCHEMA = Schema(
    NestedField(1, "i", LongType()),
    NestedField(2, "f", DoubleType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "d", DateType()),
    NestedField(5, "ts", TimestampType()),
    NestedField(6, "dec", DecimalType(12, 2)),
    NestedField(
        7,
        "st",
        StructType(
            NestedField(8, "x", IntegerType()),
            NestedField(13, "y", LongType()),
            NestedField(14, "z", IntegerType(), initial_default=3),
        ),
    ),
    NestedField(9, "missing", IntegerType()),
    NestedField(10, "dflt", IntegerType(), initial_default=7),
    NestedField(11, "bin", BinaryType()),
    NestedField(12, "u", UUIDType()),
)


def _file_arrow_schema(ts_unit: str) -> pa.Schema:
    """The file schema with ``ts`` stored in ``ts_unit``, as other writers may do."""
    base = schema_to_arrow(FILE_SCHEMA)
    i = base.get_field_index("ts")
    return base.set(i, base.field(i).with_type(pa.timestamp(ts_unit)))


def write(
    tmp: Path, rows: list[dict[str, Any]], row_group_size: int, ts_unit: str = "ns", **kwargs: Any
) -> DataFile:
    table = pa.Table.from_pylist(rows, schema=_file_arrow_schema(ts_unit))
    path = tmp / f"data-{uuid.uuid4().hex}.parquet"
    pq.write_table(table, str(path), row_group_size=row_group_size, store_schema=False, **kwargs)
    return DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=table.num_rows,
        file_size_in_bytes=os.path.getsize(path),
    )


def read(data_file: DataFile, residual: BooleanExpression, prune: bool, **kwargs: Any) -> pa.Table:
    old = reader.PRUNE_ROW_GROUPS
    reader.PRUNE_ROW_GROUPS = prune
    try:
        task = FileScanTask(data_file, residual)
        batches = list(read_task(IO, task, TABLE_SCHEMA, TABLE_SCHEMA, **kwargs))
    finally:
        reader.PRUNE_ROW_GROUPS = old
    return pa.Table.from_batches(batches, schema=schema_to_arrow(TABLE_SCHEMA))


EPOCH = dt.datetime(1970, 1, 1)


def _row(
    i: int | None, f: float | None, s: str | None, nanos: int | None, x: int | None, null_struct: bool
) -> dict[str, Any]:
    return {
        "i": i,
        "f": f,
        "s": s,
        "d": None if i is None else dt.date(2000, 1, 1) + dt.timedelta(days=i),
        # Nanosecond values off the microsecond grid exercise the truncating conversion.
        "ts": None if nanos is None else pa.scalar(nanos, pa.timestamp("ns")).as_py(),
        "dec": None if i is None else Decimal(i) / 4,
        "st": None if null_struct else {"x": x},
        "bin": None if s is None else s.encode(),
        "u": None if i is None else uuid.UUID(int=i % 7).bytes,
    }


SMALL = st.integers(-30, 30)
rows_strategy = st.lists(
    st.builds(
        _row,
        st.none() | SMALL,
        st.none() | st.sampled_from([float("nan"), -0.0, 0.0, 1.5, -2.5, float("inf")]),
        st.none() | st.sampled_from(["", "a", "ab", "b", "é", "zz", "\U0001f600"]),
        st.none() | st.integers(-3_000, 3_000),
        st.none() | SMALL,
        st.booleans(),
    ),
    min_size=1,
    max_size=120,
)


def predicates() -> st.SearchStrategy[BooleanExpression]:
    ordered = st.sampled_from(["<", "<=", ">", ">=", "==", "!="])
    cmp = {
        "<": lambda c, v: c < v,
        "<=": lambda c, v: c <= v,
        ">": lambda c, v: c > v,
        ">=": lambda c, v: c >= v,
        "==": lambda c, v: c == v,
        "!=": lambda c, v: c != v,
    }

    def compare(name: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[BooleanExpression]:
        return st.builds(lambda op, v: cmp[op](col(name), v), ordered, values)

    leaves = st.one_of(
        compare("i", SMALL),
        compare("f", st.sampled_from([-1.0, 0.0, 1.5, 2.0])),
        compare("s", st.sampled_from(["", "a", "b", "c", "é"])),
        compare("d", st.builds(lambda i: dt.date(2000, 1, 1) + dt.timedelta(days=i), SMALL)),
        compare("ts", st.builds(lambda us: EPOCH + dt.timedelta(microseconds=us), st.integers(-4, 4))),
        compare("dec", st.builds(lambda i: Decimal(i) / 4, SMALL)),
        compare("st.x", SMALL),
        compare("missing", SMALL),
        compare("dflt", st.integers(5, 9)),
        compare("bin", st.sampled_from([b"", b"a", b"b"])),
        compare("st.y", SMALL),
        compare("st.z", st.integers(2, 4)),
        st.builds(lambda v: col("u") == uuid.UUID(int=v), st.integers(0, 8)),
        st.builds(
            lambda n, vs: col(n).isin(vs),
            st.sampled_from(["i", "st.x"]),
            st.lists(SMALL, min_size=1, max_size=3),
        ),
        st.builds(
            lambda n, vs: col(n).notin(vs),
            st.sampled_from(["i", "st.x"]),
            st.lists(SMALL, min_size=1, max_size=3),
        ),
        st.builds(
            lambda n: col(n).is_null(),
            st.sampled_from(["i", "f", "s", "st.x", "missing", "dflt", "st.y", "st.z"]),
        ),
        st.builds(
            lambda n: col(n).is_not_null(), st.sampled_from(["i", "f", "s", "st.x", "missing", "dflt"])
        ),
        st.just(col("f").is_nan()),
        st.just(col("f").is_not_nan()),
        st.builds(lambda p: col("s").startswith(p), st.sampled_from(["", "a", "z", "é"])),
        st.builds(lambda p: col("s").not_startswith(p), st.sampled_from(["", "a", "z"])),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(and_, inner, inner), st.builds(or_, inner, inner), st.builds(not_, inner)
        ),
        max_leaves=4,
    )


@settings(max_examples=60)
@given(
    rows=rows_strategy,
    row_group_size=st.integers(1, 40),
    sort=st.booleans(),
    residual=predicates(),
    batch_size=st.sampled_from([5, 131_072]),
)
def test_pruning_never_changes_the_rows_read(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[dict[str, Any]],
    row_group_size: int,
    sort: bool,
    residual: BooleanExpression,
    batch_size: int,
) -> None:
    if sort:  # sorted data gives tight per-row-group bounds, so pruning really happens
        rows = sorted(rows, key=lambda r: (r["i"] is None, r["i"] or 0))
    f = write(tmp_path_factory.mktemp("prune"), rows, row_group_size)
    pruned = read(f, residual, prune=True, batch_size=batch_size)
    full = read(f, residual, prune=False, batch_size=batch_size)
    # repr: NaN != NaN, but prints the same
    assert repr(pruned.to_pylist()) == repr(full.to_pylist())


@pytest.fixture
def decoded_row_groups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    original = reader._raw_batches

    def spy(
        pf: pq.ParquetFile, row_groups: list[int], columns: list[str], batch_size: int
    ) -> Iterator[pa.RecordBatch]:
        seen.extend(row_groups)
        return original(pf, row_groups, columns, batch_size)

    monkeypatch.setattr(reader, "_raw_batches", spy)
    return seen


def _sorted_rows(n: int) -> list[dict[str, Any]]:
    return [_row(i, float(i), f"s{i:04d}", i * 1000, i, False) for i in range(n)]


def test_selective_filter_on_sorted_column_decodes_only_matching_row_groups(
    tmp_path: Path, decoded_row_groups: list[int]
) -> None:
    f = write(tmp_path, _sorted_rows(1000), 100)  # row groups of 100 rows: i in [100k, 100k + 99]
    out = read(f, (col("i") >= 250) & (col("i") < 420), prune=True)
    assert out.column("i").to_pylist() == list(range(250, 420))
    assert decoded_row_groups == [2, 3, 4]

    decoded_row_groups.clear()
    assert read(f, col("s") == "s0999", prune=True).num_rows == 1
    assert decoded_row_groups == [9]

    decoded_row_groups.clear()
    assert read(f, col("dec") < Decimal("50"), prune=True).num_rows == 200
    assert decoded_row_groups == [0, 1]

    decoded_row_groups.clear()
    assert read(f, col("i") > 5000, prune=True).num_rows == 0
    assert decoded_row_groups == []

    decoded_row_groups.clear()
    assert read(f, col("i") > 5000, prune=False).num_rows == 0
    assert decoded_row_groups == list(range(10))


def test_row_groups_proven_to_match_skip_the_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    filtered: list[int] = []
    original = reader._filter

    def spy(batch: pa.RecordBatch, keep: Any, expr: Any) -> pa.RecordBatch:
        filtered.append(batch.num_rows)
        return original(batch, keep, expr)

    monkeypatch.setattr(reader, "_filter", spy)
    f = write(tmp_path, _sorted_rows(1000), 100)
    # Row groups 2 and 4 are cut by the bounds; 3 lies inside them and is read without filtering
    # (batches of one row group each here; a batch spanning row groups is filtered unless all of
    # them are proven).
    out = read(f, (col("i") >= 250) & (col("i") < 420), prune=True, batch_size=100)
    assert out.column("i").to_pylist() == list(range(250, 420))
    assert filtered == [100, 100]
    filtered.clear()
    assert read(f, col("i") >= 0, prune=True).num_rows == 1000
    assert filtered == []
    # NaN counts are not in Parquet statistics: a float comparison is always filtered.
    filtered.clear()
    assert read(f, col("f") >= 0.0, prune=True).num_rows == 1000
    assert sum(filtered) == 1000
    # "x" sorts above every row group's max: every row differs from it, nothing is filtered.
    filtered.clear()
    assert read(f, col("s") != "x", prune=True).num_rows == 1000
    assert filtered == []


def test_columns_missing_from_the_file_prune_by_null_or_default(
    tmp_path: Path, decoded_row_groups: list[int]
) -> None:
    f = write(tmp_path, _sorted_rows(300), 100)
    assert read(f, col("missing") == 1, prune=True).num_rows == 0
    assert read(f, col("dflt") == 8, prune=True).num_rows == 0
    assert read(f, col("st.y") > 0, prune=True).num_rows == 0
    assert decoded_row_groups == []
    assert read(f, col("dflt") == 7, prune=True).num_rows == 300
    assert read(f, col("missing").is_null(), prune=True).num_rows == 300


def test_nan_is_never_ruled_out_by_min_max(tmp_path: Path) -> None:
    rows = [_row(i, float("nan") if i % 10 == 0 else float(i), "s", 0, 0, False) for i in range(50)]
    f = write(tmp_path, rows, 10)
    assert read(f, col("f").is_nan(), prune=True).num_rows == 5
    assert read(f, col("f").is_not_nan(), prune=True).num_rows == 45
    assert read(f, col("f") > 44.0, prune=True).num_rows == 5


def test_row_groups_without_statistics_are_read(tmp_path: Path, decoded_row_groups: list[int]) -> None:
    f = write(tmp_path, _sorted_rows(300), 100, write_statistics=False)
    assert read(f, col("i") >= 250, prune=True).num_rows == 50
    assert decoded_row_groups == [0, 1, 2]


def test_nanosecond_statistics_widen_to_the_microseconds_read(tmp_path: Path) -> None:
    # 1500 ns and -1500 ns read as 1 us and -1 us (truncated); the bounds must still cover them.
    rows = [_row(0, 0.0, "s", nanos, 0, False) for nanos in (-1500, 1500)]
    f = write(tmp_path, rows, 1)
    for us in (-2, -1, 1, 2):
        want = read(f, col("ts") == EPOCH + dt.timedelta(microseconds=us), prune=False).num_rows
        got = read(f, col("ts") == EPOCH + dt.timedelta(microseconds=us), prune=True).num_rows
        assert got == want


def test_files_without_field_ids_prune_through_the_name_mapping(
    tmp_path: Path, decoded_row_groups: list[int]
) -> None:
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"i": pa.array(range(300), pa.int32())}), str(path), row_group_size=100)
    f = DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=300,
        file_size_in_bytes=os.path.getsize(path),
    )
    schema = Schema(NestedField(1, "i", LongType()))
    task = FileScanTask(f, col("i") < 50)
    mapping = '[{"field-id": 1, "names": ["i"]}]'
    out = pa.Table.from_batches(list(read_task(IO, task, schema, schema, name_mapping=mapping)))
    assert out.num_rows == 50
    assert decoded_row_groups == [0]


def test_residual_always_true_reads_everything(tmp_path: Path, decoded_row_groups: list[int]) -> None:
    f = write(tmp_path, _sorted_rows(300), 100)
    assert read(f, AlwaysTrue(), prune=True).num_rows == 300
    assert decoded_row_groups == [0, 1, 2]


def test_nested_default_under_a_null_struct_is_null(tmp_path: Path) -> None:
    rows = [_row(i, 0.0, "s", 0, i, null_struct=i == 5) for i in range(10)]
    f = write(tmp_path, rows, 5)
    assert read(f, col("st.z").is_null(), prune=True).column("i").to_pylist() == [5]
    assert read(f, col("st.z") == 3, prune=True).num_rows == 9


@pytest.mark.parametrize("ts_unit", ["ms", "us", "ns"])
@pytest.mark.parametrize("decimal_as_integer", [False, True])
def test_physical_encodings_prune_like_they_read(
    tmp_path: Path, ts_unit: str, decimal_as_integer: bool
) -> None:
    rows = [_row(i, 0.0, "s", i * 700_000, i, False) for i in range(-20, 20)]
    if ts_unit == "ms":  # whole milliseconds only: the writer does not truncate silently
        for r in rows:
            r["ts"] = r["ts"].replace(microsecond=r["ts"].microsecond // 1000 * 1000)
    f = write(tmp_path, rows, 7, ts_unit=ts_unit, store_decimal_as_integer=decimal_as_integer)
    for us in (-9_000, -2_100, 0, 2_100, 3_500, 9_000):
        literal = EPOCH + dt.timedelta(microseconds=us)
        for expr in (col("ts") < literal, col("ts") >= literal, col("ts") == literal):
            assert read(f, expr, prune=True).equals(read(f, expr, prune=False))
    for i in (-21, -5, 0, 3, 19, 20):
        for expr in (col("dec") < Decimal(i) / 4, col("dec") == Decimal(i) / 4, col("dec") > Decimal(i) / 4):
            assert read(f, expr, prune=True).equals(read(f, expr, prune=False))
    assert read(f, col("dec") < Decimal(-19) / 4, prune=True).num_rows == 1


REF_TYPES = Path(os.environ["ICEFLOE_ORACLE_REF"]) / "hadoop" / "ref" / "types_v2"


def test_iceberg_java_statistics_prune_like_they_read() -> None:
    """Parquet written by Iceberg Java (parquet-mr statistics, its physical encodings of every
    type): for each primitive column and values taken from the data, pruning changes no result."""
    if not REF_TYPES.is_dir():
        pytest.skip("Iceberg Java reference tables not generated (see tests/interop)")
    versions = sorted(
        REF_TYPES.glob("metadata/v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0])
    )
    metadata = json.loads(versions[-1].read_text())
    schema = Schema.from_json(
        next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    )
    files = []
    for path in REF_TYPES.glob("metadata/*-m*.avro"):
        with open(path, "rb") as fh:
            for r in fastavro.reader(fh):
                if r["status"] != 2:  # type: ignore[call-overload,index]
                    d = r["data_file"]  # type: ignore[call-overload,index]
                    files.append(
                        DataFile(
                            file_path=str(d["file_path"]).removeprefix("file:"),
                            file_format=FileFormat.PARQUET,
                            partition=(),
                            record_count=int(d["record_count"]),
                            file_size_in_bytes=int(d["file_size_in_bytes"]),
                        )
                    )
    assert files
    checked = 0
    for field in schema.fields:
        if not isinstance(field.field_type, PrimitiveType) or isinstance(field.field_type, BooleanType):
            continue
        for f in files:
            values = _read_any(f, schema, AlwaysTrue(), True).column(field.name).drop_null().to_pylist()
            for v in values[:: max(1, len(values) // 2)][:2]:
                if isinstance(v, float) and math.isnan(v):
                    continue
                for expr in (col(field.name) < v, col(field.name) == v, col(field.name) >= v):
                    pruned = _read_any(f, schema, expr, True)
                    full = _read_any(f, schema, expr, False)
                    assert repr(pruned.to_pylist()) == repr(full.to_pylist()), (field.name, v)
                    checked += 1
    assert checked > 0


def _read_any(f: DataFile, schema: Schema, residual: BooleanExpression, prune: bool) -> pa.Table:
    old = reader.PRUNE_ROW_GROUPS
    reader.PRUNE_ROW_GROUPS = prune
    try:
        batches = list(read_task(IO, FileScanTask(f, residual), schema, schema))
    finally:
        reader.PRUNE_ROW_GROUPS = old
    return pa.Table.from_batches(batches, schema=schema_to_arrow(schema))
