"""Delete-file maintenance: ``table.maintenance.rewrite_position_delete_files(...)`` (Iceberg
Java's ``RewritePositionDeleteFilesSparkAction`` with its ``BinPackRewritePositionDeletePlanner``).

::

    plan      the current snapshot's position delete files (their partition passing ``where``'s
              projection, as Java's ``baseTableFilter``), by spec and partition
              ─▶ candidates outside [min, max] size (target: write.delete.target-file-size-bytes,
                 64 MiB) ─▶ bin-packed groups with enough files or content (min-input-files ...)
              each group carries the live data files of its partition
    execute   a runner merges each group's files: (file_path, pos) of data files still live in the
              partition, sorted and de-duplicated, rolled at the writers' max file size; deletes of
              data files that are gone are dropped
    commit    RewriteFiles replacing the group's delete files by the new ones, which keep the
              newest data sequence number of the files they replace (so they apply to exactly the
              data files the old ones did); validated: the old delete files must still be in the
              table. Concurrent appends and deletes commit beside it.

Equality delete files and deletion vectors are not rewritten. On format v3 tables the action
turns the remaining v2 position delete files into deletion vectors, as Java's does (and does
nothing when there are none): the same plan, but one group per partition (two groups could each
write a vector for one data file), and each data file the group's files apply to gets one vector
holding every position deleted from it (the group's files, its earlier vector, its other position
delete files; :func:`icefloe.arrow.deletion_vectors.write_deletion_vectors`). The commit removes
the group's files and what the vectors replace (the earlier vector, file-scoped position delete
files); it is validated as on v2, and against a vector added concurrently for one of those data
files or the data file removed meanwhile. Reading delete files only, it runs on the driver (also
with ``spark=``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.errors import CommitError
from icefloe.expressions import BooleanExpression
from icefloe.maintenance import _execution
from icefloe.maintenance._options import ActionOptions
from icefloe.maintenance._runner import GroupOutcome
from icefloe.maintenance._sizing import SIZE_OPTIONS, SizeThresholds
from icefloe.maintenance.rewrite_data_files import (
    JOB_ORDERS,
    MAX_CONCURRENT_FILE_GROUP_REWRITES,
    PARTIAL_PROGRESS_ENABLED,
    PARTIAL_PROGRESS_MAX_COMMITS,
    REWRITE_JOB_ORDER,
    FileGroupInfo,
    check_writable,
    parse_where,
)
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    read_manifest,
    read_manifest_list,
)
from icefloe.transaction._file_filter import FileFilter
from icefloe.transaction.rewrite_files import RewriteFiles

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = [
    "PositionDeletesGroupResult",
    "RewritePositionDeleteFiles",
    "RewritePositionDeletesGroup",
    "RewritePositionDeletesPlan",
    "RewritePositionDeletesResult",
    "plan_rewrite_position_deletes",
]

DELETE_TARGET_FILE_SIZE_PROP = "write.delete.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_DEFAULT = 64 * 1024 * 1024
VALID_OPTIONS = (
    *SIZE_OPTIONS,
    MAX_CONCURRENT_FILE_GROUP_REWRITES,
    PARTIAL_PROGRESS_ENABLED,
    PARTIAL_PROGRESS_MAX_COMMITS,
    REWRITE_JOB_ORDER,
)


@dataclass(frozen=True)
class RewritePositionDeletesGroup:
    """Position delete files of one partition merged together; ``data_sequence_number`` is the
    newest of theirs (the new files get it), ``live_data_files`` the data files of the partition
    whose deletes are kept."""

    info: FileGroupInfo
    delete_files: tuple[DataFile, ...]
    data_sequence_number: int
    live_data_files: frozenset[str]
    max_output_file_size: int
    input_split_size: int
    expected_output_files: int

    @property
    def input_files_count(self) -> int:
        return len(self.delete_files)

    @property
    def input_size(self) -> int:
        return sum(d.file_size_in_bytes for d in self.delete_files)

    @property
    def input_records(self) -> int:
        return sum(d.record_count for d in self.delete_files)


@dataclass(frozen=True)
class RewritePositionDeletesPlan:
    metadata: TableMetadata
    starting_snapshot_id: int | None
    groups: tuple[RewritePositionDeletesGroup, ...]
    total_group_count: int
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PositionDeletesGroupResult:
    """A committed group (Java's ``FileGroupRewriteResult`` of this action)."""

    info: FileGroupInfo
    rewritten_delete_files_count: int
    added_delete_files_count: int
    rewritten_bytes_count: int
    added_bytes_count: int
    rewritten_records_count: int
    added_records_count: int


@dataclass(frozen=True)
class RewritePositionDeletesResult:
    rewrite_results: tuple[PositionDeletesGroupResult, ...] = ()
    rewrite_failures: tuple[tuple[FileGroupInfo, str], ...] = ()
    snapshot_ids: tuple[int, ...] = ()

    @property
    def rewritten_delete_files_count(self) -> int:
        return sum(r.rewritten_delete_files_count for r in self.rewrite_results)

    @property
    def added_delete_files_count(self) -> int:
        return sum(r.added_delete_files_count for r in self.rewrite_results)

    @property
    def rewritten_bytes_count(self) -> int:
        return sum(r.rewritten_bytes_count for r in self.rewrite_results)

    @property
    def added_bytes_count(self) -> int:
        return sum(r.added_bytes_count for r in self.rewrite_results)


# --------------------------------------------------------------------------- planning


def plan_rewrite_position_deletes(
    io: FileIO, metadata: TableMetadata, row_filter: BooleanExpression, options: ActionOptions
) -> RewritePositionDeletesPlan:
    default_target = int(
        metadata.properties.get(DELETE_TARGET_FILE_SIZE_PROP, DELETE_TARGET_FILE_SIZE_DEFAULT)
    )
    sizes = SizeThresholds.from_options(options, default_target)
    job_order = options.choice(REWRITE_JOB_ORDER, "none", JOB_ORDERS)
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return RewritePositionDeletesPlan(metadata, None, (), 0, dict(options.values))
    matcher = FileFilter(metadata, row_filter)
    live: dict[tuple[int, tuple[Any, ...]], set[str]] = {}
    deletes: dict[tuple[int, tuple[Any, ...]], list[tuple[DataFile, int]]] = {}
    for m in read_manifest_list(io, snapshot.manifest_list):
        for e in read_manifest(io, m, discard_deleted=True):
            f = e.data_file
            key = (f.spec_id, tuple(f.partition))
            if m.content == ManifestContent.DATA:
                live.setdefault(key, set()).add(f.file_path)
            elif (
                f.content == DataFileContent.POSITION_DELETES
                and f.file_format != FileFormat.PUFFIN
                and matcher.may_match(f)
            ):
                seq = e.sequence_number if e.sequence_number is not None else 0
                deletes.setdefault(key, []).append((f, seq))

    def size(item: tuple[DataFile, int]) -> int:
        return item[0].file_size_in_bytes

    groups: list[RewritePositionDeletesGroup] = []
    for key, files in deletes.items():
        planned = sizes.plan_groups(files, size, lambda _: False, lambda _: False)
        if metadata.format_version >= 3 and len(planned) > 1:
            # Deletion vectors: a data file gets one, holding all its deletes: one group a partition.
            planned = [[item for items in planned for item in items]]
        for pi, items in enumerate(planned, start=1):
            input_size = sum(size(i) for i in items)
            groups.append(
                RewritePositionDeletesGroup(
                    info=FileGroupInfo(len(groups) + 1, pi, key[1], key[0]),
                    delete_files=tuple(f for f, _ in items),
                    data_sequence_number=max(s for _, s in items),
                    live_data_files=frozenset(live.get(key, ())),
                    max_output_file_size=sizes.write_max_file_size(),
                    input_split_size=sizes.input_split_size(input_size),
                    expected_output_files=sizes.expected_output_files(input_size),
                )
            )
    keys: dict[str, Callable[[RewritePositionDeletesGroup], int]] = {
        "bytes-asc": lambda g: g.input_size,
        "bytes-desc": lambda g: -g.input_size,
        "files-asc": lambda g: g.input_files_count,
        "files-desc": lambda g: -g.input_files_count,
    }
    if job_order in keys:
        groups.sort(key=keys[job_order])
    return RewritePositionDeletesPlan(
        metadata, snapshot.snapshot_id, tuple(groups), len(groups), dict(options.values)
    )


# --------------------------------------------------------------------------- the action


class RewritePositionDeleteFiles:
    """The action behind ``table.maintenance.rewrite_position_delete_files``: on v2 merges
    position delete files, on v3 turns them into deletion vectors."""

    def __init__(
        self,
        table: Table,
        where: str | BooleanExpression | None = None,
        options: Mapping[str, Any] | None = None,
        spark: Any = None,
    ) -> None:
        check_writable(table.name, table.format_version, "rewrite_position_delete_files")
        self.table = table
        self.options = ActionOptions(options, VALID_OPTIONS, "rewrite_position_delete_files")
        self.row_filter = parse_where(table.metadata, where)
        self.spark = spark
        default_target = int(
            table.metadata.properties.get(DELETE_TARGET_FILE_SIZE_PROP, DELETE_TARGET_FILE_SIZE_DEFAULT)
        )
        SizeThresholds.from_options(self.options, default_target)  # checked now
        self.options.choice(REWRITE_JOB_ORDER, "none", JOB_ORDERS)
        self.max_concurrent = self.options.integer(MAX_CONCURRENT_FILE_GROUP_REWRITES, 5, minimum=1)
        self.partial_progress = self.options.boolean(PARTIAL_PROGRESS_ENABLED, False)
        self.max_commits = self.options.integer(PARTIAL_PROGRESS_MAX_COMMITS, 10, minimum=1)

    def plan(self) -> RewritePositionDeletesPlan:
        self.table.refresh()
        check_writable(self.table.name, self.table.format_version, "rewrite_position_delete_files")
        return plan_rewrite_position_deletes(
            self.table.io, self.table.metadata, self.row_filter, self.options
        )

    def execute(self, plan: RewritePositionDeletesPlan | None = None) -> RewritePositionDeletesResult:
        plan = plan if plan is not None else self.plan()
        if not plan.groups:
            return RewritePositionDeletesResult()
        if plan.metadata.format_version >= 3:
            outcomes, replaced = _deletion_vector_outcomes(self.table.io, plan)
            return commit_position_delete_groups(
                self.table,
                plan,
                outcomes,
                partial_progress=self.partial_progress,
                max_commits=self.max_commits,
                also_remove=replaced,
            )
        runner = _execution.make_runner(self.spark, self.table.io, self.max_concurrent)
        outcomes = runner.rewrite_position_delete_groups(plan, f"deletes-{uuid.uuid4().hex[:16]}")
        return commit_position_delete_groups(
            self.table, plan, outcomes, partial_progress=self.partial_progress, max_commits=self.max_commits
        )


def _deletion_vector_outcomes(
    io: FileIO, plan: RewritePositionDeletesPlan
) -> tuple[Iterator[GroupOutcome[RewritePositionDeletesGroup]], dict[int, tuple[DataFile, ...]]]:
    """v3: each group's position delete files as deletion vectors, one per live data file they
    apply to (every position deleted from that file), one Puffin file a group; and, by group, the
    other delete files those vectors replace (filled in as each outcome is produced)."""
    from icefloe.arrow.apply_deletes import DeleteLoader
    from icefloe.arrow.deletion_vectors import DVTarget, write_deletion_vectors
    from icefloe.errors import IcefloeError
    from icefloe.scan.planner import plan_files

    snapshot = plan.metadata.snapshot_by_id(plan.starting_snapshot_id) if plan.starting_snapshot_id else None
    applying: dict[str, list[Any]] = {}  # position delete file -> scan tasks of the data files it applies to
    for task in plan_files(io, plan.metadata, snapshot):
        for d in task.delete_files:
            if d.content == DataFileContent.POSITION_DELETES and d.file_format != FileFormat.PUFFIN:
                applying.setdefault(d.file_path, []).append(task)
    replaced: dict[int, tuple[DataFile, ...]] = {}

    def outcomes() -> Iterator[GroupOutcome[RewritePositionDeletesGroup]]:
        loader = DeleteLoader()
        for group in plan.groups:
            mine = {d.file_path for d in group.delete_files}
            try:
                targets = []
                seen: set[str] = set()
                for d in group.delete_files:
                    for task in applying.get(d.file_path, ()):
                        path = task.file.file_path
                        if path in seen:
                            continue
                        seen.add(path)
                        position_deletes = [
                            x for x in task.delete_files if x.content == DataFileContent.POSITION_DELETES
                        ]
                        ours = [x for x in position_deletes if x.file_path in mine]
                        targets.append(
                            DVTarget(task.file, loader.positions(io, path, ours), position_deletes)
                        )
                written = write_deletion_vectors(io, plan.metadata, targets, loader=loader)
            except (IcefloeError, OSError) as e:
                yield GroupOutcome(group, error=e)
                continue
            replaced[group.info.global_index] = tuple(
                d for d in written.rewritten if d.file_format == FileFormat.PUFFIN or d.file_path not in mine
            )
            yield GroupOutcome(group, files=tuple(written.added))

    return outcomes(), replaced


def commit_position_delete_groups(
    table: Table,
    plan: RewritePositionDeletesPlan,
    outcomes: Iterator[GroupOutcome[RewritePositionDeletesGroup]],
    *,
    partial_progress: bool,
    max_commits: int,
    also_remove: Mapping[int, tuple[DataFile, ...]] | None = None,
) -> RewritePositionDeletesResult:
    """Commit the groups' outcomes; ``also_remove`` names, by group, delete files removed with the
    group's own (those a group's deletion vectors replace)."""
    extra = also_remove if also_remove is not None else {}
    results: list[PositionDeletesGroupResult] = []
    failures: list[tuple[FileGroupInfo, str]] = []
    snapshot_ids: list[int] = []

    def commit(batch: list[GroupOutcome[RewritePositionDeletesGroup]]) -> None:
        added = [f for o in batch for f in o.files]
        try:
            producer = RewriteFiles(
                table.io,
                plan.metadata,
                remove=[],
                add=[],
                remove_deletes=[
                    d
                    for o in batch
                    for d in (*o.group.delete_files, *extra.get(o.group.info.global_index, ()))
                ],
                add_deletes=added,
                sequence_numbers={f.file_path: o.group.data_sequence_number for o in batch for f in o.files},
                owns_files=True,
                starting_snapshot=plan.starting_snapshot_id,
            )
        except BaseException:
            from icefloe.maintenance._runner import delete_quietly

            delete_quietly(table.io, [f.file_path for f in added])
            raise
        snapshot_ids.append(_execution.commit_producer(table, producer))
        for o in batch:
            results.append(
                PositionDeletesGroupResult(
                    info=o.group.info,
                    rewritten_delete_files_count=o.group.input_files_count
                    + len(extra.get(o.group.info.global_index, ())),
                    added_delete_files_count=len(o.files),
                    rewritten_bytes_count=o.group.input_size,
                    added_bytes_count=sum(f.file_size_in_bytes for f in o.files),
                    rewritten_records_count=o.group.input_records,
                    added_records_count=sum(f.record_count for f in o.files),
                )
            )

    def fail(o: GroupOutcome[RewritePositionDeletesGroup], why: str) -> None:
        failures.append((o.group.info, why))

    failed = _execution.run_groups(
        outcomes,
        table.io,
        commit,
        fail,
        partial_progress=partial_progress,
        groups_per_commit=max(1, math.ceil(plan.total_group_count / max_commits)),
    )
    if failed > max_commits:  # pragma: no cover - more failed commits than commits cannot happen
        raise CommitError(f"{failed} rewrite commits failed")
    return RewritePositionDeletesResult(
        tuple(sorted(results, key=lambda r: r.info.global_index)),
        tuple(sorted(failures, key=lambda r: r[0].global_index)),
        tuple(snapshot_ids),
    )
