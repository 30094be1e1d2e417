"""write_data_files: file layout, rolling, partition grouping, DataFile contents."""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.arrow.schema import schema_to_arrow
from icefloe.arrow.writer import write_data_files
from icefloe.errors import SchemaMismatchError
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)
from icefloe.spec.values import from_bytes

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "ts", TimestampType()),
    NestedField(4, "info", StructType(NestedField(5, "day", DateType()))),
)


def rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "cat": [["a", "b", None][i % 3] for i in ids],
            "ts": pa.array([i * 3_600_000_000 for i in ids], pa.timestamp("us")),
            "info": [{"day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 2)} for i in ids],
        }
    )


def local(path: str) -> str:
    return path.removeprefix("file://")


def test_unpartitioned_write_returns_a_complete_data_file(io, meta_factory, location) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA)
    wid = uuid.UUID(int=7)
    files = write_data_files(io, meta, rows(10), write_uuid=wid)
    assert len(files) == 1
    f = files[0]
    assert isinstance(f, DataFile)
    assert f.content == DataFileContent.DATA and f.file_format == FileFormat.PARQUET
    assert f.file_path == f"{location}/data/00000-0-{wid}-00001.parquet"
    assert f.partition == () and f.spec_id == 0
    assert f.record_count == 10
    assert f.file_size_in_bytes == os.path.getsize(local(f.file_path))
    assert f.value_counts == {1: 10, 2: 10, 3: 10, 5: 10}
    assert f.null_value_counts == {1: 0, 2: 3, 3: 0, 5: 0}
    assert from_bytes(LongType(), f.lower_bounds[1]) == 0 and from_bytes(LongType(), f.upper_bounds[1]) == 9
    assert from_bytes(DateType(), f.upper_bounds[5]) == 19724
    pf = pq.ParquetFile(local(f.file_path))
    assert f.split_offsets == tuple(
        pf.metadata.row_group(i).column(0).dictionary_page_offset for i in range(pf.metadata.num_row_groups)
    )
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"
    # Field ids are in the Parquet schema; the data reads back equal.
    assert pf.schema_arrow.field("id").metadata[b"PARQUET:field_id"] == b"1"
    assert pf.read().cast(schema_to_arrow(SCHEMA)).equals(rows(10).cast(schema_to_arrow(SCHEMA)))


def test_decimals_use_javas_physical_types_and_bounds(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    from decimal import Decimal

    schema = Schema(
        NestedField(1, "small", DecimalType(9, 2)),
        NestedField(2, "mid", DecimalType(15, 2)),
        NestedField(3, "wide", DecimalType(38, 10)),
    )
    values = [Decimal("-12.50"), Decimal("3.25"), None]
    data = pa.table(
        {
            "small": pa.array(values, pa.decimal128(9, 2)),
            "mid": pa.array(values, pa.decimal128(15, 2)),
            "wide": pa.array(
                [v if v is None else v.quantize(Decimal("1e-10")) for v in values], pa.decimal128(38, 10)
            ),
        }
    )
    (f,) = write_data_files(io, meta_factory(schema), data)
    pf = pq.ParquetFile(local(f.file_path))
    physical = [pf.schema.column(i).physical_type for i in range(3)]
    assert physical == ["INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"]
    assert from_bytes(DecimalType(9, 2), f.lower_bounds[1]) == Decimal("-12.50")
    assert from_bytes(DecimalType(15, 2), f.upper_bounds[2]) == Decimal("3.25")
    assert from_bytes(DecimalType(38, 10), f.upper_bounds[3]) == Decimal("3.25")
    assert pf.read().column("mid").to_pylist() == values


def test_empty_input_writes_nothing(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    assert write_data_files(io, meta_factory(SCHEMA), rows(0)) == []


def test_properties_choose_path_codec(io, meta_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data_path = str(tmp_path / "elsewhere")
    meta = meta_factory(
        SCHEMA, properties={"write.data.path": data_path, "write.parquet.compression-codec": "snappy"}
    )
    (f,) = write_data_files(io, meta, rows(3))
    assert f.file_path.startswith(data_path + "/00000-0-")
    assert pq.ParquetFile(local(f.file_path)).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_rolls_to_new_files_at_the_target_size(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA)
    batches = [b for i in range(20) for b in rows(500, i * 500).to_batches()]
    files = write_data_files(
        io, meta, pa.RecordBatchReader.from_batches(batches[0].schema, batches), target_file_size_bytes=4096
    )
    assert len(files) > 2
    assert sum(f.record_count for f in files) == 10_000
    names = [f.file_path.rsplit("-", 1)[1] for f in files]
    assert names == [f"{i:05d}.parquet" for i in range(1, len(files) + 1)]
    for f in files:
        assert f.file_size_in_bytes == os.path.getsize(local(f.file_path))
        assert pq.ParquetFile(local(f.file_path)).metadata.num_rows == f.record_count
    ids = pa.concat_tables([pq.read_table(local(f.file_path)) for f in files]).column("id")
    assert sorted(ids.to_pylist()) == list(range(10_000))


def test_partitioned_write_groups_rows_and_names_paths(io, meta_factory, location) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA, ["cat", "day(ts)"])
    files = write_data_files(io, meta, rows(48))
    assert {f.partition for f in files} == {(c, d) for c in ("a", "b", None) for d in (0, 1)}
    for f in files:
        data = pq.read_table(local(f.file_path))
        cat, day = f.partition
        assert set(data.column("cat").to_pylist()) == {cat}
        days = pc.cast(pc.cast(data.column("ts"), pa.date32()), pa.int32()).to_pylist()
        assert set(days) == {day}
        assert f.record_count == data.num_rows
    paths = {f.file_path.rsplit("/", 1)[0] for f in files}
    assert f"{location}/data/cat=a/ts_day=1970-01-01" in paths
    assert f"{location}/data/cat=null/ts_day=1970-01-02" in paths


def test_partition_by_nested_struct_field(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA, ["info.day"])
    files = write_data_files(io, meta, rows(10))
    assert sorted(f.partition for f in files) == [(19723,), (19724,)]


def test_schema_errors_happen_before_any_file_is_written(io, meta_factory, location) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA)
    with pytest.raises(SchemaMismatchError, match="'extra'"):
        write_data_files(io, meta, rows(3).append_column("extra", pa.array([1, 2, 3])))
    assert not os.path.exists(location)


def test_failure_in_a_later_batch_deletes_written_files(io, meta_factory, location) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA)
    good = rows(2000).to_batches()[0]
    bad = pa.RecordBatch.from_pydict({"id": [1, None]}, schema=pa.schema([pa.field("id", pa.int64())]))

    def batches():  # type: ignore[no-untyped-def]
        yield good
        yield bad

    with pytest.raises(SchemaMismatchError, match="'id'"):
        write_data_files(io, meta, batches(), target_file_size_bytes=1)
    leftovers = [p for _, _, fs in os.walk(location) for p in fs if p.endswith(".parquet")]
    assert leftovers == []


PART_SCHEMA = Schema(
    NestedField(1, "k", IntegerType()),
    NestedField(2, "s", StringType()),
    NestedField(3, "ts", TimestampType()),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            st.one_of(st.none(), st.text(max_size=6)),
            st.one_of(st.none(), st.integers(-(10**15), 10**15)),
        ),
        max_size=60,
    ),
    partition_by=st.sampled_from(
        [["bucket(4, k)"], ["truncate(2, s)", "k"], ["month(ts)", "bucket(3, s)"], ["hour(ts)"]]
    ),
)
def test_every_row_lands_in_the_file_of_its_partition(io, meta_factory, data, partition_by) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(PART_SCHEMA, partition_by)
    spec = meta.spec()
    table = pa.table(
        {
            "k": pa.array([r[0] for r in data], pa.int32()),
            "s": pa.array([r[1] for r in data], pa.string()),
            "ts": pa.array([r[2] for r in data], pa.timestamp("us")),
        }
    )
    files = write_data_files(io, meta, table)
    assert sum(f.record_count for f in files) == len(data)
    assert len({f.partition for f in files}) == len(files)
    for f in files:
        written = pq.read_table(local(f.file_path))
        for row in written.to_pylist():
            values = {"k": row["k"], "s": row["s"], "ts": None if row["ts"] is None else _micros(row["ts"])}
            expected = tuple(
                pf.transform.apply(
                    PART_SCHEMA.find_type(pf.source_id), values[PART_SCHEMA.column_name(pf.source_id)]
                )
                for pf in spec.fields
            )
            assert expected == f.partition


def _micros(value: dt.datetime) -> int:
    return (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def test_required_children_under_null_parents_write_and_read_back(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    from icefloe.arrow.reader import read_task
    from icefloe.expressions import AlwaysTrue
    from icefloe.scan import FileScanTask
    from icefloe.spec.types import ListType, MapType

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(
            2,
            "o",
            StructType(
                NestedField(
                    3, "req", StructType(NestedField(4, "x", IntegerType(), required=True)), required=True
                ),
                NestedField(5, "lst", ListType(6, IntegerType(), element_required=True), required=True),
                NestedField(7, "mp", MapType(8, StringType(), 9, IntegerType()), required=True),
            ),
        ),
    )
    rows_in = [
        {"id": 1, "o": {"req": {"x": 1}, "lst": [1, 2], "mp": [("a", 1)]}},
        {"id": 2, "o": None},
    ]
    loose = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field(
                "o",
                pa.struct(
                    [
                        pa.field("req", pa.struct([pa.field("x", pa.int32())])),
                        pa.field("lst", pa.list_(pa.int32())),
                        pa.field("mp", pa.map_(pa.string(), pa.int32())),
                    ]
                ),
            ),
        ]
    )
    (f,) = write_data_files(io, meta_factory(schema), pa.Table.from_pylist(rows_in, schema=loose))
    out = pa.Table.from_batches(list(read_task(io, FileScanTask(f, AlwaysTrue()), schema, schema)))
    assert out.to_pylist() == rows_in
    assert f.null_value_counts == {1: 0, 4: 1}


def test_small_row_groups_give_several_split_offsets(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    meta = meta_factory(SCHEMA, properties={"write.parquet.row-group-size-bytes": "2048"})
    batches = [b for i in range(10) for b in rows(200, i * 200).to_batches()]
    (f,) = write_data_files(io, meta, batches)
    pf = pq.ParquetFile(local(f.file_path))
    assert pf.metadata.num_row_groups > 1
    assert len(f.split_offsets) == pf.metadata.num_row_groups
    assert f.record_count == 2000


def test_identity_partition_on_uuid_and_null_keys(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    from icefloe.spec.types import UUIDType

    schema = Schema(NestedField(1, "u", UUIDType()), NestedField(2, "v", IntegerType()))
    u = uuid.UUID(int=12345)
    table = pa.table(
        {"u": pa.array([u.bytes, None, u.bytes], pa.uuid()), "v": pa.array([1, 2, 3], pa.int32())}
    )
    files = write_data_files(io, meta_factory(schema, ["u"]), table)
    assert sorted(((f.partition, f.record_count) for f in files), key=str) == sorted(
        [((u,), 2), ((None,), 1)], key=str
    )


def _one_chunk(n: int) -> pa.Table:
    table = rows(n).combine_chunks()
    assert all(c.num_chunks == 1 for c in table.columns)
    return table


def _row_group_sizes(files: list[DataFile]) -> list[list[int]]:
    out = []
    for f in files:
        md = pq.ParquetFile(local(f.file_path)).metadata
        out.append([md.row_group(i).num_rows for i in range(md.num_row_groups)])
    return out


def test_one_big_chunk_is_cut_into_row_groups_of_the_configured_size(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    # Before: a single input chunk became a single row group whatever the property said.
    data = _one_chunk(20_000)
    bytes_per_row = data.nbytes / data.num_rows
    meta = meta_factory(
        SCHEMA, properties={"write.parquet.row-group-size-bytes": str(int(bytes_per_row * 1000))}
    )
    (f,) = write_data_files(io, meta, data)
    sizes = _row_group_sizes([f])[0]
    # Rows per row group are estimated from in-memory bytes per row: about 1000.
    assert 20 <= len(sizes) <= 21 and max(sizes) <= 1000 and min(sizes[:-1]) >= 950
    assert sum(sizes) == 20_000
    assert list(f.split_offsets) == sorted(f.split_offsets) and len(f.split_offsets) == len(sizes)
    back = pq.read_table(local(f.file_path)).cast(schema_to_arrow(SCHEMA))
    assert back.equals(data.cast(schema_to_arrow(SCHEMA)))


def test_one_big_chunk_rolls_files_at_a_tiny_target_size(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    data = _one_chunk(20_000)
    meta = meta_factory(SCHEMA, properties={"write.parquet.row-group-size-bytes": "16384"})
    files = write_data_files(io, meta, data, target_file_size_bytes=20_000)
    assert len(files) > 2
    sizes = _row_group_sizes(files)
    assert sum(map(len, sizes)) > len(files)  # several row groups, spread over several files
    assert [f.record_count for f in files] == [sum(s) for s in sizes]
    for f in files[:-1]:
        assert f.file_size_in_bytes >= 20_000  # rolled only once the target was reached
    ids = [i for f in files for i in pq.read_table(local(f.file_path)).column("id").to_pylist()]
    assert ids == list(range(20_000))  # every row, once, in order
    # Each file's metrics describe exactly its rows.
    for f in files:
        got = pq.read_table(local(f.file_path)).column("id")
        assert from_bytes(LongType(), f.lower_bounds[1]) == pc.min(got).as_py()
        assert from_bytes(LongType(), f.upper_bounds[1]) == pc.max(got).as_py()


def test_small_batches_are_gathered_into_full_row_groups(io, meta_factory) -> None:  # type: ignore[no-untyped-def]
    data = _one_chunk(4000)
    bytes_per_row = data.nbytes / data.num_rows
    meta = meta_factory(
        SCHEMA, properties={"write.parquet.row-group-size-bytes": str(int(bytes_per_row * 1000))}
    )
    (f,) = write_data_files(io, meta, data.to_batches(max_chunksize=7))
    sizes = _row_group_sizes([f])[0]
    assert sum(sizes) == 4000 and len(sizes) <= 5
    assert all(950 <= s <= 1050 for s in sizes[:-1])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 3000), row_group_rows=st.integers(1, 1500), partitioned=st.booleans())
def test_big_chunks_keep_every_row(io, meta_factory, n, row_group_rows, partitioned) -> None:  # type: ignore[no-untyped-def]
    data = _one_chunk(n)
    rg_bytes = max(1, int(data.nbytes / n * row_group_rows))
    meta = meta_factory(
        SCHEMA, ["cat"] if partitioned else [], {"write.parquet.row-group-size-bytes": str(rg_bytes)}
    )
    files = write_data_files(io, meta, data, target_file_size_bytes=8192)
    assert sum(f.record_count for f in files) == n
    ids = sorted(i for f in files for i in pq.read_table(local(f.file_path)).column("id").to_pylist())
    assert ids == list(range(n))
    for f, sizes in zip(files, _row_group_sizes(files), strict=True):
        assert len(f.split_offsets) == len(sizes) and sum(sizes) == f.record_count
