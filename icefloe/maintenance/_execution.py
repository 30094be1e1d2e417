"""Running a rewrite plan and committing its groups: the part of the maintenance actions between
the planner and the snapshot producer (Java's ``RewriteDataFilesCommitManager`` and its commit
service).

::

    runner outcomes (as groups finish)
      all or nothing (default): any failed group -> delete every file written, raise its error;
                                else one RewriteFiles commit of every group
      partial progress:         groups committed in batches of ceil(groups / max-commits) as they
                                finish; a failed group or a failed commit is reported, not raised
                                (up to partial-progress.max-failed-commits failed commits)

Every commit starts from the plan's snapshot: the producer validates against what committed
since (files removed or given new deletes meanwhile) and keeps that snapshot's sequence number.
A commit that fails for sure deletes the files written for its groups (the producer owns them);
one whose outcome is unknown deletes nothing.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from icefloe.errors import CommitError, CommitStateUnknownError, IcefloeError
from icefloe.maintenance._runner import GroupOutcome, delete_quietly
from icefloe.manifest import DataFileContent
from icefloe.transaction._commit import commit_actions
from icefloe.transaction.rewrite_files import RewriteFiles

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.maintenance._runner import RewriteRunner
    from icefloe.maintenance.rewrite_data_files import (
        FileGroupFailureResult,
        RewriteDataFilesPlan,
        RewriteDataFilesResult,
        RewriteFileGroup,
    )
    from icefloe.manifest import DataFile
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = ["commit_data_groups", "commit_producer", "make_runner", "run_groups"]

G = TypeVar("G")


def make_runner(spark: Any, io: FileIO, max_concurrent: int) -> RewriteRunner:
    """The Spark runner when a SparkSession is given, else the local Arrow runner."""
    if spark is None:
        from icefloe.arrow.rewrite import ArrowRewriteRunner

        return ArrowRewriteRunner(io, max_concurrent)
    from icefloe.spark.runners import SparkRewriteRunner

    return SparkRewriteRunner(spark, io, max_concurrent)


def commit_producer(table: Table, producer: RewriteFiles) -> int:
    """Commit ``producer`` on the table's latest metadata (it validates against what committed
    since its starting snapshot) and move the handle to the result; the new snapshot's id."""
    try:
        base = table.catalog.load_table(table.identifier).metadata
    except BaseException:
        producer.cleanup(committed=False)
        raise
    metadata, location = commit_actions(table.catalog, table.identifier, base, [producer])
    table.metadata = metadata
    table.metadata_location = location
    assert producer.committed_snapshot is not None
    return producer.committed_snapshot.snapshot_id


def run_groups(
    outcomes: Iterator[GroupOutcome[G]],
    io: FileIO,
    commit: Callable[[list[GroupOutcome[G]]], None],
    fail: Callable[[GroupOutcome[G], str], None],
    *,
    partial_progress: bool,
    groups_per_commit: int,
) -> int:
    """Drive the runner's outcomes into commits (module docstring); the number of failed
    commits (partial progress). ``commit`` raises when a commit fails; ``fail`` records a group
    that will not be committed."""
    done: list[GroupOutcome[G]] = []
    failed_commits = 0
    try:
        for o in outcomes:
            if not o.ok:
                if not partial_progress:
                    raise _group_error(o)
                fail(o, o.describe_error())
                continue
            done.append(o)
            if partial_progress and len(done) >= groups_per_commit:
                batch, done = done, []
                failed_commits += _commit_batch(batch, commit, fail)
    except BaseException:
        # A failed group (all or nothing) or a broken runner: what was written and not
        # committed goes. Closing the runner's generator lets it clean up groups in flight.
        close = getattr(outcomes, "close", None)
        if close is not None:
            close()
        delete_quietly(io, [f.file_path for o in done for f in o.files])
        raise
    if done:
        if partial_progress:
            failed_commits += _commit_batch(done, commit, fail)
        else:
            commit(done)
    return failed_commits


def _commit_batch(
    batch: list[GroupOutcome[G]],
    commit: Callable[[list[GroupOutcome[G]]], None],
    fail: Callable[[GroupOutcome[G], str], None],
) -> int:
    try:
        commit(batch)
    except CommitStateUnknownError:
        raise
    except IcefloeError as e:
        for o in batch:
            fail(o, f"commit failed: {type(e).__name__}: {e}")
        return 1
    return 0


def _group_error(o: GroupOutcome[Any]) -> BaseException:
    if o.error is not None:
        return o.error
    return IcefloeError(
        f"a rewrite group failed on the executors: {o.error_text}",
        hint="see the Spark executor logs; nothing was committed and the files written were deleted",
    )


def groups_per_commit(total_groups: int, max_commits: int) -> int:
    return max(1, math.ceil(total_groups / max_commits))


def commit_data_groups(
    table: Table,
    plan: RewriteDataFilesPlan,
    outcomes: Iterator[GroupOutcome[RewriteFileGroup]],
    *,
    partial_progress: bool,
    max_commits: int,
    max_failed_commits: int,
    use_starting_sequence_number: bool,
) -> RewriteDataFilesResult:
    from icefloe.maintenance.rewrite_data_files import (
        FileGroupFailureResult,
        RewriteDataFilesResult,
        group_results,
    )

    results: list[Any] = []
    failures: list[FileGroupFailureResult] = []
    snapshot_ids: list[int] = []
    removed_total = 0

    # All or nothing: one commit removing every planned file. Its manifest rewrites are written
    # while the groups are rewritten (they depend only on the files removed).
    early = (
        None if partial_progress or not plan.groups else _Prepared(table, plan, use_starting_sequence_number)
    )

    def commit(batch: list[GroupOutcome[RewriteFileGroup]]) -> None:
        nonlocal removed_total
        if early is not None and len(batch) == len(plan.groups):
            producer = early.producer_with([f for o in batch for f in o.files])
        else:
            producer = _data_producer(table, plan, batch, use_starting_sequence_number)
        snapshot_ids.append(commit_producer(table, producer))
        by_path = {f.file_path: o.group.info.global_index for o in batch for f in o.group.data_files}
        removed: dict[int, int] = {}
        for e in producer.removed_entries:
            d = e.data_file
            if d.content != DataFileContent.DATA and d.referenced_data_file in by_path:
                gi = by_path[d.referenced_data_file]
                removed[gi] = removed.get(gi, 0) + 1
        removed_total += sum(
            1 for e in producer.removed_entries if e.data_file.content != DataFileContent.DATA
        )
        added = {o.group.info.global_index: o.files for o in batch}
        results.extend(group_results([o.group for o in batch], added, removed))

    def fail(o: GroupOutcome[RewriteFileGroup], why: str) -> None:
        failures.append(FileGroupFailureResult(o.group.info, o.group.input_files_count, why))

    try:
        failed_commits = run_groups(
            outcomes,
            table.io,
            commit,
            fail,
            partial_progress=partial_progress,
            groups_per_commit=groups_per_commit(plan.total_group_count, max_commits),
        )
    except BaseException:
        if early is not None:
            early.abandon()
        raise
    if failed_commits > max_failed_commits:
        raise CommitError(
            f"partial progress is enabled but {failed_commits} rewrite commits failed, more than "
            f"the {max_failed_commits} allowed (partial-progress.max-failed-commits); "
            f"{len(results)} groups were committed",
            hint="re-run the rewrite; raising partial-progress.max-commits splits it into smaller "
            "commits that conflict less",
            failed_commits=failed_commits,
        )
    return RewriteDataFilesResult(
        tuple(sorted(results, key=lambda r: r.info.global_index)),
        tuple(sorted(failures, key=lambda r: r.info.global_index)),
        removed_total,
        tuple(snapshot_ids),
    )


class _Prepared:
    """The all-or-nothing commit's producer, built before the groups are rewritten: a thread
    writes its manifest rewrites meanwhile; the new files are added when the runner is done."""

    def __init__(self, table: Table, plan: RewriteDataFilesPlan, use_starting_sequence_number: bool) -> None:
        self.io = table.io
        self.producer = RewriteFiles(
            table.io,
            plan.metadata,
            remove=[f for g in plan.groups for f in g.data_files],
            add=[],
            keep_sequence_number=use_starting_sequence_number,
            owns_files=True,
            starting_snapshot=plan.starting_snapshot_id,
        )
        self._used = False
        self._thread = threading.Thread(
            target=self._prepare, args=(plan.metadata,), name="icefloe-rewrite-prepare", daemon=True
        )
        self._thread.start()

    def _prepare(self, base: TableMetadata) -> None:
        # Best effort: the commit rewrites whatever is not ready (or failed here) itself.
        with contextlib.suppress(Exception):
            self.producer.prepare(base)

    def producer_with(self, added: list[DataFile]) -> RewriteFiles:
        self._thread.join()
        self._used = True
        try:
            self.producer.add_data_files(added)
        except BaseException:
            delete_quietly(self.io, [f.file_path for f in added])
            self.producer.cleanup(committed=False)
            raise
        return self.producer

    def abandon(self) -> None:
        """The rewrite failed before its commit: the manifests written ahead go."""
        self._thread.join()
        if not self._used:
            self.producer.cleanup(committed=False)


def _data_producer(
    table: Table,
    plan: RewriteDataFilesPlan,
    batch: Sequence[GroupOutcome[RewriteFileGroup]],
    use_starting_sequence_number: bool,
) -> RewriteFiles:
    added = [f for o in batch for f in o.files]
    try:
        return RewriteFiles(
            table.io,
            plan.metadata,
            remove=[f for o in batch for f in o.group.data_files],
            add=added,
            keep_sequence_number=use_starting_sequence_number,
            owns_files=True,  # written by this rewrite: deleted when its commit fails for sure
            starting_snapshot=plan.starting_snapshot_id,
        )
    except BaseException:
        delete_quietly(table.io, [f.file_path for f in added])
        raise
