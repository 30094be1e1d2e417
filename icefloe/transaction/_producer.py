"""The snapshot producer protocol that every table action implements, and the shared machinery.

One attempt of a snapshot-producing action::

    base metadata ─▶ validate(base)        re-check the action's assumptions on the new base
                  ─▶ manifests(base)       manifests written once, reused by later attempts
                  ─▶ manifest list         one file per attempt: snap-<id>-<attempt>-<uuid>.avro
                  ─▶ updates + requirements  AddSnapshot, SetSnapshotRef / AssertRefSnapshotId

The catalog turns updates and requirements into a compare-and-swap; the retry loop in
:mod:`icefloe.transaction._commit` calls :meth:`SnapshotProducer.apply` once per attempt.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from icefloe.errors import FileIOError, ValidationError
from icefloe.manifest import ManifestFile, write_manifest_list
from icefloe.spec.snapshot import MAIN_BRANCH, Operation, Snapshot, SnapshotRef, SnapshotRefType, Summary
from icefloe.spec.updates import (
    AddSnapshot,
    AssertRefSnapshotId,
    AssertTableUUID,
    MetadataUpdate,
    SetSnapshotRef,
    TableRequirement,
)

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["PendingChanges", "SnapshotProducer", "branch_head", "metadata_dir", "new_snapshot_id"]


def new_snapshot_id() -> int:
    """A random positive 63-bit id, as Iceberg Java makes them."""
    return uuid.uuid4().int & ((1 << 63) - 1)


def branch_head(metadata: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot a write to ``branch`` builds on: the branch's head, or for a branch that does
    not exist yet the current snapshot (the new branch starts there, as in Iceberg Java)."""
    ref = metadata.refs.get(branch)
    if ref is None:
        return metadata.current_snapshot()
    if not ref.is_branch:
        raise ValidationError(
            f"{branch!r} is a tag, not a branch: tags cannot be written to",
            hint="write to a branch (create one from the tag with manage_snapshots().create_branch)",
            ref=branch,
        )
    return metadata.snapshot_by_id(ref.snapshot_id)


def metadata_dir(metadata: TableMetadata) -> str:
    path = metadata.properties.get("write.metadata.path")
    return (path or f"{metadata.location.rstrip('/')}/metadata").rstrip("/")


class PendingChanges:
    """What one attempt of an action contributes to a commit."""

    def __init__(self, updates: list[MetadataUpdate], requirements: list[TableRequirement]) -> None:
        self.updates = updates
        self.requirements = requirements


class SnapshotProducer(ABC):
    """Base of the actions that add one snapshot to a branch.

    Subclasses provide the operation, the validation against a (possibly newer) base, and the
    manifests of the new snapshot; this class writes the manifest list, names files, builds the
    snapshot and the updates, and remembers every file it wrote so a failed commit can clean up.

    Ownership: a cleanup deletes the manifests and manifest lists the action wrote, and the data
    or delete files it adds only when it was told it owns them (``owns_files=True`` on the
    actions that add files; default False). icefloe passes True only for files it wrote itself in
    the same operation; files a caller hands in are never deleted unless the caller asks.
    """

    operation: Operation
    #: True for actions that validate nothing (appends): their commit retries until
    #: ``commit.retry.total-timeout-ms`` rather than at most ``commit.retry.num-retries`` times
    cannot_conflict: bool = False

    def __init__(
        self, io: FileIO, *, branch: str = MAIN_BRANCH, snapshot_properties: dict[str, str] | None = None
    ) -> None:
        self.io = io
        self.branch = branch
        self.commit_uuid = str(uuid.uuid4())
        self.snapshot_id = new_snapshot_id()
        self.snapshot_properties = dict(snapshot_properties or {})
        self._attempt = 0
        # The last base applied to and its result: a transaction stages each action on its base
        # when it is queued, and the commit's first attempt usually runs on that same object.
        self._applied: tuple[TableMetadata, PendingChanges] | None = None
        self._manifest_counter = 0
        self._written_manifests: list[str] = []
        self._written_manifest_lists: list[str] = []
        self.committed_snapshot: Snapshot | None = None
        #: write-audit-publish: add the snapshot to the table without moving any branch
        self.stage_only = False

    # ------------------------------------------------------------------ for subclasses
    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:  # noqa: B027
        """Raise a typed error if the action's assumptions no longer hold on ``base``."""

    @abstractmethod
    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        """Every manifest of the new snapshot (new ones written once and cached)."""

    @abstractmethod
    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        """Summary properties (without ``operation``)."""

    def data_files_written(self) -> Sequence[str]:
        """Data or delete files this action owns (``owns_files``), deleted if the commit fails for
        sure; never the files of a caller who did not hand over their ownership."""
        return ()

    # ------------------------------------------------------------------ shared machinery
    def new_manifest_path(self, metadata: TableMetadata) -> str:
        path = f"{metadata_dir(metadata)}/{self.commit_uuid}-m{self._manifest_counter}.avro"
        self._manifest_counter += 1
        self._written_manifests.append(path)
        return path

    def apply(self, base: TableMetadata) -> PendingChanges:
        """One attempt: validate on ``base`` and produce the updates and requirements.

        Applying twice to the very same base object returns the first result (the metadata is
        immutable, so validation and the manifest list would come out the same)."""
        if self._applied is not None and self._applied[0] is base:
            return self._applied[1]
        changes = self._apply(base)
        self._applied = (base, changes)
        return changes

    def _apply(self, base: TableMetadata) -> PendingChanges:
        self._attempt += 1
        parent = branch_head(base, self.branch)
        self.validate(base, parent)
        # The snapshot id stays fixed across attempts: manifests already written carry it. A random
        # 63-bit id colliding is not a practical concern; the metadata builder rejects duplicates.
        sequence_number = base.next_sequence_number()
        manifests = self.manifests(base, parent)
        list_path = f"{metadata_dir(base)}/snap-{self.snapshot_id}-{self._attempt}-{self.commit_uuid}.avro"
        self._written_manifest_lists.append(list_path)
        # v3 row lineage: the list gives unassigned data manifests row ids from next-row-id on
        first_row_id = (base.next_row_id or 0) if base.format_version >= 3 else None
        next_row_id = write_manifest_list(
            self.io,
            list_path,
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            manifests=manifests,
            format_version=base.format_version,
            first_row_id=first_row_id,
        )
        props = self.summary(base, parent)
        props.update(self.snapshot_properties)
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=max(int(time.time() * 1000), base.last_updated_ms),
            manifest_list=list_path,
            summary=Summary(self.operation, props),
            schema_id=base.current_schema_id,
            first_row_id=first_row_id,
            added_rows=None if next_row_id is None or first_row_id is None else next_row_id - first_row_id,
        )
        self.committed_snapshot = snapshot
        updates: list[MetadataUpdate] = [AddSnapshot(snapshot)]
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        if not self.stage_only:
            old = base.refs.get(self.branch)
            # The branch keeps its retention settings; a branch that does not exist yet is created
            # (from the current snapshot, which is the new snapshot's parent) and must still not exist.
            ref = (
                SnapshotRef(snapshot.snapshot_id, SnapshotRefType.BRANCH)
                if old is None
                else replace(old, snapshot_id=snapshot.snapshot_id)
            )
            updates.append(SetSnapshotRef(self.branch, ref))
            requirements.append(AssertRefSnapshotId(self.branch, old.snapshot_id if old else None))
        return PendingChanges(updates, requirements)

    def cleanup(self, *, committed: bool) -> None:
        """Delete what this action wrote that the table does not reference.

        After a successful commit only the manifest lists of failed attempts go; after a
        definite failure everything goes. Never called when the outcome is unknown.
        """
        lists = self._written_manifest_lists[:-1] if committed else self._written_manifest_lists
        paths = list(lists)
        if not committed:
            paths += self._written_manifests
            paths += list(self.data_files_written())
        for p in paths:
            # Best effort: an orphan file is harmless, and orphan-file cleanup finds it.
            with contextlib.suppress(FileIOError):
                self.io.delete(p)
