"""The local runner of the maintenance rewrites: Arrow in this process.

::

    data file group (icefloe.maintenance.rewrite_data_files)
      binpack       per split (input split size): read its files, deletes applied -> batches of
                    ~128k rows -> write_data_files (output spec, the writers' max file size).
                    Files that need nothing of icefloe's reader (no deletes, a schema that never
                    changed, plain columns) are read whole by column name, the others with
                    read_task; a few threads read files ahead
      sort          read the group -> sort: the output spec's partition fields first when the
      zorder        files are of another spec, then the sort order, or the z-value
                    (:func:`zorder_values`) -> cut into the expected number of files -> write
    position delete group (icefloe.maintenance.rewrite_position_deletes)
                    read (file_path, pos) of every file -> keep the rows of live data files
                    -> write_position_deletes (sorted by file_path, pos; rolling)

Groups run on a thread pool of ``max-concurrent-file-group-rewrites`` workers (pyarrow reads,
decodes and writes without the GIL). A group that fails has its files deleted before it is
reported; the caller owns the files of the groups reported done.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.arrow.apply_deletes import _check_parquet, _position_columns
from icefloe.arrow.deletes import write_position_deletes
from icefloe.arrow.partitioning import source_column
from icefloe.arrow.reader import read_task
from icefloe.arrow.row_lineage import keeps_lineage, lineage_schema
from icefloe.arrow.schema import schema_to_arrow
from icefloe.arrow.sort import ArrowSortOrder
from icefloe.arrow.transforms import transform_arrow
from icefloe.arrow.writer import write_data_files
from icefloe.errors import ValidationError
from icefloe.io._decode import DATA_FILE, PARQUET_READ, POSITION_DELETE_FILE, decoding
from icefloe.maintenance._runner import GroupOutcome, delete_quietly
from icefloe.manifest import DataFile, FileFormat
from icefloe.scan.task import FileScanTask
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
)

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.maintenance.rewrite_data_files import RewriteDataFilesPlan, RewriteFileGroup, RewriteStrategy
    from icefloe.maintenance.rewrite_manifests import RewriteManifestsPlan
    from icefloe.maintenance.rewrite_position_deletes import (
        RewritePositionDeletesGroup,
        RewritePositionDeletesPlan,
    )
    from icefloe.maintenance.zorder import ZOrderSpec
    from icefloe.manifest import ManifestFile
    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.schema import Schema
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "ArrowRewriteRunner",
    "slim_tasks",
    "read_group_rows",
    "rewrite_ordered",
    "rewrite_position_delete_group",
    "rewrite_split",
    "zorder_values",
]

#: threads reading files ahead of the writer, and how many bytes of files they read ahead
READ_THREADS = 2
READ_AHEAD_BYTES = 64 * 1024 * 1024
#: rows per batch handed to the writer
REBATCH_ROWS = 131_072
_ZORDER_CHUNK_ROWS = 65_536


# --------------------------------------------------------------------------- reading

_PLAIN_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DateType,
    StringType,
    BinaryType,
    TimestampType,
    TimestamptzType,
)


def _plain_files(metadata: TableMetadata, tasks: Sequence[FileScanTask]) -> bool:
    """Whether the files can be read by column name and mean the same as icefloe's reader would
    make of them: whole Parquet files without deletes, a table
    whose schema never changed (so names and field ids agree in every file) and has only plain
    top-level columns, and no name mapping."""
    if "schema.name-mapping.default" in metadata.properties or keeps_lineage(metadata):
        # v3: row lineage needs each file's first_row_id and sequence number (read_task's work)
        return False
    schema = metadata.schema()
    if any(s.as_struct() != schema.as_struct() for s in metadata.schemas):
        return False
    if not all(isinstance(f.field_type, _PLAIN_TYPES) for f in schema.fields):
        return False
    return all(
        not t.delete_files and t.start == 0 and t.length is None and t.file.file_format == FileFormat.PARQUET
        for t in tasks
    )


def slim_tasks(metadata: TableMetadata, tasks: Sequence[FileScanTask]) -> list[FileScanTask]:
    """``tasks`` with no more than their reading needs: files read by name (:func:`_plain_files`)
    need their path and size, not their column metrics (a tenth of the bytes to ship to a Spark
    task for many small files)."""
    if not tasks or not _plain_files(metadata, tasks):
        return list(tasks)
    return [
        FileScanTask(
            DataFile(
                file_path=t.file.file_path,
                file_format=t.file.file_format,
                partition=t.file.partition,
                record_count=t.file.record_count,
                file_size_in_bytes=t.file.file_size_in_bytes,
                spec_id=t.file.spec_id,
            ),
            t.residual,
        )
        for t in tasks
    ]


def _read_plain(io: FileIO, task: FileScanTask, target: pa.Schema) -> list[pa.RecordBatch]:
    """A whole Parquet file of a table whose schema never changed, columns by name."""
    path = task.file.file_path
    with decoding(path, DATA_FILE):
        stream = io.new_input(path).open()
    try:
        with decoding(path, DATA_FILE):
            pf = pq.ParquetFile(stream, pre_buffer=False, **PARQUET_READ)
            names = set(pf.schema_arrow.names)
            table = pf.read_row_groups(
                range(pf.metadata.num_row_groups),
                columns=[n for n in target.names if n in names],
                use_threads=False,
            )
    finally:
        stream.close()
    n = table.num_rows
    columns = []
    for f in target:
        if f.name in names:
            col = table.column(f.name)
            columns.append(col if col.type == f.type else col.cast(f.type))
        else:
            columns.append(pa.nulls(n, f.type))
    batches: list[pa.RecordBatch] = pa.Table.from_arrays(columns, schema=target).to_batches()
    return batches


def _prefetched(
    tasks: Sequence[FileScanTask],
    read: Callable[[FileScanTask], list[pa.RecordBatch]],
    threads: int,
    read_ahead_bytes: int,
) -> Iterator[pa.RecordBatch]:
    """``read`` of each task, in task order, on ``threads`` threads, reading ahead while the files
    in flight hold fewer than ``read_ahead_bytes`` (and at least one file per thread)."""
    if threads <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield from read(t)
        return
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="icefloe-rewrite-read") as pool:
        pending: deque[tuple[Future[list[pa.RecordBatch]], int]] = deque()
        in_flight = 0
        it = iter(tasks)
        try:
            while True:
                while len(pending) < threads or in_flight < read_ahead_bytes:
                    nxt = next(it, None)
                    if nxt is None:
                        break
                    pending.append((pool.submit(read, nxt), nxt.size_in_bytes))
                    in_flight += nxt.size_in_bytes
                if not pending:
                    return
                fut, size = pending.popleft()
                in_flight -= size
                yield from fut.result()
        finally:
            for fut, _ in pending:
                fut.cancel()


def rebatch(batches: Iterable[pa.RecordBatch], rows: int = 0) -> Iterator[pa.RecordBatch]:
    """Small batches (one per small file) gathered into batches of about ``rows`` rows: the
    writer's per-batch work (conform, partition, order checks) is then paid rarely."""
    rows = rows or REBATCH_ROWS
    pending: list[pa.RecordBatch] = []
    count = 0
    for b in batches:
        if b.num_rows == 0:
            continue
        if not pending and b.num_rows >= rows:
            yield b
            continue
        pending.append(b)
        count += b.num_rows
        if count >= rows:
            yield _combined(pending)
            pending, count = [], 0
    if pending:
        yield _combined(pending)


def _combined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    table = pa.Table.from_batches(batches).combine_chunks()
    return table.to_batches()[0]


def read_group_rows(
    io: FileIO,
    metadata: TableMetadata,
    tasks: Sequence[FileScanTask],
    *,
    threads: int = READ_THREADS,
    read_ahead_bytes: int = READ_AHEAD_BYTES,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``tasks``, deletes applied, laid out as the current schema (plus ``_row_id``
    and ``_last_updated_sequence_number`` on v3 tables: :func:`lineage_schema`), in task order and
    in batches of about ``REBATCH_ROWS`` rows, files read ahead on ``threads`` threads. Files that
    need nothing of icefloe's reader (:func:`_plain_files`) are read whole by column name (a
    fraction of the per-file cost, which dominates for many small files); the others with
    :func:`~icefloe.arrow.reader.read_task`."""
    if tasks and _plain_files(metadata, tasks):
        target = schema_to_arrow(metadata.schema())

        def read(task: FileScanTask) -> list[pa.RecordBatch]:
            return _read_plain(io, task, target)

    else:
        schema = metadata.schema()
        read_schema = lineage_schema(metadata)
        mapping = metadata.properties.get("schema.name-mapping.default")

        def read(task: FileScanTask) -> list[pa.RecordBatch]:
            return list(read_task(io, task, read_schema, schema, True, name_mapping=mapping))

    yield from rebatch(_prefetched(tasks, read, threads, read_ahead_bytes))


# --------------------------------------------------------------------------- writing groups


def rewrite_split(
    io: FileIO,
    metadata: TableMetadata,
    tasks: Sequence[FileScanTask],
    *,
    spec: PartitionSpec,
    target_file_size: int,
    write_uuid: str,
    threads: int = READ_THREADS,
) -> list[DataFile]:
    """Bin-pack: the rows of ``tasks`` as they come (sorted by the table's order, as every write
    of a sorted table), into files of ``spec`` of at most about ``target_file_size``."""
    rows = read_group_rows(io, metadata, tasks, threads=threads)
    return write_data_files(
        io,
        metadata,
        rows,
        spec=spec,
        schema=lineage_schema(metadata),  # v3: every row keeps its _row_id and sequence number
        target_file_size_bytes=target_file_size,
        write_uuid=write_uuid,
    )


def _partition_prefix(spec: PartitionSpec) -> list[SortField]:
    return [SortField(f.source_id, f.transform) for f in spec.fields if not f.transform.is_void]


def _ordered_indices(
    table: pa.Table, schema: Schema, strategy: RewriteStrategy, prefix: list[SortField]
) -> pa.Array | None:
    if strategy.name == "sort":
        assert strategy.sort_order is not None
        order = SortOrder(max(strategy.sort_order.order_id, 1), [*prefix, *strategy.sort_order.fields])
        return ArrowSortOrder(order, schema).sort_indices(table)
    assert strategy.zorder is not None
    columns: dict[str, Any] = {}
    keys: list[tuple[str, str, str]] = []
    batch = table.combine_chunks().to_batches()
    whole = (
        batch[0]
        if len(batch) == 1
        else pa.RecordBatch.from_struct_array(pa.concat_arrays([b.to_struct_array() for b in batch]))
    )
    for i, f in enumerate(prefix):
        source, source_type = source_column(whole, schema, f.source_id)
        key = transform_arrow(f.transform, source_type, source)
        if isinstance(key.type, pa.BaseExtensionType):
            key = key.storage
        columns[f"p{i}"] = key
        keys.append((f"p{i}", "ascending", "at_start"))
    columns["z"] = zorder_values(whole, schema, strategy.zorder)
    keys.append(("z", "ascending", "at_start"))
    return pc.sort_indices(pa.table(columns), sort_keys=keys)


def rewrite_ordered(
    io: FileIO,
    metadata: TableMetadata,
    group: RewriteFileGroup,
    strategy: RewriteStrategy,
    write_uuid: str,
    *,
    threads: int = READ_THREADS,
) -> list[DataFile]:
    """Sort or z-order: the whole group in one order, cut into ``expected_output_files`` files
    of consecutive rows (Java's range partitioning into that many tasks)."""
    schema = lineage_schema(metadata)  # v3: every row keeps its _row_id and sequence number
    spec = metadata.spec_by_id(group.output_spec_id)
    batches = list(read_group_rows(io, metadata, group.tasks, threads=threads))
    if not batches:
        return []
    table = pa.Table.from_batches(batches, schema=schema_to_arrow(schema))
    repartition = group.info.spec_id != group.output_spec_id
    indices = _ordered_indices(table, schema, strategy, _partition_prefix(spec) if repartition else [])
    if indices is not None:
        table = table.take(indices)
    write_order = strategy.sort_order if strategy.name == "sort" else UNSORTED_SORT_ORDER
    if repartition and strategy.name == "sort":
        assert write_order is not None
        write_order = SortOrder(max(write_order.order_id, 1), [*_partition_prefix(spec), *write_order.fields])
    n = table.num_rows
    chunks = max(1, min(group.expected_output_files, n))
    bounds = [n * i // chunks for i in range(chunks + 1)]
    out: list[DataFile] = []
    try:
        for i in range(chunks):
            part = table.slice(bounds[i], bounds[i + 1] - bounds[i])
            out += write_data_files(
                io,
                metadata,
                part,
                spec=spec,
                schema=schema,
                target_file_size_bytes=group.max_output_file_size,
                write_uuid=f"{write_uuid}-{i:05d}",
                sort_order=write_order,
            )
    except BaseException:
        delete_quietly(io, [f.file_path for f in out])
        raise
    return [replace(f, sort_order_id=strategy.record_order_id) for f in out]


# --------------------------------------------------------------------------- z-values


def _fixed_bytes(values: np.ndarray) -> np.ndarray:
    """uint64 values as an (n, 8) matrix of their big-endian bytes."""
    return values.astype(">u8").view(np.uint8).reshape(-1, 8)


def _long_key(values: np.ndarray) -> np.ndarray:
    return _fixed_bytes(values.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63))


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _as_int64(arr: pa.Array) -> np.ndarray:
    filled = arr.fill_null(0) if arr.null_count else arr
    return filled.to_numpy(zero_copy_only=False).astype(np.int64)  # type: ignore[no-any-return]


def _var_bytes(arr: pa.Array, length: int, utf8: bool) -> np.ndarray:
    """(n, length) zero-padded prefixes; strings are cut at a character boundary."""
    n = len(arr)
    out: np.ndarray = np.zeros((n, length), dtype=np.uint8)
    if n == 0:
        return out
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        data = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * width
        lengths: np.ndarray = np.full(n, width, dtype=np.int64)
    else:
        if not (pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)):
            arr = arr.cast(pa.large_string() if utf8 else pa.large_binary())
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
        data_buffer = arr.buffers()[2]
        data = (
            np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
        )
        starts = offsets[:-1].astype(np.int64)
        lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    lengths = np.where(_valid(arr), lengths, 0)
    if utf8 and len(data):
        # A character that does not fit whole is left out (Java's CharsetEncoder stops before it):
        # step back from the cut while it lands on a continuation byte (at most 3 of them).
        cut = np.minimum(lengths, length)
        longer = lengths > length
        last = len(data) - 1
        for _ in range(3):
            probe = np.minimum(starts + cut, last)
            inside = longer & ((data[probe] & 0xC0) == 0x80)
            if not inside.any():
                break
            cut = np.where(inside, cut - 1, cut)
        lengths = cut
    take = np.minimum(lengths, length)
    cols = np.arange(length)[None, :]
    mask = cols < take[:, None]
    if mask.any():
        idx = starts[:, None] + cols
        out[mask] = data[idx[mask]]
    return out


def _ordered_column(arr: pa.Array, t: IcebergType, var_length: int) -> np.ndarray:
    """The order-preserving bytes of one column (:mod:`icefloe.maintenance.zorder`)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    valid = _valid(arr)
    if isinstance(t, StringType | BinaryType | FixedType):
        return _var_bytes(arr, var_length, isinstance(t, StringType))
    out: np.ndarray
    if isinstance(t, BooleanType):
        out = np.zeros((len(arr), 8), dtype=np.uint8)
        truth = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(bool)
        out[:, 0] = np.where(truth & valid, 0x81, 0)
        return out
    if isinstance(t, FloatType | DoubleType):
        values = (
            arr.fill_null(0.0).to_numpy(zero_copy_only=False).astype(np.float64)
            if arr.null_count
            else (arr.to_numpy(zero_copy_only=False).astype(np.float64))
        )
        bits = values.view(np.int64).copy()
        bits[np.isnan(values)] = 0x7FF8000000000000  # Java's canonical NaN
        flipped = bits ^ ((bits >> 63) | np.int64(-(1 << 63)))
        out = _fixed_bytes(flipped.view(np.uint64))
    else:
        if isinstance(t, DateType):
            values = _as_int64(arr.cast(pa.int32()) if pa.types.is_date32(arr.type) else arr)
        elif isinstance(t, TimestamptzType | TimestampType | TimestampNsType | TimestamptzNsType):
            values = _as_int64(arr.cast(pa.int64()))
            if isinstance(t, TimestamptzType):
                values = values // 1_000_000
            elif isinstance(t, TimestamptzNsType):
                values = values // 1_000_000_000
            elif isinstance(t, TimestampNsType):
                values = values // 1_000
        elif isinstance(t, IntegerType | LongType):
            values = _as_int64(arr)
        else:
            raise ValidationError(f"type {t} cannot be z-ordered")
        out = _long_key(values)
    out[~valid] = 0
    return out


def _interleave_plan(sizes: Sequence[int], output_size: int) -> np.ndarray:
    """Column-major bit indices (into the columns' bits laid side by side) in interleaved order."""
    starts = np.cumsum([0, *[8 * s for s in sizes]])[:-1]
    order: list[int] = []
    for byte_index in range(max(sizes)):
        for bit in range(8):
            for c, size in enumerate(sizes):
                if byte_index < size:
                    order.append(int(starts[c]) + byte_index * 8 + bit)
    return np.asarray(order[: output_size * 8], dtype=np.int64)  # type: ignore[no-any-return]


def zorder_values(batch: pa.RecordBatch | pa.Table, schema: Schema, spec: ZOrderSpec) -> pa.Array:
    """Each row's z-value (binary, ``spec.output_size`` bytes): Java's ``ZOrderByteUtils`` rules,
    vectorized (see :mod:`icefloe.maintenance.zorder` for the rules and the reference)."""
    if isinstance(batch, pa.Table):
        chunks = [zorder_values(b, schema, spec) for b in batch.to_batches()]
        return pa.concat_arrays(chunks) if chunks else pa.array([], pa.binary())
    types = [schema.find_type(fid) for fid in spec.field_ids]
    sizes = spec.column_sizes(schema)
    output_size = spec.output_size(schema)
    plan = _interleave_plan(sizes, output_size)
    n = batch.num_rows
    data = np.zeros((n, output_size), dtype=np.uint8)
    for lo in range(0, n, _ZORDER_CHUNK_ROWS):
        part = batch.slice(lo, min(_ZORDER_CHUNK_ROWS, n - lo))
        columns = [
            _ordered_column(source_column(part, schema, fid)[0], t, spec.var_length_contribution)
            for fid, t in zip(spec.field_ids, types, strict=True)
        ]
        bits = np.concatenate([np.unpackbits(c, axis=1) for c in columns], axis=1)
        packed = np.packbits(bits[:, plan], axis=1)
        data[lo : lo + part.num_rows, : packed.shape[1]] = packed
    offsets = np.arange(0, (n + 1) * output_size, output_size, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())])


# --------------------------------------------------------------------------- position deletes


def read_position_deletes(io: FileIO, delete_file: DataFile) -> pa.Table:
    """``file_path`` (string) and ``pos`` (int64) of every row of a position delete file."""
    _check_parquet(delete_file)
    path = delete_file.file_path
    with decoding(path, POSITION_DELETE_FILE), io.new_input(path).open() as stream:
        pf = pq.ParquetFile(stream, **PARQUET_READ)
        path_col, pos_col = _position_columns(pf, delete_file)
        table = pf.read(columns=[path_col, pos_col])
    return pa.table({"file_path": table.column(0).cast(pa.string()), "pos": table.column(1).cast(pa.int64())})


def rewrite_position_delete_group(
    io: FileIO, metadata: TableMetadata, group: RewritePositionDeletesGroup, write_uuid: str
) -> list[DataFile]:
    """Merge the group's position delete files into files of about the target size, keeping only
    the deletes of data files that are live in the group's partition (sorted, de-duplicated)."""
    tables = [read_position_deletes(io, d) for d in group.delete_files]
    merged = pa.concat_tables(tables) if tables else pa.table({"file_path": pa.array([], pa.string())})
    if merged.num_rows == 0:
        return []
    live = pa.array(sorted(group.live_data_files), pa.string())
    merged = merged.filter(pc.is_in(merged.column("file_path"), value_set=live))
    if merged.num_rows == 0:
        return []
    encoded = pc.dictionary_encode(merged.column("file_path").combine_chunks())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    positions = merged.column("pos").combine_chunks().to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    codes, positions = codes[order], positions[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    bounds = np.r_[starts, len(codes)]
    paths = encoded.dictionary.to_pylist()
    deletes = {paths[int(codes[s])]: positions[s:e] for s, e in itertools.pairwise(bounds)}
    return write_position_deletes(
        io,
        metadata,
        deletes,
        spec_id=group.info.spec_id,
        partition=group.info.partition,
        target_file_size_bytes=group.max_output_file_size,
        write_uuid=write_uuid,
    )


# --------------------------------------------------------------------------- the runner


def rewrite_data_unit(
    io: FileIO,
    metadata: TableMetadata,
    group: RewriteFileGroup,
    strategy: RewriteStrategy,
    split: Sequence[FileScanTask] | None,
    write_uuid: str,
    threads: int = READ_THREADS,
) -> list[DataFile]:
    """One unit of a data rewrite: a split of a bin-pack group, or a whole ordered group."""
    if split is None:
        return rewrite_ordered(io, metadata, group, strategy, write_uuid, threads=threads)
    return rewrite_split(
        io,
        metadata,
        split,
        spec=metadata.spec_by_id(group.output_spec_id),
        target_file_size=group.max_output_file_size,
        write_uuid=write_uuid,
        threads=threads,
    )


class ArrowRewriteRunner:
    """Runs maintenance plans in this process (module docstring)."""

    description = "arrow"

    def __init__(self, io: FileIO, max_concurrent_groups: int = 5, read_threads: int = READ_THREADS) -> None:
        self.io = io
        self.max_concurrent_groups = max(1, max_concurrent_groups)
        self.read_threads = read_threads

    def _run(
        self,
        groups: Sequence[Any],
        units: list[tuple[int, Callable[[], list[DataFile]]]],
    ) -> Iterator[GroupOutcome[Any]]:
        """Run ``units`` (group index, work) on the pool; yield each group's outcome when its
        last unit finishes. Closing the generator early deletes what unfinished groups wrote."""
        remaining = {i: 0 for i in range(len(groups))}
        for gi, _ in units:
            remaining[gi] += 1
        files: dict[int, list[DataFile]] = {i: [] for i in range(len(groups))}
        errors: dict[int, BaseException] = {}
        lock = threading.Lock()
        reported: set[int] = set()
        for gi, count in remaining.items():
            if count == 0:
                reported.add(gi)
        pool = ThreadPoolExecutor(
            max_workers=min(self.max_concurrent_groups, max(1, len(units))),
            thread_name_prefix="icefloe-rewrite",
        )
        futures: dict[Future[list[DataFile]], int] = {}
        try:
            for gi in sorted(i for i in remaining if remaining[i] == 0):
                yield GroupOutcome(groups[gi], ())
            for gi, work in units:
                futures[pool.submit(work)] = gi
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when="FIRST_COMPLETED")
                ready: list[int] = []
                for fut in finished:
                    gi = futures[fut]
                    with lock:
                        try:
                            files[gi] += fut.result()
                        except BaseException as e:
                            errors.setdefault(gi, e)
                        remaining[gi] -= 1
                        if remaining[gi] == 0:
                            ready.append(gi)
                for gi in sorted(ready):
                    reported.add(gi)
                    if gi in errors:
                        delete_quietly(self.io, [f.file_path for f in files[gi]])
                        yield GroupOutcome(groups[gi], (), errors[gi])
                    else:
                        yield GroupOutcome(groups[gi], tuple(files[gi]))
        finally:
            for fut in futures:
                fut.cancel()
            pool.shutdown(wait=True)
            # Closed early (all or nothing after a failure, or an error): what the groups not
            # reported yet wrote is nobody's, and goes.
            stale: dict[str, None] = {}
            for fut, gi in futures.items():
                if gi in reported:
                    continue
                for f in files[gi]:
                    stale[f.file_path] = None
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    for f in fut.result():
                        stale[f.file_path] = None
            delete_quietly(self.io, list(stale))

    def rewrite_data_groups(
        self, plan: RewriteDataFilesPlan, write_id: str
    ) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        metadata = plan.metadata
        strategy = plan.strategy
        units: list[tuple[int, Callable[[], list[DataFile]]]] = []
        for gi, group in enumerate(plan.groups):
            splits: Iterable[Sequence[FileScanTask] | None] = (
                group.splits() if strategy.name == "binpack" else [None]
            )
            for si, split in enumerate(splits):
                uid = f"{write_id}-{group.info.global_index:05d}-{si:05d}"
                work = functools.partial(
                    rewrite_data_unit, self.io, metadata, group, strategy, split, uid, self.read_threads
                )
                units.append((gi, work))
        return self._run(plan.groups, units)

    def rewrite_position_delete_groups(
        self, plan: RewritePositionDeletesPlan, write_id: str
    ) -> Iterator[GroupOutcome[RewritePositionDeletesGroup]]:
        metadata = plan.metadata
        units: list[tuple[int, Callable[[], list[DataFile]]]] = [
            (
                gi,
                functools.partial(
                    rewrite_position_delete_group,
                    self.io,
                    metadata,
                    group,
                    f"{write_id}-{group.info.global_index:05d}",
                ),
            )
            for gi, group in enumerate(plan.groups)
        ]
        return self._run(plan.groups, units)

    def write_manifests(self, plan: RewriteManifestsPlan) -> list[ManifestFile]:
        from icefloe.maintenance.rewrite_manifests import write_clustered_manifests

        return write_clustered_manifests(self.io, plan)
