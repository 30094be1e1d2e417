"""Compaction: ``table.maintenance.rewrite_data_files(...)`` (Iceberg Java's
``RewriteDataFilesSparkAction`` with its ``BinPackRewriteFilePlanner``).

::

    plan      branch head ─▶ plan_files(where) (whole files, their delete files)
              ─▶ by partition of the current spec; files of older specs form one partition of
                 their own and are rewritten into the current spec (as Java)
              ─▶ candidates: size outside [min, max], too many deletes, too high a delete ratio
              ─▶ bin-packed groups (max-file-group-size-bytes) worth a rewrite (min-input-files,
                 enough or too much content, deletes); expected output files and split size
    execute   a runner (icefloe.arrow locally, icefloe.spark on executors) reads each group with
              its deletes applied and writes it: as it comes (binpack), sorted by a sort order
              (sort), or by z-value (zorder)
    commit    RewriteFiles from the starting snapshot, keeping its sequence number: fails with
              MissingFilesError / ConflictingDeleteFilesError when an input file was removed or
              got new deletes meanwhile, commits beside concurrent appends; partial progress
              commits groups in up to partial-progress.max-commits commits
    then      remove-dangling-deletes: a second commit removing delete files that no data file
              can need any more

Everything here is engine-free: the plan (:class:`RewriteDataFilesPlan`) pickles, and only the
runner touches Arrow or Spark.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from icefloe.errors import SortOrderError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import AlwaysTrue, BooleanExpression, bind, parse
from icefloe.maintenance import _execution
from icefloe.maintenance._options import ActionOptions
from icefloe.maintenance._sizing import SIZE_OPTIONS, SizeThresholds
from icefloe.maintenance.zorder import (
    MAX_OUTPUT_SIZE,
    MAX_OUTPUT_SIZE_DEFAULT,
    PRIMITIVE_BUFFER_SIZE,
    VAR_LENGTH_CONTRIBUTION,
    ZOrderSpec,
    zorder_spec,
)
from icefloe.manifest import DataFile, DataFileContent
from icefloe.scan.delete_index import referenced_data_file
from icefloe.scan.planner import plan_files, plan_tasks
from icefloe.scan.task import FileScanTask
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder

if TYPE_CHECKING:
    from icefloe.maintenance._runner import RewriteRunner
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = [
    "STRATEGIES",
    "FileGroupFailureResult",
    "FileGroupInfo",
    "FileGroupRewriteResult",
    "RewriteDataFiles",
    "RewriteDataFilesPlan",
    "RewriteDataFilesResult",
    "RewriteFileGroup",
    "RewriteStrategy",
    "plan_rewrite_data_files",
]

STRATEGIES = ("binpack", "sort", "zorder")

# The action's options (Java's RewriteDataFiles names and defaults).
MAX_CONCURRENT_FILE_GROUP_REWRITES = "max-concurrent-file-group-rewrites"
PARTIAL_PROGRESS_ENABLED = "partial-progress.enabled"
PARTIAL_PROGRESS_MAX_COMMITS = "partial-progress.max-commits"
PARTIAL_PROGRESS_MAX_FAILED_COMMITS = "partial-progress.max-failed-commits"
USE_STARTING_SEQUENCE_NUMBER = "use-starting-sequence-number"
REWRITE_JOB_ORDER = "rewrite-job-order"
OUTPUT_SPEC_ID = "output-spec-id"
REMOVE_DANGLING_DELETES = "remove-dangling-deletes"
MAX_FILES_TO_REWRITE = "max-files-to-rewrite"
# BinPackRewriteFilePlanner
DELETE_FILE_THRESHOLD = "delete-file-threshold"
DELETE_RATIO_THRESHOLD = "delete-ratio-threshold"
# SparkShufflingDataRewritePlanner / SparkShufflingFileRewriteRunner (sort and zorder)
COMPRESSION_FACTOR = "compression-factor"
SHUFFLE_PARTITIONS_PER_FILE = "shuffle-partitions-per-file"

ACTION_OPTIONS = (
    MAX_CONCURRENT_FILE_GROUP_REWRITES,
    PARTIAL_PROGRESS_ENABLED,
    PARTIAL_PROGRESS_MAX_COMMITS,
    PARTIAL_PROGRESS_MAX_FAILED_COMMITS,
    USE_STARTING_SEQUENCE_NUMBER,
    REWRITE_JOB_ORDER,
    OUTPUT_SPEC_ID,
    REMOVE_DANGLING_DELETES,
    MAX_FILES_TO_REWRITE,
)
BINPACK_OPTIONS = (*SIZE_OPTIONS, DELETE_FILE_THRESHOLD, DELETE_RATIO_THRESHOLD)
STRATEGY_OPTIONS: dict[str, tuple[str, ...]] = {
    "binpack": (),
    "sort": (COMPRESSION_FACTOR, SHUFFLE_PARTITIONS_PER_FILE),
    "zorder": (COMPRESSION_FACTOR, SHUFFLE_PARTITIONS_PER_FILE, VAR_LENGTH_CONTRIBUTION, MAX_OUTPUT_SIZE),
}
JOB_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")
DELETE_FILE_THRESHOLD_DEFAULT = 2**31 - 1
DELETE_RATIO_THRESHOLD_DEFAULT = 0.3
TARGET_FILE_SIZE_PROP = "write.target-file-size-bytes"
TARGET_FILE_SIZE_DEFAULT = 512 * 1024 * 1024


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class FileGroupInfo:
    """Where a group sits in the plan (Java's ``FileGroupInfo``). ``spec_id`` is the spec of its
    files, or None for the group of files of older specs (their ``partition`` is ``()``)."""

    global_index: int
    partition_index: int
    partition: tuple[Any, ...]
    spec_id: int | None


@dataclass(frozen=True)
class RewriteFileGroup:
    """One unit of rewriting: whole data files (with the delete files that apply to them) that
    are read together and written as about ``expected_output_files`` files of
    ``output_spec_id``, none bigger than ``max_output_file_size``."""

    info: FileGroupInfo
    tasks: tuple[FileScanTask, ...]
    output_spec_id: int
    max_output_file_size: int
    input_split_size: int
    expected_output_files: int

    @property
    def data_files(self) -> list[DataFile]:
        return [t.file for t in self.tasks]

    @property
    def input_files_count(self) -> int:
        return len(self.tasks)

    @property
    def input_size(self) -> int:
        return sum(t.file.file_size_in_bytes for t in self.tasks)

    @property
    def delete_files(self) -> list[DataFile]:
        return list({d.file_path: d for t in self.tasks for d in t.delete_files}.values())

    def splits(self) -> list[list[FileScanTask]]:
        """The reads of a bin-pack rewrite, one writer each (Java reads a group with
        ``split-size`` = the input split size and ``file-open-cost`` 0)."""
        return plan_tasks(self.tasks, split_size=self.input_split_size, open_file_cost=0)


@dataclass(frozen=True)
class RewriteStrategy:
    """How a group's rows are laid out: as read (``binpack``), sorted by ``sort_order``
    (``sort``; files record ``record_order_id``: the table's order with the same fields, else
    0), or by z-value (``zorder``; files record 0)."""

    name: str
    sort_order: SortOrder | None = None
    record_order_id: int = 0
    zorder: ZOrderSpec | None = None


@dataclass(frozen=True)
class RewriteDataFilesPlan:
    """What to rewrite, from one snapshot; picklable, and all an engine needs besides the FileIO."""

    metadata: TableMetadata
    starting_snapshot_id: int | None
    strategy: RewriteStrategy
    groups: tuple[RewriteFileGroup, ...]
    total_group_count: int
    groups_in_partition: Mapping[tuple[int | None, tuple[Any, ...]], int]
    options: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class FileGroupRewriteResult:
    """A committed group (Java's ``FileGroupRewriteResult``)."""

    info: FileGroupInfo
    rewritten_data_files_count: int
    added_data_files_count: int
    rewritten_bytes_count: int
    added_bytes_count: int
    removed_delete_files_count: int = 0


@dataclass(frozen=True)
class FileGroupFailureResult:
    """A group that was not committed: its rewrite failed, or (partial progress) its commit did."""

    info: FileGroupInfo
    data_files_count: int
    error: str


@dataclass(frozen=True)
class RewriteDataFilesResult:
    """What ``rewrite_data_files`` did (Java's ``RewriteDataFiles.Result`` and its counters)."""

    rewrite_results: tuple[FileGroupRewriteResult, ...] = ()
    rewrite_failures: tuple[FileGroupFailureResult, ...] = ()
    #: delete files removed: those only the rewritten files needed, and dangling ones
    removed_delete_files_count: int = 0
    #: the snapshots committed (one, several with partial progress, plus dangling-delete removal)
    snapshot_ids: tuple[int, ...] = ()

    @property
    def rewritten_data_files_count(self) -> int:
        return sum(r.rewritten_data_files_count for r in self.rewrite_results)

    @property
    def added_data_files_count(self) -> int:
        return sum(r.added_data_files_count for r in self.rewrite_results)

    @property
    def rewritten_bytes_count(self) -> int:
        return sum(r.rewritten_bytes_count for r in self.rewrite_results)

    @property
    def added_bytes_count(self) -> int:
        return sum(r.added_bytes_count for r in self.rewrite_results)

    @property
    def failed_data_files_count(self) -> int:
        return sum(r.data_files_count for r in self.rewrite_failures)

    @property
    def rewritten_file_groups_count(self) -> int:
        return len(self.rewrite_results)

    @property
    def failed_file_groups_count(self) -> int:
        return len(self.rewrite_failures)


# --------------------------------------------------------------------------- options and strategy


def _valid_options(strategy: str) -> tuple[str, ...]:
    extra = (REWRITE_JOB_ORDER, MAX_FILES_TO_REWRITE)
    return (*ACTION_OPTIONS, *BINPACK_OPTIONS, *extra, *STRATEGY_OPTIONS[strategy])


def strategy_name(strategy: object) -> str:
    name = strategy.strip().lower() if isinstance(strategy, str) else None
    if name not in STRATEGIES:
        raise ValidationError(
            f"unknown rewrite strategy {strategy!r}",
            hint="use one of " + ", ".join(repr(s) for s in STRATEGIES),
            strategy=strategy,
        )
    assert name is not None
    return name


def resolve_strategy(
    metadata: TableMetadata,
    strategy: str,
    sort_order: SortOrder | str | Sequence[str | SortField] | None,
    zorder_columns: Sequence[str] | None,
    options: ActionOptions,
) -> RewriteStrategy:
    name = strategy_name(strategy)
    if name != "sort" and sort_order is not None:
        raise ValidationError(
            f"sort_order applies to strategy='sort', not {name!r}",
            hint="pass strategy='sort' with a sort order, or leave sort_order out",
        )
    if name != "zorder" and zorder_columns is not None:
        raise ValidationError(
            f"zorder_columns applies to strategy='zorder', not {name!r}",
            hint="pass strategy='zorder' with the columns, or leave zorder_columns out",
        )
    if (
        SHUFFLE_PARTITIONS_PER_FILE in options
        and options.integer(SHUFFLE_PARTITIONS_PER_FILE, 1, minimum=1) != 1
    ):
        raise UnsupportedFeatureError(
            f"{SHUFFLE_PARTITIONS_PER_FILE} other than 1 is not supported",
            hint="leave it at 1 (one sorted Spark partition per output file)",
        )
    schema = metadata.schema()
    if name == "binpack":
        return RewriteStrategy("binpack")
    if name == "zorder":
        if zorder_columns is None:
            raise ValidationError(
                "strategy='zorder' needs zorder_columns", hint='pass zorder_columns=["a", "b"]'
            )
        spec = zorder_spec(
            schema,
            metadata.spec(),
            zorder_columns,
            var_length_contribution=options.integer(
                VAR_LENGTH_CONTRIBUTION, PRIMITIVE_BUFFER_SIZE, minimum=1
            ),
            max_output_size=options.integer(MAX_OUTPUT_SIZE, MAX_OUTPUT_SIZE_DEFAULT, minimum=1),
        )
        return RewriteStrategy("zorder", UNSORTED_SORT_ORDER, 0, spec)
    order = _sort_order(metadata, sort_order)
    record = next((o.order_id for o in metadata.sort_orders if o.same_order(order)), 0)
    return RewriteStrategy("sort", order, record)


def _sort_order(
    metadata: TableMetadata, sort_order: SortOrder | str | Sequence[str | SortField] | None
) -> SortOrder:
    """The order a sort rewrite uses: the table's, or the one given (terms as in
    ``replace_sort_order``: ``"id desc, day(ts)"``, a list of terms or SortFields, or a SortOrder)."""
    from icefloe.spec.sort_order_builder import bind_sort_term, check_sort_field

    schema = metadata.schema()
    if sort_order is None:
        order = metadata.sort_order()
        if order.is_unsorted:
            raise SortOrderError(
                "cannot sort: the table has no sort order and none was given",
                hint="pass sort_order='col1, col2 desc' or set one with table.replace_sort_order(...)",
            )
        return order
    if isinstance(sort_order, SortOrder):
        if sort_order.is_unsorted:
            raise SortOrderError("cannot sort by the unsorted order", hint="name at least one column")
        order = sort_order
    else:
        terms = _split_terms(sort_order) if isinstance(sort_order, str) else list(sort_order)
        if not terms:
            raise SortOrderError("cannot sort by an empty sort order", hint="name at least one column")
        fields = [t if isinstance(t, SortField) else bind_sort_term(schema, _term_text(t)) for t in terms]
        # an id no order of the table has: it is never recorded in a file (see record_order_id)
        order = SortOrder(max([o.order_id for o in metadata.sort_orders] + [0]) + 1, fields)
    for f in order.fields:
        check_sort_field(schema, f)
    return order


def _term_text(term: object) -> str:
    if not isinstance(term, str):
        raise SortOrderError(f"sort terms are text or SortField objects, got {term!r}")
    return term


def _split_terms(text: str) -> list[str]:
    """``"bucket(4, id), ts desc"`` -> ``["bucket(4, id)", "ts desc"]`` (commas in brackets stay)."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    terms.append("".join(current).strip())
    return [t for t in terms if t]


def parse_where(metadata: TableMetadata, where: str | BooleanExpression | None) -> BooleanExpression:
    """The row filter, parsed and checked against the current schema (ExpressionError when it
    does not parse or names an unknown column)."""
    if where is None:
        return AlwaysTrue()
    expr = parse(where) if isinstance(where, str) else where
    if not isinstance(expr, BooleanExpression):
        raise ValidationError(f"where must be filter text or an expression, got {where!r}")
    bind(metadata.schema(), expr)
    return expr


def check_writable(table_name: str, format_version: int, action: str) -> None:
    """Compaction rewrites format v2 and v3 tables (on v3 the rewritten rows keep their
    ``_row_id`` and ``_last_updated_sequence_number``: :mod:`icefloe.arrow.row_lineage`)."""
    if format_version < 2:
        raise UnsupportedFeatureError(
            f"{action} on {table_name}: format version 1 tables cannot be rewritten by icefloe",
            hint="upgrade the table to format version 2",
        )
    if format_version > 3:
        raise UnsupportedFeatureError(
            f"{action} on {table_name}: format version {format_version} is not supported by icefloe",
        )


# --------------------------------------------------------------------------- planning


@dataclass
class _PlanningOptions:
    sizes: SizeThresholds
    delete_file_threshold: int
    delete_ratio_threshold: float
    job_order: str
    max_files_to_rewrite: int | None
    output_spec_id: int
    compression_factor: float


def _planning_options(metadata: TableMetadata, strategy: str, options: ActionOptions) -> _PlanningOptions:
    default_target = int(metadata.properties.get(TARGET_FILE_SIZE_PROP, TARGET_FILE_SIZE_DEFAULT))
    spec_id = options.integer(OUTPUT_SPEC_ID, metadata.default_spec_id)
    if spec_id not in metadata.specs_by_id:
        raise ValidationError(
            f"cannot use output spec id {spec_id}: the table has no such partition spec",
            hint=f"use one of {sorted(metadata.specs_by_id)}",
            option=OUTPUT_SPEC_ID,
        )
    return _PlanningOptions(
        sizes=SizeThresholds.from_options(options, default_target),
        delete_file_threshold=options.integer(
            DELETE_FILE_THRESHOLD, DELETE_FILE_THRESHOLD_DEFAULT, minimum=0
        ),
        delete_ratio_threshold=options.number(
            DELETE_RATIO_THRESHOLD, DELETE_RATIO_THRESHOLD_DEFAULT, above=0.0, at_most=1.0
        ),
        job_order=options.choice(REWRITE_JOB_ORDER, "none", JOB_ORDERS),
        max_files_to_rewrite=options.optional_integer(MAX_FILES_TO_REWRITE, minimum=1),
        output_spec_id=spec_id,
        compression_factor=(
            options.number(COMPRESSION_FACTOR, 1.0, above=0.0) if strategy != "binpack" else 1.0
        ),
    )


def _delete_ratio(task: FileScanTask) -> float:
    """Deleted rows known from file-scoped position deletes, as a share of the file's rows."""
    if not task.delete_files or task.file.record_count <= 0:
        return 0.0
    known = sum(
        d.record_count
        for d in task.delete_files
        if d.content == DataFileContent.POSITION_DELETES and referenced_data_file(d) is not None
    )
    return min(known, task.file.record_count) / task.file.record_count


_JOB_ORDER_KEYS: dict[str, Callable[[RewriteFileGroup], int]] = {
    "bytes-asc": lambda g: g.input_size,
    "bytes-desc": lambda g: -g.input_size,
    "files-asc": lambda g: g.input_files_count,
    "files-desc": lambda g: -g.input_files_count,
}


def plan_rewrite_data_files(
    io: Any,
    metadata: TableMetadata,
    *,
    strategy: RewriteStrategy,
    row_filter: BooleanExpression,
    options: ActionOptions,
) -> RewriteDataFilesPlan:
    """Java's ``BinPackRewriteFilePlanner.plan`` (with ``SparkShufflingDataRewritePlanner``'s
    compression factor for sort and zorder) over the current snapshot."""
    po = _planning_options(metadata, strategy.name, options)
    snapshot = metadata.current_snapshot()
    empty = RewriteDataFilesPlan(metadata, None, strategy, (), 0, {}, dict(options.values))
    if snapshot is None:
        return empty
    sizes = po.sizes
    current_spec = metadata.default_spec_id
    by_partition: dict[tuple[int | None, tuple[Any, ...]], list[FileScanTask]] = {}
    key: tuple[int | None, tuple[Any, ...]]
    for t in plan_files(io, metadata, snapshot, row_filter):
        # Rewrites read whole files: the filter only chooses them (Java's ignoreResiduals).
        task = replace(t, residual=AlwaysTrue())  # keeps the data sequence number (row lineage)
        key = (t.file.spec_id, tuple(t.file.partition)) if t.file.spec_id == current_spec else (None, ())
        by_partition.setdefault(key, []).append(task)

    def too_many_deletes(task: FileScanTask) -> bool:
        return len(task.delete_files) >= po.delete_file_threshold

    def too_high_ratio(task: FileScanTask) -> bool:
        return bool(task.delete_files) and _delete_ratio(task) >= po.delete_ratio_threshold

    def size(task: FileScanTask) -> int:
        return task.file.file_size_in_bytes

    planned: dict[tuple[int | None, tuple[Any, ...]], list[list[FileScanTask]]] = {}
    for key, tasks in by_partition.items():
        groups = sizes.plan_groups(
            tasks,
            size,
            lambda t: too_many_deletes(t) or too_high_ratio(t),
            lambda g: any(too_many_deletes(t) or too_high_ratio(t) for t in g),
        )
        if groups:
            planned[key] = groups

    out: list[RewriteFileGroup] = []
    partition_counter: dict[tuple[int | None, tuple[Any, ...]], int] = {}
    files_budget = po.max_files_to_rewrite
    for key, groups in planned.items():
        for tasks in groups:
            if files_budget is not None:
                if files_budget <= 0:
                    break
                tasks = tasks[:files_budget]
                files_budget -= len(tasks)
            input_size = sum(size(t) for t in tasks)
            estimated = int(input_size * po.compression_factor)
            partition_counter[key] = partition_counter.get(key, 0) + 1
            info = FileGroupInfo(len(out) + 1, partition_counter[key], key[1], key[0])
            out.append(
                RewriteFileGroup(
                    info=info,
                    tasks=tuple(tasks),
                    output_spec_id=po.output_spec_id,
                    max_output_file_size=sizes.write_max_file_size(),
                    input_split_size=sizes.input_split_size(input_size),
                    expected_output_files=max(1, sizes.expected_output_files(estimated)),
                )
            )
    order_key = _JOB_ORDER_KEYS.get(po.job_order)
    if order_key is not None:
        out.sort(key=order_key)
    groups_in_partition = {k: len(v) for k, v in planned.items()}
    return RewriteDataFilesPlan(
        metadata,
        snapshot.snapshot_id,
        strategy,
        tuple(out),
        sum(groups_in_partition.values()),
        groups_in_partition,
        dict(options.values),
    )


# --------------------------------------------------------------------------- the action


class RewriteDataFiles:
    """The action behind ``table.maintenance.rewrite_data_files``: everything is checked when it
    is built (nothing read or written yet); :meth:`plan`, then :meth:`execute`."""

    def __init__(
        self,
        table: Table,
        strategy: str = "binpack",
        sort_order: SortOrder | str | Sequence[str | SortField] | None = None,
        zorder_columns: Sequence[str] | None = None,
        where: str | BooleanExpression | None = None,
        options: Mapping[str, Any] | None = None,
        spark: Any = None,
    ) -> None:
        check_writable(table.name, table.format_version, "rewrite_data_files")
        name = strategy_name(strategy)
        self.table = table
        self.options = ActionOptions(options, _valid_options(name), "rewrite_data_files")
        self.strategy = resolve_strategy(table.metadata, name, sort_order, zorder_columns, self.options)
        self.row_filter = parse_where(table.metadata, where)
        self.spark = spark
        _planning_options(table.metadata, name, self.options)  # every option checked now
        self.max_concurrent = self.options.integer(MAX_CONCURRENT_FILE_GROUP_REWRITES, 5, minimum=1)
        self.partial_progress = self.options.boolean(PARTIAL_PROGRESS_ENABLED, False)
        self.max_commits = self.options.integer(PARTIAL_PROGRESS_MAX_COMMITS, 10, minimum=1)
        self.max_failed_commits = self.options.integer(
            PARTIAL_PROGRESS_MAX_FAILED_COMMITS, self.max_commits, minimum=0
        )
        self.use_starting_sequence_number = self.options.boolean(USE_STARTING_SEQUENCE_NUMBER, True)
        self.remove_dangling_deletes = self.options.boolean(REMOVE_DANGLING_DELETES, False)

    def plan(self) -> RewriteDataFilesPlan:
        """The groups to rewrite, from the table's current snapshot (the table is refreshed)."""
        self.table.refresh()
        check_writable(self.table.name, self.table.format_version, "rewrite_data_files")
        return plan_rewrite_data_files(
            self.table.io,
            self.table.metadata,
            strategy=self.strategy,
            row_filter=self.row_filter,
            options=self.options,
        )

    def runner(self) -> RewriteRunner:
        return _execution.make_runner(self.spark, self.table.io, self.max_concurrent)

    def execute(self, plan: RewriteDataFilesPlan | None = None) -> RewriteDataFilesResult:
        """Rewrite the plan's groups and commit them (module docstring)."""
        plan = plan if plan is not None else self.plan()
        result = RewriteDataFilesResult()
        if plan.groups:
            write_id = f"rewrite-{uuid.uuid4().hex[:16]}"
            outcomes = self.runner().rewrite_data_groups(plan, write_id)
            result = _execution.commit_data_groups(
                self.table,
                plan,
                outcomes,
                partial_progress=self.partial_progress,
                max_commits=self.max_commits,
                max_failed_commits=self.max_failed_commits,
                use_starting_sequence_number=self.use_starting_sequence_number,
            )
        if self.remove_dangling_deletes:
            from icefloe.maintenance.dangling_deletes import remove_dangling_deletes

            removed, snapshot_id = remove_dangling_deletes(self.table)
            if snapshot_id is not None:
                result = RewriteDataFilesResult(
                    result.rewrite_results,
                    result.rewrite_failures,
                    result.removed_delete_files_count + removed,
                    (*result.snapshot_ids, snapshot_id),
                )
        return result


def group_results(
    groups: Iterable[RewriteFileGroup],
    added: Mapping[int, Sequence[DataFile]],
    removed_deletes: Mapping[int, int],
) -> list[FileGroupRewriteResult]:
    return [
        FileGroupRewriteResult(
            info=g.info,
            rewritten_data_files_count=g.input_files_count,
            added_data_files_count=len(added.get(g.info.global_index, ())),
            rewritten_bytes_count=g.input_size,
            added_bytes_count=sum(f.file_size_in_bytes for f in added.get(g.info.global_index, ())),
            removed_delete_files_count=removed_deletes.get(g.info.global_index, 0),
        )
        for g in groups
    ]
