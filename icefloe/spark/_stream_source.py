"""Structured Streaming out of icefloe tables: ``spark.readStream.format("icefloe")``.

A stream follows one branch (``main`` unless the ``branch`` option names another) and reads the
data files its snapshots appended, in commit order. An offset is a place in that sequence::

    {"snapshot_id": "<id>", "sequence_number": n, "position": p, "scan_all": false}
        the next file to read is file p of the snapshot's list: the data files it appended,
        sorted by path (scan_all: every live file of the snapshot, deletes applied)

    driver:  initialOffset   default: the branch head with scan_all (the whole table as the first
                             data), start-snapshot-id: that snapshot (inclusive), start-timestamp:
                             the oldest ancestor committed at or after it
             latestOffset    walk the ancestry from the start offset to the head (or the head
                             recorded for Trigger.AvailableNow), admitting files until
                             max-files-per-trigger / max-records-per-trigger is reached
             partitions      the files in [start, end) -> scan tasks -> split/combine (read.split.*)
    executors: read          the batch reader's read of a file group (icefloe.spark.source)

Snapshots that are not appends: ``replace`` (compaction) adds no rows and is always skipped;
``overwrite`` and ``delete`` fail the query unless ``streaming-skip-overwrite-snapshots`` /
``streaming-skip-delete-snapshots`` is true (Iceberg Java's options), and are then skipped.
Iceberg Java's ``SparkMicroBatchStream`` is the model for the offsets and the skipping; its
default start is the oldest ancestor's appends, replayed one snapshot after another, which loses
the rows of expired snapshots and fails on any overwrite in the history. Here the default first
data is the table as it is when the query starts, then its appends.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import datasource as ds
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from icefloe.errors import NoSuchSnapshotError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import AlwaysTrue
from icefloe.manifest import ManifestContent, ManifestEntryStatus, read_manifest, read_manifest_list
from icefloe.scan.planner import plan_files, plan_tasks
from icefloe.scan.task import FileScanTask
from icefloe.spark._config import catalog_from_options
from icefloe.spark.source import (
    AS_OF_TIMESTAMP,
    BRANCH,
    DEFAULT_OPEN_FILE_COST,
    DEFAULT_SPLIT_SIZE,
    END_SNAPSHOT_ID,
    FILE_OPEN_COST,
    SNAPSHOT_ID,
    SPLIT_SIZE,
    START_SNAPSHOT_ID,
    TAG,
    FileGroupPartition,
    IcefloeReader,
    _int_option,
    _metadata_column_names,
    _table_name,
)
from icefloe.spark.types import to_spark_schema
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.spec.table_metadata import write_metadata_json

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType as SparkStructType

    from icefloe.io import FileIO
    from icefloe.manifest import DataFile
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import Table

__all__ = [
    "MAX_FILES_PER_TRIGGER",
    "MAX_RECORDS_PER_TRIGGER",
    "SKIP_DELETE_SNAPSHOTS",
    "SKIP_OVERWRITE_SNAPSHOTS",
    "START_TIMESTAMP",
    "IcefloeStreamReader",
    "StreamOffset",
    "stream_reader",
]

START_TIMESTAMP = "start-timestamp"
MAX_FILES_PER_TRIGGER = "max-files-per-trigger"
MAX_RECORDS_PER_TRIGGER = "max-records-per-trigger"
SKIP_OVERWRITE_SNAPSHOTS = "streaming-skip-overwrite-snapshots"
SKIP_DELETE_SNAPSHOTS = "streaming-skip-delete-snapshots"
# Iceberg Java's names for the same options, accepted as aliases
_ALIASES = {
    "stream-from-timestamp": START_TIMESTAMP,
    "streaming-max-files-per-micro-batch": MAX_FILES_PER_TRIGGER,
    "streaming-max-rows-per-micro-batch": MAX_RECORDS_PER_TRIGGER,
}


@dataclass(frozen=True)
class StreamOffset:
    """A place in a branch's appended files: the next file to read is ``position`` of snapshot
    ``snapshot_id``'s list (``scan_all``: all its live files; else the files it appended)."""

    snapshot_id: int
    position: int = 0
    scan_all: bool = False
    sequence_number: int = 0  # informational: the snapshot's sequence number

    @property
    def before_first(self) -> bool:
        return self.snapshot_id < 0

    def to_json(self) -> dict[str, Any]:
        # the id as text: Spark keeps offsets as JSON, and ids are 63-bit
        return {
            "snapshot_id": str(self.snapshot_id),
            "sequence_number": self.sequence_number,
            "position": self.position,
            "scan_all": self.scan_all,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> StreamOffset:
        try:
            return cls(
                int(obj["snapshot_id"]),
                int(obj.get("position", 0)),
                bool(obj.get("scan_all", False)),
                int(obj.get("sequence_number", 0)),
            )
        except (KeyError, TypeError, ValueError):
            raise ValidationError(
                f"not an icefloe stream offset: {dict(obj)!r}",
                hint="the checkpoint belongs to another source: start the query with a new "
                "checkpointLocation",
            ) from None


#: before any snapshot of the branch (the table had none when the query started)
BEFORE_FIRST = StreamOffset(-1)


def _bool_option(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"option {key!r} must be true or false, got {options[key]!r}")
    return value == "true"


def _timestamp_option(options: Mapping[str, str]) -> int | None:
    """``start-timestamp``: milliseconds since the epoch, or an ISO-8601 time (UTC unless it
    says otherwise)."""
    text = options.get(START_TIMESTAMP)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(
            f"option {START_TIMESTAMP!r} must be milliseconds since the epoch or an ISO-8601 time, "
            f"got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _positive(options: Mapping[str, str], key: str) -> int | None:
    value = _int_option(options, key, None)
    if value is not None and value < 1:
        raise ValidationError(f"option {key!r} must be at least 1, got {value}")
    return value


def _appended_files(io: FileIO, snap: Snapshot) -> list[DataFile]:
    """The data files ``snap`` added (entries ADDED by it, in the manifests it wrote)."""
    out: list[DataFile] = []
    for m in read_manifest_list(io, snap.manifest_list):
        if m.content != ManifestContent.DATA or m.added_snapshot_id != snap.snapshot_id:
            continue
        out.extend(
            e.data_file
            for e in read_manifest(io, m)
            if e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snap.snapshot_id
        )
    return out


def _data_sequence_numbers(io: FileIO, snap: Snapshot) -> dict[str, int]:
    """The data sequence number of every live data file of ``snap``, by path."""
    out: dict[str, int] = {}
    for m in read_manifest_list(io, snap.manifest_list):
        if m.content != ManifestContent.DATA:
            continue
        for e in read_manifest(io, m):
            if e.is_live:
                out[e.data_file.file_path] = e.sequence_number or 0
    return out


class IcefloeStreamReader(ds.DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The micro-batch source of one streaming query (see the module docstring)."""

    def __init__(
        self,
        *,
        options: dict[str, str],
        spark_conf: dict[str, dict[str, str]],
        identifier: str,
        batch_reader: IcefloeReader,
    ) -> None:
        self.options = options
        self.spark_conf = spark_conf
        self.identifier = identifier
        self.branch = options.get(BRANCH) or MAIN_BRANCH
        self.start_snapshot_id = _int_option(options, START_SNAPSHOT_ID, None)
        self.start_timestamp = _timestamp_option(options)
        self.max_files = _positive(options, MAX_FILES_PER_TRIGGER)
        self.max_records = _positive(options, MAX_RECORDS_PER_TRIGGER)
        self.skip_overwrite = _bool_option(options, SKIP_OVERWRITE_SNAPSHOTS)
        self.skip_delete = _bool_option(options, SKIP_DELETE_SNAPSHOTS)
        #: reads the file groups on executors (the batch reader's read path)
        self.batch_reader = batch_reader
        #: Trigger.AvailableNow: the head recorded by prepareForTriggerAvailableNow (None: the
        #: branch had no snapshot then, so there is nothing to read)
        self.available_now = False
        self.available_now_head: int | None = None
        self._files: dict[tuple[int, bool], list[FileScanTask]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_files"] = {}  # the driver's cache stays on the driver
        return state

    # ------------------------------------------------------------------ table state

    def _table(self) -> Table:
        return catalog_from_options(self.options, self.spark_conf).load_table(self.identifier)

    def _head(self, metadata: TableMetadata) -> int | None:
        ref = metadata.refs.get(self.branch)
        if ref is None:
            if self.branch != MAIN_BRANCH:
                raise ValidationError(
                    f"table {self.identifier} has no branch {self.branch!r}",
                    hint=f"known refs: {', '.join(sorted(metadata.refs)) or 'none'}",
                    ref=self.branch,
                )
            return None
        if not ref.is_branch:
            raise ValidationError(
                f"{self.branch!r} is a tag: a stream follows a branch", hint="name a branch", ref=self.branch
            )
        return ref.snapshot_id

    @staticmethod
    def _chain(metadata: TableMetadata, head: int) -> list[Snapshot]:
        """The head's ancestry, oldest first (stopping at the first expired ancestor)."""
        chain = list(metadata.ancestors(head))
        chain.reverse()
        return chain

    def _snapshot_files(
        self, io: FileIO, metadata: TableMetadata, snap: Snapshot, scan_all: bool
    ) -> list[FileScanTask]:
        """The files a stream reads from ``snap``, in offset order; [] for skipped snapshots."""
        key = (snap.snapshot_id, scan_all)
        cached = self._files.get(key)
        if cached is not None:
            return cached
        if scan_all:
            # oldest rows first: by data sequence number (commit order), then path
            order = _data_sequence_numbers(io, snap)
            tasks = plan_files(io, metadata, snap, schema=self.batch_reader.schema)
            tasks.sort(key=lambda t: (order.get(t.file_path, 0), t.file_path))
        elif snap.operation == Operation.APPEND:
            tasks = [FileScanTask(f, AlwaysTrue()) for f in _appended_files(io, snap)]
            tasks.sort(key=lambda t: t.file_path)
        elif snap.operation == Operation.REPLACE:
            tasks = []  # compaction: the same rows in new files
        else:
            option = SKIP_DELETE_SNAPSHOTS if snap.operation == Operation.DELETE else SKIP_OVERWRITE_SNAPSHOTS
            if not (self.skip_delete if snap.operation == Operation.DELETE else self.skip_overwrite):
                raise UnsupportedFeatureError(
                    f"the stream reached {snap.operation.value} snapshot {snap.snapshot_id} of table "
                    f"{self.identifier}: a stream reads appended rows only",
                    hint=f"to skip such snapshots (and not see their changes), set "
                    f'.option("{option}", "true")',
                    snapshot_id=snap.snapshot_id,
                    operation=snap.operation.value,
                )
            tasks = []
        self._files[key] = tasks
        return tasks

    def _resolve_start(self, chain: list[Snapshot]) -> StreamOffset | None:
        """Where a stream that started before any snapshot (or before start-timestamp) begins,
        now that the branch has ``chain``; None while there is nothing to read yet."""
        if self.start_timestamp is not None:
            for snap in chain:
                if snap.timestamp_ms >= self.start_timestamp:
                    return StreamOffset(snap.snapshot_id, 0, False, snap.sequence_number)
            return None
        first = chain[0]
        return StreamOffset(first.snapshot_id, 0, False, first.sequence_number)

    def _walk(
        self,
        start: StreamOffset,
        *,
        stop: StreamOffset | None = None,
        max_files: int | None = None,
        max_records: int | None = None,
    ) -> tuple[StreamOffset, list[FileScanTask]]:
        """From ``start`` along the branch: the offset reached and the files passed, stopping at
        ``stop``, at the head, or before a file that would exceed the limits (the first file is
        always admitted, so a large file cannot stall the stream)."""
        table = self._table()
        metadata, io = table.metadata, table.io
        head = self.available_now_head if self.available_now else self._head(metadata)
        if stop is not None:
            head = self._head(metadata) if stop.before_first else stop.snapshot_id
        if head is None:
            return start, []
        chain = self._chain(metadata, head)
        if start.before_first:
            resolved = self._resolve_start(chain)
            if resolved is None:
                return start, []
            start = resolved
        index = {s.snapshot_id: i for i, s in enumerate(chain)}
        if start.snapshot_id not in index:
            raise NoSuchSnapshotError(
                f"snapshot {start.snapshot_id}, where the stream on table {self.identifier} stands, is "
                f"no longer in the history of branch {self.branch!r}",
                hint="it was expired or the branch was rolled back: restart the query with a new "
                "checkpointLocation (and start-snapshot-id or start-timestamp to choose where to begin)",
                snapshot_id=start.snapshot_id,
            )
        taken: list[FileScanTask] = []
        records = 0
        end = start
        for i in range(index[start.snapshot_id], len(chain)):
            snap = chain[i]
            scan_all = start.scan_all if i == index[start.snapshot_id] else False
            position = start.position if i == index[start.snapshot_id] else 0
            try:
                files = self._snapshot_files(io, metadata, snap, scan_all)
            except UnsupportedFeatureError:
                if taken and stop is None:
                    return end, taken  # the appends before it first; the next trigger fails
                raise
            last = len(files)
            if stop is not None and snap.snapshot_id == stop.snapshot_id:
                last = min(stop.position, last)
            while position < last:
                f = files[position]
                full = max_files is not None and len(taken) >= max_files
                over = max_records is not None and taken and records + f.file.record_count > max_records
                if full or over:
                    return StreamOffset(snap.snapshot_id, position, scan_all, snap.sequence_number), taken
                taken.append(f)
                records += f.file.record_count
                position += 1
            end = StreamOffset(snap.snapshot_id, position, scan_all, snap.sequence_number)
            if stop is not None and snap.snapshot_id == stop.snapshot_id:
                break
        return end, taken

    # ------------------------------------------------------------------ Spark's interface

    def initialOffset(self) -> dict[str, Any]:
        table = self._table()
        metadata = table.metadata
        head = self._head(metadata)
        if self.start_snapshot_id is not None:
            snap = metadata.snapshot_by_id(self.start_snapshot_id)
            if head is None or all(s.snapshot_id != snap.snapshot_id for s in metadata.ancestors(head)):
                raise ValidationError(
                    f"snapshot {snap.snapshot_id} is not in the history of branch {self.branch!r}",
                    hint="start-snapshot-id must be an ancestor of the branch's head",
                    snapshot_id=snap.snapshot_id,
                )
            return StreamOffset(snap.snapshot_id, 0, False, snap.sequence_number).to_json()
        if head is None or self.start_timestamp is not None:
            return BEFORE_FIRST.to_json()  # resolved against the history as it grows
        snap = metadata.snapshot_by_id(head)
        return StreamOffset(head, 0, True, snap.sequence_number).to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        if self.max_records is not None:
            return ReadMaxRows(self.max_records)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        max_files, max_records = self.max_files, self.max_records
        if isinstance(limit, ReadAllAvailable):
            max_files = max_records = None  # Trigger.Once: Spark asks for everything
        elif isinstance(limit, ReadMaxFiles):
            max_files = limit.max_files
        elif isinstance(limit, ReadMaxRows):
            max_records = limit.max_rows
        begin = StreamOffset.from_json(start)
        end, _ = self._walk(begin, max_files=max_files, max_records=max_records)
        return start if end == begin else end.to_json()

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now_head = self._head(self._table().metadata)
        self.available_now = True

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[ds.InputPartition]:
        stop = StreamOffset.from_json(end)
        if stop.before_first:
            return []
        _, tasks = self._walk(StreamOffset.from_json(start), stop=stop)
        reader = self.batch_reader
        groups = plan_tasks(tasks, split_size=reader.split_size, open_file_cost=reader.open_file_cost)
        return [FileGroupPartition(g) for g in groups]

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        return self.batch_reader.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        pass  # nothing to release: offsets live in Spark's checkpoint


_BATCH_ONLY_OPTIONS = (SNAPSHOT_ID, AS_OF_TIMESTAMP, TAG, END_SNAPSHOT_ID)


def stream_reader(
    options: dict[str, str], spark_conf: dict[str, dict[str, str]], schema: SparkStructType
) -> IcefloeStreamReader:
    """The source for ``IcefloeDataSource.streamReader``; options are checked on the driver when
    the query starts."""
    options = dict(options)
    for alias, key in _ALIASES.items():
        if alias in options:
            options.setdefault(key, options[alias])
    for key in _BATCH_ONLY_OPTIONS:
        if options.get(key) is not None:
            raise ValidationError(
                f"option {key!r} chooses a snapshot for a batch read; a stream follows a branch",
                hint=f"use {START_SNAPSHOT_ID!r} or {START_TIMESTAMP!r} to choose where the stream begins",
            )
    if options.get(START_SNAPSHOT_ID) is not None and options.get(START_TIMESTAMP) is not None:
        raise ValidationError(f"choose at most one of the options {START_SNAPSHOT_ID} and {START_TIMESTAMP}")
    identifier = _table_name(options)
    table = catalog_from_options(options, spark_conf).load_table(identifier)
    table_schema = table.schema()
    metadata_columns = _metadata_column_names(options)
    props = table.properties
    batch_reader = IcefloeReader(
        metadata_json=write_metadata_json(table.metadata),
        io_properties=dict(table.io.properties),
        snapshot_id=None,
        schema=table_schema,
        projected=table_schema,
        spark_schema=schema if metadata_columns else to_spark_schema(table_schema),
        split_size=_int_option(options, SPLIT_SIZE, None)
        or int(props.get("read.split.target-size", DEFAULT_SPLIT_SIZE)),
        open_file_cost=_int_option(options, FILE_OPEN_COST, None)
        or int(props.get("read.split.open-file-cost", DEFAULT_OPEN_FILE_COST)),
    )
    batch_reader.metadata_columns = metadata_columns
    return IcefloeStreamReader(
        options=options, spark_conf=spark_conf, identifier=identifier, batch_reader=batch_reader
    )
