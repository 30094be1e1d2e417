"""Deliberately broken files: whatever is wrong with a file the table references, every operation
that reads it raises a typed error naming the file (never a raw pyarrow, zlib or fastavro
exception) and leaves the table as it was; a purge drops the table anyway and reports the files it
could not read.

The broken files are made in each test from files icefloe just wrote, and named after what they
break (``truncated_footer``, ``damaged_column_chunk``, ...). A property test at the end mutates
random bytes of small files of each kind.
"""

from __future__ import annotations

import contextlib
import io as stdio
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import icefloe
from icefloe.arrow.apply_deletes import DeleteLoader, default_delete_loader
from icefloe.arrow.deletes import write_equality_deletes
from icefloe.arrow.reader import read_task
from icefloe.catalog import Catalog
from icefloe.catalog._purge import PurgeReport
from icefloe.errors import CorruptFileError, FileIOError, IcefloeError, InvalidMetadataError
from icefloe.expressions import AlwaysTrue
from icefloe.io.local import local_path
from icefloe.io.puffin import deletion_vector_positions
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestFile,
    read_manifest,
    read_manifest_list,
)
from icefloe.manifest.manifest_list import clear_manifest_list_cache
from icefloe.manifest.reader import clear_manifest_cache
from icefloe.scan.task import FileScanTask
from icefloe.spec.table_metadata import read_metadata_json
from icefloe.table import Table

IDENT = ("db", "t")
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string()), pa.field("s", pa.string())]
)


def _rows(ids: range, part: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": [part] * len(ids),
            "s": [f"value-{i * 7919 % 10007}" for i in ids],
        },
        schema=SCHEMA,
    )


# --------------------------------------------------------------------------- what breaks a file


def truncated_footer(data: bytes) -> bytes:
    return data[: len(data) // 2]


def text_not_the_format(data: bytes) -> bytes:
    return b"this is a text file, not what the table thinks it is\n"


def zero_length(data: bytes) -> bytes:
    return b""


def damaged_column_chunk(data: bytes) -> bytes:
    """The middle third of the last row group's first column chunk inverted: page data a
    decompressor rejects (ZSTD and Snappy both fail on it), footer intact."""
    meta = pq.ParquetFile(stdio.BytesIO(data)).metadata
    col = meta.row_group(meta.num_row_groups - 1).column(0)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    size = col.total_compressed_size
    out = bytearray(data)
    for i in range(start + size // 3, start + 2 * size // 3):
        out[i] ^= 0xFF
    return bytes(out)


def garbage_in_the_middle(data: bytes) -> bytes:
    """Bytes after the header overwritten: an Avro file whose blocks do not decode."""
    out = bytearray(data)
    middle = len(out) // 2
    out[middle : middle + 64] = bytes(range(200, 256)) + b"\xff" * 8
    return bytes(out)


def missing(data: bytes) -> None:
    return None


# --------------------------------------------------------------------------- the table


@dataclass
class Tables:
    catalog: Catalog
    root: Path

    def table(self) -> Table:
        return self.catalog.load_table(IDENT)


def _clear_caches() -> None:
    # Caches key files by location and size; a test that breaks a file in place must forget them.
    clear_manifest_cache()
    clear_manifest_list_cache()
    default_delete_loader().clear()


def _make(tmp_path: Path, codec: str = "zstd", **properties: str) -> Tables:
    """A table partitioned by ``part`` with two data files in two snapshots: ids 0..299 in
    partition 'a', ids 1000..1299 in partition 'b'."""
    root = tmp_path / "wh"
    root.mkdir()
    cat = icefloe.load_catalog("corrupt", type="memory", warehouse=root.as_uri())
    cat.create_namespace("db")
    t = cat.create_table(
        IDENT,
        SCHEMA,
        partition_by=["part"],
        properties={"write.parquet.compression-codec": codec, **properties},
    )
    t.append(_rows(range(300), "a"))
    t.append(_rows(range(1000, 1300), "b"))
    _clear_caches()
    return Tables(cat, root)


def _manifest_of_first_snapshot(t: Table) -> ManifestFile:
    snapshot = t.current_snapshot()
    assert snapshot is not None
    first = t.snapshots()[0].snapshot_id
    return next(m for m in read_manifest_list(t.io, snapshot.manifest_list) if m.added_snapshot_id == first)


def _data_file_a(t: Table) -> str:
    return next(e.data_file.file_path for e in read_manifest(t.io, _manifest_of_first_snapshot(t)))


def _delete_file(t: Table) -> str:
    task = next(task for task in t.scan(row_filter="part = 'a'").plan_files() if task.delete_files)
    return task.delete_files[0].file_path


def _add_position_deletes(tables: Tables) -> None:
    t = tables.table()
    with t.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": "merge-on-read"})
        tx.delete("id = 5")


def _add_equality_deletes(tables: Tables) -> None:
    t = tables.table()
    files = write_equality_deletes(
        t.io, t.metadata, pa.table({"id": pa.array([7], pa.int64())}), ["id"], partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=files)


def _break(location: str, breaker: Callable[[bytes], bytes | None]) -> str:
    path = Path(local_path(location))
    broken = breaker(path.read_bytes())
    if broken is None:
        path.unlink()
    else:
        path.write_bytes(broken)
    _clear_caches()
    return location


@dataclass(frozen=True)
class Case:
    """``target`` names the file to break; ``survives`` the operations that do not need it."""

    name: str
    target: str
    breaker: Callable[[bytes], bytes | None]
    file_kind: str
    codec: str = "zstd"
    survives: frozenset[str] = frozenset()
    setup: Callable[[Tables], None] | None = None


_DATA_SURVIVES = frozenset({"plan_files"})
# Merge-on-read deletes locate rows without applying the existing deletes: they never read them.
_DELETES_SURVIVE = frozenset({"plan_files", "delete_merge_on_read"})

CASES = [
    Case("data_file_truncated_footer", "data", truncated_footer, "data file", survives=_DATA_SURVIVES),
    Case("data_file_is_text", "data", text_not_the_format, "data file", survives=_DATA_SURVIVES),
    Case("data_file_zero_length", "data", zero_length, "data file", survives=_DATA_SURVIVES),
    Case(
        "data_file_zstd_column_chunk_damaged",
        "data",
        damaged_column_chunk,
        "data file",
        "zstd",
        _DATA_SURVIVES,
    ),
    Case(
        "data_file_snappy_column_chunk_damaged",
        "data",
        damaged_column_chunk,
        "data file",
        "snappy",
        _DATA_SURVIVES,
    ),
    Case("data_file_missing", "data", missing, "data file", survives=_DATA_SURVIVES),
    Case("manifest_garbage_in_the_middle", "manifest", garbage_in_the_middle, "manifest"),
    Case("manifest_truncated", "manifest", truncated_footer, "manifest"),
    Case("manifest_is_text", "manifest", text_not_the_format, "manifest"),
    Case("manifest_list_truncated", "manifest_list", truncated_footer, "manifest list"),
    Case("manifest_list_zero_length", "manifest_list", zero_length, "manifest list"),
    Case("manifest_list_garbage_in_the_middle", "manifest_list", garbage_in_the_middle, "manifest list"),
    Case(
        "position_delete_file_truncated",
        "deletes",
        truncated_footer,
        "position delete file",
        survives=_DELETES_SURVIVE,
        setup=_add_position_deletes,
    ),
    Case(
        "position_delete_file_is_text",
        "deletes",
        text_not_the_format,
        "position delete file",
        survives=_DELETES_SURVIVE,
        setup=_add_position_deletes,
    ),
    Case(
        "equality_delete_file_column_chunk_damaged",
        "deletes",
        damaged_column_chunk,
        "equality delete file",
        survives=_DELETES_SURVIVE,
        setup=_add_equality_deletes,
    ),
]


def _target(t: Table, target: str) -> str:
    if target == "data":
        return _data_file_a(t)
    if target == "manifest":
        return _manifest_of_first_snapshot(t).manifest_path
    if target == "manifest_list":
        snapshot = t.current_snapshot()
        assert snapshot is not None
        return snapshot.manifest_list
    assert target == "deletes"
    return _delete_file(t)


def _delete(mode: str) -> Callable[[Table], object]:
    def run(t: Table) -> object:
        with t.transaction() as tx:
            tx.set_properties(**{"write.delete.mode": mode})
            return tx.delete("id = 5 or id = 6 or id = 1005")

    return run


OPERATIONS: dict[str, Callable[[Table], object]] = {
    "to_arrow": lambda t: t.scan().to_arrow(),
    "to_batches": lambda t: list(t.scan().to_batches()),
    "plan_files": lambda t: t.scan().plan_files(),
    "delete_copy_on_write": _delete("copy-on-write"),
    "delete_merge_on_read": _delete("merge-on-read"),
    "upsert": lambda t: t.upsert(_rows(range(5, 8), "a"), ["id"]),
}


def _files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file())


def _rows_of_b(t: Table) -> list[int] | None:
    """The ids of partition 'b', or None when planning needs the broken file too."""
    try:
        return sorted(t.scan(row_filter="part = 'b'").to_arrow().column("id").to_pylist())
    except IcefloeError:
        return None


def _check_names_file(error: IcefloeError, case: Case, path: str) -> None:
    assert path in str(error), "the message names the file"
    if case.breaker is missing:
        assert isinstance(error, FileIOError) and error.context["not_found"]
        assert error.context["path"] == path and error.context["file_kind"] == case.file_kind
        assert error.hint and "no longer exists" in error.hint
    else:
        assert isinstance(error, CorruptFileError), repr(error)
        assert isinstance(error, InvalidMetadataError)
        assert error.context == {"path": path, "file_kind": case.file_kind}
        assert error.hint


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_operation_raises_a_typed_error_naming_the_file(tmp_path: Path, case: Case) -> None:
    tables = _make(tmp_path, case.codec)
    if case.setup is not None:
        case.setup(tables)
    path = _break(_target(tables.table(), case.target), case.breaker)
    before = tables.table().metadata_location
    files_before = _files(tables.root)
    rows_b = _rows_of_b(tables.table())
    if case.target != "manifest_list":
        assert rows_b == list(range(1000, 1300)), "files the broken one does not touch stay readable"

    for name, operation in OPERATIONS.items():
        if name in case.survives:
            continue
        with pytest.raises(IcefloeError) as info:
            operation(tables.table())
        _check_names_file(info.value, case, path)
        # Nothing changed: no commit, no files left behind, the same rows.
        assert tables.table().metadata_location == before, name
        assert _files(tables.root) == files_before, name
        assert _rows_of_b(tables.table()) == rows_b, name

    for name in sorted(case.survives):
        OPERATIONS[name](tables.table())


def test_a_damaged_row_group_fails_in_the_middle_of_the_stream(tmp_path: Path) -> None:
    """Pages are decoded lazily: the batches before the damaged row group arrive, then the typed
    error (raised while iterating, not when the file is opened)."""
    tables = _make(tmp_path, "zstd", **{"write.parquet.row-group-size-bytes": "2048"})
    t = tables.table()
    path = _data_file_a(t)
    assert pq.ParquetFile(local_path(path)).metadata.num_row_groups > 2
    _break(path, damaged_column_chunk)
    (task,) = t.scan(row_filter="part = 'a'").plan_files()
    batches = read_task(t.io, task, t.schema(), t.schema(), batch_size=50)
    got = [next(batches)]
    with pytest.raises(CorruptFileError) as info:
        got.extend(batches)
    assert info.value.context == {"path": path, "file_kind": "data file"}
    assert "CRC checksum verification failed" in str(info.value)  # the page CRC catches it first
    assert sum(b.num_rows for b in got) >= 50
    with pytest.raises(CorruptFileError):
        list(t.scan().to_batches())


def test_a_truncated_metadata_file_is_a_typed_error(tmp_path: Path) -> None:
    tables = _make(tmp_path)
    location = tables.table().metadata_location
    _break(location, truncated_footer)
    with pytest.raises(CorruptFileError, match="not valid JSON") as info:
        tables.table()
    assert info.value.context["file_kind"] == "table metadata"
    data = Path(local_path(location)).read_bytes()
    with pytest.raises(CorruptFileError) as named:
        read_metadata_json(data, location)
    assert named.value.context == {"path": location, "file_kind": "table metadata"}
    assert location in str(named.value)


def test_loading_a_truncated_metadata_file_names_it(tmp_path: Path) -> None:
    tables = _make(tmp_path)
    location = _break(tables.table().metadata_location, truncated_footer)
    with pytest.raises(CorruptFileError) as info:
        tables.table()
    assert info.value.context["path"] == location


@pytest.mark.parametrize(
    "content",
    [
        '{"format-version": 2, "table-uuid": 7}',
        '{"format-version": "two"}',
        "[1, 2, 3]",
        '{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": 5}',
    ],
    ids=["uuid_is_a_number", "version_is_text", "not_an_object", "location_is_a_number"],
)
def test_metadata_of_the_wrong_types_is_a_typed_error(content: str) -> None:
    with pytest.raises(CorruptFileError) as info:
        read_metadata_json(content, "s3://b/t/metadata/v1.metadata.json")
    assert info.value.context == {"path": "s3://b/t/metadata/v1.metadata.json", "file_kind": "table metadata"}


def test_a_damaged_deletion_vector_names_its_puffin_file(tmp_path: Path) -> None:
    tables = _make(tmp_path)
    t = tables.table()
    data_path = _data_file_a(t)
    blob = bytes.fromhex("0000000cd1d33964") + b"\x01" * 8 + b"\0\0\0\0"  # bad bitmap, bad CRC
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + blob)
    dv = DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=str(puffin),
        file_format=FileFormat.PUFFIN,
        partition=("a",),
        record_count=1,
        file_size_in_bytes=puffin.stat().st_size,
        referenced_data_file=data_path,
        content_offset=4,
        content_size_in_bytes=len(blob) + 10,  # runs past the end of the file
    )
    for broken in (dv, replace(dv, content_size_in_bytes=len(blob))):
        with pytest.raises(CorruptFileError) as info:
            DeleteLoader().positions(t.io, data_path, [broken])
        assert info.value.context == {"path": str(puffin), "file_kind": "deletion vector"}


def test_a_data_file_in_another_format_is_unsupported_not_corrupt(tmp_path: Path) -> None:
    tables = _make(tmp_path)
    t = tables.table()
    (task,) = t.scan(row_filter="part = 'a'").plan_files()
    orc = FileScanTask(replace(task.file, file_format=FileFormat.ORC), AlwaysTrue())
    with pytest.raises(icefloe.UnsupportedFeatureError, match="only Parquet"):
        list(read_task(t.io, orc, t.schema(), t.schema()))


# --------------------------------------------------------------------------- purge


PURGE_CASES = [
    c
    for c in CASES
    if c.name
    in {
        "data_file_truncated_footer",
        "data_file_missing",
        "manifest_garbage_in_the_middle",
        "manifest_list_truncated",
        "position_delete_file_is_text",
    }
]


def _purge_tables(catalog_opener: Callable[..., Callable[[], Catalog]], kind: str, tmp_path: Path) -> Tables:
    root = tmp_path / "wh"
    root.mkdir()
    cat = catalog_opener(kind, root.as_uri())()
    cat.create_namespace("db")
    t = cat.create_table(IDENT, SCHEMA, partition_by=["part"])
    t.append(_rows(range(300), "a"))
    t.append(_rows(range(1000, 1300), "b"))
    _clear_caches()
    return Tables(cat, root)


def _check_purged(tables: Tables, report: PurgeReport | None, unreadable: Mapping[str, str]) -> None:
    assert report is not None
    assert not tables.catalog.table_exists(IDENT)
    if report.by_server:  # the REST protocol says nothing about a purge's outcome
        assert report == PurgeReport(by_server=True) and not report.complete
    else:
        assert {(p.path, p.file_kind) for p in report.unreadable} == set(unreadable.items())
        assert all(isinstance(p.error, IcefloeError) for p in report.unreadable)
        assert report.not_deleted == ()
        assert report.complete == (not unreadable)
    # The server purges the same local warehouse: the files tell what it did.
    left = _files(tables.root)
    if "table metadata" not in unreadable.values():
        assert not any(f.endswith(".metadata.json") for f in left), "every metadata file is deleted"
    for path in unreadable:
        assert local_path(path) not in left, "the unreadable file itself is deleted"
    if not unreadable:
        assert left == [], "everything the metadata reaches is deleted"


@pytest.mark.catalogs("memory", "sqlite", "rest")
@pytest.mark.parametrize("case", PURGE_CASES, ids=[c.name for c in PURGE_CASES])
def test_purge_drops_the_table_and_reports_what_it_could_not_read(
    catalog_kind: str, catalog_opener: Callable[..., Callable[[], Catalog]], tmp_path: Path, case: Case
) -> None:
    tables = _purge_tables(catalog_opener, catalog_kind, tmp_path)
    if case.setup is not None:
        case.setup(tables)
    path = _break(_target(tables.table(), case.target), case.breaker)
    report = tables.catalog.drop_table(IDENT, purge=True)
    followed = case.target in ("data", "deletes")  # content files are deleted, never read
    _check_purged(tables, report, {} if followed else {path: case.file_kind})
    if report is not None and not report.by_server and case.breaker is missing:
        assert report.already_missing == 1


@pytest.mark.catalogs("memory", "sqlite", "rest")
@pytest.mark.parametrize("breaker", [truncated_footer, text_not_the_format, zero_length, missing])
def test_purge_of_a_table_whose_metadata_file_is_broken(
    catalog_kind: str,
    catalog_opener: Callable[..., Callable[[], Catalog]],
    tmp_path: Path,
    breaker: Callable[[bytes], bytes | None],
) -> None:
    tables = _purge_tables(catalog_opener, catalog_kind, tmp_path)
    location = _break(tables.table().metadata_location, breaker)
    report = tables.catalog.drop_table(IDENT, purge=True)
    _check_purged(tables, report, {location: "table metadata"})
    if not report or report.by_server:
        return
    (problem,) = report.unreadable
    assert isinstance(problem.error, FileIOError if breaker is missing else CorruptFileError)


def test_purge_stops_before_dropping_when_the_metadata_format_is_unsupported(tmp_path: Path) -> None:
    """Metadata of a newer format is not damage: icefloe cannot find its files safely, so the
    table is left alone."""
    tables = _make(tmp_path)
    location = tables.table().metadata_location
    path = Path(local_path(location))
    path.write_text(path.read_text().replace('"format-version":2', '"format-version":4', 1))
    with pytest.raises(icefloe.UnsupportedFeatureError):
        tables.catalog.drop_table(IDENT, purge=True)
    assert tables.catalog.table_exists(IDENT)
    assert path.exists()


def test_purge_without_problems_is_complete_and_drop_without_purge_returns_none(tmp_path: Path) -> None:
    tables = _make(tmp_path)
    _add_position_deletes(tables)
    total = len(_files(tables.root))
    report = tables.catalog.drop_table(IDENT, purge=True)
    assert report == PurgeReport(deleted=total)
    assert report.complete and _files(tables.root) == []
    tables.catalog.create_table(IDENT, SCHEMA)
    assert tables.catalog.drop_table(IDENT) is None


@pytest.mark.parametrize("target", ["metadata", "manifest_list", "manifest"])
def test_purge_stops_before_dropping_when_a_file_cannot_be_reached(tmp_path: Path, target: str) -> None:
    """A storage failure (not damage, not absence) may pass on retry, and the files behind it
    would be lost for good once the table is dropped: nothing is dropped or deleted."""
    tables = _make(tmp_path)
    t = tables.table()
    location = t.metadata_location if target == "metadata" else _target(t, target)
    path = Path(local_path(location))
    path.unlink()
    path.mkdir()  # reading a directory fails with EISDIR
    files = _files(tables.root)
    try:
        with pytest.raises(FileIOError) as info:
            tables.catalog.drop_table(IDENT, purge=True)
        assert info.value.hint and "not dropped" in info.value.hint
        assert tables.catalog.table_exists(IDENT)
        assert _files(tables.root) == files
    finally:
        path.rmdir()


# --------------------------------------------------------------------------- property: random damage


class _MemoryInput:
    def __init__(self, location: str, data: bytes) -> None:
        self.location = location
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def exists(self) -> bool:
        return True

    def open(self, seekable: bool = True) -> IO[bytes]:
        return cast(IO[bytes], pa.BufferReader(self._data))


class _MemoryFileIO:
    """Serves one file's bytes from memory (the property tests write nothing to disk)."""

    properties: Mapping[str, str] = {}

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def new_input(self, location: str) -> _MemoryInput:
        return _MemoryInput(location, self.files[location])

    def new_output(self, location: str) -> Any:
        raise AssertionError("read only")

    def delete(self, location: str) -> None:
        raise AssertionError("read only")

    def exists(self, location: str) -> bool:
        return location in self.files


@dataclass(frozen=True)
class _Originals:
    table: Table
    task: FileScanTask
    data: bytes
    manifest: ManifestFile
    manifest_bytes: bytes
    manifest_list: str
    manifest_list_bytes: bytes
    metadata: bytes


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Originals]:
    root = tmp_path_factory.mktemp("originals")
    cat = icefloe.load_catalog("originals", type="memory", warehouse=root.as_uri())
    cat.create_namespace("db")
    t = cat.create_table(IDENT, SCHEMA, properties={"write.parquet.compression-codec": "snappy"})
    t.append(_rows(range(40), "a"))
    (task,) = t.scan().plan_files()
    snapshot = t.current_snapshot()
    assert snapshot is not None
    (manifest,) = read_manifest_list(t.io, snapshot.manifest_list)

    def read(location: str) -> bytes:
        return Path(local_path(location)).read_bytes()

    yield _Originals(
        t,
        task,
        read(task.file.file_path),
        manifest,
        read(manifest.manifest_path),
        snapshot.manifest_list,
        read(snapshot.manifest_list),
        read(t.metadata_location),
    )


@st.composite
def _damaged(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with a few bytes replaced, or cut short, or both."""
    data = bytearray(original)
    for _ in range(draw(st.integers(0, 8))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        del data[draw(st.integers(0, len(data))) :]
    return bytes(data)


def _reads_or_raises_typed(read: Callable[[], object]) -> None:
    with contextlib.suppress(IcefloeError):  # anything else fails the test with the raw exception
        read()


_PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPERTY
@given(data=st.data())
def test_random_damage_to_a_parquet_file_reads_or_raises_a_typed_error(
    originals: _Originals, data: st.DataObject
) -> None:
    o = originals
    io = _MemoryFileIO({o.task.file.file_path: data.draw(_damaged(o.data))})
    schema = o.table.schema()
    _reads_or_raises_typed(lambda: list(read_task(io, o.task, schema, schema, batch_size=16)))  # type: ignore[arg-type]


@_PROPERTY
@given(data=st.data())
def test_random_damage_to_a_manifest_reads_or_raises_a_typed_error(
    originals: _Originals, data: st.DataObject
) -> None:
    o = originals
    io = _MemoryFileIO({o.manifest.manifest_path: data.draw(_damaged(o.manifest_bytes))})
    _reads_or_raises_typed(lambda: list(read_manifest(io, o.manifest, cache=False)))  # type: ignore[arg-type]


@_PROPERTY
@given(data=st.data())
def test_random_damage_to_a_manifest_list_reads_or_raises_a_typed_error(
    originals: _Originals, data: st.DataObject
) -> None:
    o = originals
    io = _MemoryFileIO({o.manifest_list: data.draw(_damaged(o.manifest_list_bytes))})
    _reads_or_raises_typed(lambda: read_manifest_list(io, o.manifest_list, cache=False))  # type: ignore[arg-type]


@_PROPERTY
@given(data=st.data())
def test_random_damage_to_table_metadata_reads_or_raises_a_typed_error(
    originals: _Originals, data: st.DataObject
) -> None:
    damaged = data.draw(_damaged(originals.metadata))
    _reads_or_raises_typed(lambda: read_metadata_json(damaged, "file:///t/v1.metadata.json"))


@_PROPERTY
@given(data=st.data())
def test_random_damage_to_a_deletion_vector_decodes_or_raises_a_typed_error(data: st.DataObject) -> None:
    from pyroaring import BitMap64

    body = bytes.fromhex("d1d33964") + BitMap64([0, 3, 2**33 + 5, 70000]).serialize()
    blob = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    damaged = data.draw(_damaged(blob))
    _reads_or_raises_typed(lambda: deletion_vector_positions(damaged, path="file:///t/dv.puffin"))
