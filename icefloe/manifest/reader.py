"""Reading manifests, with the spec's inheritance rules applied.

Fields are found by their Iceberg field ids in the file's own Avro schema, never by record
names or positions, so v1 files, Java-written files and files with extra fields all read the
same way. The per-schema decoding plan is cached: a table's manifests usually share one schema.

Inheritance (as Iceberg Java applies it when reading):

* a null ``snapshot_id`` takes the manifest's ``added_snapshot_id``;
* a null data or file sequence number takes the manifest's sequence number when the entry is
  ADDED, or when the manifest's sequence number is 0 (v1 manifests carry none);
* v3: a data file with a null ``first_row_id`` in a manifest that has one gets the manifest's
  ``first_row_id`` plus the record counts of the earlier such files (DELETED entries skipped).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from icefloe.errors import CorruptFileError, IcefloeError, InvalidMetadataError
from icefloe.io._decode import MANIFEST, decoding
from icefloe.manifest._avro import AvroFile, collect_named, value_converter
from icefloe.manifest._cache import LocationCache, file_size
from icefloe.manifest._model import (
    UNASSIGNED_SEQ,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from icefloe.manifest._model import data_file as _data_file

if TYPE_CHECKING:
    from icefloe.io import FileIO

__all__ = [
    "MANIFEST_CACHE_BYTES",
    "clear_manifest_cache",
    "forget_manifest",
    "read_manifest",
    "read_manifest_metadata",
    "set_manifest_cache_size",
]

_STATUSES = {s.value: s for s in ManifestEntryStatus}
_CONTENTS = {c.value: c for c in DataFileContent}
_FORMATS: dict[str, FileFormat] = {}


def _format(text: str) -> FileFormat:
    fmt = _FORMATS.get(text)
    if fmt is None:
        fmt = _FORMATS[text] = FileFormat.parse(text)
    return fmt


def _record_of(schema: Any) -> dict[str, Any] | None:
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        schema = branches[0] if len(branches) == 1 else None
    return schema if isinstance(schema, dict) and schema.get("type") == "record" else None


def _positions_by_id(record: dict[str, Any]) -> dict[int, int]:
    """Field id -> position of the field in the record (records decode as tuples)."""
    return {int(f["field-id"]): i for i, f in enumerate(record.get("fields", ())) if "field-id" in f}


class _Plan:
    """Where each spec field lives in one Avro schema (positions in the decoded tuples), and how
    to convert partition values."""

    def __init__(self, schema: dict[str, Any]) -> None:
        top = _positions_by_id(schema)
        named = collect_named(schema, {})
        if 0 not in top or 2 not in top:
            raise InvalidMetadataError(
                "not a manifest: the Avro schema has no status (0) or data_file (2) field"
            )
        self.status, self.data_file = top[0], top[2]
        self.snapshot_id = top.get(1)
        self.sequence_number = top.get(3)
        self.file_sequence_number = top.get(4)
        df_schema = schema["fields"][self.data_file]["type"]
        df_record = _record_of(df_schema)
        if isinstance(df_schema, str):
            df_record = named.get(df_schema)
        if df_record is None:
            raise InvalidMetadataError("not a manifest: data_file (2) is not a record")
        self.df = _positions_by_id(df_record)
        for fid, what in (
            (100, "file_path"),
            (101, "file_format"),
            (102, "partition"),
            (103, "record_count"),
            (104, "file_size_in_bytes"),
        ):
            if fid not in self.df:
                raise InvalidMetadataError(f"not a manifest: data_file has no {what} ({fid}) field")
        part_schema = df_record["fields"][self.df[102]]["type"]
        part_record = named.get(part_schema) if isinstance(part_schema, str) else part_schema
        if not isinstance(part_record, dict):
            raise InvalidMetadataError("not a manifest: partition (102) is not a record")
        converters = [value_converter(f["type"], named) for f in part_record.get("fields", ())]
        #: None when every partition value is used as decoded (the decoded tuple is the partition).
        self.partition: list[Callable[[Any], Any] | None] | None = (
            converters if any(c is not None for c in converters) else None
        )


@lru_cache(maxsize=128)
def _plan(schema_text: str) -> _Plan:
    return _Plan(json.loads(schema_text))


def _kv(items: Any) -> dict[int, Any] | None:
    # The decoder makes dicts of maps marked ``logicalType: map``; a writer that left the marker
    # out gives a list of (key, value) records.
    if items is None or type(items) is dict:
        return items  # type: ignore[no-any-return]
    return dict(items)


def _tuple(items: list[int] | None) -> tuple[int, ...] | None:
    return None if items is None else tuple(items)


def read_manifest_metadata(io: FileIO, path: str) -> dict[str, str]:
    """The Avro file metadata of a manifest (``schema``, ``partition-spec``, ...)."""
    with decoding(path, MANIFEST), io.new_input(path).open() as stream:
        return AvroFile(stream, path, MANIFEST).metadata


#: Default bound of the process-wide cache of decoded manifests, in bytes of manifest files:
#: decoded entries take roughly ten times their Avro size, so about 40 MB of objects.
MANIFEST_CACHE_BYTES = 4 * 1024 * 1024
_CACHE: LocationCache[tuple[ManifestEntry, ...]] = LocationCache("manifest", MANIFEST_CACHE_BYTES)


def clear_manifest_cache() -> None:
    """Forget every cached manifest (tests; or to free memory)."""
    _CACHE.clear()


def set_manifest_cache_size(max_bytes: int) -> None:
    """Bound the process-wide cache of decoded manifests to ``max_bytes`` of manifest files (a
    manifest larger than that is never cached); 0 disables it."""
    _CACHE.resize(max_bytes)


def forget_manifest(path: str) -> None:
    """Drop what the cache holds for ``path`` (its file is being written or deleted)."""
    _CACHE.discard(path)


def read_manifest(
    io: FileIO,
    manifest_file: ManifestFile,
    *,
    partition_filter: Callable[[tuple[Any, ...]], bool] | None = None,
    discard_deleted: bool = False,
    cache: bool = True,
) -> Iterator[ManifestEntry]:
    """The entries of a manifest, with inherited snapshot ids and sequence numbers filled in.

    ``partition_filter`` (a predicate on the partition tuple) and ``discard_deleted`` skip entries
    before their :class:`DataFile` is built, which keeps planning cheap.

    The file is always opened. With ``cache`` (the default), a manifest this process already
    decoded in full (read without filters) from a file of the same size, with the same inherited
    values, is served from a bounded process-wide cache (see :mod:`icefloe.manifest._cache`,
    :func:`set_manifest_cache_size`).
    """
    path = manifest_file.manifest_path
    variant = (
        manifest_file.partition_spec_id,
        manifest_file.added_snapshot_id,
        manifest_file.sequence_number,
        manifest_file.first_row_id,
        manifest_file.content,
    )
    with decoding(path, MANIFEST):
        stream = io.new_input(path).open()
    try:
        size = file_size(stream) if cache else None
        found = None if size is None else _CACHE.get(path, size, variant)
        avro = AvroFile(stream, path, MANIFEST) if found is None else None  # reads the whole file
    finally:
        stream.close()
    if found is not None:
        for entry in found:
            if discard_deleted and entry.status is ManifestEntryStatus.DELETED:
                continue
            if partition_filter is not None and not partition_filter(entry.data_file.partition):
                continue
            yield entry
        return
    assert avro is not None
    if size is not None and partition_filter is None and not discard_deleted:
        entries = tuple(_decode(avro, manifest_file, None, False))
        _CACHE.put(path, size, entries, variant=variant, weight=max(size, 1))
        yield from entries
        return
    yield from _decode(avro, manifest_file, partition_filter, discard_deleted)


def _decode(
    avro: AvroFile,
    manifest_file: ManifestFile,
    partition_filter: Callable[[tuple[Any, ...]], bool] | None,
    discard_deleted: bool,
) -> Iterator[ManifestEntry]:
    path = manifest_file.manifest_path
    spec_id = manifest_file.partition_spec_id
    manifest_snapshot_id = manifest_file.added_snapshot_id
    manifest_seq = manifest_file.sequence_number
    inherit_seq: int | None = manifest_seq if manifest_seq != UNASSIGNED_SEQ else None
    next_row_id = manifest_file.first_row_id if manifest_file.content == ManifestContent.DATA else None
    try:
        plan = _plan(avro.metadata["avro.schema"])
    except InvalidMetadataError as e:
        raise CorruptFileError.of(path, MANIFEST, f"the file is {e.message}") from e
    except Exception as e:  # a schema that is JSON but not the shape of any Avro schema
        raise CorruptFileError.of(path, MANIFEST, f"not a manifest: {type(e).__name__}: {e}") from e
    df_names = plan.df
    n_status, n_df = plan.status, plan.data_file
    n_snap, n_seq, n_fseq = plan.snapshot_id, plan.sequence_number, plan.file_sequence_number
    n_content = df_names.get(134)
    n_path, n_format, n_partition = df_names[100], df_names[101], df_names[102]
    n_records, n_size = df_names[103], df_names[104]
    optional = {
        fid: df_names.get(fid)
        for fid in (108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 142, 143, 144, 145)
    }
    n_cs, n_vc, n_nc, n_nan = optional[108], optional[109], optional[110], optional[137]
    n_lb, n_ub, n_km, n_so = optional[125], optional[128], optional[131], optional[132]
    n_eq, n_sort, n_frid, n_ref = optional[135], optional[140], optional[142], optional[143]
    n_coff, n_csize = optional[144], optional[145]
    converters = plan.partition
    expected_content = manifest_file.content
    statuses, contents, formats = _STATUSES, _CONTENTS, _FORMATS
    DATA, DELETED, ADDED = DataFileContent.DATA, ManifestEntryStatus.DELETED, ManifestEntryStatus.ADDED
    try:
        for rec in avro.tuples():
            status = statuses[rec[n_status]]
            if discard_deleted and status is DELETED:
                continue
            df = rec[n_df]
            partition = df[n_partition]
            if converters is not None:
                partition = tuple(
                    v if conv is None else conv(v) for v, conv in zip(partition, converters, strict=True)
                )
            record_count = df[n_records]
            content = contents[df[n_content]] if n_content is not None else DATA
            first_row_id = df[n_frid] if n_frid is not None else None
            if next_row_id is not None and first_row_id is None and content is DATA and status is not DELETED:
                first_row_id = next_row_id
                next_row_id += record_count
            # After the row-id accounting: skipped files still take their ids.
            if partition_filter is not None and not partition_filter(partition):
                continue
            fmt = df[n_format]
            file_format = formats.get(fmt)
            if file_format is None:
                file_format = _format(fmt)
            data_file = _data_file(
                content,
                df[n_path],
                file_format,
                partition,
                record_count,
                df[n_size],
                _kv(df[n_cs]) if n_cs is not None else None,
                _kv(df[n_vc]) if n_vc is not None else None,
                _kv(df[n_nc]) if n_nc is not None else None,
                _kv(df[n_nan]) if n_nan is not None else None,
                _kv(df[n_lb]) if n_lb is not None else None,
                _kv(df[n_ub]) if n_ub is not None else None,
                df[n_km] if n_km is not None else None,
                _tuple(df[n_so]) if n_so is not None else None,
                _tuple(df[n_eq]) if n_eq is not None else None,
                df[n_sort] if n_sort is not None else None,
                first_row_id,
                df[n_ref] if n_ref is not None else None,
                df[n_coff] if n_coff is not None else None,
                df[n_csize] if n_csize is not None else None,
                spec_id,
            )
            problem = _invalid(data_file, expected_content)
            if problem:
                raise CorruptFileError.of(path, MANIFEST, f"entry for {data_file.file_path!r}: {problem}")
            snapshot_id = rec[n_snap] if n_snap is not None else None
            if snapshot_id is None:
                snapshot_id = manifest_snapshot_id
            seq = rec[n_seq] if n_seq is not None else None
            fseq = rec[n_fseq] if n_fseq is not None else None
            if (seq is not None and seq < 0) or (fseq is not None and fseq < 0):
                raise CorruptFileError.of(
                    path,
                    MANIFEST,
                    f"entry for {data_file.file_path!r}: negative sequence number {seq}/{fseq}",
                )
            if inherit_seq is not None and (status is ADDED or inherit_seq == 0):
                if seq is None:
                    seq = inherit_seq
                if fseq is None:
                    fseq = inherit_seq
            yield ManifestEntry(status, snapshot_id, seq, fseq, data_file)
    except CorruptFileError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError, IcefloeError) as e:
        # Decoded records of the wrong shape: a damaged file (or one no Iceberg writer made).
        raise CorruptFileError.of(path, MANIFEST, f"invalid entry: {type(e).__name__}: {e}") from e


def _invalid(df: DataFile, manifest_content: ManifestContent) -> str | None:
    """What makes a decoded data or delete file entry invalid (values no writer produces, which
    planning would act on silently), or None."""
    if not isinstance(df.file_path, str) or not df.file_path:
        return "empty file_path"
    if df.record_count < 0 or df.file_size_in_bytes < 0:
        return f"negative record_count {df.record_count} or file_size_in_bytes {df.file_size_in_bytes}"
    if (df.content == DataFileContent.DATA) != (manifest_content == ManifestContent.DATA):
        return f"a {df.content.name.lower()} file in a {manifest_content.name.lower()} manifest"
    if df.content == DataFileContent.EQUALITY_DELETES and not df.equality_ids:
        return "an equality delete file without equality_ids"
    return None
