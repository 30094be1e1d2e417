"""Structured Streaming into icefloe tables: ``df.writeStream.format("icefloe")``.

One micro-batch is one snapshot, committed exactly once across query restarts::

    executors: write(batches) -> the batch writer's file writing (write_spark_batches: fanout over
               partitions, rolling files, metrics); file names carry <query id>-b<batch id>
               -> commit message = the DataFiles + the query id (the task's Spark local property)
    driver:    commit(messages, batch id)
               -> load the table; walk the target branch's history, newest first, to the first
                  snapshot of this query (summary icefloe.streaming.query-id)
               -> its icefloe.streaming.batch-id >= this batch id: the batch is already in the
                  table (a restart re-ran it): delete this attempt's files, commit nothing
               -> else one transaction: append (append mode) or overwrite everything (complete
                  mode), the summary recording query id and batch id
               abort(messages, batch id) -> delete the files the tasks reported, and (unless the
                  batch is committed) the files named after this query and batch

Spark records a batch as done in its checkpoint only after the sink's commit returns; a query
stopped in between re-runs the batch on restart with the same data, and the summary keys make
that second commit a no-op. The query id is the persistent id Spark keeps in the checkpoint
(``StreamingQuery.id``), so it survives restarts. Iceberg Java's sink records the same facts as
``spark.sql.streaming.queryId`` / ``spark.sql.streaming.epochId``; this sink recognizes those
keys too, so a query moving from Java's sink to this one stays exactly once.
"""

from __future__ import annotations

import contextlib
import json
import uuid as uuid_mod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import datasource as ds

from icefloe.errors import CommitStateUnknownError, UnsupportedFeatureError
from icefloe.expressions import AlwaysTrue
from icefloe.io import load_file_io
from icefloe.spark._config import catalog_from_options
from icefloe.spark._merge_schema import merge_requested
from icefloe.spark.source import (
    BRANCH,
    TARGET_FILE_SIZE,
    IcefloeCommitMessage,
    _delete,
    _files,
    _int_option,
    _table_name,
    check_spark_schema,
    delete_job_files,
    write_spark_batches,
)
from icefloe.spec.table_metadata import read_metadata_json, write_metadata_json

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType as SparkStructType

    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import Table

__all__ = [
    "BATCH_ID_PROPERTY",
    "QUERY_ID_PROPERTY",
    "IcefloeStreamCommitMessage",
    "IcefloeStreamWriter",
    "last_committed_batch",
    "stream_writer",
]

#: snapshot summary keys this sink writes
QUERY_ID_PROPERTY = "icefloe.streaming.query-id"
BATCH_ID_PROPERTY = "icefloe.streaming.batch-id"
#: the keys Iceberg Java's Spark sink writes for the same facts (read, never written)
JAVA_QUERY_ID_PROPERTY = "spark.sql.streaming.queryId"
JAVA_EPOCH_ID_PROPERTY = "spark.sql.streaming.epochId"

# Spark's local properties on the tasks of a micro-batch (StreamExecution / MicroBatchExecution)
_QUERY_ID_LOCAL_PROPERTY = "sql.streaming.queryId"
_BATCH_ID_LOCAL_PROPERTY = "streaming.sql.batchId"


@dataclass
class IcefloeStreamCommitMessage(IcefloeCommitMessage):
    """The files one task wrote, and the streaming query it wrote them for."""

    query_id: str | None = None


def _job_prefix(query_id: str, batch_id: int | str) -> str:
    # "-b<n>-": the dashes keep batch 1's prefix from matching batch 10's files
    return f"{query_id}-b{batch_id}-"


def last_committed_batch(metadata: TableMetadata, branch: str, query_id: str) -> int | None:
    """The batch id of the newest snapshot that streaming query ``query_id`` committed to
    ``branch`` (its history, newest first), or None when it committed none there."""
    ref = metadata.refs.get(branch)
    # a branch that does not exist yet starts at the current snapshot (as its first write will)
    head = ref.snapshot_id if ref is not None else metadata.current_snapshot_id
    for snap in metadata.ancestors(head):
        props = snap.summary.props
        if props.get(QUERY_ID_PROPERTY) == query_id:
            batch = props.get(BATCH_ID_PROPERTY)
        elif props.get(JAVA_QUERY_ID_PROPERTY) == query_id:
            batch = props.get(JAVA_EPOCH_ID_PROPERTY)
        else:
            continue
        with contextlib.suppress(TypeError, ValueError):
            return int(batch)  # type: ignore[arg-type]
    return None


def _checkpoint_query_id(options: Mapping[str, str]) -> str | None:
    """The query id Spark keeps in ``<checkpointLocation>/metadata`` (a local checkpoint only):
    the fallback for a batch that ran no task to report it."""
    from icefloe.io.local import local_path

    location = options.get("checkpointlocation")
    if not location or ("://" in location and not location.startswith("file:")):
        return None
    try:
        with open(f"{local_path(location).rstrip('/')}/metadata", encoding="utf-8") as f:
            value = json.loads(f.readline()).get("id")
    except (OSError, ValueError, AttributeError):
        return None
    return str(value) if value else None


def _query_id(messages: Sequence[ds.WriterCommitMessage | None], options: Mapping[str, str]) -> str | None:
    for m in messages:
        if isinstance(m, IcefloeStreamCommitMessage) and m.query_id:
            return m.query_id
    return _checkpoint_query_id(options)


class IcefloeStreamWriter(ds.DataSourceStreamArrowWriter):
    """The sink of one streaming query: picklable, created by Spark for the tasks of the query
    and again on the driver for each commit or abort."""

    def __init__(
        self,
        *,
        options: dict[str, str],
        spark_conf: dict[str, dict[str, str]],
        identifier: str,
        metadata_json: str,
        io_properties: dict[str, str],
        complete: bool,
        target_file_size: int | None,
        branch: str | None = None,
    ) -> None:
        self.options = options
        self.spark_conf = spark_conf
        self.identifier = identifier
        self.metadata_json = metadata_json
        self.io_properties = io_properties
        self.complete = complete  # complete output mode: every batch replaces the table's rows
        self.target_file_size = target_file_size
        self.branch = branch or "main"

    def _table(self) -> Table:
        return catalog_from_options(self.options, self.spark_conf).load_table(self.identifier)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> IcefloeStreamCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        query_id = context.getLocalProperty(_QUERY_ID_LOCAL_PROPERTY) if context is not None else None
        batch_id = context.getLocalProperty(_BATCH_ID_LOCAL_PROPERTY) if context is not None else None
        # A write outside a streaming task (tests) still gets a unique prefix.
        prefix = _job_prefix(query_id, batch_id) if query_id and batch_id else f"{uuid_mod.uuid4()}-"
        files = write_spark_batches(
            self.metadata_json, self.io_properties, iterator, prefix.rstrip("-"), self.target_file_size
        )
        return IcefloeStreamCommitMessage(files, query_id=query_id)

    def commit(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
        files = _files(messages)
        table = self._table()
        query_id = _query_id(messages, self.options)
        if query_id is not None:
            last = last_committed_batch(table.metadata, self.branch, query_id)
            if last is not None and last >= batchId:
                # a restart re-ran a batch the table already has: these files are a second copy
                _delete(table.io, files)
                return
        if not files and not self.complete:
            return  # an empty append changes nothing; re-running it is harmless
        props = {BATCH_ID_PROPERTY: str(batchId)}
        if query_id is not None:
            props[QUERY_ID_PROPERTY] = query_id
        tx = table.transaction(self.branch)
        try:
            if self.complete:
                tx.overwrite_files(
                    files, delete_filter=AlwaysTrue(), snapshot_properties=props, delete_on_failure=True
                )
            else:
                tx.append_files(files, snapshot_properties=props, delete_on_failure=True)
            tx.commit()
        except CommitStateUnknownError:
            raise  # the files may be committed: never delete them
        except BaseException:
            with contextlib.suppress(Exception):
                tx.abandon()
            _delete(table.io, files)
            raise

    def abort(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
        metadata = read_metadata_json(self.metadata_json)
        io = load_file_io(self.io_properties, metadata.location)
        _delete(io, _files(messages))  # this attempt's files: never the committed ones
        query_id = _query_id(messages, self.options)
        if query_id is None:
            return
        try:
            last = last_committed_batch(self._table().metadata, self.branch, query_id)
        except Exception:
            return  # cannot tell whether the batch's files are live: leave them to orphan cleanup
        if last is None or last < batchId:
            # files of tasks that failed before reporting them (the batch is not in the table)
            delete_job_files(metadata, _job_prefix(query_id, batchId), io)


def stream_writer(
    options: dict[str, str], spark_conf: dict[str, dict[str, str]], schema: SparkStructType, overwrite: bool
) -> IcefloeStreamWriter:
    """The sink for ``IcefloeDataSource.streamWriter``; checks run on the driver before any task:
    the DataFrame's schema against the table's (naming the column), the format version, the
    branch. ``overwrite`` is Spark's complete output mode."""
    identifier = _table_name(options)
    table = catalog_from_options(options, spark_conf).load_table(identifier)
    if merge_requested(options):
        raise UnsupportedFeatureError(
            "a streaming write cannot evolve the table's schema (merge-schema)",
            hint="add the columns first (table.update_schema()), then start the query",
        )
    check_spark_schema(schema, table.schema())
    if table.format_version not in (2, 3):
        raise UnsupportedFeatureError(
            f"table {table.name} is format version {table.format_version}; icefloe writes versions 2 and 3",
            hint="upgrade the table: table.upgrade_format_version(2)",
        )
    branch = options.get(BRANCH)
    if branch:
        table.transaction(branch)  # a tag is refused before any task runs
    return IcefloeStreamWriter(
        options=options,
        spark_conf=spark_conf,
        identifier=identifier,
        metadata_json=write_metadata_json(table.metadata),
        io_properties=dict(table.io.properties),
        complete=overwrite,
        target_file_size=_int_option(options, TARGET_FILE_SIZE, None),
        branch=branch,
    )
