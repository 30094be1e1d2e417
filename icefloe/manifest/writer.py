"""Writing manifests: one Avro file of entries for one partition spec and one snapshot.

Entries follow Iceberg Java's writers: an ADDED entry carries the writing snapshot's id and
null sequence numbers (inherited from the manifest list when read, so a manifest can be reused
by commit retries that get a new sequence number); EXISTING entries keep their snapshot id and
sequence numbers; DELETED entries carry the writing snapshot's id and the original sequence
numbers. The returned :class:`ManifestFile` leaves its sequence numbers unassigned for
:func:`~icefloe.manifest.write_manifest_list` to fill in.
"""

from __future__ import annotations

import json
import math
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

import fastavro
from fastavro.write import Writer

from icefloe.errors import FileIOError, ValidationError
from icefloe.manifest._avro import struct_to_avro, value_to_avro
from icefloe.manifest._model import (
    UNASSIGNED_SEQ,
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from icefloe.manifest._schemas import check_format_version, manifest_entry_struct
from icefloe.manifest.reader import forget_manifest
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    StringType,
    StructType,
    UUIDType,
    type_to_json,
)
from icefloe.spec.values import to_bytes

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.schema import Schema

__all__ = ["ManifestWriter"]

#: Java writes this constant as v1's required ``block_size_in_bytes``.
_V1_BLOCK_SIZE = 64 * 1024 * 1024
_CODEC = "deflate"


def _compact_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


class _CountingStream:
    """Counts bytes written so the manifest length needs no extra stat call on object stores."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner
        self.written = 0

    def write(self, data: bytes) -> int:
        try:
            self.inner.write(data)
        except FileIOError:
            raise
        except OSError as e:  # a stream's raw I/O error
            raise FileIOError(f"cannot write manifest: {e}") from e
        self.written += len(data)
        return len(data)

    def flush(self) -> None:
        self.inner.flush()

    def tell(self) -> int:
        return self.written

    def seekable(self) -> bool:
        # fastavro appends to seekable non-empty files; this stream is always new.
        return False


class _FieldSummary:
    """Running null/NaN/min/max of one partition field."""

    __slots__ = ("contains_nan", "contains_null", "is_float", "lower", "type", "upper")

    def __init__(self, t: IcebergType) -> None:
        self.type = t
        self.is_float = isinstance(t, FloatType | DoubleType)
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def update(self, value: Any) -> None:
        if value is None:
            self.contains_null = True
            return
        if self.is_float:
            if math.isnan(value):
                self.contains_nan = True
                return
            key: Any = (value, math.copysign(1.0, value))  # -0.0 sorts before 0.0
            if self.lower is None or key < (self.lower, math.copysign(1.0, self.lower)):
                self.lower = value
            if self.upper is None or key > (self.upper, math.copysign(1.0, self.upper)):
                self.upper = value
            return
        if self.lower is None or value < self.lower:
            self.lower = value
        if self.upper is None or value > self.upper:
            self.upper = value

    def summary(self) -> PartitionFieldSummary:
        return PartitionFieldSummary(
            contains_null=self.contains_null,
            contains_nan=self.contains_nan,
            lower_bound=None if self.lower is None else to_bytes(self.type, self.lower),
            upper_bound=None if self.upper is None else to_bytes(self.type, self.upper),
        )


def _python_types(t: IcebergType) -> tuple[type, ...]:
    """The Python types of icefloe's internal representation of ``t``."""
    if isinstance(t, BooleanType):
        return (bool,)
    if isinstance(t, FloatType | DoubleType):
        return (float, int)
    if isinstance(t, DecimalType):
        return (Decimal,)
    if isinstance(t, StringType):
        return (str,)
    if isinstance(t, UUIDType):
        return (uuid.UUID,)
    if isinstance(t, FixedType | BinaryType):
        return (bytes,)
    return (int,)


def _kv(m: dict[int, Any] | None) -> list[dict[str, Any]] | None:
    if m is None:
        return None
    return [{"key": k, "value": v} for k, v in m.items()]


class ManifestWriter:
    """Writes one manifest. Use as a context manager or call :meth:`close` to get its
    :class:`ManifestFile`; the file is created exclusively when the writer is built."""

    def __init__(
        self,
        io: FileIO,
        path: str,
        spec: PartitionSpec,
        schema: Schema,
        snapshot_id: int,
        content: ManifestContent = ManifestContent.DATA,
        format_version: int = 2,
    ) -> None:
        check_format_version(format_version)
        if format_version == 1 and content != ManifestContent.DATA:
            raise ValidationError(
                "format version 1 has no delete manifests", hint="upgrade the table to version 2"
            )
        self.path = path
        self.spec = spec
        self.snapshot_id = snapshot_id
        self.content = ManifestContent(content)
        self.format_version = format_version
        self._partition_type: StructType = spec.partition_type(schema)
        entry_struct = manifest_entry_struct(self._partition_type, format_version)
        avro_schema = struct_to_avro(entry_struct, "manifest_entry")
        data_file_avro = next(f for f in avro_schema["fields"] if f["field-id"] == 2)["type"]
        partition_avro = next(f for f in data_file_avro["fields"] if f["field-id"] == 102)["type"]
        self._partition_names = [f["name"] for f in partition_avro["fields"]]
        self._partition_converters: list[Callable[[Any], Any] | None] = [
            value_to_avro(f.field_type) for f in self._partition_type.fields
        ]
        self._partition_checks = [
            (f.name, f.field_type, _python_types(f.field_type)) for f in self._partition_type.fields
        ]
        self._summaries = [_FieldSummary(f.field_type) for f in self._partition_type.fields]
        metadata = {
            "schema": _compact_json(schema.to_json()),
            "partition-spec": _compact_json([f.to_json() for f in spec.fields]),
            "partition-spec-id": str(spec.spec_id),
            "format-version": str(format_version),
        }
        if format_version >= 2:
            metadata["content"] = "data" if self.content == ManifestContent.DATA else "deletes"
        metadata["iceberg.schema"] = _compact_json(
            {"type": "struct", "schema-id": 0, "fields": type_to_json(entry_struct)["fields"]}
        )

        self.added_files = self.existing_files = self.deleted_files = 0
        self.added_rows = self.existing_rows = self.deleted_rows = 0
        self._min_sequence_number: int | None = None
        self._closed = False
        self._result: ManifestFile | None = None

        forget_manifest(path)  # a reader may have cached an older file of this name
        self._stream = io.new_output(path).create()
        self._counter = _CountingStream(self._stream)
        try:
            parsed = fastavro.parse_schema(avro_schema)
            self._writer = Writer(self._counter, parsed, codec=_CODEC, metadata=metadata)
        except BaseException:
            self._stream.close()
            raise

    # ------------------------------------------------------------------ entries
    def add(self, data_file: DataFile, sequence_number: int | None = None) -> None:
        """Add a file new in this snapshot. ``sequence_number`` keeps an older data sequence
        number (compaction output); normally it is inherited from the manifest list."""
        self._write(ManifestEntryStatus.ADDED, self.snapshot_id, sequence_number, None, data_file)

    def existing(self, entry: ManifestEntry) -> None:
        """Carry over a live entry of an earlier snapshot unchanged."""
        self._check_assigned(entry)
        self._write(
            ManifestEntryStatus.EXISTING,
            entry.snapshot_id,
            entry.sequence_number,
            entry.file_sequence_number,
            entry.data_file,
        )

    def delete(self, entry: ManifestEntry) -> None:
        """Record that this snapshot removes the entry's file."""
        self._check_assigned(entry)
        self._write(
            ManifestEntryStatus.DELETED,
            self.snapshot_id,
            entry.sequence_number,
            entry.file_sequence_number,
            entry.data_file,
        )

    def _check_assigned(self, entry: ManifestEntry) -> None:
        if self.format_version >= 2 and (entry.sequence_number is None or entry.snapshot_id is None):
            raise ValidationError(
                f"entry for {entry.data_file.file_path!r} has no inherited snapshot id or sequence number",
                hint="pass entries as returned by read_manifest, which fills in inherited values",
            )

    def _write(
        self,
        status: ManifestEntryStatus,
        snapshot_id: int | None,
        sequence_number: int | None,
        file_sequence_number: int | None,
        f: DataFile,
    ) -> None:
        if self._closed:
            raise ValidationError(f"manifest writer for {self.path!r} is closed")
        self._check_file(f)
        record = self._record(status, snapshot_id, sequence_number, file_sequence_number, f)
        try:
            self._writer.write(record)
        except (TypeError, ValueError, OverflowError, AttributeError, struct.error) as e:
            # fastavro may have buffered part of the record: the file cannot be finished.
            self.abort()
            raise ValidationError(
                f"cannot write manifest entry for {f.file_path!r}: {e}", file_path=f.file_path
            ) from e
        for summary, value in zip(self._summaries, f.partition, strict=True):
            summary.update(value)
        if status == ManifestEntryStatus.ADDED:
            self.added_files += 1
            self.added_rows += f.record_count
        elif status == ManifestEntryStatus.EXISTING:
            self.existing_files += 1
            self.existing_rows += f.record_count
        else:
            self.deleted_files += 1
            self.deleted_rows += f.record_count
        if (
            status != ManifestEntryStatus.DELETED
            and sequence_number is not None
            and (self._min_sequence_number is None or sequence_number < self._min_sequence_number)
        ):
            self._min_sequence_number = sequence_number

    def _check_file(self, f: DataFile) -> None:
        is_data = f.content == DataFileContent.DATA
        if is_data != (self.content == ManifestContent.DATA):
            kind = "data" if self.content == ManifestContent.DATA else "delete"
            raise ValidationError(
                f"{f.file_path!r} ({f.content.name}) cannot go into a {kind} manifest",
                hint="write data files and delete files to separate manifests",
                file_path=f.file_path,
            )
        if f.spec_id != self.spec.spec_id:
            raise ValidationError(
                f"{f.file_path!r} belongs to partition spec {f.spec_id}, this manifest is for spec "
                f"{self.spec.spec_id}",
                hint="write one manifest per partition spec",
                file_path=f.file_path,
            )
        if len(f.partition) != len(self._partition_names):
            raise ValidationError(
                f"{f.file_path!r} has {len(f.partition)} partition values but spec "
                f"{self.spec.spec_id} has {len(self._partition_names)} fields",
                file_path=f.file_path,
            )
        for (name, t, kinds), value in zip(self._partition_checks, f.partition, strict=True):
            if value is not None and (
                not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
            ):
                raise ValidationError(
                    f"partition value {value!r} of {f.file_path!r} is not a valid {t} for "
                    f"partition field {name!r}",
                    hint="partition tuples hold transform results in icefloe's internal "
                    "representation (see icefloe.spec.types)",
                    file_path=f.file_path,
                )

    def _record(
        self,
        status: ManifestEntryStatus,
        snapshot_id: int | None,
        sequence_number: int | None,
        file_sequence_number: int | None,
        f: DataFile,
    ) -> dict[str, Any]:
        partition = {
            name: (v if conv is None or v is None else conv(v))
            for name, conv, v in zip(
                self._partition_names, self._partition_converters, f.partition, strict=True
            )
        }
        data_file: dict[str, Any] = {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": str(getattr(f.file_format, "value", f.file_format)).upper(),
            "partition": partition,
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "block_size_in_bytes": _V1_BLOCK_SIZE,
            "column_sizes": _kv(f.column_sizes),
            "value_counts": _kv(f.value_counts),
            "null_value_counts": _kv(f.null_value_counts),
            "nan_value_counts": _kv(f.nan_value_counts),
            "lower_bounds": _kv(f.lower_bounds),
            "upper_bounds": _kv(f.upper_bounds),
            "key_metadata": f.key_metadata,
            "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
            "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
            "sort_order_id": f.sort_order_id,
            "first_row_id": f.first_row_id,
            "referenced_data_file": f.referenced_data_file,
            "content_offset": f.content_offset,
            "content_size_in_bytes": f.content_size_in_bytes,
        }
        return {
            "status": int(status),
            "snapshot_id": snapshot_id,
            "sequence_number": sequence_number,
            "file_sequence_number": file_sequence_number,
            "data_file": data_file,
        }

    # ------------------------------------------------------------------ finishing
    def close(self) -> ManifestFile:
        """Finish the file and describe it for the manifest list (idempotent)."""
        if self._result is not None:
            return self._result
        if self._closed:
            raise ValidationError(f"manifest writer for {self.path!r} was aborted")
        self._closed = True
        try:
            self._writer.flush()
            self._stream.close()
        except OSError as e:
            raise FileIOError(f"cannot finish manifest {self.path!r}: {e}", location=self.path) from e
        finally:
            forget_manifest(self.path)
        self._result = ManifestFile(
            manifest_path=self.path,
            manifest_length=self._counter.written,
            partition_spec_id=self.spec.spec_id,
            content=self.content,
            sequence_number=UNASSIGNED_SEQ,
            min_sequence_number=(
                UNASSIGNED_SEQ if self._min_sequence_number is None else self._min_sequence_number
            ),
            added_snapshot_id=self.snapshot_id,
            added_files_count=self.added_files,
            existing_files_count=self.existing_files,
            deleted_files_count=self.deleted_files,
            added_rows_count=self.added_rows,
            existing_rows_count=self.existing_rows,
            deleted_rows_count=self.deleted_rows,
            partitions=tuple(s.summary() for s in self._summaries),
        )
        return self._result

    def abort(self) -> None:
        """Close the stream without finishing; the partial file stays for the caller to delete."""
        if not self._closed:
            self._closed = True
            self._stream.close()

    def __enter__(self) -> ManifestWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
