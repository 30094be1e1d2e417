"""Writing Arrow data as Iceberg Parquet data files.

::

    input (Table | RecordBatch | RecordBatchReader | iterable of batches)
      -> check the Arrow schema against the table schema (by name; before any file is written)
      -> per batch: conform to the table's Arrow layout (casts, nulls in required fields)
      -> partition (vectorized transforms; one group per distinct partition tuple)
      -> buffer per partition; every full row group's worth of rows is written as one row group
         (a sorted table: rows in the table's sort order, see "Sorted tables" below)
      -> roll to a new file when the bytes written reach write.target-file-size-bytes
      -> DataFile per file: metrics, split offsets, real size, partition tuple, sort order id

Row groups are cut by rows, not by input batches: the rows per row group are estimated from the
buffered data's in-memory bytes per row, so one huge input chunk still becomes many row groups
(and many files), and many tiny batches are gathered into full ones. The row-group budget is the
smaller of ``write.parquet.row-group-size-bytes`` and the target file size, so a file can roll
between row groups even when the target is small. Whether a file is full is measured on the
bytes actually written (compressed), after each row group.

Memory stays bounded by the row-group buffers: each open partition buffers at most one row group
beyond what it is writing, and when all buffers together exceed twice the row-group size the
largest is flushed.

Sorted tables. When the table's default sort order is not the unsorted one, every file's rows
are in that order (:mod:`icefloe.arrow.sort`: transforms, directions, null orders, NaN above
every number) and each ``DataFile`` records the order's id (0 for files of unsorted tables).
Per partition, the writer tracks whether the rows arriving are already in order, including
across batches and after the rows it already wrote to the open file:

- in order (a pre-sorted input, a Spark task after ``sortWithinPartitions``): rows stream out
  exactly as for an unsorted table; the check costs one vectorized comparison of neighbouring
  keys per batch, and files roll at the target size as usual;
- not in order: rows are buffered until they reach the *sort buffer* (``sort_buffer_bytes``,
  default the larger of the target file size and 64 MiB, measured in Arrow memory; an input
  batch bigger than that is one run by itself), sorted as one run and written out, rolling
  files at the target size inside the run. A run that does not continue the open file's order
  closes it first, so every file holds rows of one sorted run only.

The files of one run have tight, non-overlapping bounds on the sort key, and a write that fits
in the sort buffer (per partition) is one run. Bigger unsorted inputs become several runs whose
files overlap each other; and since a run is measured in memory while files are measured
compressed, a run of unsorted input usually ends in a file smaller than the target. Memory:
all partitions together buffer at most the larger of the sort buffer and two row groups, plus
one sorted copy of the run being written.

Table properties used (Java's names and defaults): ``write.data.path`` (``<location>/data``),
``write.target-file-size-bytes`` (512 MiB), ``write.parquet.row-group-size-bytes`` (128 MiB),
``write.parquet.page-size-bytes`` (1 MiB), ``write.parquet.compression-codec`` (zstd),
``write.parquet.compression-level``, and the metrics modes of :mod:`icefloe.arrow.metrics`.

File names follow Java: ``<data path>/<partition path>/00000-<task>-<write uuid>-<nnnnn>.parquet``.
"""

from __future__ import annotations

import contextlib
import uuid as uuid_mod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn, TypeAlias

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.arrow.conform import check_arrow_schema, conform_batch, drop_unknown, file_schema
from icefloe.arrow.metrics import FileMetrics, MetricsCollector, MetricsConfig
from icefloe.arrow.partitioning import partition_batch
from icefloe.arrow.schema import schema_to_arrow
from icefloe.arrow.sort import ArrowSortOrder
from icefloe.errors import ConfigError, FileIOError, IcefloeError, UnsupportedFeatureError, ValidationError
from icefloe.io import FileIO
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.properties import int_property
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata

__all__ = ["ArrowData", "write_data_files"]

ArrowData: TypeAlias = pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch]

TARGET_FILE_SIZE_PROP = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
ROW_GROUP_SIZE_PROP = "write.parquet.row-group-size-bytes"
DEFAULT_ROW_GROUP_SIZE = 128 * 1024 * 1024
PAGE_SIZE_PROP = "write.parquet.page-size-bytes"
DEFAULT_PAGE_SIZE = 1024 * 1024
COMPRESSION_PROP = "write.parquet.compression-codec"
COMPRESSION_LEVEL_PROP = "write.parquet.compression-level"
DATA_PATH_PROP = "write.data.path"
MIN_SORT_BUFFER = 64 * 1024 * 1024

_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "uncompressed": "none",
    "none": "none",
}


@dataclass(frozen=True)
class _Options:
    data_path: str
    target_file_size: int
    row_group_size: int
    page_size: int
    compression: str
    compression_level: int | None


def _options(metadata: TableMetadata, target_file_size_bytes: int | None) -> _Options:
    props = metadata.properties
    codec_text = props.get(COMPRESSION_PROP, "zstd").lower()
    codec = _CODECS.get(codec_text)
    if codec is None:
        raise ConfigError(
            f"unsupported Parquet compression codec {codec_text!r}",
            hint=f"use one of {', '.join(sorted(_CODECS))}",
        )
    level = None
    if COMPRESSION_LEVEL_PROP in props:
        level = int_property(props, COMPRESSION_LEVEL_PROP, 0)
    data_path = props.get(DATA_PATH_PROP) or f"{metadata.location.rstrip('/')}/data"
    target = (
        target_file_size_bytes
        if target_file_size_bytes is not None
        else int_property(props, TARGET_FILE_SIZE_PROP, DEFAULT_TARGET_FILE_SIZE)
    )
    if target <= 0:
        raise ValidationError(f"target_file_size_bytes must be positive, got {target}")
    return _Options(
        data_path=data_path.rstrip("/"),
        target_file_size=target,
        row_group_size=int_property(props, ROW_GROUP_SIZE_PROP, DEFAULT_ROW_GROUP_SIZE),
        page_size=int_property(props, PAGE_SIZE_PROP, DEFAULT_PAGE_SIZE),
        compression=codec,
        compression_level=level,
    )


def _batches(data: ArrowData) -> tuple[pa.Schema | None, Iterator[pa.RecordBatch]]:
    """The input's schema when known up front, and its batches."""
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    try:
        return None, iter(data)
    except TypeError:
        raise ValidationError(
            f"cannot write {type(data).__name__}",
            hint="pass a pyarrow Table, RecordBatch, RecordBatchReader or an iterable of RecordBatches",
        ) from None


@dataclass
class _OpenFile:
    path: str
    stream: IO[bytes]
    sink: pa.NativeFile
    writer: pq.ParquetWriter
    metrics: MetricsCollector


# Shared with icefloe.arrow.deletes (delete files are named, opened and closed the same way).
write_options = _options


def file_location(
    options: _Options,
    spec: PartitionSpec,
    schema: Schema,
    partition: tuple[Any, ...],
    write_uuid: str,
    file_count: int,
    suffix: str = "",
) -> str:
    """Java's file naming: ``<data path>/<partition path>/00000-0-<uuid>-<nnnnn><suffix>.parquet``."""
    name = f"00000-0-{write_uuid}-{file_count:05d}{suffix}.parquet"
    if spec.fields:
        return f"{options.data_path}/{spec.partition_path(partition, schema)}/{name}"
    return f"{options.data_path}/{name}"


def raise_typed(e: BaseException, what: str) -> NoReturn:
    """Re-raise ``e`` from a failed write; a stream's raw ``OSError`` (pyarrow's streams raise
    those) becomes a `FileIOError`, so callers only ever see typed errors."""
    if isinstance(e, OSError) and not isinstance(e, IcefloeError):
        raise FileIOError(f"cannot write {what}: {e}") from e
    raise e


def open_parquet_file(
    io: FileIO,
    path: str,
    schema: Schema,
    arrow_schema: pa.Schema,
    options: _Options,
    metrics_config: MetricsConfig,
) -> _OpenFile:
    stream = io.new_output(path).create()
    # FileIOs that hand out pyarrow native streams (local, pyarrow.fs) are written in C++ without
    # the GIL; anything else goes through a (slower) Python file adapter.
    sink = stream if isinstance(stream, pa.NativeFile) else pa.PythonFile(stream, mode="w")
    writer = pq.ParquetWriter(
        sink,
        arrow_schema,
        compression=options.compression,
        compression_level=options.compression_level,
        data_page_size=options.page_size,
        store_schema=False,
        write_statistics=True,
        # A CRC-32 per page (as parquet-mr writes by default), so a reader that verifies them
        # detects damaged pages instead of decoding changed values (no measurable write cost).
        write_page_checksum=True,
        # Like Iceberg Java: decimal(p <= 9) as INT32, decimal(p <= 18) as INT64, wider ones as
        # FIXED_LEN_BYTE_ARRAY. Integers decode about 5x faster than big-endian fixed bytes.
        store_decimal_as_integer=True,
    )
    return _OpenFile(path, stream, sink, writer, MetricsCollector(schema, metrics_config))


def close_parquet_file(f: _OpenFile) -> tuple[int, FileMetrics]:
    """Finish the file; its real size and its metrics."""
    f.writer.close()
    size = f.sink.tell()
    parquet_meta = f.writer.writer.metadata
    f.sink.close()
    if f.stream is not f.sink:
        f.stream.close()
    return size, f.metrics.finish(parquet_meta)


def parquet_file_entry(
    content: DataFileContent,
    path: str,
    size: int,
    metrics: FileMetrics,
    *,
    partition: tuple[Any, ...],
    spec_id: int,
    **overrides: Any,
) -> DataFile:
    """The manifest description of a Parquet file this module wrote (data or delete file):
    its metrics as collected, with ``overrides`` replacing or adding fields."""
    fields: dict[str, Any] = {
        "content": content,
        "file_path": path,
        "file_format": FileFormat.PARQUET,
        "partition": partition,
        "record_count": metrics.record_count,
        "file_size_in_bytes": size,
        "column_sizes": metrics.column_sizes,
        "value_counts": metrics.value_counts,
        "null_value_counts": metrics.null_value_counts,
        "nan_value_counts": metrics.nan_value_counts,
        "lower_bounds": metrics.lower_bounds,
        "upper_bounds": metrics.upper_bounds,
        "split_offsets": tuple(metrics.split_offsets),
        "spec_id": spec_id,
    }
    fields.update(overrides)
    return DataFile(**fields)


@dataclass
class _PartitionState:
    partition: tuple[Any, ...]
    buffered: list[pa.RecordBatch] = field(default_factory=list)
    buffered_rows: int = 0
    buffered_bytes: int = 0
    current: _OpenFile | None = None
    # Sorted tables only: whether the buffered rows are in order and continue the open file;
    # the last row appended (buffered or written) while in order; the open file's last row.
    in_order: bool = True
    tail: pa.RecordBatch | None = None
    file_tail: pa.RecordBatch | None = None


class _DataFileWriter:
    """Rolling, partitioned Parquet writing for one ``write_data_files`` call."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        schema: Schema,
        spec: PartitionSpec,
        options: _Options,
        write_uuid: str,
        sort_buffer_bytes: int | None = None,
        sort_order: SortOrder | None = None,
    ) -> None:
        self.io = io
        self.schema = schema
        self.spec = spec
        self.options = options
        self.write_uuid = write_uuid
        self.arrow_schema = schema_to_arrow(schema)
        sort_ids: tuple[int, ...] = ()
        self.sorter: ArrowSortOrder | None = None
        try:
            order = sort_order if sort_order is not None else metadata.sort_order()
            sort_ids = tuple(f.source_id for f in order.fields)
            self.sorter = ArrowSortOrder.for_schema(order, schema)
        except (AttributeError, IcefloeError):
            sort_ids = ()
        self.sort_order_id = self.sorter.order_id if self.sorter is not None else 0
        self.sort_buffer = (
            sort_buffer_bytes
            if sort_buffer_bytes is not None
            else max(options.target_file_size, MIN_SORT_BUFFER)
        )
        if self.sort_buffer <= 0:
            raise ValidationError(f"sort_buffer_bytes must be positive, got {self.sort_buffer}")
        self.metrics_config = MetricsConfig.from_properties(metadata.properties, schema, sort_ids)
        self.partitions: dict[tuple[Any, ...], _PartitionState] = {}
        self.file_count = 0
        self.total_buffered = 0
        self.done: list[DataFile] = []
        self.written_paths: list[str] = []

    # ------------------------------------------------------------------ input side
    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        # nbytes counts only the bytes a (sliced) batch references; partitions of one batch are
        # assumed to share its bytes per row.
        bytes_per_row = max(1.0, batch.nbytes / batch.num_rows)
        for partition, rows in partition_batch(batch, self.schema, self.spec):
            if rows.num_rows == 0:
                continue
            state = self.partitions.get(partition)
            if state is None:
                state = self.partitions[partition] = _PartitionState(partition)
            size = max(1, round(rows.num_rows * bytes_per_row))
            if self.sorter is not None:
                self._track_order(state, rows)
            state.buffered.append(rows)
            state.buffered_rows += rows.num_rows
            state.buffered_bytes += size
            self.total_buffered += size
            if not state.in_order:
                if state.buffered_bytes >= self.sort_buffer:
                    self._flush_run(state)
            elif state.buffered_bytes >= self._flush_threshold():
                self._flush(state, full_row_groups_only=True)
        while self.total_buffered > self._memory_cap() and self.partitions:
            largest = max(self.partitions.values(), key=lambda s: s.buffered_bytes)
            if not largest.buffered:
                break
            self._flush_all(largest)

    def _flush_threshold(self) -> int:
        return min(self.options.row_group_size, self.options.target_file_size)

    def _memory_cap(self) -> int:
        cap = 2 * self.options.row_group_size
        return cap if self.sorter is None else max(cap, self.sort_buffer)

    def _track_order(self, state: _PartitionState, rows: pa.RecordBatch) -> None:
        """Keep ``state.in_order`` (the buffered rows are sorted and continue the open file)."""
        sorter = self.sorter
        assert sorter is not None
        if not state.in_order:
            return
        if sorter.is_sorted(rows) and (state.tail is None or sorter.in_order(state.tail, rows)):
            state.tail = _last_row(rows)
        else:
            state.in_order = False
            state.tail = None

    # ------------------------------------------------------------------ output side
    def _flush_all(self, state: _PartitionState) -> None:
        if state.in_order:
            self._flush(state)
        else:
            self._flush_run(state)

    def _flush_run(self, state: _PartitionState) -> None:
        """Sort the buffered rows (one run) and write them all; a run that does not continue the
        open file's order starts a new file."""
        sorter = self.sorter
        assert sorter is not None
        if not state.buffered:
            return
        table = sorter.sort(pa.Table.from_batches(state.buffered, schema=self.arrow_schema))
        if state.file_tail is not None and not sorter.in_order(state.file_tail, table):
            self._close(state)
        state.buffered = [b for b in table.to_batches() if b.num_rows]
        state.in_order = True
        state.tail = None
        self._flush(state)
        state.tail = state.file_tail

    def _flush(self, state: _PartitionState, full_row_groups_only: bool = False) -> None:
        """Write the buffered rows as row groups of the row-group budget; with
        ``full_row_groups_only`` the rows short of a full row group stay buffered."""
        if not state.buffered:
            return
        bytes_per_row = state.buffered_bytes / state.buffered_rows
        rows_per_group = max(1, int(self._flush_threshold() / bytes_per_row))
        total = state.buffered_rows
        end = total - total % rows_per_group if full_row_groups_only else total
        if end == 0:
            return
        table = pa.Table.from_batches(state.buffered, schema=self.arrow_schema)
        rest = table.slice(end)
        state.buffered = [b for b in rest.to_batches() if b.num_rows]
        state.buffered_rows = rest.num_rows
        kept = round(rest.num_rows * bytes_per_row)
        self.total_buffered -= state.buffered_bytes - kept
        state.buffered_bytes = kept
        for offset in range(0, end, rows_per_group):
            self._write_row_group(state, table.slice(offset, min(rows_per_group, end - offset)))

    def _write_row_group(self, state: _PartitionState, rows: pa.Table) -> None:
        if state.current is None:
            state.current = self._open(state.partition)
        f = state.current
        f.writer.write_table(rows, row_group_size=rows.num_rows)
        # One update per write_table call: MetricsCollector relies on row groups not
        # straddling updates.
        f.metrics.update(rows)
        if self.sorter is not None:
            state.file_tail = _last_row(rows)
        if f.sink.tell() >= self.options.target_file_size:
            self._close(state)

    def _open(self, partition: tuple[Any, ...]) -> _OpenFile:
        self.file_count += 1
        path = file_location(
            self.options, self.spec, self.schema, partition, self.write_uuid, self.file_count
        )
        self.written_paths.append(path)
        return open_parquet_file(
            self.io, path, self.schema, self.arrow_schema, self.options, self.metrics_config
        )

    def _close(self, state: _PartitionState) -> None:
        f = state.current
        if f is None:
            return
        state.current = None
        state.file_tail = None
        size, m = close_parquet_file(f)
        self.done.append(
            parquet_file_entry(
                DataFileContent.DATA,
                f.path,
                size,
                m,
                partition=state.partition,
                spec_id=self.spec.spec_id,
                sort_order_id=self.sort_order_id,
            )
        )

    def finish(self) -> list[DataFile]:
        for state in self.partitions.values():
            self._flush_all(state)
            self._close(state)
        return self.done

    def abort(self) -> None:
        """Close and delete every file written so far (the caller never sees them)."""
        for state in self.partitions.values():
            f = state.current
            if f is not None:
                with contextlib.suppress(Exception):  # best effort on the error path
                    f.writer.close()
                    f.sink.close()
                    if f.stream is not f.sink:
                        f.stream.close()
        for path in self.written_paths:
            with contextlib.suppress(Exception):
                self.io.delete(path)


def write_data_files(
    io: FileIO,
    metadata: TableMetadata,
    data: ArrowData,
    *,
    spec: PartitionSpec | None = None,
    schema: Schema | None = None,
    target_file_size_bytes: int | None = None,
    write_uuid: str | uuid_mod.UUID | None = None,
    sort_buffer_bytes: int | None = None,
    sort_order: SortOrder | None = None,
) -> list[DataFile]:
    """Write ``data`` as Parquet data files of the table and return their ``DataFile`` entries
    (not yet committed). ``schema``/``spec`` default to the table's current ones, ``sort_order``
    to the table's order (compaction passes the order it sorts by, or the unsorted one).

    When the table has a sort order, each file's rows are in that order and the files record its
    id; unsorted input is sorted in runs of ``sort_buffer_bytes`` (Arrow memory; default the
    larger of the target file size and 64 MiB; see the module docstring).

    The Arrow schema is checked before any file is written. Problems only the data reveals (a
    null in a required field, a value that overflows its column) can surface in a later batch of
    a streamed input; then the files already written are deleted before the error is raised.
    An input without rows writes no file.
    """
    schema = schema if schema is not None else metadata.schema()
    spec = spec if spec is not None else metadata.spec()
    if any(schema.find_field_or_none(f.source_id) is None for f in spec.fields):
        # Rows rewritten from a file of an older spec whose source column was dropped since:
        # that spec cannot partition them any more, so they go to the current spec (the spec
        # Iceberg Java's writers always use).
        spec = metadata.spec()
    options = _options(metadata, target_file_size_bytes)
    input_schema, batches = _batches(data)
    if input_schema is not None:
        check_arrow_schema(input_schema, schema)
    checked: set[pa.Schema] = set() if input_schema is None else {input_schema}
    # format v3 ``unknown`` columns are always null and have no column in data files
    stored = file_schema(schema)
    unknown_sources = [
        f
        for f in spec.fields
        if schema.find_field_or_none(f.source_id) is not None
        and stored.find_field_or_none(f.source_id) is None
    ]
    if unknown_sources:
        raise UnsupportedFeatureError(
            f"cannot write data partitioned by {unknown_sources[0].name!r}: its source column has "
            "type unknown, which has no partition value type in manifests",
            hint="promote the column to its type first (update_schema().update_column), or drop the "
            "partition field (update_spec())",
        )
    writer = _DataFileWriter(
        io,
        metadata,
        stored,
        spec,
        options,
        str(write_uuid or uuid_mod.uuid4()),
        sort_buffer_bytes,
        sort_order,
    )
    try:
        for batch in batches:
            if not isinstance(batch, pa.RecordBatch):
                raise ValidationError(
                    f"expected pyarrow RecordBatches, got {type(batch).__name__}",
                    hint="pass a pyarrow Table, RecordBatch, RecordBatchReader or an iterable of them",
                )
            if batch.schema not in checked:
                check_arrow_schema(batch.schema, schema)
                checked.add(batch.schema)
            writer.add(drop_unknown(conform_batch(batch, schema), schema))
        return writer.finish()
    except BaseException as e:
        writer.abort()
        raise_typed(e, f"data files of table {metadata.location}")


def _last_row(rows: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    """A copy of the last row (a slice would keep the whole batch's buffers alive)."""
    last = rows.take(pa.array([rows.num_rows - 1]))
    return last if isinstance(last, pa.RecordBatch) else last.combine_chunks().to_batches()[0]
