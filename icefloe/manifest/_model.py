"""In-memory model of manifest entries, data files and manifest-list entries.

Field names are the spec's. Values are in icefloe's internal representation (see
``icefloe.spec.types``): a partition is a plain tuple of transform results in partition-spec
field order; bounds stay as the spec's single-value binary encoding (``dict[int, bytes]``) and are
decoded only by the evaluators that need them. Classes use ``__slots__`` so that planning tens of
thousands of files stays cheap and tasks pickle small.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import IntEnum, StrEnum
from typing import Any

__all__ = [
    "UNASSIGNED_SEQ",
    "DataFile",
    "DataFileContent",
    "FileFormat",
    "ManifestContent",
    "ManifestEntry",
    "ManifestEntryStatus",
    "ManifestFile",
    "PartitionFieldSummary",
]

#: Sequence number of a manifest written by the pending snapshot; the manifest-list writer
#: replaces it with the snapshot's sequence number.
UNASSIGNED_SEQ = -1

_new = object.__new__
_set = object.__setattr__


class DataFileContent(IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(IntEnum):
    DATA = 0
    DELETES = 1


class ManifestEntryStatus(IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


class FileFormat(StrEnum):
    """Written upper-case, as Iceberg Java writes them; read case-insensitively."""

    AVRO = "AVRO"
    ORC = "ORC"
    PARQUET = "PARQUET"
    PUFFIN = "PUFFIN"

    @classmethod
    def parse(cls, text: str) -> FileFormat:
        try:
            return cls(text.upper())
        except ValueError:
            from icefloe.errors import InvalidMetadataError

            raise InvalidMetadataError(
                f"unknown file format {text!r}", hint="expected avro, orc, parquet or puffin"
            ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataFile:
    """A data or delete file as listed in a manifest (the spec's ``data_file`` struct).

    ``spec_id`` is not stored in the file: readers take it from the manifest, writers use it to
    choose the manifest. Maps are ``None`` when absent (which differs from empty, as in Java).
    """

    content: DataFileContent = DataFileContent.DATA
    file_path: str
    file_format: FileFormat
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    spec_id: int = 0

    def __hash__(self) -> int:
        # A path names one file; the metric maps are not hashable.
        return hash((self.file_path, self.content))

    def with_spec_id(self, spec_id: int) -> DataFile:
        return replace(self, spec_id=spec_id)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One row of a manifest. After :func:`~icefloe.manifest.read_manifest` the snapshot id and
    sequence numbers hold the inherited values; ``sequence_number`` is the *data* sequence
    number the delete rules use."""

    status: ManifestEntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile

    @property
    def is_live(self) -> bool:
        return self.status != ManifestEntryStatus.DELETED


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    """Per partition field, over every entry of a manifest (deleted ones included, as Java).

    ``decoded`` caches the bounds decoded for one partition field type (see
    :meth:`decoded_bounds`): manifest lists are cached process-wide and planned again and again,
    and decoding every manifest's bounds on every plan was a third of planning time.
    """

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None
    _decoded: tuple[Any, Any, Any] | None = field(
        default=None, init=False, repr=False, compare=False, hash=False
    )

    def decoded_bounds(self, field_type: Any, decode: Callable[[Any, bytes], Any]) -> tuple[Any, Any] | None:
        """(lower, upper) decoded as ``field_type`` with ``decode(type, bytes)``, or None when
        either bound is missing. The last result is kept: a summary belongs to one partition
        field, so it is almost always asked for the same type. Racing threads at worst decode
        twice; the cached tuple is replaced atomically."""
        lower, upper = self.lower_bound, self.upper_bound
        if lower is None or upper is None:
            return None
        cached = self._decoded
        if cached is not None and (cached[0] is field_type or cached[0] == field_type):
            return cached[1], cached[2]
        lo, hi = decode(field_type, lower), decode(field_type, upper)
        _set(self, "_decoded", (field_type, lo, hi))
        return lo, hi


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestFile:
    """A manifest-list entry. Counts are ``None`` only when a v1 list left them out (then
    "unknown", treated as "may have some")."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int = UNASSIGNED_SEQ
    min_sequence_number: int = UNASSIGNED_SEQ
    added_snapshot_id: int
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_added_files(self) -> bool:
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0

    def has_deleted_files(self) -> bool:
        return self.deleted_files_count is None or self.deleted_files_count > 0


def partition_field_summary(
    contains_null: bool, contains_nan: bool | None, lower_bound: bytes | None, upper_bound: bytes | None
) -> PartitionFieldSummary:
    """Positional fast constructor for readers (a frozen dataclass's generated ``__init__`` costs
    about twice as much; a manifest list holds thousands of these)."""
    s = _new(PartitionFieldSummary)
    _set(s, "contains_null", contains_null)
    _set(s, "contains_nan", contains_nan)
    _set(s, "lower_bound", lower_bound)
    _set(s, "upper_bound", upper_bound)
    _set(s, "_decoded", None)
    return s


def manifest_file(
    manifest_path: str,
    manifest_length: int,
    partition_spec_id: int,
    content: ManifestContent,
    sequence_number: int,
    min_sequence_number: int,
    added_snapshot_id: int,
    added_files_count: int | None,
    existing_files_count: int | None,
    deleted_files_count: int | None,
    added_rows_count: int | None,
    existing_rows_count: int | None,
    deleted_rows_count: int | None,
    partitions: tuple[PartitionFieldSummary, ...] | None,
    key_metadata: bytes | None,
    first_row_id: int | None,
) -> ManifestFile:
    """Positional fast constructor for the manifest-list reader; same result as
    ``ManifestFile(...)`` with every field given, without keyword matching."""
    m = _new(ManifestFile)
    _set(m, "manifest_path", manifest_path)
    _set(m, "manifest_length", manifest_length)
    _set(m, "partition_spec_id", partition_spec_id)
    _set(m, "content", content)
    _set(m, "sequence_number", sequence_number)
    _set(m, "min_sequence_number", min_sequence_number)
    _set(m, "added_snapshot_id", added_snapshot_id)
    _set(m, "added_files_count", added_files_count)
    _set(m, "existing_files_count", existing_files_count)
    _set(m, "deleted_files_count", deleted_files_count)
    _set(m, "added_rows_count", added_rows_count)
    _set(m, "existing_rows_count", existing_rows_count)
    _set(m, "deleted_rows_count", deleted_rows_count)
    _set(m, "partitions", partitions)
    _set(m, "key_metadata", key_metadata)
    _set(m, "first_row_id", first_row_id)
    return m


def data_file(
    content: DataFileContent,
    file_path: str,
    file_format: FileFormat,
    partition: tuple[Any, ...],
    record_count: int,
    file_size_in_bytes: int,
    column_sizes: dict[int, int] | None,
    value_counts: dict[int, int] | None,
    null_value_counts: dict[int, int] | None,
    nan_value_counts: dict[int, int] | None,
    lower_bounds: dict[int, bytes] | None,
    upper_bounds: dict[int, bytes] | None,
    key_metadata: bytes | None,
    split_offsets: tuple[int, ...] | None,
    equality_ids: tuple[int, ...] | None,
    sort_order_id: int | None,
    first_row_id: int | None,
    referenced_data_file: str | None,
    content_offset: int | None,
    content_size_in_bytes: int | None,
    spec_id: int,
) -> DataFile:
    """Positional fast constructor for the manifest reader; same result as ``DataFile(...)`` with
    every field given (about half the cost: a manifest holds thousands of entries)."""
    f = _new(DataFile)
    _set(f, "content", content)
    _set(f, "file_path", file_path)
    _set(f, "file_format", file_format)
    _set(f, "partition", partition)
    _set(f, "record_count", record_count)
    _set(f, "file_size_in_bytes", file_size_in_bytes)
    _set(f, "column_sizes", column_sizes)
    _set(f, "value_counts", value_counts)
    _set(f, "null_value_counts", null_value_counts)
    _set(f, "nan_value_counts", nan_value_counts)
    _set(f, "lower_bounds", lower_bounds)
    _set(f, "upper_bounds", upper_bounds)
    _set(f, "key_metadata", key_metadata)
    _set(f, "split_offsets", split_offsets)
    _set(f, "equality_ids", equality_ids)
    _set(f, "sort_order_id", sort_order_id)
    _set(f, "first_row_id", first_row_id)
    _set(f, "referenced_data_file", referenced_data_file)
    _set(f, "content_offset", content_offset)
    _set(f, "content_size_in_bytes", content_size_in_bytes)
    _set(f, "spec_id", spec_id)
    return f
