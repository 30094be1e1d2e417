"""Reading and writing manifest lists (one per snapshot).

The writer assigns the snapshot's sequence number to manifests written by that snapshot (whose
sequence numbers are still unassigned), and in v3 assigns ``first_row_id`` to data manifests
that have none, the way Iceberg Java does. v1 lists carry no sequence numbers: they read as 0.

Reading keeps a bounded, thread-safe, process-wide cache of parsed lists keyed by location
(lists are immutable; see :mod:`icefloe.manifest._cache`): planning the same snapshot again opens
the list but does not decode it; each caller gets its own list.
``read_manifest_list(..., cache=False)`` bypasses it, :func:`set_manifest_list_cache_size` bounds
(or with 0 disables) it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import IO, TYPE_CHECKING, Any

import fastavro

from icefloe.errors import CorruptFileError, FileIOError, IcefloeError, InvalidMetadataError, ValidationError
from icefloe.io._decode import MANIFEST_LIST, decoding
from icefloe.manifest._avro import AvroFile, collect_named, struct_to_avro
from icefloe.manifest._cache import LocationCache, file_size
from icefloe.manifest._model import (
    UNASSIGNED_SEQ,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
    manifest_file,
    partition_field_summary,
)
from icefloe.manifest._schemas import check_format_version, manifest_list_struct
from icefloe.spec.types import type_to_json

if TYPE_CHECKING:
    from icefloe.io import FileIO

__all__ = [
    "MANIFEST_LIST_CACHE_ENTRIES",
    "clear_manifest_list_cache",
    "ManifestSelector",
    "read_manifest_list",
    "read_manifest_list_selected",
    "set_manifest_list_cache_size",
    "write_manifest_list",
]

_CONTENTS = {c.value: c for c in ManifestContent}


def _positions_by_id(record: dict[str, Any]) -> dict[int, int]:
    """Field id -> position of the field in the record (records decode as tuples)."""
    return {int(f["field-id"]): i for i, f in enumerate(record.get("fields", ())) if "field-id" in f}


def _element_record(schema: Any, named: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(schema, list):
        schema = next((b for b in schema if b != "null"), None)
    if not isinstance(schema, dict) or schema.get("type") != "array":
        return None
    items = schema["items"]
    if isinstance(items, list):
        items = next((b for b in items if b != "null"), None)
    if isinstance(items, str):
        items = named.get(items)
    return items if isinstance(items, dict) else None


@lru_cache(maxsize=32)
def _plan(schema_text: str) -> tuple[dict[int, int], dict[int, int]]:
    schema = json.loads(schema_text)
    top = _positions_by_id(schema)
    for fid, what in ((500, "manifest_path"), (501, "manifest_length"), (502, "partition_spec_id")):
        if fid not in top:
            raise InvalidMetadataError(f"not a manifest list: no {what} ({fid}) field")
    summary: dict[int, int] = {}
    if 507 in top:
        field = schema["fields"][top[507]]
        record = _element_record(field["type"], collect_named(schema, {}))
        if record is not None:
            summary = _positions_by_id(record)
    return top, summary


#: Default bound of the process-wide cache of parsed manifest lists (see
#: :mod:`icefloe.manifest._cache`): 64 lists of a few thousand manifests each stay within a few
#: tens of MB.
MANIFEST_LIST_CACHE_ENTRIES = 64


class _Parsed:
    """A decoded, validated manifest list: per manifest the positional arguments of
    :func:`manifest_file` (partition summaries already built), and the ManifestFile objects,
    built only when asked for. Planning a selective filter asks for a few of a thousand.

    Shared through the cache by every thread: ``_objects`` slots are filled at most a few times
    each (a race builds equal objects twice; either is kept), never changed otherwise.
    """

    __slots__ = ("_objects", "args")

    def __init__(self, args: list[tuple[Any, ...]]) -> None:
        self.args = args
        self._objects: list[ManifestFile | None] = [None] * len(args)

    def manifest(self, i: int) -> ManifestFile:
        m = self._objects[i]
        if m is None:
            m = manifest_file(*self.args[i])
            self._objects[i] = m
        return m

    def manifests(self) -> list[ManifestFile]:
        objects = self._objects
        if None in objects:
            args = self.args
            for i, m in enumerate(objects):
                if m is None:
                    objects[i] = manifest_file(*args[i])
        return list(objects)  # type: ignore[arg-type]


_CACHE: LocationCache[_Parsed] = LocationCache("manifest-list", MANIFEST_LIST_CACHE_ENTRIES)


def clear_manifest_list_cache() -> None:
    """Forget every cached manifest list (tests; or to free memory)."""
    _CACHE.clear()


def set_manifest_list_cache_size(max_entries: int) -> None:
    """Bound the process-wide manifest-list cache to ``max_entries`` lists; 0 disables it."""
    _CACHE.resize(max_entries)


def _parsed(io: FileIO, path: str, cache: bool) -> _Parsed:
    with decoding(path, MANIFEST_LIST), io.new_input(path).open() as stream:
        size = file_size(stream) if cache else None
        if size is not None:
            found = _CACHE.get(path, size)
            if found is not None:
                return found
        parsed = _read(stream, path)
    if size is not None:
        _CACHE.put(path, size, parsed)
    return parsed


def read_manifest_list(io: FileIO, path: str, *, cache: bool = True) -> list[ManifestFile]:
    """The manifests of a snapshot, in list order.

    The file is always opened once. With ``cache`` (the default) a list this process already
    parsed from a file of the same size at the same location is returned without decoding it
    again (see :mod:`icefloe.manifest._cache`).
    """
    return _parsed(io, path, cache).manifests()


#: ``keep(partition_spec_id, content, added_files_count, existing_files_count, partitions)``
ManifestSelector = Callable[
    [int, ManifestContent, "int | None", "int | None", "tuple[PartitionFieldSummary, ...] | None"], bool
]


def read_manifest_list_selected(
    io: FileIO, path: str, keep: ManifestSelector, *, cache: bool = True
) -> tuple[int, list[ManifestFile]]:
    """(number of manifests in the list, the manifests ``keep`` accepts, in list order).

    The same as filtering :func:`read_manifest_list`'s result, but ManifestFile objects are built
    only for the manifests kept: a selective scan plan keeps a few of thousands. The whole list is
    still decoded and validated (a damaged entry raises whether or not it would be kept).
    """
    parsed = _parsed(io, path, cache)
    kept = []
    for i, a in enumerate(parsed.args):
        if keep(a[2], a[3], a[7], a[8], a[13]):
            kept.append(parsed.manifest(i))
    return len(parsed.args), kept


def _read(stream: IO[bytes], path: str) -> _Parsed:
    avro = AvroFile(stream, path, MANIFEST_LIST)
    try:
        top, summary = _plan(avro.metadata["avro.schema"])
    except InvalidMetadataError as e:
        raise CorruptFileError.of(path, MANIFEST_LIST, f"the file is {e.message}") from e
    except Exception as e:  # a schema that is JSON but not the shape of any Avro schema
        raise CorruptFileError.of(path, MANIFEST_LIST, f"not a manifest list: {type(e).__name__}: {e}") from e
    get = top.get
    n_path, n_length, n_spec = top[500], top[501], top[502]
    n_content, n_seq, n_min_seq = get(517), get(515), get(516)
    n_snap = get(503)
    n_added, n_existing, n_deleted, n_added_rows, n_existing_rows, n_deleted_rows = (
        get(fid) for fid in (504, 505, 506, 512, 513, 514)
    )
    n_parts, n_key, n_first_row = get(507), get(519), get(520)
    s_null, s_nan, s_lower, s_upper = (summary.get(fid) for fid in (509, 518, 510, 511))
    full_summary = None not in (s_null, s_nan, s_lower, s_upper)
    contents = _CONTENTS
    data = ManifestContent.DATA
    out = []
    try:
        for rec in avro.tuples():
            # Positional arguments straight from the record: this loop runs once per manifest of
            # the snapshot on every cold plan.
            parts = rec[n_parts] if n_parts is not None else None
            if parts is None:
                partitions = None
            elif full_summary:
                partitions = tuple(
                    [
                        partition_field_summary(bool(p[s_null]), p[s_nan], p[s_lower], p[s_upper])
                        for p in parts
                    ]
                )
            else:
                partitions = tuple(
                    [
                        partition_field_summary(
                            bool(p[s_null]) if s_null is not None else False,
                            p[s_nan] if s_nan is not None else None,
                            p[s_lower] if s_lower is not None else None,
                            p[s_upper] if s_upper is not None else None,
                        )
                        for p in parts
                    ]
                )
            snapshot_id = rec[n_snap] if n_snap is not None else None
            if snapshot_id is None:
                raise CorruptFileError.of(path, MANIFEST_LIST, "a manifest without added_snapshot_id")
            out.append(
                (
                    rec[n_path],
                    rec[n_length],
                    rec[n_spec],
                    contents[rec[n_content]] if n_content is not None else data,
                    rec[n_seq] if n_seq is not None else 0,
                    rec[n_min_seq] if n_min_seq is not None else 0,
                    snapshot_id,
                    rec[n_added] if n_added is not None else None,
                    rec[n_existing] if n_existing is not None else None,
                    rec[n_deleted] if n_deleted is not None else None,
                    rec[n_added_rows] if n_added_rows is not None else None,
                    rec[n_existing_rows] if n_existing_rows is not None else None,
                    rec[n_deleted_rows] if n_deleted_rows is not None else None,
                    partitions,
                    rec[n_key] if n_key is not None else None,
                    rec[n_first_row] if n_first_row is not None else None,
                )
            )
    except CorruptFileError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError, IcefloeError) as e:
        # Decoded records of the wrong shape: a damaged file (or one no Iceberg writer made).
        raise CorruptFileError.of(path, MANIFEST_LIST, f"invalid entry: {type(e).__name__}: {e}") from e
    for a in out:
        # The common case in one expression (positions are manifest_file's parameters); _invalid
        # says what is wrong when it is not.
        if (
            a[0]
            and a[1] >= 0
            and a[2] >= 0
            and 0 <= a[5] <= a[4]
            and (a[7] or 0) >= 0
            and (a[8] or 0) >= 0
            and (a[9] or 0) >= 0
            and (a[10] or 0) >= 0
            and (a[11] or 0) >= 0
            and (a[12] or 0) >= 0
            and (a[15] or 0) >= 0
            and isinstance(a[0], str)
        ):
            continue
        m = manifest_file(*a)
        problem = _invalid(m)
        if problem:
            raise CorruptFileError.of(path, MANIFEST_LIST, f"manifest {m.manifest_path!r}: {problem}")
    return _Parsed(out)


_COUNTS = (
    "added_files_count",
    "existing_files_count",
    "deleted_files_count",
    "added_rows_count",
    "existing_rows_count",
    "deleted_rows_count",
)


def _invalid(m: ManifestFile) -> str | None:
    """What makes a decoded manifest-list entry invalid (values no writer produces; planning on
    them would skip or misread files silently), or None."""
    if not isinstance(m.manifest_path, str) or not m.manifest_path:
        return "empty manifest_path"
    if m.manifest_length < 0 or m.partition_spec_id < 0:
        return f"negative manifest_length {m.manifest_length} or partition_spec_id {m.partition_spec_id}"
    if not 0 <= m.min_sequence_number <= m.sequence_number:
        return (
            f"sequence_number {m.sequence_number} and min_sequence_number {m.min_sequence_number} "
            "are not 0 <= min <= sequence_number"
        )
    for name in _COUNTS:
        count = getattr(m, name)
        if count is not None and count < 0:
            return f"negative {name} {count}"
    if m.first_row_id is not None and m.first_row_id < 0:
        return f"negative first_row_id {m.first_row_id}"
    return None


@lru_cache(maxsize=4)
def _list_schema(format_version: int) -> tuple[Any, str]:
    struct = manifest_list_struct(format_version)
    parsed = fastavro.parse_schema(struct_to_avro(struct, "manifest_file"))
    iceberg = json.dumps(
        {"type": "struct", "schema-id": 0, "fields": type_to_json(struct)["fields"]},
        separators=(",", ":"),
    )
    return parsed, iceberg


_COUNT_FIELDS = (
    "added_files_count",
    "existing_files_count",
    "deleted_files_count",
    "added_rows_count",
    "existing_rows_count",
    "deleted_rows_count",
)


def _count(value: int | None, what: str, m: ManifestFile) -> int:
    if value is None:
        raise ValidationError(
            f"manifest {m.manifest_path!r} has no {what}; format v2 manifest lists require it",
            hint="rewrite the manifest so its counts are known",
        )
    return value


def write_manifest_list(
    io: FileIO,
    path: str,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    manifests: Iterable[ManifestFile],
    format_version: int = 2,
    *,
    first_row_id: int | None = None,
) -> int | None:
    """Write a snapshot's manifest list.

    Returns the table's next row id after this snapshot for v3 (``first_row_id`` plus the rows
    of the data manifests given ids here), else None.
    """
    check_format_version(format_version)
    if format_version >= 3 and first_row_id is None:
        raise ValidationError(
            "a v3 manifest list needs the snapshot's first_row_id",
            hint="pass first_row_id=metadata.next_row_id",
        )
    parsed, iceberg_schema = _list_schema(format_version)
    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "format-version": str(format_version),
        "iceberg.schema": iceberg_schema,
    }
    if format_version >= 2:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        metadata["first-row-id"] = str(first_row_id)
    next_row_id = first_row_id
    records = []
    for m in manifests:
        seq, min_seq = m.sequence_number, m.min_sequence_number
        if format_version >= 2 and UNASSIGNED_SEQ in (seq, min_seq):
            if m.added_snapshot_id != snapshot_id:
                raise ValidationError(
                    f"manifest {m.manifest_path!r} has no sequence number but was added by snapshot "
                    f"{m.added_snapshot_id}, not by {snapshot_id}",
                    hint="only manifests written for this snapshot inherit its sequence number",
                )
            seq = sequence_number if seq == UNASSIGNED_SEQ else seq
            min_seq = sequence_number if min_seq == UNASSIGNED_SEQ else min_seq
        record: dict[str, Any] = {
            "manifest_path": m.manifest_path,
            "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id,
            "content": int(m.content),
            "sequence_number": seq,
            "min_sequence_number": min_seq,
            "added_snapshot_id": m.added_snapshot_id,
            "added_files_count": m.added_files_count,
            "existing_files_count": m.existing_files_count,
            "deleted_files_count": m.deleted_files_count,
            "added_rows_count": m.added_rows_count,
            "existing_rows_count": m.existing_rows_count,
            "deleted_rows_count": m.deleted_rows_count,
            "partitions": None
            if m.partitions is None
            else [
                {
                    "contains_null": p.contains_null,
                    "contains_nan": p.contains_nan,
                    "lower_bound": p.lower_bound,
                    "upper_bound": p.upper_bound,
                }
                for p in m.partitions
            ],
            "key_metadata": m.key_metadata,
            "first_row_id": m.first_row_id,
        }
        if format_version >= 2:
            for key in _COUNT_FIELDS:
                record[key] = _count(record[key], key, m)
        elif m.content != ManifestContent.DATA:
            raise ValidationError(
                f"manifest {m.manifest_path!r} holds deletes; format version 1 has none",
                hint="upgrade the table to format version 2",
            )
        if (
            format_version >= 3
            and m.content == ManifestContent.DATA
            and m.first_row_id is None
            and next_row_id is not None
        ):
            record["first_row_id"] = next_row_id
            next_row_id += _count(m.added_rows_count, "added_rows_count", m) + _count(
                m.existing_rows_count, "existing_rows_count", m
            )
        records.append(record)

    _CACHE.discard(path)
    stream = io.new_output(path).create()
    try:
        fastavro.writer(stream, parsed, records, codec="deflate", metadata=metadata)
    except (TypeError, ValueError, OverflowError) as e:
        stream.close()
        raise ValidationError(f"cannot write manifest list {path!r}: {e}") from e
    except OSError as e:  # the stream failed while fastavro wrote to it
        with contextlib.suppress(OSError):
            stream.close()
        raise FileIOError(f"cannot write manifest list {path!r}: {e}", location=path) from e
    try:
        stream.close()
    except OSError as e:
        raise FileIOError(f"cannot finish manifest list {path!r}: {e}", location=path) from e
    finally:
        _CACHE.discard(path)  # again: a reader may have cached the old file while we wrote
    return next_row_id if format_version >= 3 else None
