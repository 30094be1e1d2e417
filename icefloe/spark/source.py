"""The ``icefloe`` Spark data source (PySpark 4 Python Data Source API).

Reading::

    driver: load table, pick snapshot (snapshot-id | as-of-timestamp | branch | tag)
      -> the ``filter`` option (icefloe filter text) -> partition + metrics pruning, residuals
      -> partitions(): plan_files + plan_tasks (split on row groups, combine small files)
    executors: read(partition) -> read_task per FileScanTask -> Arrow batches in Spark's layout

The reader deliberately has no ``pushFilters``. PySpark 4.x keeps the read plan that filter
pushdown produces (partitions and the pickled reader) on the data source object that every query
of one DataFrame shares, and reuses it for later queries: a reader whose plan depended on pushed
filters would answer ``df.count()`` after ``df.filter(...).count()`` with the filtered rows, and
both sides of a self-join with one side's filter. So the plan depends only on the options, which
belong to the DataFrame; Spark evaluates ``df.filter`` itself. Pruning on this path is asked for
explicitly with ``option("filter", "...")`` (``icefloe.spark.read`` does that for its ``where``).

Writing::

    driver: writer(): load table, check the DataFrame schema against the table (names the column),
            before any task runs
    executors: write(batches) -> write_data_files (partitioned, rolling, metrics, field ids;
               each file sorted by the table's sort order; no distribution across tasks, which
               the Python data source API cannot ask Spark for: icefloe.spark.write does that)
               -> commit message = the DataFiles
    driver: commit(messages) -> one transaction: append | overwrite (all / by filter) |
            dynamic partition overwrite; abort(messages) deletes the files.

Python data sources run in Python worker processes, on the driver and on executors alike; only
small picklable state crosses: the table identifier and catalog properties (used by driver-side
steps only), table metadata JSON, FileIO properties and scan tasks.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid as uuid_mod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import datasource as ds
from pyspark.sql.types import StructType as SparkStructType

from icefloe.errors import CommitStateUnknownError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import (
    AlwaysTrue,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotNull,
    StartsWith,
    bind,
    parse,
)
from icefloe.io import load_file_io
from icefloe.spark._config import catalog_from_options
from icefloe.spark._merge_schema import commit_merged_schema, merge_for_write
from icefloe.spark.metadata import (
    ArrowTableReader,
    MetadataTarget,
    build_metadata_rows,
    metadata_spark_schema,
    resolve_metadata_target,
)
from icefloe.spark.types import to_spark_schema
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata, read_metadata_json, write_metadata_json
from icefloe.transaction.wap import wap_staged

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.io import FileIO
    from icefloe.manifest import DataFile
    from icefloe.scan.task import FileScanTask
    from icefloe.table import Table

__all__ = [
    "FileGroupPartition",
    "IcefloeCommitMessage",
    "IcefloeDataSource",
    "IcefloeReader",
    "IcefloeWriter",
    "spark_filter_to_expression",
]

SNAPSHOT_ID = "snapshot-id"
AS_OF_TIMESTAMP = "as-of-timestamp"
BRANCH = "branch"
TAG = "tag"
SPLIT_SIZE = "split-size"
FILE_OPEN_COST = "file-open-cost"
OVERWRITE_FILTER = "overwrite-filter"
PARTITION_OVERWRITE_MODE = "partition-overwrite-mode"
TARGET_FILE_SIZE = "target-file-size-bytes"
START_SNAPSHOT_ID = "start-snapshot-id"
END_SNAPSHOT_ID = "end-snapshot-id"
FILTER = "filter"
METADATA_COLUMNS = "metadata-columns"
WAP_ID = "wap-id"
WRITE_ID_PROPERTY = "icefloe.spark.write-id"

DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
DEFAULT_OPEN_FILE_COST = 4 * 1024 * 1024


def _table_name(options: Mapping[str, str]) -> str:
    name = options.get("path") or options.get("table")
    if not name:
        raise ValidationError(
            "no table given to the icefloe data source",
            hint='name it: spark.read.format("icefloe").load("ns.table") or .save("ns.table"); Spark passes '
            "no OPTIONS to the Python data source of a catalog table (CREATE TABLE ... USING icefloe): "
            "use CREATE TEMPORARY VIEW v USING icefloe OPTIONS (table 'ns.table')",
        )
    return name


def _int_option(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    text = options.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"option {key!r} must be an integer, got {text!r}") from None


@dataclass(frozen=True)
class _ReadTarget:
    """The snapshot and schema a read resolves to."""

    snapshot_id: int | None
    schema: Schema


def resolve_read(table: Table, options: Mapping[str, str]) -> _ReadTarget:
    """Resolve snapshot-id / as-of-timestamp / branch / tag the way ``Table.scan`` does."""
    ref = options.get(BRANCH) or options.get(TAG)
    if options.get(BRANCH) and options.get(TAG):
        raise ValidationError("choose at most one of the options branch and tag")
    if options.get(END_SNAPSHOT_ID) is not None and options.get(START_SNAPSHOT_ID) is None:
        raise ValidationError(f"option {END_SNAPSHOT_ID!r} needs {START_SNAPSHOT_ID!r} (an incremental read)")
    if options.get(START_SNAPSHOT_ID) is not None:
        if any(options.get(k) is not None for k in (SNAPSHOT_ID, AS_OF_TIMESTAMP, BRANCH, TAG)):
            raise ValidationError(
                f"an incremental read ({START_SNAPSHOT_ID}) cannot also choose a snapshot, "
                "timestamp, branch or tag"
            )
        inc = table.incremental_append_scan(
            _int_option(options, START_SNAPSHOT_ID, None), _int_option(options, END_SNAPSHOT_ID, None)
        )
        return _ReadTarget(table.metadata.current_snapshot_id, inc.schema())
    as_of = _int_option(options, AS_OF_TIMESTAMP, None)
    scan = table.scan(snapshot_id=_int_option(options, SNAPSHOT_ID, None), ref=ref, as_of_timestamp=as_of)
    snap = scan.snapshot()
    return _ReadTarget(snap.snapshot_id if snap else None, scan.schema())


# --------------------------------------------------------------------------- filters


def _literal(value: Any) -> Any:
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def spark_filter_to_expression(f: ds.Filter) -> BooleanExpression | None:
    """An icefloe predicate equivalent to Spark's pushed filter, or None when there is none."""
    if isinstance(f, ds.Not):
        inner = spark_filter_to_expression(f.child)
        return Not(inner) if inner is not None else None
    attr = getattr(f, "attribute", None)
    if not attr:
        return None
    name = ".".join(attr)
    if isinstance(f, ds.IsNull):
        return IsNull(name)
    if isinstance(f, ds.IsNotNull):
        return NotNull(name)
    value = _literal(getattr(f, "value", None))
    if isinstance(f, ds.In):
        values = [_literal(v) for v in value if v is not None]
        if any(isinstance(v, float) and math.isnan(v) for v in values):
            return None
        return In(name, values)
    if value is None or isinstance(value, list | tuple | dict):
        return IsNull(name) if isinstance(f, ds.EqualNullSafe) and value is None else None
    if isinstance(value, float) and math.isnan(value):
        # Spark orders NaN above every number and treats NaN = NaN as true.
        if isinstance(f, ds.EqualTo | ds.EqualNullSafe | ds.GreaterThanOrEqual):
            return IsNaN(name)
        return None
    if isinstance(f, ds.EqualTo | ds.EqualNullSafe):
        return EqualTo(name, value)
    if isinstance(f, ds.GreaterThan):
        return GreaterThan(name, value)
    if isinstance(f, ds.GreaterThanOrEqual):
        return GreaterThanOrEqual(name, value)
    if isinstance(f, ds.LessThan):
        return LessThan(name, value)
    if isinstance(f, ds.LessThanOrEqual):
        return LessThanOrEqual(name, value)
    if isinstance(f, ds.StringStartsWith):
        return StartsWith(name, value)
    return None


# --------------------------------------------------------------------------- reading


class FileGroupPartition(ds.InputPartition):
    """One Spark input partition: scan tasks (whole files or row-group ranges) read in order."""

    def __init__(self, tasks: Sequence[FileScanTask]) -> None:
        super().__init__(None)
        self.tasks = list(tasks)


class IcefloeReader(ds.DataSourceReader):
    def __init__(
        self,
        *,
        metadata_json: str,
        io_properties: dict[str, str],
        snapshot_id: int | None,
        schema: Schema,
        projected: Schema,
        spark_schema: SparkStructType,
        split_size: int,
        open_file_cost: int,
        row_filter: BooleanExpression | None = None,
    ) -> None:
        self.metadata_json = metadata_json
        self.io_properties = io_properties
        self.snapshot_id = snapshot_id
        self.schema = schema
        self.projected = projected
        self.spark_schema = spark_schema
        self.split_size = split_size
        self.open_file_cost = open_file_cost
        #: from the ``filter`` option only (see the module docstring: never from pushed filters)
        self.row_filter: BooleanExpression = AlwaysTrue() if row_filter is None else row_filter
        #: an incremental append read of (start, end] instead of one snapshot
        self.incremental: tuple[int, int | None] | None = None
        #: metadata columns (``_file``, ``_pos``, ...) appended after the projected columns
        self.metadata_columns: list[str] = []
        #: the ``planning`` option (None: the table properties decide; see _distributed_planning)
        self.planning: str | None = None

    def _metadata(self) -> TableMetadata:
        return read_metadata_json(self.metadata_json)

    def plan(self) -> list[list[FileScanTask]]:
        from icefloe.scan.planner import plan_files, plan_tasks

        metadata = self._metadata()
        if self.incremental is not None:
            from icefloe.scan.incremental import plan_incremental_appends

            io = load_file_io(self.io_properties, metadata.location)
            start, end = self.incremental
            tasks = plan_incremental_appends(io, metadata, start, end, self.row_filter, schema=self.schema)
            return plan_tasks(tasks, split_size=self.split_size, open_file_cost=self.open_file_cost)
        if self.snapshot_id is None:
            return []
        io = load_file_io(self.io_properties, metadata.location)
        tasks = plan_files(
            io, metadata, metadata.snapshot_by_id(self.snapshot_id), self.row_filter, schema=self.schema
        )
        return plan_tasks(tasks, split_size=self.split_size, open_file_cost=self.open_file_cost)

    def partitions(self) -> Sequence[ds.InputPartition]:
        if self.incremental is None:
            from icefloe.spark._distributed_planning import source_partitions

            distributed = source_partitions(
                metadata=self._metadata(),
                io_properties=self.io_properties,
                snapshot_id=self.snapshot_id,
                schema=self.schema,
                row_filter=self.row_filter,
                planning=self.planning,
                split_size=self.split_size,
                open_file_cost=self.open_file_cost,
            )
            if distributed is not None:
                return distributed  # data manifests planned by the tasks that read them
        groups = self.plan()
        if not groups:
            return [FileGroupPartition([])]
        return [FileGroupPartition(g) for g in groups]

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        from icefloe.arrow.reader import read_task
        from icefloe.arrow.spark_layout import to_spark_batch

        if not isinstance(partition, FileGroupPartition):
            from icefloe.spark._distributed_planning import planned_group

            meta = self._metadata()
            partition = FileGroupPartition(
                planned_group(
                    partition,  # type: ignore[arg-type]
                    metadata=meta,
                    io=load_file_io(self.io_properties, meta.location),
                    io_properties=self.io_properties,
                    schema=self.schema,
                    row_filter=self.row_filter,
                )
            )
        assert isinstance(partition, FileGroupPartition)
        if not partition.tasks:
            return
        metadata = self._metadata()
        io = load_file_io(self.io_properties, metadata.location)
        target = to_arrow_schema(self.spark_schema, timezone="UTC")
        name_mapping = metadata.properties.get("schema.name-mapping.default")
        if self.metadata_columns:
            yield from self._read_with_metadata(io, metadata, partition.tasks, target, name_mapping)
            return
        for task in partition.tasks:
            for batch in read_task(io, task, self.projected, self.schema, True, name_mapping=name_mapping):
                if batch.num_rows:
                    yield to_spark_batch(batch, self.projected, target)

    def _read_with_metadata(
        self,
        io: FileIO,
        metadata: TableMetadata,
        tasks: Sequence[FileScanTask],
        target: pa.Schema,
        name_mapping: str | None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows with their metadata columns (positions from icefloe.arrow.positions)."""
        import pyarrow as pa

        from icefloe.arrow.positions import read_with_positions
        from icefloe.arrow.spark_layout import to_spark_batch
        from icefloe.scan.row_lineage import with_lineage
        from icefloe.spark._metadata_columns import lineage_columns, source_metadata_arrays

        n_data = len(self.projected.fields)
        data_target = pa.schema([target.field(i) for i in range(n_data)])
        meta_types = {target.field(i).name: target.field(i).type for i in range(n_data, len(target))}
        lineage = lineage_columns(self.metadata_columns)
        # row lineage (v3) is read with the rows: stored values, else inherited by the reader
        read_schema = with_lineage(self.projected, lineage)
        for task in tasks:
            for batch, positions in read_with_positions(
                io, task, read_schema, self.schema, name_mapping=name_mapping
            ):
                lineage_arrays = {n: batch.column(n) for n in lineage}
                if lineage:
                    batch = batch.select(list(range(n_data)))
                data = to_spark_batch(batch, self.projected, data_target)
                extra = source_metadata_arrays(
                    metadata,
                    task,
                    self.metadata_columns,
                    positions,
                    batch.num_rows,
                    meta_types,
                    lineage_arrays,
                )
                yield pa.RecordBatch.from_arrays([*data.columns, *extra], schema=target)


# --------------------------------------------------------------------------- writing


@dataclass
class IcefloeCommitMessage(ds.WriterCommitMessage):
    files: list[DataFile] = field(default_factory=list)


def _files(messages: Sequence[ds.WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, IcefloeCommitMessage) for f in m.files]


class IcefloeWriter(ds.DataSourceArrowWriter):
    def __init__(
        self,
        *,
        options: dict[str, str],
        spark_conf: dict[str, dict[str, str]],
        identifier: str,
        metadata_json: str,
        io_properties: dict[str, str],
        mode: str,
        overwrite_filter: str | None,
        target_file_size: int | None,
        branch: str | None = None,
        wap_id: str | None = None,
        merge_schema: str | None = None,
    ) -> None:
        self.branch = branch
        self.wap_id = wap_id
        self.merge_schema = merge_schema  # merge-schema: the schema change the files were written for
        self.options = options
        self.spark_conf = spark_conf
        self.identifier = identifier
        self.metadata_json = metadata_json
        self.io_properties = io_properties
        self.mode = mode  # append | overwrite | overwrite-filter | dynamic
        self.overwrite_filter = overwrite_filter
        self.target_file_size = target_file_size
        self.write_id = str(uuid_mod.uuid4())

    def _io(self, metadata: TableMetadata) -> FileIO:
        return load_file_io(self.io_properties, metadata.location)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> IcefloeCommitMessage:
        return IcefloeCommitMessage(
            write_spark_batches(
                self.metadata_json, self.io_properties, iterator, self.write_id, self.target_file_size
            )
        )

    def commit(self, messages: list[ds.WriterCommitMessage | None]) -> None:
        files = _files(messages)
        catalog = catalog_from_options(self.options, self.spark_conf)
        table = catalog.load_table(self.identifier)
        if self.mode == "append" and not files:
            return
        props = {WRITE_ID_PROPERTY: self.write_id}
        if self.wap_id:
            props["wap.id"] = self.wap_id
        tx = table.transaction(self.branch) if self.branch else table.transaction()
        try:
            if self.merge_schema is not None:
                commit_merged_schema(tx, self.merge_schema)  # in the same commit as the files
            if self.mode == "append":
                # the executors wrote these files for this job: they are icefloe's to delete
                tx.append_files(files, snapshot_properties=props, delete_on_failure=True)
            elif self.mode == "dynamic":
                if not files:
                    return
                _tx_method(tx, "replace_partitions_files")(
                    files, snapshot_properties=props, delete_on_failure=True
                )
            else:
                where = self.overwrite_filter if self.mode == "overwrite-filter" else AlwaysTrue()
                _tx_method(tx, "overwrite_files")(
                    files, delete_filter=where, snapshot_properties=props, delete_on_failure=True
                )
            tx.commit()
        except CommitStateUnknownError:
            raise  # the files may be committed: never delete them
        except BaseException:
            with contextlib.suppress(Exception):
                tx.abandon()
            _delete(table.io, files)
            raise

    def abort(self, messages: list[ds.WriterCommitMessage | None]) -> None:
        metadata = read_metadata_json(self.metadata_json)
        io = self._io(metadata)
        if _was_committed(self.options, self.spark_conf, self.identifier, self.write_id):
            return  # a commit whose outcome looked unknown did land; its files are live
        _delete(io, _files(messages))
        delete_job_files(metadata, self.write_id, io)
        # Spark calls abort as soon as the job fails, while the job's other tasks may still be
        # finishing their files: sweep again for a few seconds (what is left after that stays an
        # orphan for remove_orphan_files).
        for pause in ABORT_SWEEPS:
            time.sleep(pause)
            delete_job_files(metadata, self.write_id, io)


#: pauses (seconds) before the repeated clean-up sweeps of an aborted write
ABORT_SWEEPS = (0.5, 1.0, 2.0)


def write_spark_batches(
    metadata_json: str,
    io_properties: Mapping[str, str],
    iterator: Iterator[pa.RecordBatch],
    write_id: str,
    target_file_size: int | None,
) -> list[DataFile]:
    """One write task (batch or streaming): Spark's Arrow batches -> the table's data files,
    partitioned (any number of partitions per task), rolling, with metrics and field ids."""
    from icefloe.arrow.spark_layout import from_spark_batch
    from icefloe.arrow.writer import write_data_files

    metadata = read_metadata_json(metadata_json)
    schema = metadata.schema()
    batches = (from_spark_batch(b, schema) for b in iterator)
    # The job id in every file name lets abort() find files of tasks that died mid-write.
    task_uuid = f"{write_id}-{uuid_mod.uuid4().hex[:12]}"
    return write_data_files(
        load_file_io(io_properties, metadata.location),
        metadata,
        batches,
        target_file_size_bytes=target_file_size,
        write_uuid=task_uuid,
    )


def _tx_method(tx: Any, name: str) -> Any:
    method = getattr(tx, name, None)
    if method is None:
        raise UnsupportedFeatureError(
            f"this icefloe build has no Transaction.{name}; overwrite is not available yet",
            hint='use .mode("append")',
        )
    return method


def _delete(io: FileIO, files: Iterable[DataFile]) -> None:
    for f in files:
        with contextlib.suppress(Exception):  # best effort: a leftover file is only an orphan
            io.delete(f.file_path)


def _was_committed(options: Mapping[str, str], spark_conf: Any, identifier: str, write_id: str) -> bool:
    try:
        table = catalog_from_options(options, spark_conf).load_table(identifier)
    except Exception:
        return True
    return any(s.summary.props.get(WRITE_ID_PROPERTY) == write_id for s in table.snapshots())


def delete_job_files(metadata: TableMetadata, write_id: str, io: FileIO | None = None) -> int:
    """Delete data files whose names carry ``write_id`` (files of tasks that failed before they
    could report them). Needs a listable file system: local paths, or the one the table's
    `ArrowFileIO` (with its s3.* settings) serves; on others such files stay behind as orphans
    for the orphan-file cleanup. Listing is only this best-effort cleanup, never correctness.
    Returns the count."""
    import pyarrow.fs as pafs

    from icefloe.io.arrow import ArrowFileIO
    from icefloe.io.local import local_path

    data_path = metadata.properties.get("write.data.path") or f"{metadata.location.rstrip('/')}/data"
    try:
        if isinstance(io, ArrowFileIO):
            fs, root = io.resolve(data_path)
        elif "://" not in data_path or data_path.startswith("file:"):
            # never pafs.FileSystem.from_uri on object stores: without the table's settings it
            # would ask the cloud provider's endpoints (region lookup, instance metadata)
            fs, root = pafs.LocalFileSystem(), local_path(data_path)
        else:
            return 0
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except Exception:
        return 0
    deleted = 0
    for info in infos:
        if info.type == pafs.FileType.File and write_id in info.base_name:
            with contextlib.suppress(Exception):
                fs.delete_file(info.path)
                deleted += 1
    return deleted


# --------------------------------------------------------------------------- the data source


class IcefloeDataSource(ds.DataSource):
    """``spark.read.format("icefloe").load("ns.table")`` / ``df.write.format("icefloe")...``."""

    # Filled by icefloe.spark.register(): the session's spark.icefloe.catalog.* settings.
    spark_conf: ClassVar[dict[str, dict[str, str]]] = {}
    partition_overwrite_mode: ClassVar[str] = "static"

    @classmethod
    def name(cls) -> str:
        return "icefloe"

    def _options(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in self.options.items()}

    def _table(self) -> Table:
        options = self._options()
        return catalog_from_options(options, self.spark_conf).load_table(_table_name(options))

    def _metadata_target(self) -> MetadataTarget | None:
        options = self._options()
        catalog = catalog_from_options(options, self.spark_conf)
        return resolve_metadata_target(catalog, _table_name(options))

    def schema(self) -> SparkStructType:
        meta = self._metadata_target()
        if meta is not None:
            return metadata_spark_schema(meta, self._options())
        table = self._table()
        spark_schema = to_spark_schema(resolve_read(table, self._options()).schema)
        names = _metadata_column_names(self._options())
        if names:
            from icefloe.spark._metadata_columns import check_lineage_columns, metadata_spark_fields

            check_lineage_columns(table.metadata, names)  # v3 only, a typed error

            return SparkStructType([*spark_schema.fields, *metadata_spark_fields(table.metadata, names)])
        return spark_schema

    def reader(self, schema: SparkStructType) -> IcefloeReader | ArrowTableReader:  # type: ignore[override]
        options = self._options()
        meta = self._metadata_target()
        if meta is not None:
            meta_schema, rows = build_metadata_rows(meta, options)
            return ArrowTableReader(meta_schema, rows, to_spark_schema(meta_schema))
        table = self._table()
        target = resolve_read(table, options)
        metadata_columns = _metadata_column_names(options)
        if metadata_columns:
            from icefloe.spark._metadata_columns import check_lineage_columns

            check_lineage_columns(table.metadata, metadata_columns)  # v3 only, a typed error
        names = [f.name for f in schema.fields][: len(schema.fields) - len(metadata_columns)]
        projected = (
            target.schema if names == [f.name for f in target.schema.fields] else target.schema.select(names)
        )
        props = table.properties
        split_size = _int_option(options, SPLIT_SIZE, None) or int(
            props.get("read.split.target-size", DEFAULT_SPLIT_SIZE)
        )
        open_cost = _int_option(options, FILE_OPEN_COST, None) or int(
            props.get("read.split.open-file-cost", DEFAULT_OPEN_FILE_COST)
        )
        filter_text = options.get(FILTER)
        row_filter = None
        if filter_text is not None:
            row_filter = parse(filter_text)
            bind(target.schema, row_filter, True)  # a bad filter fails in planning, naming the column
        reader = IcefloeReader(
            row_filter=row_filter,
            metadata_json=write_metadata_json(table.metadata),
            io_properties=dict(table.io.properties),
            snapshot_id=target.snapshot_id,
            schema=target.schema,
            projected=projected,
            spark_schema=to_spark_schema(projected),
            split_size=split_size,
            open_file_cost=open_cost,
        )
        if metadata_columns:
            reader.metadata_columns = metadata_columns
            reader.spark_schema = schema
        from icefloe.spark._distributed_planning import PLANNING_OPTION, check_planning

        check_planning(table.metadata.properties, options.get(PLANNING_OPTION))  # typed error, early
        reader.planning = options.get(PLANNING_OPTION)
        if options.get(START_SNAPSHOT_ID) is not None:
            reader.incremental = (
                int(options[START_SNAPSHOT_ID]),
                _int_option(options, END_SNAPSHOT_ID, None),
            )
        return reader

    def writer(self, schema: SparkStructType, overwrite: bool) -> IcefloeWriter:
        options = self._options()
        identifier = _table_name(options)
        table = self._table()
        # merge-schema: the executors write with the merged schema; commit() adds it to the table
        write_metadata, merge_schema = merge_for_write(table.metadata, schema, options)
        check_spark_schema(schema, write_metadata.schema())
        if table.format_version not in (2, 3):
            raise UnsupportedFeatureError(
                f"table {table.name} is format version {table.format_version}; icefloe writes v2 and v3",
                hint="upgrade the table: table.upgrade_format_version(2)",
            )
        overwrite_filter = options.get(OVERWRITE_FILTER)
        dynamic = options.get(PARTITION_OVERWRITE_MODE, self.partition_overwrite_mode).lower() == "dynamic"
        if overwrite_filter is not None:
            if not overwrite:
                raise ValidationError(f'option {OVERWRITE_FILTER!r} needs .mode("overwrite")')
            bind(table.schema(), parse(overwrite_filter), True)  # a bad filter fails before any write
            mode = "overwrite-filter"
        elif overwrite:
            mode = "dynamic" if dynamic else "overwrite"
        else:
            mode = "append"
        branch = options.get(BRANCH)
        wap_id = options.get(WAP_ID)
        if branch:
            table.transaction(branch)  # a tag is refused before any task runs
        # a staged (write-audit-publish) write cannot also name a branch: refused before any task
        wap_staged(table.properties, {"wap.id": wap_id} if wap_id else {}, branch or "main")
        return IcefloeWriter(
            branch=branch,
            wap_id=wap_id,
            options=options,
            spark_conf=self.spark_conf,
            identifier=identifier,
            metadata_json=write_metadata_json(write_metadata),
            io_properties=dict(table.io.properties),
            mode=mode,
            merge_schema=merge_schema,
            overwrite_filter=overwrite_filter,
            target_file_size=_int_option(options, TARGET_FILE_SIZE, None),
        )

    def streamWriter(self, schema: SparkStructType, overwrite: bool) -> ds.DataSourceStreamWriter:
        """``df.writeStream.format("icefloe")``: one snapshot per micro-batch (icefloe.spark.streaming)."""
        from icefloe.spark.streaming import stream_writer

        return stream_writer(self._options(), self.spark_conf, schema, overwrite)

    def streamReader(self, schema: SparkStructType) -> ds.DataSourceStreamReader:
        """``spark.readStream.format("icefloe")``: appended snapshots as micro-batches."""
        from icefloe.spark._stream_source import stream_reader

        return stream_reader(self._options(), self.spark_conf, schema)


def _metadata_column_names(options: Mapping[str, str]) -> list[str]:
    """The ``metadata-columns`` option (``"_file,_pos"``) as a checked list."""
    from icefloe.spark._metadata_columns import check_metadata_columns

    text = options.get(METADATA_COLUMNS)
    if not text:
        return []
    return check_metadata_columns(n.strip() for n in text.split(",") if n.strip())


def check_spark_schema(spark_schema: SparkStructType, schema: Schema) -> None:
    """Raise SchemaMismatchError (naming the column) when DataFrames of ``spark_schema`` cannot
    be written to a table with ``schema``; runs on the driver before any task starts."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from icefloe.arrow.conform import check_arrow_schema
    from icefloe.arrow.spark_layout import from_spark_batch

    arrow_schema = to_arrow_schema(spark_schema, timezone="UTC")
    empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in arrow_schema], schema=arrow_schema)
    check_arrow_schema(from_spark_batch(empty, schema).schema, schema)
