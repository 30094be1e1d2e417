"""Planning of reads over a range of snapshots: incremental appends and changelogs.

Both follow Iceberg Java: the range is ``(from_snapshot_id, to_snapshot_id]`` along the ancestry
of ``to`` (``from`` exclusive and an ancestor of ``to``; no ``from``: from the oldest ancestor).

Incremental appends (``IncrementalAppendScan``)::

    append snapshots in the range ─▶ manifests they added ─▶ ADDED entries of those snapshots
    (delete files are not applied: the rows as they were appended)

Changelog (``BaseIncrementalChangelogScan``, extended to row-level deletes): every snapshot of the
range but compaction (``replace``) gets a change ordinal (oldest first). For a snapshot S with
parent P, the rows S inserted and deleted come from comparing P's and S's live files::

    data file added by S                ─▶ rows live in S             INSERT
    data file removed by S              ─▶ rows live in P             DELETE
    data file in both, deletes changed  ─▶ live in P, not in S        DELETE  (position / equality
                                           live in S, not in P        INSERT   deletes added by S)

The last two need a file read under two sets of delete files; :class:`ChangelogTask` carries both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.expressions import AlwaysTrue, BooleanExpression, bind
from icefloe.expressions.visitors import InclusiveMetricsEvaluator
from icefloe.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntryStatus,
    read_manifest,
    read_manifest_list,
)
from icefloe.scan.planner import _SpecEvaluators, plan_files
from icefloe.scan.task import FileScanTask
from icefloe.spec.snapshot import Operation

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "CHANGE_DELETE",
    "CHANGE_INSERT",
    "ChangelogTask",
    "plan_changelog",
    "plan_incremental_appends",
    "snapshots_between",
]

CHANGE_INSERT = "INSERT"
CHANGE_DELETE = "DELETE"


def snapshots_between(
    metadata: TableMetadata, from_snapshot_id: int | None, to_snapshot_id: int | None
) -> list[Snapshot]:
    """The snapshots in ``(from, to]`` along ``to``'s ancestry, oldest first (``to`` defaults to
    the current snapshot)."""
    if to_snapshot_id is None:
        to_snapshot_id = metadata.current_snapshot_id
        if to_snapshot_id is None:
            if from_snapshot_id is not None:
                metadata.snapshot_by_id(from_snapshot_id)
            return []
    metadata.snapshot_by_id(to_snapshot_id)
    if from_snapshot_id is not None:
        metadata.snapshot_by_id(from_snapshot_id)
    out: list[Snapshot] = []
    for snap in metadata.ancestors(to_snapshot_id):
        if snap.snapshot_id == from_snapshot_id:
            break
        out.append(snap)
    else:
        if from_snapshot_id is not None:
            raise ValidationError(
                f"snapshot {from_snapshot_id} is not an ancestor of snapshot {to_snapshot_id}",
                hint="the start of the range (exclusive) must be in the history of its end",
                from_snapshot_id=from_snapshot_id,
                to_snapshot_id=to_snapshot_id,
            )
    out.reverse()
    return out


def _added_entries(io: FileIO, snap: Snapshot, status: ManifestEntryStatus) -> list[DataFile]:
    out: list[DataFile] = []
    for m in read_manifest_list(io, snap.manifest_list):
        if m.content != ManifestContent.DATA or m.added_snapshot_id != snap.snapshot_id:
            continue
        out.extend(
            e.data_file
            for e in read_manifest(io, m)
            if e.status == status and e.snapshot_id == snap.snapshot_id
        )
    return out


def plan_incremental_appends(
    io: FileIO,
    metadata: TableMetadata,
    from_snapshot_id: int | None,
    to_snapshot_id: int | None,
    row_filter: BooleanExpression | None = None,
    *,
    schema: Schema | None = None,
    case_sensitive: bool = True,
) -> list[FileScanTask]:
    """Tasks for the data files that the append snapshots of the range added."""
    schema = schema if schema is not None else metadata.schema()
    row_filter = row_filter if row_filter is not None else AlwaysTrue()
    row_filter = bind(schema, row_filter, case_sensitive)  # once: the evaluators get it bound
    metrics = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive)
    evaluators: dict[int, _SpecEvaluators] = {}
    tasks: list[FileScanTask] = []
    for snap in snapshots_between(metadata, from_snapshot_id, to_snapshot_id):
        if snap.operation != Operation.APPEND:
            continue
        for f in _added_entries(io, snap, ManifestEntryStatus.ADDED):
            ev = evaluators.get(f.spec_id)
            if ev is None:
                ev = _SpecEvaluators(schema, metadata.spec_by_id(f.spec_id), row_filter, case_sensitive)
                evaluators[f.spec_id] = ev
            if ev.partition_may_match(f.partition) and metrics.eval(f):
                tasks.append(
                    FileScanTask(f, ev.residual(f.partition), data_sequence_number=snap.sequence_number)
                )
    return tasks


@dataclass(frozen=True)
class ChangelogTask:
    """Rows of ``file`` that changed in snapshot ``commit_snapshot_id``: those live under
    ``deletes_before`` but not under ``deletes_after`` are DELETEs, the reverse INSERTs. A file
    the snapshot added has ``before=None`` (nothing was live); one it removed ``after=None``."""

    change_ordinal: int
    commit_snapshot_id: int
    file: DataFile
    residual: BooleanExpression
    deletes_before: tuple[DataFile, ...] | None
    deletes_after: tuple[DataFile, ...] | None
    kind: str = field(default="")

    @property
    def file_path(self) -> str:
        return self.file.file_path


def plan_changelog(
    io: FileIO,
    metadata: TableMetadata,
    from_snapshot_id: int | None,
    to_snapshot_id: int | None,
    row_filter: BooleanExpression | None = None,
    *,
    schema: Schema | None = None,
    case_sensitive: bool = True,
) -> list[ChangelogTask]:
    """Changelog tasks of the range, in change-ordinal order."""
    schema = schema if schema is not None else metadata.schema()
    snaps = snapshots_between(metadata, from_snapshot_id, to_snapshot_id)

    def live(snap: Snapshot | None) -> dict[str, FileScanTask]:
        tasks = plan_files(io, metadata, snap, row_filter, schema=schema, case_sensitive=case_sensitive)
        return {t.file.file_path: t for t in tasks}

    start = metadata.snapshot_by_id(from_snapshot_id) if from_snapshot_id is not None else None
    before = live(start)
    ordinal = 0
    out: list[ChangelogTask] = []
    for snap in snaps:
        after = live(snap)
        if snap.operation == Operation.REPLACE:
            before = after  # compaction rewrites files, not rows
            continue
        sid = snap.snapshot_id
        for path, t in after.items():
            old = before.get(path)
            if old is None:
                out.append(ChangelogTask(ordinal, sid, t.file, t.residual, None, t.delete_files, "added"))
            elif {d.file_path for d in old.delete_files} != {d.file_path for d in t.delete_files}:
                out.append(
                    ChangelogTask(
                        ordinal, sid, t.file, t.residual, old.delete_files, t.delete_files, "deletes"
                    )
                )
        for path, old in before.items():
            if path not in after:
                out.append(
                    ChangelogTask(ordinal, sid, old.file, old.residual, old.delete_files, None, "removed")
                )
        before = after
        ordinal += 1
    return out
