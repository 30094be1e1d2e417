"""Distributed scan planning: manifests read and filtered by Spark tasks instead of the driver.

Driver-side planning (:func:`icefloe.scan.planner.plan_files`) reads every manifest that survives
partition-summary pruning on the driver. With thousands of manifests that is most of a query's
planning time, so, as Iceberg Java's ``SparkDistributedDataScan`` does, the manifests can be read
where the data is read::

    driver     manifest list -> prune manifests by partition summaries (cheap, one file)
               -> mode: local | distributed (auto: distributed from
                  read.planning.distributed-min-manifests surviving manifests on; for
                  icefloe.spark.read only when Spark has more cores than the driver)
    icefloe.spark.read (collect):
      executors  parallelize(manifest descriptors) -> mapPartitions: open the table's FileIO,
                 read each manifest, keep live entries matching the partition filter and the
                 column metrics -> compact records (manifest index, data sequence number, DataFile)
      driver     collect -> residual per partition, delete files attached by a DeleteFileIndex
                 -> the same FileScanTask list, in the same order, as plan_files
    data source (no SparkContext in its planning worker, so nothing to collect into):
      driver     delete manifests read on the driver; data manifests grouped into input partitions
      executors  read(partition): plan the group's manifests, attach deletes, read the files

Both paths run one function, :func:`plan_manifests`, on the manifests they hand out (locally for
the manifests kept on the driver), so the filtering is the same code wherever it runs.

Modes come from the table properties ``read.data-planning-mode`` and ``read.delete-planning-mode``
(Iceberg Java's names and values: ``auto``, ``local``, ``distributed``) or, overriding both, from
the ``planning`` option of ``icefloe.spark.read`` and of the data source.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import datasource as ds

from icefloe.errors import UnsupportedFeatureError, ValidationError
from icefloe.expressions import AlwaysTrue, BooleanExpression, bind
from icefloe.expressions.visitors import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    ResidualEvaluator,
    expression_evaluator,
)
from icefloe.io import load_file_io
from icefloe.manifest import (
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
)
from icefloe.scan.delete_index import DeleteFileIndex
from icefloe.scan.planner import PlanningStats, SpecEvaluators, plan_files, select_manifests
from icefloe.scan.task import FileScanTask
from icefloe.spec.properties import (
    DATA_PLANNING_MODE,
    DEFAULT_DISTRIBUTED_MIN_MANIFESTS,
    DELETE_PLANNING_MODE,
    DISTRIBUTED_MIN_MANIFESTS,
    PLANNING_MODES,
    choice_property,
    int_property,
)

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from icefloe.io import FileIO
    from icefloe.manifest import DataFile
    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import DataScan

__all__ = [
    "PLANNING_OPTION",
    "ManifestGroupPartition",
    "ManifestPlanContext",
    "PlanningChoice",
    "check_planning_option",
    "choose_planning",
    "plan_files_distributed",
    "plan_manifests",
    "plan_scan",
    "planned_group",
    "source_partitions",
]

#: the option of ``icefloe.spark.read`` (``planning=``) and of the data source (``.option("planning", ...)``)
PLANNING_OPTION = "planning"


def check_planning_option(value: str | None) -> str | None:
    """The ``planning`` option in lower case, or None when not given; ValidationError otherwise."""
    if value is None:
        return None
    mode = str(value).strip().lower()
    if mode not in PLANNING_MODES:
        raise ValidationError(
            f"planning={value!r} is not a planning mode",
            hint="use "
            + ", ".join(repr(m) for m in PLANNING_MODES)
            + f" (or leave it out: the table properties {DATA_PLANNING_MODE} and "
            f"{DELETE_PLANNING_MODE} decide)",
        )
    return mode


@dataclass(frozen=True)
class PlanningChoice:
    """How one scan plans its data and its delete manifests, and why (for tests and explain)."""

    data_mode: str  # the asked mode: auto | local | distributed
    delete_mode: str
    min_manifests: int
    data_manifests: int  # manifests left after partition-summary pruning
    delete_manifests: int
    #: False when the cluster has no more cores than the driver (Iceberg Java's rule for auto):
    #: tasks would then decode on the same cores and the driver still unpickles their results
    cluster_is_wider: bool = True

    @property
    def distribute_data(self) -> bool:
        return _distribute(self.data_mode, self.data_manifests, self.min_manifests, self.cluster_is_wider)

    @property
    def distribute_deletes(self) -> bool:
        return _distribute(self.delete_mode, self.delete_manifests, self.min_manifests, self.cluster_is_wider)

    @property
    def distributed(self) -> bool:
        return self.distribute_data or self.distribute_deletes


def _distribute(mode: str, manifests: int, min_manifests: int, cluster_is_wider: bool) -> bool:
    if manifests == 0 or mode == "local":
        return False
    return mode == "distributed" or (cluster_is_wider and manifests >= min_manifests)


def choose_planning(
    properties: Mapping[str, str],
    option: str | None,
    data_manifests: int,
    delete_manifests: int,
    *,
    cluster_cores: int | None = None,
    driver_cores: int | None = None,
) -> PlanningChoice:
    """The modes for a scan whose pruned manifest counts are given: the ``planning`` option wins
    over both table properties; a bad value is a typed error (ValidationError for the option,
    ConfigError naming the property). With both core counts given, ``auto`` stays local unless
    the cluster has more cores than the driver."""
    mode = check_planning_option(option)
    data_mode = mode or choice_property(
        properties, DATA_PLANNING_MODE, "auto", PLANNING_MODES, what="a planning mode"
    )
    delete_mode = mode or choice_property(
        properties, DELETE_PLANNING_MODE, "auto", PLANNING_MODES, what="a planning mode"
    )
    threshold = int_property(properties, DISTRIBUTED_MIN_MANIFESTS, DEFAULT_DISTRIBUTED_MIN_MANIFESTS)
    wider = cluster_cores is None or driver_cores is None or cluster_cores > driver_cores
    return PlanningChoice(data_mode, delete_mode, threshold, data_manifests, delete_manifests, wider)


def check_planning(properties: Mapping[str, str], option: str | None) -> None:
    """Fail early (before any manifest is read) on a bad option or property value."""
    choose_planning(properties, option, 0, 0)


# --------------------------------------------------------------------------- pruning (driver)


@dataclass
class _Pruned:
    data: list[ManifestFile]
    deletes: list[ManifestFile]


def prune_manifests(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    row_filter: BooleanExpression,
    schema: Schema,
    case_sensitive: bool,
    stats: PlanningStats,
) -> _Pruned:
    """The snapshot's data and delete manifests that may hold matching live files, in manifest
    list order: plan_files's own first step (:func:`icefloe.scan.planner.select_manifests`, which
    opens only the manifest list)."""
    bound = bind(schema, row_filter, case_sensitive)
    kept = select_manifests(io, snapshot, SpecEvaluators(metadata, schema, bound, case_sensitive), stats)
    return _Pruned(
        [m for m in kept if m.content == ManifestContent.DATA],
        [m for m in kept if m.content == ManifestContent.DELETES],
    )


# --------------------------------------------------------------------------- one group of manifests


@dataclass(frozen=True)
class ManifestPlanContext:
    """What a task needs to plan manifests: small and picklable (no table metadata JSON, whose
    snapshot log can be megabytes)."""

    io_properties: dict[str, str]
    location: str
    schema: Schema
    specs: dict[int, PartitionSpec]
    row_filter: BooleanExpression
    case_sensitive: bool

    @classmethod
    def of(
        cls,
        io_properties: Mapping[str, str],
        metadata: TableMetadata,
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool,
        manifests: Iterable[ManifestFile],
    ) -> ManifestPlanContext:
        spec_ids = {m.partition_spec_id for m in manifests}
        return cls(
            dict(io_properties),
            metadata.location,
            schema,
            {i: metadata.spec_by_id(i) for i in sorted(spec_ids)},
            row_filter,
            case_sensitive,
        )


#: one planned data file: (manifest index, data sequence number, file)
DataRecord = tuple[int, int, "DataFile"]


@dataclass
class ManifestResults:
    """What planning a group of manifests found."""

    data: list[DataRecord] = field(default_factory=list)
    delete_entries: list[ManifestEntry] = field(default_factory=list)
    entries_scanned: int = 0
    files_skipped_by_partition: int = 0
    files_skipped_by_metrics: int = 0

    def extend(self, other: ManifestResults) -> None:
        self.data.extend(other.data)
        self.delete_entries.extend(other.delete_entries)
        self.entries_scanned += other.entries_scanned
        self.files_skipped_by_partition += other.files_skipped_by_partition
        self.files_skipped_by_metrics += other.files_skipped_by_metrics


def plan_manifests(
    ctx: ManifestPlanContext,
    manifests: Iterable[tuple[int, ManifestFile]],
    io: FileIO | None = None,
    *,
    max_workers: int = 4,
) -> ManifestResults:
    """Read ``(index, manifest)`` pairs and keep what plan_files keeps: live data files whose
    partition and column metrics may match, and live delete entries whose partition may match.
    Runs on executors (opening the table's FileIO from ``ctx``) and on the driver alike."""
    if io is None:
        io = load_file_io(ctx.io_properties, ctx.location)
    bound = bind(ctx.schema, ctx.row_filter, ctx.case_sensitive)
    metrics = InclusiveMetricsEvaluator(ctx.schema, bound, ctx.case_sensitive)
    partition_match: dict[int, Any] = {}
    out = ManifestResults()
    items = list(manifests)

    def live_entries(item: tuple[int, ManifestFile]) -> list[ManifestEntry]:
        return [e for e in read_manifest(io, item[1]) if e.status != ManifestEntryStatus.DELETED]

    if len(items) > 1 and max_workers > 1:
        # manifest reads are I/O bound on object stores, in a task as on the driver
        with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
            read = list(pool.map(live_entries, items))
    else:
        read = [live_entries(item) for item in items]
    for (index, m), entries in zip(items, read, strict=True):
        match = partition_match.get(m.partition_spec_id)
        if match is None:
            spec = ctx.specs[m.partition_spec_id]
            ev = ManifestEvaluator(spec, ctx.schema, bound, ctx.case_sensitive)
            match = expression_evaluator(spec.partition_type(ctx.schema), ev.partition_filter)
            partition_match[m.partition_spec_id] = match
        deletes = m.content == ManifestContent.DELETES
        for entry in entries:
            f = entry.data_file
            if deletes:
                if f.content != DataFileContent.DATA and match(f.partition):
                    out.delete_entries.append(entry)
                continue
            out.entries_scanned += 1
            if f.content != DataFileContent.DATA:
                continue
            if not match(f.partition):
                out.files_skipped_by_partition += 1
            elif not metrics.eval(f):
                out.files_skipped_by_metrics += 1
            else:
                # v1 tables have no sequence numbers: every file counts as sequence number 0
                seq = entry.sequence_number if entry.sequence_number is not None else 0
                out.data.append((index, seq, f))
    return out


def _spark_task(
    ctx: ManifestPlanContext, items: Iterator[tuple[int, ManifestFile]]
) -> Iterator[ManifestResults]:
    """mapPartitions body: one ManifestResults per Spark task (a compact, picklable record)."""
    yield plan_manifests(ctx, items)


def _groups(manifests: Sequence[tuple[int, ManifestFile]], n: int) -> list[list[tuple[int, ManifestFile]]]:
    """``manifests`` cut into at most ``n`` contiguous groups of about equal manifest bytes."""
    if not manifests:
        return []
    total = sum(max(m.manifest_length, 1) for _, m in manifests)
    target = total / max(1, min(n, len(manifests)))
    groups: list[list[tuple[int, ManifestFile]]] = [[]]
    size = 0.0
    for item in manifests:
        weight = max(item[1].manifest_length, 1)
        if groups[-1] and size + weight / 2 > target:
            groups.append([])
            size = 0.0
        groups[-1].append(item)
        size += weight
    return groups


def _finish(
    metadata: TableMetadata,
    schema: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool,
    results: ManifestResults,
    stats: PlanningStats,
) -> list[FileScanTask]:
    """Records -> FileScanTasks in manifest-list order, with residuals and delete files, as
    plan_files builds them."""
    residuals: dict[int, ResidualEvaluator] = {}
    cache: dict[tuple[int, tuple[Any, ...]], BooleanExpression] = {}

    def residual(f: DataFile) -> BooleanExpression:
        key = (f.spec_id, tuple(f.partition))
        r = cache.get(key)
        if r is None:
            ev = residuals.get(f.spec_id)
            if ev is None:
                ev = ResidualEvaluator(metadata.spec_by_id(f.spec_id), schema, row_filter, case_sensitive)
                residuals[f.spec_id] = ev
            r = cache[key] = ev.residual_for(f.partition)
        return r

    records = sorted(results.data, key=lambda r: r[0])  # stable: file order within a manifest stays
    index = (
        DeleteFileIndex(results.delete_entries, metadata.specs_by_id, schema)
        if results.delete_entries
        else None
    )
    tasks: list[FileScanTask] = []
    for _, seq, f in records:
        deletes = index.for_data_file(seq, f) if index is not None else ()
        tasks.append(FileScanTask(f, residual(f), deletes, data_sequence_number=seq))
    stats.entries_scanned += results.entries_scanned
    stats.files_skipped_by_partition += results.files_skipped_by_partition
    stats.files_skipped_by_metrics += results.files_skipped_by_metrics
    stats.files_planned = len(tasks)
    stats.delete_files = len({d.file_path for t in tasks for d in t.delete_files})
    return tasks


# --------------------------------------------------------------------------- icefloe.spark.read


def plan_files_distributed(
    spark: SparkSession,
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression | None = None,
    *,
    schema: Schema | None = None,
    case_sensitive: bool = True,
    planning: str | None = "distributed",
    stats: PlanningStats | None = None,
    driver_cores: int | None = None,
) -> tuple[list[FileScanTask], PlanningChoice | None]:
    """plan_files's result, with the manifests that the chosen modes distribute read by Spark
    tasks and collected on the driver. ``planning`` overrides the table properties (None: they
    decide). ``auto`` distributes only when Spark's default parallelism exceeds ``driver_cores``
    (default: this machine's CPU count). Returns the tasks and the choice made (None when the
    snapshot is None)."""
    stats = stats if stats is not None else PlanningStats()
    if snapshot is None:
        check_planning(metadata.properties, planning)
        return [], None
    row_filter = row_filter if row_filter is not None else AlwaysTrue()
    schema = schema if schema is not None else metadata.schema()
    check_planning(metadata.properties, planning)
    bind(schema, row_filter, case_sensitive)  # a bad filter fails before any task runs
    pruning = PlanningStats()
    pruned = prune_manifests(io, metadata, snapshot, row_filter, schema, case_sensitive, pruning)
    sc = _spark_context(spark)
    choice = choose_planning(
        metadata.properties,
        planning,
        len(pruned.data),
        len(pruned.deletes),
        cluster_cores=sc.defaultParallelism if sc is not None else 0,
        driver_cores=driver_cores if driver_cores is not None else (os.cpu_count() or 1),
    )
    if choice.distributed and sc is None:
        raise UnsupportedFeatureError(
            "distributed planning needs a classic SparkSession (with a SparkContext); this one has none",
            hint="use planning='local'",
        )
    if not choice.distributed or sc is None:
        # the driver's own planner (its thread pool) reads the manifests; the list is cached
        tasks = plan_files(
            io, metadata, snapshot, row_filter, schema=schema, case_sensitive=case_sensitive, stats=stats
        )
        return tasks, choice
    stats.manifests_total, stats.manifests_skipped = pruning.manifests_total, pruning.manifests_skipped
    ordered = list(enumerate([*pruned.data, *pruned.deletes]))
    n_data = len(pruned.data)
    remote = [
        (i, m) for i, m in ordered if (choice.distribute_data if i < n_data else choice.distribute_deletes)
    ]
    remote_ids = {i for i, _ in remote}
    local = [(i, m) for i, m in ordered if i not in remote_ids]
    ctx = ManifestPlanContext.of(
        io.properties, metadata, schema, row_filter, case_sensitive, (m for _, m in ordered)
    )
    results = ManifestResults()
    if remote:
        results.extend(_run_on_executors(sc, ctx, remote, metadata))
    if local:
        results.extend(plan_manifests(ctx, local, io))
    return _finish(metadata, schema, row_filter, case_sensitive, results, stats), choice


def _spark_context(spark: SparkSession) -> SparkContext | None:
    try:
        return spark.sparkContext
    except Exception:  # Spark Connect sessions have no SparkContext
        return None


def _run_on_executors(
    sc: SparkContext,
    ctx: ManifestPlanContext,
    manifests: list[tuple[int, ManifestFile]],
    metadata: TableMetadata,
) -> ManifestResults:
    slices = max(1, min(len(manifests), sc.defaultParallelism * 2))
    groups = _groups(manifests, slices)
    previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(f"icefloe: plan {len(manifests)} manifests of {metadata.location}")
    try:
        collected = (
            sc.parallelize(groups, len(groups))
            .mapPartitions(lambda items: _spark_task(ctx, (pair for group in items for pair in group)))
            .collect()
        )
    finally:
        sc.setJobDescription(previous)  # type: ignore[arg-type]
    out = ManifestResults()
    for part in collected:
        out.extend(part)
    return out


def plan_scan(spark: SparkSession, scan: DataScan, planning: str | None) -> list[FileScanTask]:
    """``scan.plan_files()``, distributed when the modes say so (icefloe.spark.read's hook).
    Fills ``scan.planning_stats`` like ``DataScan.plan_files``."""
    table = scan.table
    check_planning(table.metadata.properties, planning)
    choice_local = planning == "local" or (
        planning is None
        and all(
            choice_property(table.metadata.properties, key, "auto", PLANNING_MODES, what="a planning mode")
            == "local"
            for key in (DATA_PLANNING_MODE, DELETE_PLANNING_MODE)
        )
    )
    if choice_local:
        return scan.plan_files()
    stats = PlanningStats()
    tasks, _ = plan_files_distributed(
        spark,
        table.io,
        table.metadata,
        scan.snapshot(),
        scan.row_filter,
        schema=scan.schema(),
        case_sensitive=scan.case_sensitive,
        planning=planning,
        stats=stats,
    )
    scan.planning_stats = stats
    return tasks


# --------------------------------------------------------------------------- the data source


class ManifestGroupPartition(ds.InputPartition):
    """A data-source input partition planned on its executor: data manifests to read and filter,
    and the (driver-planned) live delete entries to attach."""

    def __init__(
        self, manifests: Sequence[tuple[int, ManifestFile]], delete_entries: Sequence[ManifestEntry]
    ) -> None:
        super().__init__(None)
        self.manifests = list(manifests)
        self.delete_entries = list(delete_entries)


def source_partitions(
    *,
    metadata: TableMetadata,
    io_properties: Mapping[str, str],
    snapshot_id: int | None,
    schema: Schema,
    row_filter: BooleanExpression,
    planning: str | None,
    split_size: int,
    open_file_cost: int,
) -> list[ManifestGroupPartition] | None:
    """The data source's input partitions when its data manifests are planned on executors, or
    None when planning stays on the driver (the reader then plans as before).

    The planning worker of a Python data source has no SparkContext, so there is nothing to
    collect into: each input partition holds a group of data manifests and plans them where it
    reads them. Delete manifests are read here (every partition needs the delete index). Groups
    hold about ``split_size / open_file_cost`` live files (the smallest packing plan_tasks makes)."""
    if snapshot_id is None:
        return None
    check_planning(metadata.properties, planning)
    asked = planning or choice_property(
        metadata.properties, DATA_PLANNING_MODE, "auto", PLANNING_MODES, what="a planning mode"
    )
    if asked.strip().lower() == "local":
        return None  # no need to read the manifest list twice
    io = load_file_io(io_properties, metadata.location)
    stats = PlanningStats()
    pruned = prune_manifests(
        io, metadata, metadata.snapshot_by_id(snapshot_id), row_filter, schema, True, stats
    )
    choice = choose_planning(metadata.properties, planning, len(pruned.data), len(pruned.deletes))
    if not choice.distribute_data:
        return None
    ctx = ManifestPlanContext.of(io_properties, metadata, schema, row_filter, True, pruned.deletes)
    deletes = plan_manifests(ctx, enumerate(pruned.deletes), io).delete_entries if pruned.deletes else []
    files_per_group = max(1, split_size // max(open_file_cost, 1))
    partitions: list[ManifestGroupPartition] = []
    group: list[tuple[int, ManifestFile]] = []
    files = 0
    for item in enumerate(pruned.data):
        m = item[1]
        live = (m.added_files_count or 0) + (m.existing_files_count or 0)
        if group and files + live > files_per_group:
            partitions.append(ManifestGroupPartition(group, deletes))
            group, files = [], 0
        group.append(item)
        files += max(live, 1)
    if group:
        partitions.append(ManifestGroupPartition(group, deletes))
    return partitions


def planned_group(
    partition: ManifestGroupPartition,
    *,
    metadata: TableMetadata,
    io: FileIO,
    io_properties: Mapping[str, str],
    schema: Schema,
    row_filter: BooleanExpression,
) -> list[FileScanTask]:
    """The scan tasks of one ManifestGroupPartition (run by the executor that reads them)."""
    manifests = partition.manifests
    ctx = ManifestPlanContext.of(io_properties, metadata, schema, row_filter, True, (m for _, m in manifests))
    results = plan_manifests(ctx, manifests, io)
    results.delete_entries = list(partition.delete_entries)
    return _finish(metadata, schema, row_filter, True, results, PlanningStats())
