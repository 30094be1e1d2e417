"""The shared base of the actions that remove files as well as add them (overwrite, delete, row
delta, replace partitions, rewrite files).

One attempt::

    validate(base)  ─▶ the action's named checks (conflicts.py) over the snapshots committed
                       since its starting snapshot
    manifests(base) ─▶ new data and delete manifests (written once, reused by every attempt)
                    ─▶ the parent's manifests filtered: removed files become DELETED entries
                       (rewrites cached per source manifest), every file to remove must be found
    summary         ─▶ added and removed files counted by SnapshotSummaryBuilder

New entries get the new snapshot's sequence number by inheritance, unless the action pins a data
sequence number (rewrite_files keeps the starting snapshot's, so that delete files committed after
it still apply to the rewritten rows).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from icefloe.errors import FileIOError, MissingFilesError, ValidationError
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestWriter,
    read_manifest_list,
)
from icefloe.spec.snapshot import MAIN_BRANCH
from icefloe.transaction._manifest_filter import ManifestFilter
from icefloe.transaction._producer import SnapshotProducer, branch_head
from icefloe.transaction.conflicts import SERIALIZABLE, ValidationContext
from icefloe.transaction.summary import SnapshotSummaryBuilder

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["MergingProducer", "PartitionKey", "deletion_vector_targets", "starting_snapshot_id"]

PartitionKey = tuple[int, tuple[object, ...]]

_UNSET: int = -(1 << 70)


def starting_snapshot_id(metadata: TableMetadata, branch: str) -> int | None:
    """The snapshot an operation reads: the head of ``branch`` (None for an empty table; the
    current snapshot for a branch the operation creates)."""
    head = branch_head(metadata, branch)
    return head.snapshot_id if head is not None else None


class MergingProducer(SnapshotProducer):
    """Adds and removes data and delete files; subclasses choose the operation and the checks.

    ``owns_files=True`` hands the added files over to the action: a commit that fails for sure
    deletes them, except the paths in ``not_owned``. The default (False) never deletes them."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        owns_files: bool = False,
        isolation_level: str = SERIALIZABLE,
        starting_snapshot: int | None = _UNSET,
    ) -> None:
        super().__init__(io, branch=branch, snapshot_properties=snapshot_properties)
        self.isolation_level = isolation_level
        self.starting_snapshot_id = (
            starting_snapshot_id(metadata, branch) if starting_snapshot == _UNSET else starting_snapshot
        )
        self.added_data_files: list[DataFile] = []
        self.added_delete_files: list[DataFile] = []
        self.removed_data_files: dict[str, DataFile | None] = {}
        self.removed_delete_files: dict[str, DataFile | None] = {}
        #: deletion vectors to remove, by (Puffin file, referenced data file): one Puffin file
        #: holds the vectors of many data files, so its path alone does not name one
        self.removed_dvs: dict[tuple[str, str], DataFile] = {}
        #: dynamic partition overwrite: every live data file in these partitions goes
        self.drop_partitions: set[PartitionKey] | None = None
        #: pinned data sequence number of the added files (rewrite_files), else inherited
        self.data_sequence_number: int | None = None
        #: per added file (by path), a data sequence number that wins over the pinned one
        #: (rewritten position deletes keep the newest one of the files they replace)
        self.added_sequence_numbers: dict[str, int] = {}
        self._owns_files = owns_files
        self._new_data: list[ManifestFile] | None = None
        self._new_deletes: list[ManifestFile] | None = None
        self._data_filter: ManifestFilter | None = None
        self._delete_filter: ManifestFilter | None = None
        self._used_manifests: set[str] = set()
        self.removed_entries: list[ManifestEntry] = []
        #: snapshots of earlier actions of the same transaction: never conflicts
        self.ignored_snapshot_ids: set[int] = set()
        self._dangling: frozenset[str] = frozenset()
        #: added files the caller owns (never deleted by a cleanup)
        self.not_owned: set[str] = set()

    # ------------------------------------------------------------------ building
    def add_data_files(self, files: Iterable[DataFile]) -> None:
        for f in files:
            if f.content != DataFileContent.DATA:
                raise ValidationError(f"{f.file_path} is a delete file, expected a data file")
            self.added_data_files.append(f)

    def add_delete_files(self, files: Iterable[DataFile]) -> None:
        for f in files:
            if f.content == DataFileContent.DATA:
                raise ValidationError(f"{f.file_path} is a data file, expected a delete file")
            self.added_delete_files.append(f)

    def remove_data_files(self, files: Iterable[DataFile | str]) -> None:
        for f in files:
            if isinstance(f, str):
                self.removed_data_files.setdefault(f, None)
            else:
                self.removed_data_files[f.file_path] = f

    def remove_delete_files(self, files: Iterable[DataFile | str]) -> None:
        for f in files:
            if not isinstance(f, str) and _dv_key(f) is not None:
                self.removed_dvs[_dv_key(f)] = f  # type: ignore[index]
            elif isinstance(f, str):
                self.removed_delete_files.setdefault(f, None)
            else:
                self.removed_delete_files[f.file_path] = f

    # ------------------------------------------------------------------ hooks
    def checks(self, ctx: ValidationContext) -> None:
        """The action's named conflict checks, in order."""

    def choose_operation(self) -> None:
        """Set ``self.operation`` from what the action does (called once per attempt)."""

    def context(self, base: TableMetadata, parent: Snapshot | None) -> ValidationContext:
        return ValidationContext(
            self.io,
            base,
            parent,
            self.starting_snapshot_id,
            operation=type(self).__name__,
            isolation_level=self.isolation_level,
            ignored_snapshot_ids=self.ignored_snapshot_ids,
        )

    # ------------------------------------------------------------------ SnapshotProducer
    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        for f in (*self.added_data_files, *self.added_delete_files):
            if f.spec_id not in base.partition_specs_by_id:
                raise ValidationError(f"{f.file_path} has unknown partition spec {f.spec_id}")
        self.checks(self.context(base, parent))

    def _write(
        self, base: TableMetadata, files: list[DataFile], content: ManifestContent
    ) -> list[ManifestFile]:
        by_spec: dict[int, list[DataFile]] = {}
        for f in files:
            by_spec.setdefault(f.spec_id, []).append(f)
        out: list[ManifestFile] = []
        for spec_id, group in by_spec.items():
            with ManifestWriter(
                self.io,
                self.new_manifest_path(base),
                base.spec_by_id(spec_id),
                base.schema(),
                self.snapshot_id,
                content,
                format_version=base.format_version,
            ) as writer:
                for f in group:
                    seq = self.added_sequence_numbers.get(f.file_path, self.data_sequence_number)
                    writer.add(f, sequence_number=seq)
            out.append(writer.close())
        return out

    def _should_remove_data(self, e: ManifestEntry) -> bool:
        f = e.data_file
        if f.file_path in self.removed_data_files:
            return True
        return self.drop_partitions is not None and (f.spec_id, tuple(f.partition)) in self.drop_partitions

    def _should_remove_delete(self, e: ManifestEntry) -> bool:
        f = e.data_file
        key = _dv_key(f)
        if key is not None and key in self.removed_dvs:
            return True
        if f.file_path in self.removed_delete_files:
            return True
        # A file-scoped position delete file of a removed data file would dangle: it goes too.
        return (
            f.content == DataFileContent.POSITION_DELETES
            and f.referenced_data_file is not None
            and f.referenced_data_file in self._dangling
        )

    def _filters(self) -> tuple[ManifestFilter, ManifestFilter]:
        if self._data_filter is None or self._delete_filter is None:
            specs_with_drops = {k[0] for k in self.drop_partitions or ()}
            self._data_filter = ManifestFilter(
                self.io,
                self.snapshot_id,
                self.new_manifest_path,
                self._should_remove_data,
                # Without a partition drop only manifests can hold the paths; a drop is per spec.
                lambda m: bool(self.removed_data_files) or m.partition_spec_id in specs_with_drops,
            )
            self._delete_filter = ManifestFilter(
                self.io,
                self.snapshot_id,
                self.new_manifest_path,
                self._should_remove_delete,
                lambda m: bool(self.removed_delete_files) or bool(self.removed_dvs) or bool(self._dangling),
            )
        return self._data_filter, self._delete_filter

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        if self._new_data is None or self._new_deletes is None:
            self._new_data = self._write(base, self.added_data_files, ManifestContent.DATA)
            self._new_deletes = self._write(base, self.added_delete_files, ManifestContent.DELETES)
        existing = read_manifest_list(self.io, parent.manifest_list) if parent else []
        data_filter, delete_filter = self._filters()
        data = data_filter.filter(base, [m for m in existing if m.content == ManifestContent.DATA])
        self._check_found(data.removed, self.removed_data_files, parent)
        self._dangling = frozenset(e.data_file.file_path for e in data.removed)
        deletes = delete_filter.filter(
            base, [m for m in existing if m.content == ManifestContent.DELETES], token=self._dangling
        )
        self._check_found(deletes.removed, self.removed_delete_files, parent)
        self._check_found_dvs(deletes.removed, parent)
        self.removed_entries = data.removed + deletes.removed
        self.choose_operation()
        result = [*self._new_data, *data.manifests, *self._new_deletes, *deletes.manifests]
        self._used_manifests = {m.manifest_path for m in result}
        return result

    def prepare(self, base: TableMetadata) -> None:
        """Rewrite now the manifests of ``base``'s branch head that lose files (cached: a later
        attempt on the same manifests reuses them), e.g. while the files to add are still being
        written. The commit's checks still run on the base it commits to."""
        parent = branch_head(base, self.branch)
        existing = read_manifest_list(self.io, parent.manifest_list) if parent else []
        data_filter, delete_filter = self._filters()
        data = data_filter.filter(base, [m for m in existing if m.content == ManifestContent.DATA])
        # the delete filter's predicate reads _dangling; manifests() sets it the same way
        self._dangling = frozenset(e.data_file.file_path for e in data.removed)
        delete_filter.filter(
            base, [m for m in existing if m.content == ManifestContent.DELETES], token=self._dangling
        )

    def _check_found(
        self, removed: list[ManifestEntry], wanted: dict[str, DataFile | None], parent: Snapshot | None
    ) -> None:
        missing = set(wanted) - {e.data_file.file_path for e in removed}
        if missing:
            shown = ", ".join(sorted(missing)[:5])
            raise MissingFilesError(
                f"{type(self).__name__} removes file(s) that are not in the table "
                f"(snapshot {parent.snapshot_id if parent else None}): {shown}",
                hint="they were removed by a concurrent commit or never belonged to the table; "
                "re-read the table and run the operation again",
                snapshot_id=parent.snapshot_id if parent else None,
                operation=type(self).__name__,
                isolation_level=self.isolation_level,
                files=sorted(missing),
            )

    def _check_found_dvs(self, removed: list[ManifestEntry], parent: Snapshot | None) -> None:
        found = {_dv_key(e.data_file) for e in removed}
        missing = [k for k in self.removed_dvs if k not in found]
        if missing:
            self._check_found([], {f"{p} (deletion vector of {ref})": None for p, ref in missing}, parent)

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        b = SnapshotSummaryBuilder()
        for f in (*self.added_data_files, *self.added_delete_files):
            b.added_file(f)
        for e in self.removed_entries:
            b.removed_file(e.data_file)
        return b.build(parent.summary.properties if parent else None)

    def data_files_written(self) -> Sequence[str]:
        if not self._owns_files:
            return ()
        return [
            f.file_path
            for f in (*self.added_data_files, *self.added_delete_files)
            if f.file_path not in self.not_owned
        ]

    def cleanup(self, *, committed: bool) -> None:
        super().cleanup(committed=committed)
        if committed:
            # Rewrites of manifests that a later attempt's base no longer had.
            stale = [
                p
                for flt in (self._data_filter, self._delete_filter)
                if flt is not None
                for p in flt.written
                if p not in self._used_manifests
            ]
            for p in stale:
                with contextlib.suppress(FileIOError):
                    self.io.delete(p)


def deletion_vector_targets(files: Iterable[DataFile]) -> set[str]:
    """The data files that the deletion vectors among ``files`` reference. Two vectors for one
    data file in one commit are refused: a v3 data file has at most one."""
    targets: set[str] = set()
    for f in files:
        if f.file_format != FileFormat.PUFFIN or f.referenced_data_file is None:
            continue
        if f.referenced_data_file in targets:
            raise ValidationError(
                f"two deletion vectors for data file {f.referenced_data_file} in one commit",
                hint="merge their positions into one deletion vector",
            )
        targets.add(f.referenced_data_file)
    return targets


def _dv_key(f: DataFile) -> tuple[str, str] | None:
    """(Puffin file, referenced data file) of a deletion vector, else None."""
    if f.file_format == FileFormat.PUFFIN and f.referenced_data_file is not None:
        return f.file_path, f.referenced_data_file
    return None
