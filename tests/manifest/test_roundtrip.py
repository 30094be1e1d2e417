"""Manifest write -> read round trips, inheritance, counts and partition summaries."""

from __future__ import annotations

import dataclasses
import math
import pickle
import uuid
from decimal import Decimal
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.errors import FileIOError, ValidationError
from icefloe.io.local import LocalFileIO
from icefloe.manifest import (
    UNASSIGNED_SEQ,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    read_manifest,
    read_manifest_list,
    read_manifest_metadata,
    write_manifest_list,
)
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, IntegerType, NestedField, StringType
from icefloe.spec.values import to_bytes
from icefloe.transforms import IdentityTransform

from ._strategies import ALL_TYPES_SPEC, SCHEMA, data_files

if TYPE_CHECKING:
    from icefloe.io import FileIO

IO = LocalFileIO()
PARTITION_TYPE = ALL_TYPES_SPEC.partition_type(SCHEMA)
_names = count()

SMALL_SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "score", DoubleType(), False),
)
SMALL_SPEC = PartitionSpec(
    PartitionField(2, 1000, IdentityTransform(), "cat"),
    PartitionField(3, 1001, IdentityTransform(), "score"),
    spec_id=0,
)


def _path(tmp: Path) -> str:
    return str(tmp / f"m{next(_names)}.avro")


def _file(
    partition: tuple[object, ...] = ("a", 1.0),
    path: str | None = None,
    records: int = 10,
    content: DataFileContent = DataFileContent.DATA,
) -> DataFile:
    return DataFile(
        content=content,
        file_path=path or f"/data/{next(_names)}.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=records,
        file_size_in_bytes=100,
        spec_id=0,
    )


def _assigned(m: ManifestFile, seq: int) -> ManifestFile:
    return dataclasses.replace(
        m,
        sequence_number=seq,
        min_sequence_number=seq if m.min_sequence_number == UNASSIGNED_SEQ else m.min_sequence_number,
    )


@pytest.mark.parametrize("format_version", [2, 3])
@settings(max_examples=30)
@given(data=st.data())
def test_round_trip_all_partition_types(
    tmp_path_factory: pytest.TempPathFactory, format_version: int, data: st.DataObject
) -> None:
    tmp_path = tmp_path_factory.getbasetemp()
    content = data.draw(st.sampled_from(list(ManifestContent)))
    file_contents = (
        [DataFileContent.DATA]
        if content == ManifestContent.DATA
        else [DataFileContent.POSITION_DELETES, DataFileContent.EQUALITY_DELETES]
    )
    files = data.draw(
        st.lists(
            st.sampled_from(file_contents).flatmap(
                lambda c: data_files(
                    PARTITION_TYPE, ALL_TYPES_SPEC.spec_id, content=c, format_version=format_version
                )
            ),
            max_size=5,
        )
    )
    path = _path(tmp_path)
    with ManifestWriter(IO, path, ALL_TYPES_SPEC, SCHEMA, 42, content, format_version) as w:
        for f in files:
            w.add(f)
    manifest = w.close()
    assert manifest.added_files_count == len(files)
    entries = list(read_manifest(IO, _assigned(manifest, 7)))
    if format_version >= 3:
        # data files without a first_row_id get one inherited only when the list assigned one
        assert manifest.first_row_id is None
    assert [e.data_file for e in entries] == files
    for e in entries:
        assert (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) == (
            ManifestEntryStatus.ADDED,
            42,
            7,
            7,
        )


def test_v1_round_trip(tmp_path: Path) -> None:
    path = _path(tmp_path)
    f = dataclasses.replace(
        _file(("x", None)),
        column_sizes={1: 5},
        lower_bounds={1: b"\x01\x00\x00\x00"},
        split_offsets=(4,),
        sort_order_id=0,
    )
    with ManifestWriter(IO, path, SMALL_SPEC, SMALL_SCHEMA, 9, format_version=1) as w:
        w.add(f)
    m = w.close()
    meta = read_manifest_metadata(IO, path)
    assert meta["format-version"] == "1" and "content" not in meta
    # v1 manifests list no sequence numbers; a v1 manifest list says 0
    (entry,) = read_manifest(IO, dataclasses.replace(m, sequence_number=0, min_sequence_number=0))
    assert entry.data_file == f
    assert (entry.snapshot_id, entry.sequence_number, entry.file_sequence_number) == (9, 0, 0)
    with open(path, "rb") as fo:
        (raw,) = list(fastavro.reader(fo))
    assert raw["data_file"]["block_size_in_bytes"] == 64 * 1024 * 1024  # type: ignore[call-overload,index]


def test_v1_rejects_deletes(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="version 1"):
        ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 1, ManifestContent.DELETES, 1)


def test_entries_are_written_like_java(tmp_path: Path) -> None:
    """ADDED: writer's snapshot id, null sequence numbers. EXISTING: unchanged. DELETED: writer's
    snapshot id with the original sequence numbers."""
    path = _path(tmp_path)
    old = _file()
    older = _file()
    with ManifestWriter(IO, path, SMALL_SPEC, SMALL_SCHEMA, 30) as w:
        w.add(_file())
        w.existing(ManifestEntry(ManifestEntryStatus.ADDED, 10, 3, 4, old))
        w.delete(ManifestEntry(ManifestEntryStatus.EXISTING, 11, 5, 6, older))
    m = w.close()
    with open(path, "rb") as fo:
        raw = [
            (r["status"], r["snapshot_id"], r["sequence_number"], r["file_sequence_number"])  # type: ignore[call-overload,index]
            for r in fastavro.reader(fo)
        ]
    assert raw == [(1, 30, None, None), (0, 10, 3, 4), (2, 30, 5, 6)]
    assert m.min_sequence_number == 3  # live entries only
    entries = list(read_manifest(IO, _assigned(m, 8)))
    assert [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries] == [
        (ManifestEntryStatus.ADDED, 30, 8, 8),
        (ManifestEntryStatus.EXISTING, 10, 3, 4),
        (ManifestEntryStatus.DELETED, 30, 5, 6),
    ]
    live = list(read_manifest(IO, _assigned(m, 8), discard_deleted=True))
    assert [e.data_file.file_path for e in live] == [entries[0].data_file.file_path, old.file_path]


def test_add_keeps_an_explicit_data_sequence_number(tmp_path: Path) -> None:
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 30) as w:
        w.add(_file(), sequence_number=2)
    m = w.close()
    (e,) = read_manifest(IO, _assigned(m, 9))
    assert (e.sequence_number, e.file_sequence_number) == (2, 9)
    assert m.min_sequence_number == 2


def test_inheritance_of_null_snapshot_ids_and_sequence_numbers(tmp_path: Path) -> None:
    """Entries written by other writers (e.g. Java's appendManifest) may leave the snapshot id
    null; sequence numbers are inherited only by ADDED entries (or from a v1 sequence number 0)."""
    path = _path(tmp_path)
    with ManifestWriter(IO, path, SMALL_SPEC, SMALL_SCHEMA, 30) as w:
        w.add(_file())
    m = w.close()
    # rewrite the file with a null snapshot id and an EXISTING entry with null sequence numbers
    with open(path, "rb") as fo:
        reader = fastavro.reader(fo)
        schema = reader.writer_schema
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        (rec,) = list(reader)
    rec2 = dict(rec, status=0, snapshot_id=None)  # type: ignore[arg-type]
    rec = dict(rec, snapshot_id=None)  # type: ignore[arg-type]
    with open(path, "wb") as fo:
        fastavro.writer(fo, schema, [rec, rec2], metadata=meta)
    added, existing = read_manifest(IO, _assigned(m, 6))
    assert (added.snapshot_id, added.sequence_number, added.file_sequence_number) == (30, 6, 6)
    assert (existing.snapshot_id, existing.sequence_number, existing.file_sequence_number) == (
        30,
        None,
        None,
    )
    added, existing = read_manifest(IO, dataclasses.replace(m, sequence_number=0))
    assert existing.sequence_number == 0 and existing.file_sequence_number == 0
    # an unassigned manifest (not yet in a list) inherits nothing
    (added, _) = read_manifest(IO, m)
    assert added.sequence_number is None


def test_counts_and_partition_summaries(tmp_path: Path) -> None:
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 1) as w:
        w.add(_file(("b", 2.5), records=3))
        w.add(_file(("a", float("nan")), records=4))
        w.existing(ManifestEntry(ManifestEntryStatus.EXISTING, 1, 1, 1, _file((None, -0.0), records=5)))
        w.delete(ManifestEntry(ManifestEntryStatus.EXISTING, 1, 1, 1, _file(("z", 0.0), records=6)))
    m = w.close()
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (2, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (7, 5, 6)
    assert m.added_snapshot_id == 1 and m.sequence_number == UNASSIGNED_SEQ
    assert m.partition_spec_id == 0 and m.content == ManifestContent.DATA
    assert m.manifest_length == Path(m.manifest_path).stat().st_size
    cat, score = m.partitions or ()
    assert (cat.contains_null, cat.contains_nan) == (True, False)
    assert (cat.lower_bound, cat.upper_bound) == (b"a", b"z")  # deleted entries count, as in Java
    assert (score.contains_null, score.contains_nan) == (False, True)
    assert score.lower_bound == to_bytes(DoubleType(), -0.0)
    assert score.upper_bound == to_bytes(DoubleType(), 2.5)


def test_empty_and_all_null_summaries(tmp_path: Path) -> None:
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 1) as w:
        w.add(_file((None, None)))
    (cat, score) = w.close().partitions or ()
    assert cat.contains_null and cat.lower_bound is None and cat.upper_bound is None
    assert score.contains_nan is False


def test_writer_validation(tmp_path: Path) -> None:
    path = _path(tmp_path)
    w = ManifestWriter(IO, path, SMALL_SPEC, SMALL_SCHEMA, 1)
    with pytest.raises(ValidationError, match=r"delete manifest|data manifest"):
        w.add(_file(content=DataFileContent.POSITION_DELETES))
    with pytest.raises(ValidationError, match="partition spec 5"):
        w.add(dataclasses.replace(_file(), spec_id=5))
    with pytest.raises(ValidationError, match="1 partition values"):
        w.add(_file(("a",)))
    with pytest.raises(ValidationError, match="not a valid double"):
        w.add(_file(("a", "x")))
    with pytest.raises(ValidationError, match="not a valid string"):
        w.add(_file((1, 1.0)))
    with pytest.raises(ValidationError, match="inherited"):
        w.existing(ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _file()))
    w.add(_file())
    assert w.close().added_files_count == 1
    assert w.close().added_files_count == 1  # idempotent
    with pytest.raises(ValidationError, match="closed"):
        w.add(_file())
    with pytest.raises(FileIOError, match="already exists"):
        ManifestWriter(IO, path, SMALL_SPEC, SMALL_SCHEMA, 1)


def test_bad_metric_value_aborts_the_writer(tmp_path: Path) -> None:
    w = ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 1)
    with pytest.raises(ValidationError, match="cannot write manifest entry"):
        w.add(dataclasses.replace(_file(), record_count="many"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        w.close()


def test_decimal_and_uuid_partition_values_convert(tmp_path: Path) -> None:
    from icefloe.spec.types import DecimalType, UUIDType

    schema = Schema(NestedField(1, "d", DecimalType(9, 2)), NestedField(2, "u", UUIDType()))
    spec = PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "d"),
        PartitionField(2, 1001, IdentityTransform(), "u"),
    )
    u = uuid.UUID("f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb")
    f = dataclasses.replace(_file(), partition=(Decimal("1.5"), u))
    with ManifestWriter(IO, _path(tmp_path), spec, schema, 1) as w:
        w.add(f)
    (e,) = read_manifest(IO, _assigned(w.close(), 1))
    assert e.data_file.partition == (Decimal("1.50"), u)
    assert e.data_file.partition[0].as_tuple().exponent == -2
    with ManifestWriter(IO, _path(tmp_path), spec, schema, 1) as w, pytest.raises(ValidationError):
        w.add(dataclasses.replace(_file(), partition=(Decimal("1.234"), u)))


def test_partition_filter(tmp_path: Path) -> None:
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 1) as w:
        for cat in "abc":
            w.add(_file((cat, 1.0)))
    m = _assigned(w.close(), 1)
    got = [e.data_file.partition[0] for e in read_manifest(IO, m, partition_filter=lambda p: p[0] != "b")]
    assert got == ["a", "c"]


def test_model_objects_pickle_and_hash() -> None:
    f = dataclasses.replace(_file(), lower_bounds={1: b"x"})
    e = ManifestEntry(ManifestEntryStatus.ADDED, 1, 2, 3, f)
    assert pickle.loads(pickle.dumps(e)) == e
    assert hash(f) == hash(dataclasses.replace(f))
    assert not hasattr(f, "__dict__")
    assert FileFormat.parse("parquet") is FileFormat.PARQUET


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_manifest_list_round_trip(tmp_path: Path, format_version: int) -> None:
    with ManifestWriter(
        IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 20, format_version=format_version
    ) as w:
        w.add(_file(records=7))
    new = w.close()
    old = dataclasses.replace(
        new,
        manifest_path="/old.avro",
        sequence_number=3,
        min_sequence_number=2,
        added_snapshot_id=10,
        first_row_id=0 if format_version >= 3 else None,
    )
    path = _path(tmp_path)
    next_row_id = write_manifest_list(
        IO, path, 20, None, 4, [new, old], format_version, first_row_id=100 if format_version >= 3 else None
    )
    got = read_manifest_list(IO, path)
    if format_version == 1:
        assert [(m.sequence_number, m.min_sequence_number) for m in got] == [(0, 0), (0, 0)]
        assert got[0] == dataclasses.replace(new, sequence_number=0, min_sequence_number=0)
    else:
        assert got[0] == dataclasses.replace(
            new, sequence_number=4, min_sequence_number=4, first_row_id=100 if format_version >= 3 else None
        )
        assert got[1] == old
    assert next_row_id == (107 if format_version >= 3 else None)
    meta = read_manifest_metadata(IO, path)
    assert meta["snapshot-id"] == "20"
    assert meta["parent-snapshot-id"] == "null"
    assert meta["format-version"] == str(format_version)
    assert meta.get("sequence-number") == (None if format_version == 1 else "4")
    if format_version >= 3:
        # ADDED data files inherit first_row_id from the manifest
        (e,) = read_manifest(IO, got[0])
        assert e.data_file.first_row_id == 100


def test_manifest_list_refuses_foreign_unassigned_manifest(tmp_path: Path) -> None:
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 20) as w:
        w.add(_file())
    with pytest.raises(ValidationError, match="added by snapshot 20"):
        write_manifest_list(IO, _path(tmp_path), 21, 20, 5, [w.close()])


def test_manifest_list_parent_and_nan_summary(tmp_path: Path) -> None:
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 20) as w:
        w.add(_file(("a", math.nan)))
    path = _path(tmp_path)
    write_manifest_list(IO, path, 20, 19, 5, [w.close()])
    assert read_manifest_metadata(IO, path)["parent-snapshot-id"] == "19"
    (m,) = read_manifest_list(IO, path)
    assert m.partitions is not None and m.partitions[1].contains_nan is True


def test_unreadable_files_raise_typed_errors(tmp_path: Path) -> None:
    from icefloe.errors import InvalidMetadataError

    junk = tmp_path / "junk.avro"
    junk.write_bytes(b"not avro at all")
    m = ManifestFile(manifest_path=str(junk), manifest_length=15, partition_spec_id=0, added_snapshot_id=1)
    with pytest.raises(InvalidMetadataError, match="not a valid Avro file"):
        list(read_manifest(IO, m))
    with pytest.raises(InvalidMetadataError, match="not a valid Avro file"):
        read_manifest_list(IO, str(junk))
    other = tmp_path / "other.avro"
    with open(other, "wb") as fo:
        fastavro.writer(
            fo, {"type": "record", "name": "x", "fields": [{"name": "a", "type": "int"}]}, [{"a": 1}]
        )
    with pytest.raises(InvalidMetadataError, match="not a manifest"):
        list(read_manifest(IO, dataclasses.replace(m, manifest_path=str(other))))
    with pytest.raises(InvalidMetadataError, match="not a manifest list"):
        read_manifest_list(IO, str(other))
    with pytest.raises(FileIOError) as info:
        list(read_manifest(IO, dataclasses.replace(m, manifest_path=str(tmp_path / "missing.avro"))))
    assert info.value.context["not_found"]
    # a manifest list is not a manifest
    with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, 1) as w:
        w.add(_file())
    list_path = _path(tmp_path)
    write_manifest_list(IO, list_path, 1, None, 1, [w.close()])
    with pytest.raises(InvalidMetadataError, match="not a manifest"):
        list(read_manifest(IO, dataclasses.replace(m, manifest_path=list_path)))


# ----------------------------------------------------------------------------- fast reading paths


def _small_list(tmp_path: Path, snapshot_id: int = 20, n: int = 2) -> tuple[str, list[ManifestFile]]:
    written = []
    for i in range(n):
        with ManifestWriter(IO, _path(tmp_path), SMALL_SPEC, SMALL_SCHEMA, snapshot_id) as w:
            w.add(_file((f"c{i}", float(i))))
        written.append(w.close())
    path = _path(tmp_path)
    write_manifest_list(IO, path, snapshot_id, None, 5, written)
    return path, written


def test_fast_constructors_equal_keyword_ones() -> None:
    from icefloe.manifest import PartitionFieldSummary
    from icefloe.manifest._model import manifest_file, partition_field_summary

    s = PartitionFieldSummary(contains_null=True, contains_nan=False, lower_bound=b"a", upper_bound=b"b")
    fast_s = partition_field_summary(True, False, b"a", b"b")
    assert fast_s == s and hash(fast_s) == hash(s) and repr(fast_s) == repr(s)
    kw: dict[str, Any] = {f.name: f"v{i}" for i, f in enumerate(dataclasses.fields(ManifestFile))}
    kw["partitions"] = (s,)
    slow = ManifestFile(**kw)
    fast = manifest_file(*kw.values())
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert pickle.loads(pickle.dumps(fast)) == slow
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.manifest_path = "x"  # type: ignore[misc]


def test_summary_decodes_bounds_once_per_type() -> None:
    from icefloe.manifest import PartitionFieldSummary

    calls: list[Any] = []

    def decode(t: Any, b: bytes) -> Any:
        calls.append(t)
        return b.decode() if t == "str" else len(b)

    s = PartitionFieldSummary(False, None, b"ab", b"xyz")
    assert s.decoded_bounds("str", decode) == ("ab", "xyz")
    assert s.decoded_bounds("str", decode) == ("ab", "xyz")
    assert calls == ["str", "str"]  # lower and upper, once
    assert s.decoded_bounds("len", decode) == (2, 3)  # another type decodes again
    assert PartitionFieldSummary(True).decoded_bounds("str", decode) is None
    # the cache is not part of the value
    assert s == PartitionFieldSummary(False, None, b"ab", b"xyz")
    assert "decoded" not in repr(s)


def _counting_decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from icefloe.manifest import manifest_list as ml

    decoded: list[str] = []
    real = ml._read

    def counting(stream: Any, path: str) -> Any:
        decoded.append(path)
        return real(stream, path)

    monkeypatch.setattr(ml, "_read", counting)
    return decoded


def test_manifest_list_cache_serves_repeated_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from icefloe.manifest.manifest_list import clear_manifest_list_cache
    from icefloe.testing import CountingFileIO

    path, _ = _small_list(tmp_path)
    counting = CountingFileIO(IO)
    fio = cast("FileIO", counting)
    clear_manifest_list_cache()
    decoded = _counting_decodes(monkeypatch)
    first = read_manifest_list(fio, path)
    second = read_manifest_list(fio, path)
    assert decoded == [path]  # the second read came from the cache...
    assert counting.opened[path] == 2  # ...but opened the file, as without a cache
    assert first == second and first is not second  # each caller gets its own list
    assert all(a is b for a, b in zip(first, second, strict=True))  # of shared frozen objects
    first.clear()
    assert read_manifest_list(fio, path) == second
    assert read_manifest_list(fio, path, cache=False) == second
    assert decoded == [path, path]  # cache=False always decodes


def test_manifest_list_cache_drops_rewritten_location(tmp_path: Path) -> None:
    path, written = _small_list(tmp_path, n=2)
    assert len(read_manifest_list(IO, path)) == 2
    # A process reusing a location (deleted first: files are never overwritten) must not see the
    # old list.
    IO.delete(path)
    write_manifest_list(IO, path, 20, None, 5, written[:1])
    assert [m.manifest_path for m in read_manifest_list(IO, path)] == [written[0].manifest_path]


def test_manifest_list_cache_checks_the_file_size(tmp_path: Path) -> None:
    """A list replaced behind the cache's back (another process) is decoded again."""
    import shutil

    path, _ = _small_list(tmp_path, n=3)
    other, _ = _small_list(tmp_path, n=1)
    assert len(read_manifest_list(IO, path)) == 3
    Path(path).unlink()
    shutil.copyfile(other, path)
    assert len(read_manifest_list(IO, path)) == 1


def test_manifest_list_cache_is_bounded_and_can_be_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.manifest import manifest_list as ml

    paths = [_small_list(tmp_path, n=1)[0] for _ in range(4)]
    try:
        ml.set_manifest_list_cache_size(2)
        ml.clear_manifest_list_cache()
        decoded = _counting_decodes(monkeypatch)
        for p in paths:
            read_manifest_list(IO, p)
        assert len(ml._CACHE) == 2
        read_manifest_list(IO, paths[3])  # most recent: cached
        read_manifest_list(IO, paths[0])  # evicted: decoded again
        assert decoded == [*paths, paths[0]]
        ml.set_manifest_list_cache_size(0)
        assert len(ml._CACHE) == 0
        read_manifest_list(IO, paths[3])
        read_manifest_list(IO, paths[3])
        assert decoded[-2:] == [paths[3], paths[3]] and len(ml._CACHE) == 0
        with pytest.raises(ValidationError, match=">= 0"):
            ml.set_manifest_list_cache_size(-1)
    finally:
        ml.set_manifest_list_cache_size(ml.MANIFEST_LIST_CACHE_ENTRIES)


def test_manifest_list_cache_is_thread_safe(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from icefloe.manifest.manifest_list import clear_manifest_list_cache

    paths = [_small_list(tmp_path, snapshot_id=30 + i, n=3)[0] for i in range(6)]
    expected = {p: read_manifest_list(IO, p, cache=False) for p in paths}
    clear_manifest_list_cache()
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda p: (p, read_manifest_list(IO, p)), paths * 20))
    assert all(ms == expected[p] for p, ms in got)


@pytest.mark.parametrize("with_logical_types", [False, True])
def test_avro_block_fast_path_matches_per_record_decoding(tmp_path: Path, with_logical_types: bool) -> None:
    """Block decoding is used only when no logical type would be converted; either way the
    records are the raw values."""
    from icefloe.manifest._avro import AvroFile

    fields: list[dict[str, Any]] = [
        {"name": "a", "type": "long"},
        {"name": "m", "type": {"type": "array", "logicalType": "map", "items": "int"}},
    ]
    if with_logical_types:
        fields.append({"name": "d", "type": {"type": "int", "logicalType": "date"}})
    schema = {"type": "record", "name": "r", "fields": fields}
    rows = [{"a": i, "m": [i, i + 1], "d": 20000 + i} for i in range(300)]
    path = tmp_path / "x.avro"
    with open(path, "wb") as fo:
        fastavro.writer(fo, fastavro.parse_schema(schema), rows, sync_interval=100)
    with open(path, "rb") as fo:
        avro = AvroFile(fo, str(path))
        assert avro._as_written is not with_logical_types
        got = list(avro)
    keep = [f["name"] for f in fields]
    assert got == [{k: r[k] for k in keep} for r in rows]  # dates stay plain ints
