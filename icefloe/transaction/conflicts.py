"""Conflict detection: the named, ordered checks an operation runs against what committed since it
read the table.

Every check walks only the snapshots committed on the branch after the operation's starting
snapshot (newest first, ``metadata.ancestors`` from the new branch head back to the starting
snapshot) and reads only the manifests those snapshots added. Each check raises its own error
naming the conflicting snapshot, our operation, the isolation level and the files involved.

The checks (Iceberg Java's names):

1. ``validate_added_data_files``         no new data files that match our conflict filter
                                         (serializable only: they hold rows we did not see)
2. ``validate_no_new_delete_files``      no new delete files that match our conflict filter
3. ``validate_no_new_deletes_for_data_files``  no new delete files for data files we read,
                                         rewrite or reference
4. ``validate_data_files_exist``         data files our delete files reference still exist
5. ``validate_deleted_files_exist``      files we remove were not removed meanwhile (deletion
                                         vectors by Puffin file and referenced data file)
6. ``validate_no_concurrent_deletion_vectors``  format v3: no deletion vector was added for a data
                                         file we write one for (one per data file; Java's
                                         ``validateAddedDVs``), at every isolation level

Isolation levels follow ``write.{delete,update,merge}.isolation-level``: ``serializable`` runs
every check the operation needs; ``snapshot`` skips check 1. icefloe runs check 2 for
merge-on-read DELETE at snapshot isolation too (Spark skips it, apache/iceberg#10720, which lets
two concurrent deletes each delete a row the other rewrote).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe.errors import (
    ConflictError,
    ConflictingDataFilesError,
    ConflictingDeleteFilesError,
    ConflictingDeletionVectorsError,
    MissingFilesError,
)
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest,
    read_manifest_list,
)
from icefloe.spec.properties import ISOLATION_LEVELS, SERIALIZABLE, SNAPSHOT, choice_property
from icefloe.spec.snapshot import Operation
from icefloe.transaction._file_filter import FileFilter

if TYPE_CHECKING:
    from icefloe.expressions import BooleanExpression
    from icefloe.io import FileIO
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "SERIALIZABLE",
    "SNAPSHOT",
    "ValidationContext",
    "isolation_level",
    "validate_added_data_files",
    "validate_data_files_exist",
    "validate_deleted_files_exist",
    "validate_no_concurrent_deletion_vectors",
    "validate_no_new_delete_files",
    "validate_no_new_deletes_for_data_files",
]


_MAX_LISTED = 5


def isolation_level(properties: dict[str, str], command: str) -> str:
    """The isolation level of ``command`` (delete, update or merge) from the table properties."""
    return choice_property(
        properties,
        f"write.{command}.isolation-level",
        SERIALIZABLE,
        ISOLATION_LEVELS,
        what="an isolation level",
    )


def _listing(paths: Iterable[str]) -> str:
    ps = sorted(paths)
    shown = ", ".join(ps[:_MAX_LISTED])
    return shown + (f" and {len(ps) - _MAX_LISTED} more" if len(ps) > _MAX_LISTED else "")


@dataclass
class ValidationContext:
    """What the checks need: the refreshed table, where our operation started and who we are."""

    io: FileIO
    base: TableMetadata
    parent: Snapshot | None
    starting_snapshot_id: int | None
    operation: str
    isolation_level: str = SERIALIZABLE
    ignored_snapshot_ids: set[int] = field(default_factory=set)
    _entries: dict[tuple[int, int], list[ManifestEntry]] = field(default_factory=dict)

    def new_snapshots(self) -> list[Snapshot]:
        """Snapshots committed on our branch after the starting snapshot, newest first."""
        if self.parent is None or self.parent.snapshot_id == self.starting_snapshot_id:
            return []
        out: list[Snapshot] = []
        for snap in self.base.ancestors(self.parent.snapshot_id):
            if snap.snapshot_id == self.starting_snapshot_id:
                return out
            if snap.snapshot_id not in self.ignored_snapshot_ids:
                out.append(snap)
        if self.starting_snapshot_id is None:
            return out
        raise ConflictError(
            f"cannot check {self.operation} for conflicts: its starting snapshot "
            f"{self.starting_snapshot_id} is not an ancestor of the branch head "
            f"{self.parent.snapshot_id} (expired or on another branch)",
            hint="re-read the table and run the operation again",
            snapshot_id=self.parent.snapshot_id,
            operation=self.operation,
            isolation_level=self.isolation_level,
            files=[],
        )

    def added_entries(self, snap: Snapshot, content: ManifestContent) -> list[ManifestEntry]:
        """Entries ``snap`` itself wrote (ADDED or DELETED by it), from the manifests it added."""
        key = (snap.snapshot_id, int(content))
        cached = self._entries.get(key)
        if cached is not None:
            return cached
        out: list[ManifestEntry] = []
        for m in read_manifest_list(self.io, snap.manifest_list):
            if m.added_snapshot_id != snap.snapshot_id or m.content != content:
                continue
            out.extend(
                e
                for e in read_manifest(self.io, m)
                if e.snapshot_id == snap.snapshot_id and e.status != ManifestEntryStatus.EXISTING
            )
        self._entries[key] = out
        return out

    def _hint_retry(self) -> str:
        return (
            f"re-read the table and run the {self.operation} again; at isolation level "
            f"'{self.isolation_level}' this concurrent change cannot be merged safely"
        )


def _new_files(
    ctx: ValidationContext, content: ManifestContent, operations: tuple[Operation, ...]
) -> Iterator[tuple[Snapshot, DataFile]]:
    for snap in ctx.new_snapshots():
        if snap.summary.operation not in operations:
            continue
        for e in ctx.added_entries(snap, content):
            if e.status == ManifestEntryStatus.ADDED:
                yield snap, e.data_file


def validate_added_data_files(
    ctx: ValidationContext,
    conflict_filter: BooleanExpression,
    partitions: set[tuple[int, tuple[object, ...]]] | None = None,
) -> None:
    """No data file added since the start matches ``conflict_filter`` (or, with ``partitions``,
    lies in one of those (spec id, partition) tuples)."""
    matcher = FileFilter(ctx.base, conflict_filter)
    for snap, f in _new_files(ctx, ManifestContent.DATA, (Operation.APPEND, Operation.OVERWRITE)):
        hit = (
            (f.spec_id, tuple(f.partition)) in partitions if partitions is not None else matcher.may_match(f)
        )
        if hit:
            raise ConflictingDataFilesError(
                f"{ctx.operation} conflicts with snapshot {snap.snapshot_id} "
                f"({snap.summary.operation.value}), which added data file {f.file_path} "
                f"that may hold rows matching {conflict_filter}",
                hint=ctx._hint_retry() + "; or use isolation level 'snapshot' if new rows may be ignored",
                snapshot_id=snap.snapshot_id,
                operation=ctx.operation,
                isolation_level=ctx.isolation_level,
                files=[f.file_path],
            )


def validate_no_new_delete_files(ctx: ValidationContext, conflict_filter: BooleanExpression) -> None:
    """No delete file added since the start may delete rows matching ``conflict_filter``."""
    matcher = FileFilter(ctx.base, conflict_filter)
    for snap, f in _new_files(ctx, ManifestContent.DELETES, (Operation.OVERWRITE, Operation.DELETE)):
        if matcher.may_match(f):
            raise ConflictingDeleteFilesError(
                f"{ctx.operation} conflicts with snapshot {snap.snapshot_id} "
                f"({snap.summary.operation.value}), which added delete file {f.file_path} "
                f"that may delete rows matching {conflict_filter}",
                hint=ctx._hint_retry(),
                snapshot_id=snap.snapshot_id,
                operation=ctx.operation,
                isolation_level=ctx.isolation_level,
                files=[f.file_path],
            )


def validate_no_new_deletes_for_data_files(
    ctx: ValidationContext, data_files: Iterable[DataFile], *, ignore_equality_deletes: bool = False
) -> None:
    """No delete file added since the start applies to one of ``data_files`` (a rewrite or a
    delete of them would otherwise lose those deletes or resurrect the rows)."""
    by_path = {f.file_path: f for f in data_files}
    if not by_path:
        return
    partitions = {(f.spec_id, tuple(f.partition)) for f in by_path.values()}
    for snap, d in _new_files(ctx, ManifestContent.DELETES, (Operation.OVERWRITE, Operation.DELETE)):
        if d.content == DataFileContent.EQUALITY_DELETES and ignore_equality_deletes:
            continue
        if d.referenced_data_file is not None:
            hits = [d.referenced_data_file] if d.referenced_data_file in by_path else []
        elif (
            d.content == DataFileContent.EQUALITY_DELETES
            and ctx.base.spec_by_id(d.spec_id).is_unpartitioned()
        ):
            # Equality deletes of an unpartitioned spec apply to the whole table.
            hits = list(by_path)
        elif (d.spec_id, tuple(d.partition)) in partitions:
            # Otherwise a delete file applies to the data files of its own partition.
            hits = [
                p
                for p, f in by_path.items()
                if (f.spec_id, tuple(f.partition)) == (d.spec_id, tuple(d.partition))
            ]
        else:
            hits = []
        if hits:
            raise ConflictingDeleteFilesError(
                f"{ctx.operation} conflicts with snapshot {snap.snapshot_id} "
                f"({snap.summary.operation.value}), which added delete file {d.file_path} for data "
                f"file(s) this operation read or rewrites: {_listing(hits)}",
                hint=ctx._hint_retry(),
                snapshot_id=snap.snapshot_id,
                operation=ctx.operation,
                isolation_level=ctx.isolation_level,
                files=[d.file_path, *sorted(hits)],
            )


def base_spec_unpartitioned(ctx: ValidationContext, f: DataFile) -> bool:
    return ctx.base.spec_by_id(f.spec_id).is_unpartitioned()


def _removed_since(ctx: ValidationContext, paths: set[str], content: ManifestContent) -> None:
    if not paths:
        return
    for snap in ctx.new_snapshots():
        if snap.summary.operation == Operation.APPEND:
            continue
        gone = {
            e.data_file.file_path
            for e in ctx.added_entries(snap, content)
            if e.status == ManifestEntryStatus.DELETED and e.data_file.file_path in paths
        }
        if gone:
            raise MissingFilesError(
                f"{ctx.operation} needs file(s) that snapshot {snap.snapshot_id} "
                f"({snap.summary.operation.value}) removed: {_listing(gone)}",
                hint="the rows were rewritten or deleted concurrently (e.g. by compaction or "
                "another delete); re-read the table and run the operation again",
                snapshot_id=snap.snapshot_id,
                operation=ctx.operation,
                isolation_level=ctx.isolation_level,
                files=sorted(gone),
            )


def validate_data_files_exist(ctx: ValidationContext, paths: Iterable[str]) -> None:
    """Data files our delete files reference were not removed since the start."""
    _removed_since(ctx, set(paths), ManifestContent.DATA)


def validate_deleted_files_exist(
    ctx: ValidationContext,
    data_paths: Iterable[str],
    delete_paths: Iterable[str] = (),
    deletion_vectors: Iterable[tuple[str, str]] = (),
) -> None:
    """Files we remove (data and delete files) were not removed since the start; deletion vectors
    are named by (Puffin file, referenced data file), since one Puffin file holds many."""
    _removed_since(ctx, set(data_paths), ManifestContent.DATA)
    _removed_since(ctx, set(delete_paths), ManifestContent.DELETES)
    wanted = set(deletion_vectors)
    if not wanted:
        return
    for snap in ctx.new_snapshots():
        if snap.summary.operation == Operation.APPEND:
            continue
        gone = {
            (e.data_file.file_path, e.data_file.referenced_data_file or "")
            for e in ctx.added_entries(snap, ManifestContent.DELETES)
            if e.status == ManifestEntryStatus.DELETED
            and (e.data_file.file_path, e.data_file.referenced_data_file) in wanted
        }
        if gone:
            raise MissingFilesError(
                f"{ctx.operation} replaces deletion vector(s) that snapshot {snap.snapshot_id} "
                f"({snap.summary.operation.value}) removed: "
                + _listing(f"{p} (for {ref})" for p, ref in gone),
                hint="the deletes of those data files changed concurrently; re-read the table and "
                "run the operation again",
                snapshot_id=snap.snapshot_id,
                operation=ctx.operation,
                isolation_level=ctx.isolation_level,
                files=sorted(p for p, _ in gone),
            )


def validate_no_concurrent_deletion_vectors(ctx: ValidationContext, data_paths: Iterable[str]) -> None:
    """No deletion vector for one of ``data_paths`` was added since the start: a v3 data file has
    at most one, and ours (merged from the deletes we read) would drop the concurrent one's rows."""
    paths = set(data_paths)
    if not paths:
        return
    for snap in ctx.new_snapshots():
        if snap.summary.operation == Operation.APPEND:
            continue
        hits = sorted(
            {
                e.data_file.referenced_data_file
                for e in ctx.added_entries(snap, ManifestContent.DELETES)
                if e.status == ManifestEntryStatus.ADDED
                and e.data_file.file_format == FileFormat.PUFFIN
                and e.data_file.referenced_data_file in paths
            }
            - {None}
        )
        if hits:
            raise ConflictingDeletionVectorsError(
                f"{ctx.operation} conflicts with snapshot {snap.snapshot_id} "
                f"({snap.summary.operation.value}), which added a deletion vector for data file(s) "
                f"this operation also deletes from: {_listing(h for h in hits if h)}",
                hint="format v3 keeps one deletion vector per data file; re-read the table and run "
                "the operation again (its new deletion vector then includes the concurrent deletes)",
                snapshot_id=snap.snapshot_id,
                operation=ctx.operation,
                isolation_level=ctx.isolation_level,
                files=[h for h in hits if h],
            )
