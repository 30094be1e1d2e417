"""The Spark runner of the maintenance rewrites: the work of a plan done by Spark tasks on the
executors (Iceberg Java's ``SparkBinPackFileRewriteRunner``, ``SparkSortFileRewriteRunner``,
``SparkZOrderFileRewriteRunner``, ``SparkRewritePositionDeleteRunner`` and the writing part of
``RewriteManifestsSparkAction``).

::

    binpack            one Spark job for every group: a task per split of a group (the group's
                       input split size) reads its files with deletes applied and writes them
                       through the Arrow writer; tasks return their DataFiles
    sort / zorder      per group (up to max-concurrent-file-group-rewrites at once), a DataFrame:
                       tasks read the group's files (mapInArrow; z-order adds the z-value column)
                       -> repartitionByRange(expected output files, ordering)
                       -> sortWithinPartitions(ordering) -> tasks write one sorted run each
                       (mapInArrow) and return their DataFiles. The ordering is the sort order
                       (or z-value), after the output spec's partition fields when the group's
                       files are of another spec (Java's SortOrderUtil.buildSortOrder)
    position deletes   one job, a task per group (icefloe.arrow.rewrite)
    manifests          tasks read the manifests -> sortBy(partition, number of manifests: a range
                       partitioning) -> each Spark partition written as one manifest

Only small, picklable state crosses to the executors: the table metadata as JSON, the FileIO
properties and the plan's tasks. Tasks catch their own errors and return them, so one failed
group does not fail the others; a job that fails as a whole (a lost executor) fails its
groups, and the data files named with the group's write id are deleted by listing the data
directory (as the data source's abort does). Adaptive query execution is off in the session the
rewrites use (it would change the number of output partitions, as Java notes).
"""

from __future__ import annotations

import contextlib
import pickle
import uuid
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from icefloe.errors import IcefloeError
from icefloe.io import load_file_io
from icefloe.maintenance._runner import GroupOutcome, delete_quietly
from icefloe.spec.table_metadata import read_metadata_json, write_metadata_json

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.io import FileIO
    from icefloe.maintenance.rewrite_data_files import RewriteDataFilesPlan, RewriteFileGroup, RewriteStrategy
    from icefloe.maintenance.rewrite_manifests import RewriteManifestsPlan
    from icefloe.maintenance.rewrite_position_deletes import (
        RewritePositionDeletesGroup,
        RewritePositionDeletesPlan,
    )
    from icefloe.manifest import DataFile, ManifestFile
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["SparkRewriteRunner"]

_AQE = "spark.sql.adaptive.enabled"


@dataclass(frozen=True)
class _TableContext:
    """What a task needs to open the table's files: metadata JSON and FileIO properties."""

    metadata_json: str
    io_properties: dict[str, str]

    def open(self) -> tuple[TableMetadata, FileIO]:
        metadata = read_metadata_json(self.metadata_json)
        return metadata, load_file_io(self.io_properties, metadata.location)


@contextlib.contextmanager
def _arrow_udfs() -> Iterator[None]:
    """PySpark checks the pandas version whenever an Arrow function is set up (mapInArrow never
    goes through pandas) and warns about pandas 3; the warning is not ours to show."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        yield


def _error_payload(e: BaseException) -> bytes:
    """The error as it can travel back from an executor: pickled, or as text."""
    try:
        data = pickle.dumps(e)
        pickle.loads(data)
        return data
    except Exception:
        return pickle.dumps(f"{type(e).__name__}: {e}")


def _error_from(payload: bytes) -> tuple[BaseException | None, str | None]:
    value = pickle.loads(payload)
    if isinstance(value, BaseException):
        return value, None
    return None, str(value)


# --------------------------------------------------------------------------- task functions


def _run_split(
    ctx: _TableContext, unit: tuple[int, Sequence[FileScanTask], int, int, str]
) -> tuple[int, bytes, bytes | None]:
    gi, tasks, spec_id, target, write_uuid = unit
    try:
        from icefloe.arrow.rewrite import rewrite_split

        metadata, io = ctx.open()
        files = rewrite_split(
            io,
            metadata,
            tasks,
            spec=metadata.spec_by_id(spec_id),
            target_file_size=target,
            write_uuid=write_uuid,
        )
        return gi, pickle.dumps(files), None
    except Exception as e:
        return gi, pickle.dumps([]), _error_payload(e)


def _run_ordered(
    ctx: _TableContext, strategy: RewriteStrategy, unit: tuple[int, RewriteFileGroup, str]
) -> tuple[int, bytes, bytes | None]:
    gi, group, write_uuid = unit
    try:
        from icefloe.arrow.rewrite import rewrite_ordered

        metadata, io = ctx.open()
        return gi, pickle.dumps(rewrite_ordered(io, metadata, group, strategy, write_uuid)), None
    except Exception as e:
        return gi, pickle.dumps([]), _error_payload(e)


def _run_delete_group(
    ctx: _TableContext, unit: tuple[int, RewritePositionDeletesGroup, str]
) -> tuple[int, bytes, bytes | None]:
    gi, group, write_uuid = unit
    try:
        from icefloe.arrow.rewrite import rewrite_position_delete_group

        metadata, io = ctx.open()
        return gi, pickle.dumps(rewrite_position_delete_group(io, metadata, group, write_uuid)), None
    except Exception as e:
        return gi, pickle.dumps([]), _error_payload(e)


def _read_rows(ctx: _TableContext, splits: list[list[FileScanTask]], target: pa.Schema, zorder: Any) -> Any:
    """mapInArrow function: the rows of the splits whose indices arrive, in Spark's layout (with
    the z-value appended for a z-order)."""

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from icefloe.arrow.rewrite import read_group_rows, zorder_values
        from icefloe.arrow.row_lineage import lineage_schema
        from icefloe.arrow.spark_layout import to_spark_batch

        metadata, io = ctx.open()
        schema = lineage_schema(metadata)  # v3: the rows keep _row_id and their sequence number
        data_target = pa.schema(list(target)[: len(schema.fields)])
        for b in batches:
            for i in b.column(0).to_pylist():
                for batch in read_group_rows(io, metadata, splits[i]):
                    out = to_spark_batch(batch, schema, data_target)
                    if zorder is not None:
                        z = zorder_values(batch, schema, zorder)
                        out = pa.RecordBatch.from_arrays([*out.columns, z], schema=target)
                    yield out

    return read


def _write_rows(ctx: _TableContext, group: RewriteFileGroup, order: Any, write_uuid: str) -> Any:
    """mapInArrow function: one sorted run (a Spark partition) written as data files; one row
    with the pickled DataFiles (or the error) per task."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from icefloe.arrow.row_lineage import lineage_schema
        from icefloe.arrow.spark_layout import from_spark_batch
        from icefloe.arrow.writer import write_data_files

        files: list[DataFile] = []
        error: bytes | None = None
        try:
            metadata, io = ctx.open()
            schema = lineage_schema(metadata)  # v3: the rows keep their row lineage
            files = write_data_files(
                io,
                metadata,
                (from_spark_batch(b, schema) for b in batches),
                spec=metadata.spec_by_id(group.output_spec_id),
                schema=schema,
                target_file_size_bytes=group.max_output_file_size,
                write_uuid=f"{write_uuid}-{uuid.uuid4().hex[:12]}",
                sort_order=order,
            )
        except Exception as e:
            error = _error_payload(e)
        yield pa.RecordBatch.from_arrays(
            [pa.array([pickle.dumps(files)], pa.binary()), pa.array([error], pa.binary())],
            names=["files", "error"],
        )

    return write


def _read_manifest(ctx: _TableContext, m: ManifestFile) -> list[tuple[tuple[Any, ...], Any]]:
    from icefloe.maintenance.rewrite_manifests import partition_sort_key
    from icefloe.manifest import read_manifest

    _, io = ctx.open()
    return [
        (partition_sort_key(e.data_file.partition), e) for e in read_manifest(io, m, discard_deleted=True)
    ]


def _write_manifest(ctx: _TableContext, spec_id: int, content: int, snapshot_id: int) -> Any:
    def write(rows: Iterator[tuple[Any, Any]]) -> Iterator[ManifestFile]:
        from icefloe.maintenance.rewrite_manifests import write_manifest
        from icefloe.manifest import ManifestContent

        metadata, io = ctx.open()
        m = write_manifest(io, metadata, spec_id, ManifestContent(content), (e for _, e in rows), snapshot_id)
        if m is not None:
            yield m

    return write


# --------------------------------------------------------------------------- the runner


class SparkRewriteRunner:
    """Runs maintenance plans as Spark jobs (module docstring)."""

    description = "spark"

    def __init__(self, spark: SparkSession, io: FileIO, max_concurrent_groups: int = 5) -> None:
        self.spark = spark
        self.io = io
        self.max_concurrent_groups = max(1, max_concurrent_groups)
        self._rewrite_session: SparkSession | None = None

    def _session(self) -> SparkSession:
        """A session of the same SparkContext with AQE off (the caller's session is untouched)."""
        if self._rewrite_session is None:
            session = self.spark.newSession()
            session.conf.set(_AQE, "false")
            self._rewrite_session = session
        return self._rewrite_session

    def _context(self, metadata: TableMetadata) -> _TableContext:
        return _TableContext(write_metadata_json(metadata), dict(self.io.properties))

    def _cleanup_job(self, metadata: TableMetadata, write_id: str) -> None:
        from icefloe.spark.source import delete_job_files

        delete_job_files(metadata, write_id, self.io)

    # ------------------------------------------------------------------ data files
    def rewrite_data_groups(
        self, plan: RewriteDataFilesPlan, write_id: str
    ) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        if plan.strategy.name == "binpack":
            return self._binpack(plan, write_id)
        return self._ordered(plan, write_id)

    def _binpack(self, plan: RewriteDataFilesPlan, write_id: str) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        ctx = self._context(plan.metadata)
        from icefloe.arrow.rewrite import slim_tasks

        units = [
            (
                gi,
                slim_tasks(plan.metadata, split),
                g.output_spec_id,
                g.max_output_file_size,
                f"{write_id}-{g.info.global_index:05d}-{si:05d}",
            )
            for gi, g in enumerate(plan.groups)
            for si, split in enumerate(g.splits())
        ]
        sc = self._session().sparkContext
        try:
            rows = sc.parallelize(units, max(1, len(units))).map(lambda u: _run_split(ctx, u)).collect()
        except Exception as e:
            self._cleanup_job(plan.metadata, write_id)
            yield from (GroupOutcome(g, (), _job_error(e)) for g in plan.groups)
            return
        yield from self._collect(plan.groups, rows)

    def _collect(
        self, groups: Sequence[Any], rows: list[tuple[int, bytes, bytes | None]]
    ) -> Iterator[GroupOutcome[Any]]:
        files: dict[int, list[DataFile]] = {i: [] for i in range(len(groups))}
        errors: dict[int, bytes] = {}
        for gi, payload, error in rows:
            files[gi] += pickle.loads(payload)
            if error is not None:
                errors.setdefault(gi, error)
        outcomes: list[GroupOutcome[Any]] = []
        for gi, g in enumerate(groups):
            if gi in errors:
                delete_quietly(self.io, [f.file_path for f in files[gi]])
                err, text = _error_from(errors[gi])
                outcomes.append(GroupOutcome(g, (), err, text))
            else:
                outcomes.append(GroupOutcome(g, tuple(files[gi])))
        handed = 0
        try:
            for o in outcomes:
                handed += 1
                yield o
        finally:
            # closed early (a failed group ends an all-or-nothing rewrite): the rest is nobody's
            delete_quietly(self.io, [f.file_path for o in outcomes[handed:] for f in o.files])

    def _ordered(self, plan: RewriteDataFilesPlan, write_id: str) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        small = [g for g in plan.groups if _sorted_in_task(g)]
        large = [g for g in plan.groups if not _sorted_in_task(g)]
        if small:
            yield from self._ordered_in_tasks(plan, small, write_id)
        if large:
            yield from self._ordered_shuffled(plan, large, write_id)

    def _ordered_in_tasks(
        self, plan: RewriteDataFilesPlan, groups: list[RewriteFileGroup], write_id: str
    ) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        """Groups that make one file and fit a task's memory: each sorted (or z-ordered) by one
        Spark task with Arrow, no shuffle (what a range partitioning into one partition does)."""
        ctx = self._context(plan.metadata)
        strategy = plan.strategy
        from icefloe.arrow.rewrite import slim_tasks

        # the tasks ship only what reading needs; the outcomes name the planned groups
        units = [
            (
                gi,
                replace(g, tasks=tuple(slim_tasks(plan.metadata, g.tasks))),
                f"{write_id}-{g.info.global_index:05d}",
            )
            for gi, g in enumerate(groups)
        ]
        sc = self._session().sparkContext
        try:
            rows = sc.parallelize(units, len(units)).map(lambda u: _run_ordered(ctx, strategy, u)).collect()
        except Exception as e:
            self._cleanup_job(plan.metadata, write_id)
            yield from (GroupOutcome(g, (), _job_error(e)) for g in groups)
            return
        yield from self._collect(groups, rows)

    def _ordered_shuffled(
        self, plan: RewriteDataFilesPlan, groups: list[RewriteFileGroup], write_id: str
    ) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        pool = ThreadPoolExecutor(
            max_workers=self.max_concurrent_groups, thread_name_prefix="icefloe-spark-rewrite"
        )
        futures = {
            pool.submit(self._ordered_group, plan, g, f"{write_id}-{g.info.global_index:05d}"): g
            for g in groups
        }
        reported: set[int] = set()
        try:
            for fut in as_completed(futures):
                outcome = fut.result()
                reported.add(outcome.group.info.global_index)
                yield outcome
        finally:
            for fut in futures:
                fut.cancel()
            pool.shutdown(wait=True)
            for fut, g in futures.items():
                if g.info.global_index in reported or not fut.done() or fut.cancelled():
                    continue
                delete_quietly(self.io, [f.file_path for f in fut.result().files])

    def _ordered_group(
        self, plan: RewriteDataFilesPlan, group: RewriteFileGroup, write_uuid: str
    ) -> GroupOutcome[RewriteFileGroup]:
        try:
            df = self._sorted_frame(plan, group)
            order = _write_order(plan, group)
            ctx = self._context(plan.metadata)
            with _arrow_udfs():
                written = df.mapInArrow(
                    _write_rows(ctx, group, order, write_uuid), "files binary, error binary"
                )
            rows = written.collect()
        except Exception as e:
            self._cleanup_job(plan.metadata, write_uuid)
            return GroupOutcome(group, (), _job_error(e))
        files: list[DataFile] = []
        errors = []
        for r in rows:
            files += pickle.loads(r["files"])
            if r["error"] is not None:
                errors.append(bytes(r["error"]))
        if errors:
            delete_quietly(self.io, [f.file_path for f in files])
            err, text = _error_from(errors[0])
            return GroupOutcome(group, (), err, text)
        record = plan.strategy.record_order_id
        return GroupOutcome(group, tuple(replace(f, sort_order_id=record) for f in files))

    def _sorted_frame(self, plan: RewriteDataFilesPlan, group: RewriteFileGroup) -> DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import BinaryType, StructField, StructType

        from icefloe.arrow.row_lineage import lineage_schema
        from icefloe.maintenance.zorder import Z_COLUMN
        from icefloe.spark.types import to_spark_schema
        from icefloe.spark.write import sort_column, transform_column

        session = self._session()
        metadata = plan.metadata
        schema = metadata.schema()
        # v3: the rows carry _row_id and _last_updated_sequence_number through the shuffle
        spark_schema = to_spark_schema(lineage_schema(metadata))
        zorder = plan.strategy.zorder
        if zorder is not None:
            spark_schema = StructType([*spark_schema.fields, StructField(Z_COLUMN, BinaryType(), False)])
        target = to_arrow_schema(spark_schema, timezone="UTC")
        parallelism = max(1, session.sparkContext.defaultParallelism)
        splits = _spread(list(group.tasks), min(len(group.tasks), parallelism))
        ctx = self._context(metadata)
        ids = session.createDataFrame(
            session.sparkContext.parallelize([(i,) for i in range(len(splits))], len(splits)), "i int"
        )
        with _arrow_udfs():
            df = ids.mapInArrow(_read_rows(ctx, splits, target, zorder), spark_schema)
        spec = metadata.spec_by_id(group.output_spec_id)
        prefix = (
            [
                transform_column(schema, f.source_id, f.transform).asc_nulls_first()
                for f in spec.fields
                if not f.transform.is_void
            ]
            if group.info.spec_id != group.output_spec_id
            else []
        )
        if zorder is not None:
            ordering = [*prefix, F.col(Z_COLUMN).asc()]
        else:
            assert plan.strategy.sort_order is not None
            ordering = [*prefix, *(sort_column(schema, f) for f in plan.strategy.sort_order.fields)]
        df = df.repartitionByRange(group.expected_output_files, *ordering).sortWithinPartitions(*ordering)
        return df.drop(Z_COLUMN) if zorder is not None else df

    # ------------------------------------------------------------------ position deletes
    def rewrite_position_delete_groups(
        self, plan: RewritePositionDeletesPlan, write_id: str
    ) -> Iterator[GroupOutcome[RewritePositionDeletesGroup]]:
        ctx = self._context(plan.metadata)
        units = [(gi, g, f"{write_id}-{g.info.global_index:05d}") for gi, g in enumerate(plan.groups)]
        sc = self._session().sparkContext
        try:
            rows = (
                sc.parallelize(units, max(1, len(units))).map(lambda u: _run_delete_group(ctx, u)).collect()
            )
        except Exception as e:
            yield from (GroupOutcome(g, (), _job_error(e)) for g in plan.groups)
            return
        yield from self._collect(plan.groups, rows)

    # ------------------------------------------------------------------ manifests
    def write_manifests(self, plan: RewriteManifestsPlan) -> list[ManifestFile]:
        ctx = self._context(plan.metadata)
        sc = self._session().sparkContext
        written: list[ManifestFile] = []
        snapshot_id = plan.snapshot_id or 0
        try:
            for s in plan.sets:
                manifests = list(s.manifests)
                entries = sc.parallelize(manifests, max(1, min(len(manifests), sc.defaultParallelism * 4)))
                keyed = entries.flatMap(lambda m: _read_manifest(ctx, m))
                if plan.use_caching:
                    keyed = keyed.cache()
                try:
                    ordered = keyed.sortBy(lambda kv: kv[0], ascending=True, numPartitions=s.target_manifests)
                    written += ordered.mapPartitions(
                        _write_manifest(ctx, plan.spec_id, int(s.content), snapshot_id)
                    ).collect()
                finally:
                    if plan.use_caching:
                        keyed.unpersist()
        except BaseException:
            delete_quietly(self.io, [m.manifest_path for m in written])
            raise
        return written


#: a sort or z-order group that makes one file and reads at most this many bytes is sorted by one
#: task with Arrow; bigger ones are range-partitioned and sorted by Spark (which spills)
IN_TASK_SORT_BYTES = 256 * 1024 * 1024


def _sorted_in_task(group: RewriteFileGroup) -> bool:
    return group.expected_output_files == 1 and group.input_size <= IN_TASK_SORT_BYTES


def _spread(tasks: list[FileScanTask], n: int) -> list[list[FileScanTask]]:
    """``tasks`` in ``n`` lists of about equal bytes (largest first, each to the lightest list)."""
    n = max(1, n)
    lists: list[list[FileScanTask]] = [[] for _ in range(n)]
    weights = [0] * n
    for t in sorted(tasks, key=lambda t: -t.file.file_size_in_bytes):
        i = weights.index(min(weights))
        lists[i].append(t)
        weights[i] += t.file.file_size_in_bytes
    return [x for x in lists if x]


def _write_order(plan: RewriteDataFilesPlan, group: RewriteFileGroup) -> Any:
    """The order the writer checks and records: the sort order (after the partition fields when
    the group's files change spec), or the unsorted order for a z-order."""
    from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder

    strategy = plan.strategy
    if strategy.name != "sort" or strategy.sort_order is None:
        return UNSORTED_SORT_ORDER
    order = strategy.sort_order
    if group.info.spec_id != group.output_spec_id:
        spec = plan.metadata.spec_by_id(group.output_spec_id)
        prefix = [SortField(f.source_id, f.transform) for f in spec.fields if not f.transform.is_void]
        order = SortOrder(max(order.order_id, 1), [*prefix, *order.fields])
    return order


def _job_error(e: BaseException) -> BaseException:
    if isinstance(e, IcefloeError):
        return e
    text = str(e).strip().splitlines()
    return IcefloeError(
        "a Spark rewrite job failed: " + (text[-1] if text else type(e).__name__),
        hint="see the Spark logs; nothing of this group was committed and its files were deleted",
    )
