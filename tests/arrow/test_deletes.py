"""Delete files: the writers (position, equality), reading them back, and applying them in
read_task (positions across row groups and byte-range splits, null-safe equality keys, DVs)."""

from __future__ import annotations

import itertools
import struct
import uuid
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.arrow.apply_deletes import DeleteLoader
from icefloe.arrow.deletes import (
    DELETE_FILE_PATH_ID,
    DELETE_FILE_POS_ID,
    write_equality_deletes,
    write_position_deletes,
)
from icefloe.arrow.reader import read_task
from icefloe.arrow.schema import field_id_of, schema_to_arrow
from icefloe.arrow.writer import write_data_files
from icefloe.errors import InvalidMetadataError, SchemaError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import AlwaysTrue, BooleanExpression, col, parse
from icefloe.io.local import LocalFileIO
from icefloe.io.puffin import deletion_vector_positions
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.scan.task import FileScanTask
from icefloe.spec.partition import build_partition_spec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)

IO = LocalFileIO()


def make_metadata(
    location: str,
    schema: Schema,
    partition_by: tuple[str, ...] = (),
    properties: dict[str, str] | None = None,
) -> TableMetadata:
    spec = build_partition_spec(schema, list(partition_by))
    return TableMetadata(
        format_version=2,
        table_uuid=uuid.uuid4(),
        location=location,
        last_sequence_number=0,
        last_updated_ms=0,
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


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "st", StructType(NestedField(5, "x", IntegerType()), NestedField(6, "y", StringType()))),
    NestedField(7, "li", ListType(8, IntegerType())),
    NestedField(9, "dt", DateType()),
    NestedField(10, "dec", DecimalType(9, 2)),
    NestedField(11, "u", UUIDType()),
)


def meta(tmp_path: Path, schema: Schema = SCHEMA, partition_by: tuple[str, ...] = (), **props: str) -> Any:
    return make_metadata(str(tmp_path / f"t-{uuid.uuid4().hex[:8]}"), schema, partition_by, props)


def write_ids(tmp_path: Path, n: int, row_group_size: int) -> DataFile:
    """A data file with ids 0..n-1 (id == position) in row groups of ``row_group_size`` rows."""
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    path = tmp_path / f"data-{uuid.uuid4().hex}.parquet"
    pq.write_table(
        pa.table({"id": np.arange(n, dtype=np.int64)}, schema=schema_to_arrow(schema)),
        str(path),
        row_group_size=row_group_size,
        store_schema=False,
    )
    md = pq.ParquetFile(str(path)).metadata
    offsets = tuple(_rg_start(md.row_group(i)) for i in range(md.num_row_groups))
    return DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=n,
        file_size_in_bytes=path.stat().st_size,
        split_offsets=offsets,
    )


def _rg_start(rg: Any) -> int:
    col = rg.column(0)
    return int(col.dictionary_page_offset or col.data_page_offset)


def read_rows(
    task: FileScanTask, projected: Schema, table_schema: Schema, loader: DeleteLoader | None = None, **kw: Any
) -> pa.Table:
    loader = loader if loader is not None else DeleteLoader()
    batches = list(read_task(IO, task, projected, table_schema, delete_loader=loader, **kw))
    return pa.Table.from_batches(batches, schema=schema_to_arrow(projected))


# --------------------------------------------------------------------------- position writer


def test_position_deletes_round_trip(tmp_path: Path) -> None:
    md = meta(tmp_path)
    long_a = "s3://bucket/warehouse/db/table/data/" + "a" * 40 + ".parquet"
    long_b = "s3://bucket/warehouse/db/table/data/" + "b" * 40 + ".parquet"
    files = write_position_deletes(
        IO, md, {long_b: np.array([5, 1, 5, 3]), long_a: pa.array([9, 0], pa.int64())}
    )
    assert len(files) == 1
    f = files[0]
    assert f.content == DataFileContent.POSITION_DELETES
    assert f.file_format == FileFormat.PARQUET
    assert f.file_path.endswith("-deletes.parquet") and f.file_path.startswith(md.location + "/data/")
    assert f.record_count == 5
    assert f.referenced_data_file is None  # two data files: no single reference, no path bounds
    assert DELETE_FILE_PATH_ID not in (f.lower_bounds or {})
    assert f.value_counts is None and f.null_value_counts is None
    pf = pq.ParquetFile(f.file_path)
    fields = list(pf.schema_arrow)
    assert [field_id_of(x) for x in fields] == [DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID]
    assert [x.name for x in fields] == ["file_path", "pos"] and not any(x.nullable for x in fields)
    rows = pf.read().to_pylist()
    assert [(r["file_path"], r["pos"]) for r in rows] == [
        (long_a, 0),
        (long_a, 9),
        (long_b, 1),
        (long_b, 3),
        (long_b, 5),
    ]
    assert f.file_size_in_bytes == Path(f.file_path).stat().st_size


def test_single_data_file_keeps_full_path_bounds(tmp_path: Path) -> None:
    md = meta(tmp_path)
    path = "s3://bucket/warehouse/db/table/data/" + "x" * 60 + ".parquet"
    (f,) = write_position_deletes(IO, md, {path: [7, 2]})
    assert f.referenced_data_file == path
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert f.lower_bounds[DELETE_FILE_PATH_ID] == path.encode() == f.upper_bounds[DELETE_FILE_PATH_ID]
    assert f.lower_bounds[DELETE_FILE_POS_ID] == struct.pack("<q", 2)
    assert f.upper_bounds[DELETE_FILE_POS_ID] == struct.pack("<q", 7)


def test_position_deletes_roll_at_target_size(tmp_path: Path) -> None:
    md = meta(tmp_path)
    deletes = {f"s3://b/data/f{i:03d}.parquet": np.arange(0, 30_000, 3 + i) for i in range(40)}
    files = write_position_deletes(IO, md, deletes, target_file_size_bytes=20_000)
    assert len(files) > 1
    seen: list[tuple[str, int]] = []
    for f in files:
        t = pq.read_table(f.file_path)
        seen += list(zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True))
        paths = set(t.column(0).to_pylist())
        assert f.referenced_data_file == (next(iter(paths)) if len(paths) == 1 else None)
    assert seen == sorted(seen)
    assert seen == [(p, int(x)) for p in sorted(deletes) for x in deletes[p]]


def test_position_deletes_in_a_partition(tmp_path: Path) -> None:
    md = meta(tmp_path, partition_by=("bucket(4, id)",))
    (f,) = write_position_deletes(IO, md, {"s3://b/a.parquet": [1]}, spec_id=0, partition=(3,))
    assert f.partition == (3,) and f.spec_id == 0
    assert "/id_bucket=3/" in f.file_path


def test_position_writer_rejects_bad_input(tmp_path: Path) -> None:
    md = meta(tmp_path, partition_by=("bucket(4, id)",))
    with pytest.raises(ValidationError, match="partition"):
        write_position_deletes(IO, md, {"p": [1]}, partition=())
    with pytest.raises(ValidationError, match=">= 0"):
        write_position_deletes(IO, md, {"p": [-1]}, partition=(1,))
    with pytest.raises(ValidationError, match="integers"):
        write_position_deletes(IO, md, {"p": [1.5]}, partition=(1,))
    with pytest.raises(ValidationError, match="nulls"):
        write_position_deletes(IO, md, {"p": pa.array([1, None])}, partition=(1,))
    with pytest.raises(ValidationError, match="non-empty"):
        write_position_deletes(IO, md, {"": [1]}, partition=(1,))
    assert write_position_deletes(IO, md, {"p": []}, partition=(1,)) == []
    v3 = meta(tmp_path)
    object.__setattr__(v3, "format_version", 3)
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        write_position_deletes(IO, v3, {"p": [1]})


# --------------------------------------------------------------------------- equality writer


def test_equality_deletes_round_trip(tmp_path: Path) -> None:
    md = meta(tmp_path)
    rows = pa.table({"id": pa.array([3, 1], pa.int64()), "s": ["a", None]})
    (f,) = write_equality_deletes(IO, md, rows, [1, "s"])
    assert f.content == DataFileContent.EQUALITY_DELETES
    assert f.equality_ids == (1, 2)
    assert f.record_count == 2
    assert f.null_value_counts == {1: 0, 2: 1}
    t = pq.read_table(f.file_path)
    assert [field_id_of(x) for x in t.schema] == [1, 2]
    assert t.to_pylist() == [{"id": 3, "s": "a"}, {"id": 1, "s": None}]


@pytest.mark.parametrize(
    ("ids", "error", "match"),
    [
        (["d"], SchemaError, "floating-point"),
        (["st"], SchemaError, "not a primitive"),
        ([8], SchemaError, "list or map"),
        (["nope"], SchemaError, "nope"),
        ([], ValidationError, "at least one"),
        ([1, "id"], ValidationError, "twice"),
        (["s"], SchemaError, "lack the equality"),
    ],
)
def test_equality_columns_are_validated(tmp_path: Path, ids: list[Any], error: type, match: str) -> None:
    md = meta(tmp_path)
    rows = pa.table({"id": pa.array([1], pa.int64()), "d": [1.0], "st": [{"x": 1, "y": "a"}], "li": [[1]]})
    with pytest.raises(error, match=match):
        write_equality_deletes(IO, md, rows, ids)


def test_equality_key_inside_a_struct_is_allowed(tmp_path: Path) -> None:
    md = meta(tmp_path)
    (f,) = write_equality_deletes(
        IO, md, pa.table({"st": pa.array([{"x": 1}], pa.struct([("x", pa.int32())]))}), ["st.x"]
    )
    assert f.equality_ids == (5,)


# --------------------------------------------------------------------------- applying position deletes


def _split_tasks(
    f: DataFile,
    cut_points: list[int],
    deletes: tuple[DataFile, ...],
    residual: BooleanExpression | None = None,
) -> list[FileScanTask]:
    offsets = list(f.split_offsets or (0,))
    cuts = sorted({0, *(offsets[i % len(offsets)] for i in cut_points), f.file_size_in_bytes})
    residual = AlwaysTrue() if residual is None else residual
    return [FileScanTask(f, residual, deletes, lo, hi - lo) for lo, hi in itertools.pairwise(cuts)]


@given(
    n=st.integers(1, 700),
    row_group=st.integers(1, 250),
    deleted=st.sets(st.integers(0, 699), max_size=300),
    other=st.sets(st.integers(0, 699), max_size=20),
    cuts=st.lists(st.integers(0, 20), max_size=4),
    batch_size=st.sampled_from([7, 64, 131_072]),
    whole_file_rows=st.sampled_from([0, 1_000_000]),
    two_files=st.booleans(),
    id_range=st.none() | st.tuples(st.integers(-10, 710), st.integers(-10, 710)),
)
def test_position_deletes_match_a_numpy_model(
    tmp_path_factory: pytest.TempPathFactory,
    n: int,
    row_group: int,
    deleted: set[int],
    other: set[int],
    cuts: list[int],
    batch_size: int,
    whole_file_rows: int,
    two_files: bool,
    id_range: tuple[int, int] | None,
) -> None:
    """With an id range as residual, row groups outside it are skipped (ids are sorted), so the
    positions of the batches read must stay absolute in the file."""
    tmp = tmp_path_factory.mktemp("pos")
    f = write_ids(tmp, n, row_group)
    md = make_metadata(str(tmp / "t"), SCHEMA)
    positions = np.array(sorted(deleted), dtype=np.int64)
    half = len(positions) // 2 if two_files else len(positions)
    # Another data file's deletes share the delete file and must not leak into this one.
    first = write_position_deletes(
        IO, md, {f.file_path: positions[:half], tmp.as_posix() + "/x": sorted(other)}
    )
    second = write_position_deletes(IO, md, {f.file_path: positions[half:]})
    deletes = tuple(first + second)
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    loader = DeleteLoader(whole_file_rows=whole_file_rows)
    got: list[int] = []
    residual = None if id_range is None else (col("id") >= id_range[0]) & (col("id") < id_range[1])
    for task in _split_tasks(f, cuts, deletes, residual):
        got += read_rows(task, schema, schema, loader, batch_size=batch_size).column("id").to_pylist()
    model = np.arange(n)
    model = model[~np.isin(model, positions)]
    if id_range is not None:
        model = model[(model >= id_range[0]) & (model < id_range[1])]
    assert got == model.tolist()


def test_position_deletes_without_projected_columns_keep_counts(tmp_path: Path) -> None:
    f = write_ids(tmp_path, 100, 30)
    md = meta(tmp_path)
    deletes = tuple(write_position_deletes(IO, md, {f.file_path: [0, 31, 99]}))
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    assert read_rows(FileScanTask(f, AlwaysTrue(), deletes), Schema(), schema).num_rows == 97


def test_delete_file_reads_are_cached(tmp_path: Path) -> None:
    f = write_ids(tmp_path, 1000, 100)
    md = meta(tmp_path)
    deletes = tuple(write_position_deletes(IO, md, {f.file_path: [1, 500, 999]}))
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    loader = DeleteLoader()
    total = 0
    for task in _split_tasks(f, [2, 5, 8], deletes):
        total += read_rows(task, schema, schema, loader).num_rows
    assert total == 997
    assert loader.files_read == 1


# --------------------------------------------------------------------------- applying equality deletes


def _data(tmp_path: Path, md: Any, table: pa.Table) -> DataFile:
    (f,) = write_data_files(IO, md, table)
    return f


def _eq_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "s", StringType()),
        NestedField(3, "k", IntegerType()),
        NestedField(4, "st", StructType(NestedField(5, "x", IntegerType()))),
        NestedField(6, "dt", DateType()),
        NestedField(7, "dec", DecimalType(9, 2)),
        NestedField(8, "u", UUIDType()),
    )


U1, U2 = uuid.UUID(int=1), uuid.UUID(int=2)


def _eq_table() -> pa.Table:
    schema = _eq_schema()
    return pa.Table.from_pylist(
        [
            {"id": 0, "s": "a", "k": 1, "st": {"x": 1}, "dt": 0, "dec": Decimal("1.00"), "u": U1.bytes},
            {"id": 1, "s": "a", "k": None, "st": None, "dt": 1, "dec": Decimal("2.00"), "u": U2.bytes},
            {"id": 2, "s": None, "k": 1, "st": {"x": None}, "dt": 2, "dec": None, "u": None},
            {
                "id": 3,
                "s": None,
                "k": None,
                "st": {"x": 2},
                "dt": None,
                "dec": Decimal("1.00"),
                "u": U1.bytes,
            },
            {"id": 4, "s": "b", "k": 2, "st": {"x": 1}, "dt": 0, "dec": Decimal("3.00"), "u": U2.bytes},
        ],
        schema=_arrow_with_storage(schema),
    )


def _arrow_with_storage(schema: Schema) -> pa.Schema:
    # from_pylist cannot build uuid extension values; the writer conforms fixed_size_binary(16).
    arrow = schema_to_arrow(schema)
    return pa.schema([f.with_type(pa.binary(16)) if f.name == "u" else f for f in arrow])


EQ_CASES: list[tuple[str, list[str], dict[str, list[Any]], list[int]]] = [
    ("single column", ["s"], {"s": ["b"]}, [0, 1, 2, 3]),
    ("null deletes nulls", ["s"], {"s": [None]}, [0, 1, 4]),
    ("value and null", ["s"], {"s": ["a", None]}, [4]),
    ("multi-column", ["s", "k"], {"s": ["a", None], "k": [1, 1]}, [1, 3, 4]),
    ("multi-column null pair", ["s", "k"], {"s": [None], "k": [None]}, [0, 1, 2, 4]),
    ("multi-column no partial match", ["s", "k"], {"s": ["a"], "k": [2]}, [0, 1, 2, 3, 4]),
    ("struct field, null parent counts as null", ["st.x"], {"st": [{"x": None}]}, [0, 3, 4]),
    ("date", ["dt"], {"dt": [0]}, [1, 2, 3]),
    ("decimal", ["dec"], {"dec": [Decimal("1.00")]}, [1, 2, 4]),
    ("uuid", ["u"], {"u": [U2.bytes]}, [0, 2, 3]),
    ("nothing matches", ["k"], {"k": [42]}, [0, 1, 2, 3, 4]),
]


@pytest.mark.parametrize(("name", "ids", "rows", "expected"), EQ_CASES, ids=[c[0] for c in EQ_CASES])
def test_equality_deletes_are_null_safe_anti_joins(
    tmp_path: Path, name: str, ids: list[str], rows: dict[str, list[Any]], expected: list[int]
) -> None:
    schema = _eq_schema()
    md = meta(tmp_path, schema)
    f = _data(tmp_path, md, _eq_table())
    arrow = _arrow_with_storage(schema)
    delete_rows = pa.table({k: pa.array(v, arrow.field(k).type) for k, v in rows.items()})
    deletes = tuple(write_equality_deletes(IO, md, delete_rows, ids))
    task = FileScanTask(f, AlwaysTrue(), deletes)
    assert read_rows(task, schema, schema).column("id").to_pylist() == expected
    # Projection without the equality columns, and a residual on another column.
    projected = schema.select(["id"])
    assert read_rows(task, projected, schema).column("id").to_pylist() == expected
    residual = FileScanTask(f, parse("id >= 1"), deletes)
    assert read_rows(residual, projected, schema).column("id").to_pylist() == [i for i in expected if i >= 1]


def test_several_equality_files_and_positions_combine(tmp_path: Path) -> None:
    schema = _eq_schema()
    md = meta(tmp_path, schema)
    f = _data(tmp_path, md, _eq_table())
    deletes = (
        *write_equality_deletes(IO, md, pa.table({"s": ["b"]}), ["s"]),
        *write_equality_deletes(IO, md, pa.table({"s": [None]}), ["s"]),
        *write_equality_deletes(IO, md, pa.table({"k": pa.array([None], pa.int32())}), ["k"]),
        *write_position_deletes(IO, md, {f.file_path: [0]}),
    )
    task = FileScanTask(f, AlwaysTrue(), deletes)
    assert read_rows(task, schema.select(["s"]), schema).column("s").to_pylist() == []
    assert read_rows(FileScanTask(f, AlwaysTrue(), deletes[:1]), schema, schema).num_rows == 4


@given(
    keys=st.lists(st.tuples(st.none() | st.integers(0, 3), st.none() | st.sampled_from("ab")), max_size=60),
    deleted=st.lists(
        st.tuples(st.none() | st.integers(0, 3), st.none() | st.sampled_from("ab")), max_size=10
    ),
)
def test_equality_deletes_match_a_python_model(
    tmp_path_factory: pytest.TempPathFactory,
    keys: list[tuple[int | None, str | None]],
    deleted: list[tuple[int | None, str | None]],
) -> None:
    tmp = tmp_path_factory.mktemp("eq")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "k", IntegerType()),
        NestedField(3, "s", StringType()),
    )
    md = make_metadata(str(tmp / "t"), schema)
    data = pa.table(
        {
            "id": pa.array(range(len(keys)), pa.int64()),
            "k": pa.array([k for k, _ in keys], pa.int32()),
            "s": pa.array([s for _, s in keys], pa.string()),
        }
    )
    files = write_data_files(IO, md, data)
    rows = pa.table({"k": pa.array([k for k, _ in deleted], pa.int32()), "s": [s for _, s in deleted]})
    deletes = tuple(write_equality_deletes(IO, md, rows, ["k", "s"]))
    got: list[int] = []
    for f in files:
        got += read_rows(FileScanTask(f, AlwaysTrue(), deletes), schema, schema).column("id").to_pylist()
    dead = set(deleted)
    assert got == [i for i, key in enumerate(keys) if key not in dead]


# --------------------------------------------------------------------------- deletion vectors


def _dv_blob(positions: list[int]) -> bytes:
    from pyroaring import BitMap64

    body = bytes.fromhex("d1d33964") + BitMap64(positions).serialize()
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def test_deletion_vector_blob_round_trip() -> None:
    positions = [0, 3, 2**33 + 5]
    assert deletion_vector_positions(_dv_blob(positions)).tolist() == positions
    blob = bytearray(_dv_blob([1, 2]))
    blob[-1] ^= 0xFF
    with pytest.raises(InvalidMetadataError, match="CRC"):
        deletion_vector_positions(bytes(blob))
    with pytest.raises(InvalidMetadataError, match="magic"):
        deletion_vector_positions(struct.pack(">I", 8) + b"\0" * 12)


def test_deletion_vectors_are_applied(tmp_path: Path) -> None:
    f = write_ids(tmp_path, 300, 70)
    blob = _dv_blob([0, 69, 70, 299])
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + blob)  # the reader only needs the blob's byte range
    dv = DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=str(puffin),
        file_format=FileFormat.PUFFIN,
        partition=(),
        record_count=4,
        file_size_in_bytes=puffin.stat().st_size,
        referenced_data_file=f.file_path,
        content_offset=4,
        content_size_in_bytes=len(blob),
    )
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    got = read_rows(FileScanTask(f, AlwaysTrue(), (dv,)), schema, schema).column("id").to_pylist()
    assert got == [i for i in range(300) if i not in (0, 69, 70, 299)]
    wrong = DataFile(**{**{k: getattr(dv, k) for k in DataFile.__dataclass_fields__}, "record_count": 3})
    with pytest.raises(InvalidMetadataError, match="says 3"):
        read_rows(FileScanTask(f, AlwaysTrue(), (wrong,)), schema, schema)
