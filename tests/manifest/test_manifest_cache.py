"""The process-wide cache of decoded manifests: repeated reads decode once, inherited values are
never served across manifests that differ in them, filters apply to cached entries, the bound
holds, and a file replaced at its location is decoded again."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from icefloe.errors import ValidationError
from icefloe.io.local import LocalFileIO
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    read_manifest,
)
from icefloe.manifest import reader as manifest_reader
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, NestedField, StringType
from icefloe.testing import CountingFileIO
from icefloe.transforms import IdentityTransform

if TYPE_CHECKING:
    from icefloe.io import FileIO

IO = LocalFileIO()
SCHEMA = Schema(NestedField(1, "id", IntegerType(), True), NestedField(2, "cat", StringType(), False))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"), spec_id=0)
_names = count()


def _data_file(cat: str, records: int = 10) -> DataFile:
    return DataFile(
        content=DataFileContent.DATA,
        file_path=f"/data/{next(_names)}.parquet",
        file_format=FileFormat.PARQUET,
        partition=(cat,),
        record_count=records,
        file_size_in_bytes=100,
        spec_id=0,
    )


def _manifest(tmp: Path, cats: str = "abc", format_version: int = 2) -> ManifestFile:
    path = str(tmp / f"m{next(_names)}.avro")
    with ManifestWriter(IO, path, SPEC, SCHEMA, 7, format_version=format_version) as w:
        for cat in cats:
            w.add(_data_file(cat))
    return dataclasses.replace(w.close(), sequence_number=3, min_sequence_number=3)


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    real = manifest_reader._decode

    def counting(avro: Any, manifest_file: ManifestFile, *args: Any) -> Any:
        seen.append(manifest_file.manifest_path)
        return real(avro, manifest_file, *args)

    monkeypatch.setattr(manifest_reader, "_decode", counting)
    manifest_reader.clear_manifest_cache()
    yield seen
    manifest_reader.set_manifest_cache_size(manifest_reader.MANIFEST_CACHE_BYTES)
    manifest_reader.clear_manifest_cache()


def test_repeated_reads_decode_once_and_still_open_the_file(tmp_path: Path, decodes: list[str]) -> None:
    m = _manifest(tmp_path)
    counting = CountingFileIO(IO)
    fio = cast("FileIO", counting)
    first = list(read_manifest(fio, m))
    second = list(read_manifest(fio, m))
    assert decodes == [m.manifest_path]
    assert counting.opened[m.manifest_path] == 2  # files opened are the same warm and cold
    assert first == second and all(a is b for a, b in zip(first, second, strict=True))
    assert [e.sequence_number for e in second] == [3, 3, 3]
    assert list(read_manifest(fio, m, cache=False)) == first
    assert decodes == [m.manifest_path, m.manifest_path]


def test_inherited_values_are_part_of_the_key(tmp_path: Path, decodes: list[str]) -> None:
    m = _manifest(tmp_path)
    assert {e.sequence_number for e in read_manifest(IO, m)} == {3}
    later = dataclasses.replace(m, sequence_number=9, added_snapshot_id=8)
    got = list(read_manifest(IO, later))
    assert {(e.sequence_number, e.snapshot_id) for e in got} == {(9, 7)}  # the entries carry id 7
    assert len(decodes) == 2


def test_filters_apply_to_cached_entries_and_filtered_reads_are_not_cached(
    tmp_path: Path, decodes: list[str]
) -> None:
    m = _manifest(tmp_path)
    only_b = list(read_manifest(IO, m, partition_filter=lambda p: p[0] == "b"))
    assert [e.data_file.partition for e in only_b] == [("b",)]
    assert len(manifest_reader._CACHE) == 0  # a filtered read does not hold every entry
    list(read_manifest(IO, m))
    assert [e.data_file.partition for e in read_manifest(IO, m, partition_filter=lambda p: p[0] != "b")] == [
        ("a",),
        ("c",),
    ]
    assert len(decodes) == 2


def test_deleted_entries_are_dropped_from_cached_reads_on_request(tmp_path: Path, decodes: list[str]) -> None:
    path = str(tmp_path / "with-deleted.avro")
    with ManifestWriter(IO, path, SPEC, SCHEMA, 7) as w:
        w.add(_data_file("a"))
        w.delete(ManifestEntry(ManifestEntryStatus.EXISTING, 5, 1, 1, _data_file("b")))
    m = dataclasses.replace(w.close(), sequence_number=3, min_sequence_number=1)
    assert len(list(read_manifest(IO, m))) == 2
    live = list(read_manifest(IO, m, discard_deleted=True))
    assert [e.status for e in live] == [ManifestEntryStatus.ADDED]
    assert len(decodes) == 1


def test_skipped_entries_still_take_their_row_ids(tmp_path: Path, decodes: list[str]) -> None:
    m = dataclasses.replace(_manifest(tmp_path, "abc", format_version=3), first_row_id=100)
    full = {e.data_file.partition: e.data_file.first_row_id for e in read_manifest(IO, m, cache=False)}
    assert full == {("a",): 100, ("b",): 110, ("c",): 120}
    only_c = list(read_manifest(IO, m, partition_filter=lambda p: p[0] == "c"))
    assert [e.data_file.first_row_id for e in only_c] == [120]


def test_the_cache_is_bounded_by_manifest_bytes_and_can_be_disabled(
    tmp_path: Path, decodes: list[str]
) -> None:
    manifests = [_manifest(tmp_path) for _ in range(4)]
    size = manifests[0].manifest_length
    manifest_reader.set_manifest_cache_size(2 * size + size // 2)  # room for two
    for m in manifests:
        list(read_manifest(IO, m))
    assert len(manifest_reader._CACHE) == 2
    list(read_manifest(IO, manifests[3]))  # most recent: cached
    list(read_manifest(IO, manifests[0]))  # evicted: decoded again
    assert decodes == [m.manifest_path for m in manifests] + [manifests[0].manifest_path]
    manifest_reader.set_manifest_cache_size(0)
    assert len(manifest_reader._CACHE) == 0
    list(read_manifest(IO, manifests[1]))
    assert len(manifest_reader._CACHE) == 0
    with pytest.raises(ValidationError, match=">= 0"):
        manifest_reader.set_manifest_cache_size(-1)


def test_a_file_replaced_at_its_location_is_decoded_again(tmp_path: Path, decodes: list[str]) -> None:
    m = _manifest(tmp_path, "abc")
    other = _manifest(tmp_path, "z")
    assert len(list(read_manifest(IO, m))) == 3
    Path(m.manifest_path).unlink()
    shutil.copyfile(other.manifest_path, m.manifest_path)  # another process, behind our back
    assert [e.data_file.partition for e in read_manifest(IO, m)] == [("z",)]


def test_writing_a_manifest_forgets_what_was_cached_for_its_location(
    tmp_path: Path, decodes: list[str]
) -> None:
    m = _manifest(tmp_path, "ab")
    list(read_manifest(IO, m))
    assert len(manifest_reader._CACHE) == 1
    IO.delete(m.manifest_path)
    with ManifestWriter(IO, m.manifest_path, SPEC, SCHEMA, 7) as w:
        w.add(_data_file("q"))
    assert len(manifest_reader._CACHE) == 0
