"""The executor side of Spark's row-level changes (DELETE, UPDATE, MERGE): the "execute" stage.

Every Spark task gets rows of one shape and turns them into files; it never decides what to
change (the driver's plan did, :mod:`icefloe.spark._dml_exec`) and never commits::

    rows: __icefloe_file_key (the target row's data file, null for a new row: a number the
          write job maps to the file, or the path as Spark spells it), __icefloe_pos,
          __icefloe_kind (0 keep, 1 delete, 2 update, 3 insert), __icefloe_matched, table columns
          (format v3: then the row's _row_id and _last_updated_sequence_number, kept rows with
          both, updated rows with the _row_id only, new rows with neither: row lineage)
      -> copy-on-write: kept, updated and inserted rows -> Parquet data files (icefloe's writer)
         merge-on-read: updated and inserted rows -> data files; positions of deleted and updated
                        rows -> one position delete file per data file (rows of one data file
                        arrive in one task: the driver distributes by file key); format v3:
                        a deletion vector (a Puffin file) per data file that merges the file's
                        earlier deletes (those delete files are reported replaced)
      -> matched rows: a target row matched twice fails the statement (MergeCardinalityError on
         the driver; the task deletes its files and reports the row instead of raising)
      -> one result row per task: the pickled TaskResult (files and counts)

The target is read either by Spark's Parquet reader (the driver's fast path) or by
:func:`read_tasks`, which reads planned tasks with icefloe's reader (delete files applied,
positions kept) in Python workers.
"""

from __future__ import annotations

import contextlib
import pickle
import uuid as uuid_mod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.manifest import DataFile
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.schema import Schema

__all__ = [
    "FileInfo",
    "KIND",
    "KIND_DELETE",
    "KIND_INSERT",
    "KIND_KEEP",
    "KIND_UPDATE",
    "LINEAGE_ROW_ID",
    "LINEAGE_SEQ",
    "MATCHED",
    "ReadJob",
    "TaskResult",
    "WriteJob",
    "read_tasks",
    "write_changes",
]

KIND = "__icefloe_kind"
MATCHED = "__icefloe_matched"
#: format v3 row lineage of the target rows (written as _row_id, _last_updated_sequence_number)
LINEAGE_ROW_ID = "__icefloe_row_id"
LINEAGE_SEQ = "__icefloe_last_seq"
KIND_KEEP, KIND_DELETE, KIND_UPDATE, KIND_INSERT = 0, 1, 2, 3


@dataclass(frozen=True)
class FileInfo:
    """A target data file as tasks need it: where it is, its spec and partition, its rows."""

    path: str
    spec_id: int
    partition: tuple[Any, ...]
    record_count: int
    #: format v3 merge-on-read: the data file and the delete files that applied to it when it
    #: was planned (its new deletion vector includes their deletes and replaces them)
    data_file: DataFile | None = None
    delete_files: tuple[DataFile, ...] = ()


@dataclass(frozen=True)
class WriteJob:
    """What every write task gets (small, picklable)."""

    metadata_json: str
    io_properties: dict[str, str]
    files: dict[str, FileInfo]  # file key -> the data file
    copy_on_write: bool
    check_cardinality: bool
    dedupe_kept: bool  # copy-on-write without matched clauses: a kept row may come once per match
    write_id: str
    target_file_size: int | None = None
    #: format v3: the rows carry LINEAGE_ROW_ID and LINEAGE_SEQ, written into the data files
    lineage: bool = False
    #: the rows' file keys are numbers: number -> the key of ``files`` (None: Spark's paths)
    ids: dict[int, str] | None = None


@dataclass
class TaskResult:
    data_files: list[DataFile] = field(default_factory=list)
    delete_files: list[DataFile] = field(default_factory=list)
    referenced: list[str] = field(default_factory=list)
    #: format v3: delete files the task's deletion vectors replace (removed in the same commit)
    rewritten_deletes: list[DataFile] = field(default_factory=list)
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    copied: int = 0
    #: (data file, position) of a target row that several source rows matched
    duplicate: tuple[str, int] | None = None
    #: a row's file key that names no planned data file (the table's metadata disagrees with
    #: the files: a data file's length differs from its manifest entry's)
    unknown_file: str | None = None


RESULT_FIELD = "payload"


def _grouped(keys: pa.Array, positions: np.ndarray[Any, Any]) -> Iterator[tuple[Any, np.ndarray[Any, Any]]]:
    """(file key, positions) per distinct key of ``keys`` (no nulls; numbers or paths)."""
    if len(keys) == 0:
        return
    encoded = pc.dictionary_encode(keys)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    for i, key in enumerate(encoded.dictionary.to_pylist()):
        yield key, positions[indices == i]


class _Positions:
    """Positions per data file, gathered from batches."""

    def __init__(self) -> None:
        self.parts: dict[Any, list[np.ndarray[Any, Any]]] = {}

    def add(self, keys: pa.Array, positions: np.ndarray[Any, Any]) -> None:
        for key, pos in _grouped(keys, positions):
            self.parts.setdefault(key, []).append(pos)

    def items(self) -> Iterator[tuple[Any, np.ndarray[Any, Any]]]:
        for key, parts in self.parts.items():
            yield key, np.concatenate(parts)


class UnknownFile(Exception):
    """A row's file key names no planned data file (reported by the task, raised as
    InvalidMetadataError by the driver)."""

    def __init__(self, key: Any) -> None:
        super().__init__(f"a row came from {key!r}, which is not a planned data file of this change")
        self.key = key


def _file(job: WriteJob, key: Any) -> FileInfo:
    """The planned data file of a row's ``KEY`` (a number of ``job.ids``, or the path as Spark
    spells it)."""
    from icefloe.spark._metadata_columns import key_from_spark

    if job.ids is not None:
        path = job.ids.get(int(key))
        info = job.files.get(path) if path is not None else None
    else:
        info = job.files.get(key_from_spark(str(key)))
    if info is None:
        raise UnknownFile(key)
    return info


def write_changes(job: WriteJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The task body (``mapInArrow``): write the rows' files, yield one result row."""
    from icefloe.arrow.spark_layout import from_spark_batch
    from icefloe.arrow.writer import write_data_files
    from icefloe.io import load_file_io
    from icefloe.spark._metadata_columns import KEY, ROW_POS
    from icefloe.spec.table_metadata import read_metadata_json

    metadata = read_metadata_json(job.metadata_json)
    schema = metadata.schema()
    io = load_file_io(job.io_properties, metadata.location)
    names = [f.name for f in schema.fields]
    write_schema = schema
    if job.lineage:
        from icefloe.arrow.row_lineage import lineage_schema
        from icefloe.scan.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID

        write_schema = lineage_schema(metadata)
    result = TaskResult()
    deletes = _Positions()
    matched = _Positions()
    kept_seen: dict[Any, np.ndarray[Any, Any]] = {}
    task_uuid = f"{job.write_id}-{uuid_mod.uuid4().hex[:12]}"

    def rows() -> Iterator[pa.RecordBatch]:
        for b in batches:
            if b.num_rows == 0:
                continue
            kind = b.column(KIND).to_numpy(zero_copy_only=False).astype(np.int8)
            keys = b.column(KEY)
            has_key = keys.is_valid().to_numpy(zero_copy_only=False)
            pos = b.column(ROW_POS).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            if job.check_cardinality:
                m = b.column(MATCHED).fill_null(False).to_numpy(zero_copy_only=False) & has_key
                if m.any():
                    matched.add(keys.filter(pa.array(m)), pos[m])
            removed = (kind == KIND_DELETE) | (kind == KIND_UPDATE)
            result.deleted += int((kind == KIND_DELETE).sum())
            result.updated += int((kind == KIND_UPDATE).sum())
            result.inserted += int((kind == KIND_INSERT).sum())
            emit = (kind == KIND_UPDATE) | (kind == KIND_INSERT)
            if job.copy_on_write:
                keep = (kind == KIND_KEEP) & has_key
                if job.dedupe_kept and keep.any():
                    keep = _first_time(job, kept_seen, keys, pos, keep)
                result.copied += int(keep.sum())
                emit = emit | keep
            else:
                removed &= has_key
                if removed.any():
                    deletes.add(keys.filter(pa.array(removed)), pos[removed])
            if emit.any():
                selected = b.filter(pa.array(emit)) if not emit.all() else b
                if job.lineage:
                    data = selected.select([*names, LINEAGE_ROW_ID, LINEAGE_SEQ])
                    data = data.rename_columns([*names, ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER])
                    yield from_spark_batch(data, write_schema)
                else:
                    yield from_spark_batch(selected.select(names), schema)

    written: list[DataFile] = []
    try:
        result.data_files = write_data_files(
            io,
            metadata,
            rows(),
            schema=write_schema,
            target_file_size_bytes=job.target_file_size,
            write_uuid=task_uuid,
        )
        written += result.data_files
        duplicate = _duplicate(job, matched)
        if duplicate is not None:
            _delete(io, written)
            yield _result_batch(TaskResult(duplicate=duplicate))
            return
        if not job.copy_on_write:
            _write_deletes(io, metadata, job, deletes, result, task_uuid, written)
    except UnknownFile as e:
        _delete(io, written)
        yield _result_batch(TaskResult(unknown_file=repr(e.key)))
        return
    except BaseException:
        _delete(io, written)
        raise
    yield _result_batch(result)


def _first_time(
    job: WriteJob,
    seen: dict[Any, np.ndarray[Any, Any]],
    keys: pa.Array,
    pos: np.ndarray[Any, Any],
    keep: np.ndarray[Any, Any],
) -> np.ndarray[Any, Any]:
    """``keep`` without rows already kept (a target row joined to several source rows)."""
    out = keep.copy()
    idx = np.flatnonzero(keep)
    sub_keys = keys.take(pa.array(idx))
    encoded = pc.dictionary_encode(sub_keys)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    for i, key in enumerate(encoded.dictionary.to_pylist()):
        rows = idx[indices == i]
        bitmap = seen.get(key)
        if bitmap is None:
            bitmap = seen[key] = np.zeros(_file(job, key).record_count + 1, dtype=np.bool_)
        p = pos[rows]
        # within the batch too: the first of equal positions wins
        _, first = np.unique(p, return_index=True)
        fresh: np.ndarray[Any, Any] = np.zeros(len(rows), dtype=np.bool_)
        fresh[first] = True
        fresh &= ~bitmap[p]
        bitmap[p[fresh]] = True
        out[rows] = fresh
    return out


def _duplicate(job: WriteJob, matched: _Positions) -> tuple[str, int] | None:
    for key, positions in matched.items():
        values, counts = np.unique(positions, return_counts=True)
        if len(values) and counts.max() > 1:
            return _file(job, key).path, int(values[np.argmax(counts > 1)])
    return None


def _write_deletes(
    io: FileIO,
    metadata: Any,
    job: WriteJob,
    deletes: _Positions,
    result: TaskResult,
    task_uuid: str,
    written: list[DataFile],
) -> None:
    if metadata.format_version >= 3:
        _write_deletion_vectors(io, metadata, job, deletes, result, task_uuid, written)
        return
    from icefloe.arrow.deletes import write_position_deletes

    for n, (key, positions) in enumerate(deletes.items()):
        info = _file(job, key)
        files = write_position_deletes(
            io,
            metadata,
            {info.path: positions},
            spec_id=info.spec_id,
            partition=info.partition,
            target_file_size_bytes=job.target_file_size,
            write_uuid=f"{task_uuid}-{n}",  # one writer per data file: names must differ
        )
        written += files
        result.delete_files += files
        result.referenced.append(info.path)


def _write_deletion_vectors(
    io: FileIO,
    metadata: Any,
    job: WriteJob,
    deletes: _Positions,
    result: TaskResult,
    task_uuid: str,
    written: list[DataFile],
) -> None:
    """Format v3: a deletion vector per data file; each holds the file's earlier deletes too and
    replaces its earlier deletion vector (and its file-scoped position delete files).

    One Puffin file per task holds the vectors of all its data files (the commit's check of added
    files names a vector by Puffin file and offset)."""
    from icefloe.arrow.deletion_vectors import DVTarget, write_deletion_vectors

    targets = []
    for key, positions in deletes.items():
        info = _file(job, key)
        data_file = info.data_file
        if data_file is None:
            raise RuntimeError(f"the write job lacks the data file entry of {info.path}")
        targets.append(DVTarget(data_file, positions, info.delete_files))
    if not targets:
        return
    dvs = write_deletion_vectors(io, metadata, targets, write_uuid=task_uuid)
    written += dvs.added
    result.delete_files += dvs.added
    result.rewritten_deletes += dvs.rewritten
    result.referenced += sorted(dvs.referenced)


def _delete(io: FileIO, files: Sequence[DataFile]) -> None:
    for f in files:
        with contextlib.suppress(Exception):  # best effort: a leftover is an orphan file
            io.delete(f.file_path)


def _result_batch(result: TaskResult) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result)], pa.binary())], names=[RESULT_FIELD])


def task_results(rows: Sequence[Any]) -> list[TaskResult]:
    """The TaskResults of the collected result rows (driver side)."""
    out: list[TaskResult] = []
    for r in rows:
        value = pickle.loads(r[RESULT_FIELD])
        assert isinstance(value, TaskResult)
        out.append(value)
    return out


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class ReadJob:
    """Planned target tasks read by icefloe's reader in Python workers (the fallback when
    Spark's Parquet reader cannot read the table with Iceberg semantics)."""

    metadata_json: str
    io_properties: dict[str, str]
    groups: list[list[FileScanTask]]
    spark_schema_json: str
    #: format v3: append each row's _row_id and _last_updated_sequence_number (after the position)
    lineage: bool = False
    #: per group: the number its rows carry as their file key
    keys: tuple[int, ...] = ()


def read_tasks(job: ReadJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The task body (``mapInArrow`` over ``spark.range(len(groups))``): the live rows of the
    group ids it gets, in Spark's layout, with the file key (the group's number in ``job.keys``)
    and position of each."""
    import json

    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType as SparkStructType

    from icefloe.arrow.positions import read_with_positions
    from icefloe.arrow.spark_layout import to_spark_batch
    from icefloe.io import load_file_io
    from icefloe.spec.table_metadata import read_metadata_json

    metadata = read_metadata_json(job.metadata_json)
    schema: Schema = metadata.schema()
    io = load_file_io(job.io_properties, metadata.location)
    target = to_arrow_schema(SparkStructType.fromJson(json.loads(job.spark_schema_json)), timezone="UTC")
    n_data = len(schema.fields)
    data_target = pa.schema([target.field(i) for i in range(n_data)])
    name_mapping = metadata.properties.get("schema.name-mapping.default")
    read_schema = schema
    if job.lineage:
        from icefloe.arrow.row_lineage import lineage_schema

        read_schema = lineage_schema(metadata)
    for b in batches:
        for group_id in b.column(0).to_pylist():
            key = job.keys[int(group_id)]
            for task in job.groups[int(group_id)]:
                for batch, positions in read_with_positions(
                    io, task, read_schema, schema, name_mapping=name_mapping, apply_residual=False
                ):
                    n = batch.num_rows
                    lineage = [batch.column(i) for i in range(n_data, batch.num_columns)]
                    if lineage:
                        batch = batch.select(list(range(n_data)))
                    data = to_spark_batch(batch, schema, data_target)
                    extra = [
                        pa.array(np.full(n, key, dtype=np.int64)),
                        pa.array(positions, pa.int64()),
                        *lineage,
                    ]
                    yield pa.RecordBatch.from_arrays([*data.columns, *extra], schema=target)
