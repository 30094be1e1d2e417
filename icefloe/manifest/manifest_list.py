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
from icefloe.manifest._avro_decoder import Decoder, NotCompilable, Pick, compile_decoder, compile_selector
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


#: What planning decides on, per manifest, before anything else is decoded: field ids of the
#: partition spec id, content, added and existing files counts, and partition summaries; and of
#: the summary fields, in the order of the raw summary tuples (contains_null, contains_nan,
#: lower_bound, upper_bound).
_SELECTED = (502, 517, 504, 505, 507)
_SUMMARY = (509, 518, 510, 511)


class _ListPlan:
    """Where the fields of one manifest-list Avro schema are (positions in the decoded tuples),
    and what to pick for selection."""

    def __init__(self, schema: dict[str, Any]) -> None:
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
        self.top, self.summary = top, summary
        picks: list[Pick] = []
        for fid in _SELECTED:
            position = top.get(fid)
            if position is None:
                picks.append(None)
            elif fid == 507:
                picks.append((position, tuple(summary.get(s) for s in _SUMMARY)) if summary else None)
            else:
                picks.append((position, None))
        #: None when summaries exist but are not records we know: selection then decodes fully.
        self.picks: tuple[Pick, ...] | None = tuple(picks) if (507 not in top or summary) else None


@lru_cache(maxsize=32)
def _plan(schema_text: str) -> _ListPlan:
    return _ListPlan(json.loads(schema_text))


#: Default bound of the process-wide cache of parsed manifest lists (see
#: :mod:`icefloe.manifest._cache`): 64 lists of a few thousand manifests each stay within a few
#: tens of MB.
MANIFEST_LIST_CACHE_ENTRIES = 64

#: A manifest-list entry as selection sees it: (offset in its block, partition_spec_id, content
#: as written (None in v1), added_files_count, existing_files_count, partition summaries as raw
#: ``(contains_null, contains_nan, lower_bound, upper_bound)`` tuples or None).
_Row = tuple[int, int, "int | None", "int | None", "int | None", "list[tuple[Any, Any, Any, Any]] | None"]


class _Parsed:
    """A decoded manifest list. Read for planning, it holds per manifest the few fields
    selection needs (``rows``, from every record); the rest of a record (and its validation) is
    decoded only when its ManifestFile is asked for, so a selective plan decodes a few of a
    thousand. Read in full (:func:`read_manifest_list`), every record is decoded at once and
    ``rows`` are derived from the records when first asked for.

    Shared through the cache by every thread: the ``_args`` and ``_objects`` slots (and
    ``_rows``) are filled at most a few times each (a race decodes equal values twice; either is
    kept), never changed otherwise.
    """

    __slots__ = (
        "_args",
        "_blocks",
        "_decode",
        "_first",
        "_objects",
        "_path",
        "_plan",
        "_rows",
        "_schema_text",
        "block_of",
    )

    def __init__(
        self, blocks: list[tuple[bytes, int]], decode: Decoder, plan: _ListPlan, schema_text: str, path: str
    ) -> None:
        self._blocks, self._decode, self._plan, self._path = blocks, decode, plan, path
        self._schema_text = schema_text
        self._rows: list[_Row] | None = None
        #: per entry, its block; per block, its first entry
        self.block_of: list[int] = []
        self._first: list[int] = []
        for b, (_, count) in enumerate(blocks):
            self._first.append(len(self.block_of))
            self.block_of += [b] * count
        self._args: list[tuple[Any, ...] | None] = [None] * len(self.block_of)
        self._objects: list[ManifestFile | None] = [None] * len(self.block_of)

    def __len__(self) -> int:
        return len(self._args)

    @property
    def rows(self) -> list[_Row]:
        """Per entry what selection needs: decoded by the selector from every record (unless the
        list was read in full already, or its summaries are of a shape the selector cannot pick:
        then taken from the fully decoded entries)."""
        rows = self._rows
        if rows is None:
            selector = None
            if self._plan.picks is not None and None in self._args:
                # NotCompilable (summaries not an array of records): decode in full instead.
                with contextlib.suppress(NotCompilable):
                    selector = compile_selector(self._schema_text, self._plan.picks)
            if selector is None:
                self._fill(range(len(self._blocks)))
                rows = [(0, a[2], int(a[3]), a[7], a[8], _raw(a[13])) for a in self._args]  # type: ignore[index]
            else:
                rows = []
                try:
                    for data, count in self._blocks:
                        rows += selector(data, count)
                except Exception as e:  # only the generated selector runs in here
                    raise CorruptFileError.of(
                        self._path, MANIFEST_LIST, f"cannot decode an Avro block: {type(e).__name__}: {e}"
                    ) from e
            self._rows = rows
        return rows

    def _decode_records(self, data: bytes, count: int) -> list[Any]:
        try:
            return self._decode(data, count)
        except Exception as e:  # only damage gets here (the selector walked these bytes already)
            raise CorruptFileError.of(
                self._path, MANIFEST_LIST, f"cannot decode an Avro block: {type(e).__name__}: {e}"
            ) from e

    def _fill(self, blocks: Iterable[int]) -> None:
        """Decode (and validate) every record of ``blocks`` whose arguments are missing."""
        args = self._args
        for b in blocks:
            first = self._first[b]
            data, count = self._blocks[b]
            if None not in args[first : first + count]:
                continue
            for k, a in enumerate(_args_of(self._decode_records(data, count), self._plan, self._path)):
                if args[first + k] is None:
                    args[first + k] = a

    def args(self, i: int) -> tuple[Any, ...]:
        """The positional arguments of :func:`manifest_file` for entry ``i`` (validated)."""
        a = self._args[i]
        if a is None:
            b = self.block_of[i]
            rows = self._rows
            if rows is None:
                self._fill((b,))
                return self._args[i]  # type: ignore[return-value]
            data = self._blocks[b][0]
            last = i + 1 == len(rows) or self.block_of[i + 1] != b
            end = len(data) if last else rows[i + 1][0]
            a = _args_of(self._decode_records(data[rows[i][0] : end], 1), self._plan, self._path)[0]
            self._args[i] = a
        return a

    def selected(self, indices: list[int]) -> list[ManifestFile]:
        """The ManifestFiles of entries ``indices``: a block of which at least a quarter is
        asked for is decoded whole (a full plan keeps every manifest), others record by record."""
        wanted: dict[int, int] = {}
        for i in indices:
            if self._objects[i] is None:
                b = self.block_of[i]
                wanted[b] = wanted.get(b, 0) + 1
        self._fill(b for b, n in wanted.items() if 4 * n >= self._blocks[b][1])
        return [self.manifest(i) for i in indices]

    def manifest(self, i: int) -> ManifestFile:
        m = self._objects[i]
        if m is None:
            m = manifest_file(*self.args(i))
            self._objects[i] = m
        return m

    def manifests(self) -> list[ManifestFile]:
        objects = self._objects
        if None in objects:
            self._fill(range(len(self._blocks)))
            args = self._args
            for i, m in enumerate(objects):
                if m is None:
                    objects[i] = manifest_file(*args[i])  # type: ignore[misc]
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
    """The manifests of a snapshot, in list order (every entry decoded and validated).

    The file is always opened once. With ``cache`` (the default) a list this process already
    parsed from a file of the same size at the same location is returned without decoding it
    again (see :mod:`icefloe.manifest._cache`).
    """
    return _parsed(io, path, cache).manifests()


#: ``keep(partition_spec_id, content, added_files_count, existing_files_count, partitions)``;
#: ``partitions`` are raw summary tuples ``(contains_null, contains_nan, lower_bound,
#: upper_bound)`` (what ``ManifestEvaluator.eval_summaries`` takes), or None.
ManifestSelector = Callable[[int, ManifestContent, "int | None", "int | None", Any], bool]

_SELECT_CONTENTS: dict[int | None, ManifestContent] = {None: ManifestContent.DATA}
_SELECT_CONTENTS.update((c.value, c) for c in ManifestContent)


def read_manifest_list_selected(
    io: FileIO, path: str, keep: ManifestSelector, *, cache: bool = True
) -> tuple[int, list[ManifestFile]]:
    """(number of manifests in the list, the manifests ``keep`` accepts, in list order).

    The same as filtering :func:`read_manifest_list`'s result, but only the fields ``keep``
    takes are decoded for every manifest; the others, and ManifestFile objects, only for the
    manifests kept (a selective scan plan keeps a few of thousands). Every record's bytes are
    still walked and checked (a damaged block raises whether or not its manifests are kept), and
    every kept manifest is validated as :func:`read_manifest_list` validates it.
    """
    parsed = _parsed(io, path, cache)
    contents = _SELECT_CONTENTS
    kept: list[int] = []
    for i, (_, spec_id, content, added, existing, partitions) in enumerate(parsed.rows):
        c = contents.get(content)
        if c is None or spec_id < 0:
            parsed.args(i)  # decoding it in full names what is wrong
            raise CorruptFileError.of(path, MANIFEST_LIST, f"invalid entry {i}")
        if keep(spec_id, c, added, existing, partitions):
            kept.append(i)
    return len(parsed), parsed.selected(kept)


def _read(stream: IO[bytes], path: str) -> _Parsed:
    """The list in ``stream``, its container and schema checked; its entries are decoded by
    what is asked of it first: ``rows`` (selection) or every ManifestFile."""
    avro = AvroFile(stream, path, MANIFEST_LIST)
    schema_text = avro.metadata["avro.schema"]
    try:
        plan = _plan(schema_text)
    except InvalidMetadataError as e:
        raise CorruptFileError.of(path, MANIFEST_LIST, f"the file is {e.message}") from e
    except Exception as e:  # a schema that is JSON but not the shape of any Avro schema
        raise CorruptFileError.of(path, MANIFEST_LIST, f"not a manifest list: {type(e).__name__}: {e}") from e
    try:
        decode = compile_decoder(schema_text)
    except Exception as e:  # a schema the generator cannot handle: not one any Iceberg writer makes
        raise CorruptFileError.of(
            path, MANIFEST_LIST, f"unsupported Avro schema: {type(e).__name__}: {e}"
        ) from e
    return _Parsed(avro.blocks(), decode, plan, schema_text, path)


def _raw(parts: tuple[PartitionFieldSummary, ...] | None) -> list[tuple[Any, Any, Any, Any]] | None:
    if parts is None:
        return None
    return [(p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in parts]


def _args_of(records: list[Any], plan: _ListPlan, path: str) -> list[tuple[Any, ...]]:
    """The positional arguments of :func:`manifest_file` of decoded records, validated."""
    top, summary = plan.top, plan.summary
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
        for rec in records:
            # Positional arguments straight from the record: this loop runs once per manifest
            # decoded in full.
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
    return out


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
