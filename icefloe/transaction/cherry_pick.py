"""Cherry-pick: apply the changes of one snapshot (usually a staged write-audit-publish snapshot, or
the head of another branch) to ``main``, following Iceberg Java's rules::

    picked snapshot's parent == main's head   ─▶ fast-forward: main moves to the picked snapshot
    append                                     ─▶ new append snapshot with the picked data files
    overwrite with replace-partitions=true     ─▶ new overwrite snapshot (dynamic overwrite), if its
                                                  parent is in main's history and none of the
                                                  partitions it replaces changed since then
    anything else                              ─▶ refused (not append, dynamic overwrite or
                                                  fast-forward)

A new snapshot records ``source-snapshot-id`` and, for a staged write, ``published-wap-id``. Each
attempt re-validates on the refreshed table: the picked snapshot (or one picked from it) must not
be in main's history already, and its wap id must not have been published.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.errors import ConflictingDataFilesError, ValidationError
from icefloe.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntryStatus,
    read_manifest,
    read_manifest_list,
)
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._merging import MergingProducer, PartitionKey
from icefloe.transaction.wap import (
    PUBLISHED_WAP_ID,
    SOURCE_SNAPSHOT_ID,
    is_wap_id_published,
    staged_wap_id,
)

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["CherryPick", "is_fast_forward", "snapshot_file_changes"]

REPLACE_PARTITIONS = "replace-partitions"


def is_fast_forward(metadata: TableMetadata, picked: Snapshot) -> bool:
    """Whether main can simply move to ``picked`` (its parent is main's head)."""
    return picked.parent_snapshot_id == metadata.current_snapshot_id


def snapshot_file_changes(io: FileIO, snapshot: Snapshot) -> tuple[list[DataFile], list[DataFile]]:
    """The data files ``snapshot`` added and the ones it removed (from the manifests it wrote)."""
    added: list[DataFile] = []
    removed: list[DataFile] = []
    for m in read_manifest_list(io, snapshot.manifest_list):
        if m.content != ManifestContent.DATA or m.added_snapshot_id != snapshot.snapshot_id:
            continue
        for e in read_manifest(io, m):
            if e.snapshot_id != snapshot.snapshot_id:
                continue
            if e.status == ManifestEntryStatus.ADDED:
                added.append(e.data_file)
            elif e.status == ManifestEntryStatus.DELETED:
                removed.append(e.data_file)
    return added, removed


def _is_dynamic_overwrite(snapshot: Snapshot) -> bool:
    return (
        snapshot.operation == Operation.OVERWRITE
        and (snapshot.summary.get(REPLACE_PARTITIONS) or "").lower() == "true"
    )


def check_pickable(metadata: TableMetadata, picked: Snapshot) -> None:
    """Raise ValidationError unless ``picked`` can be cherry-picked onto main (call time)."""
    sid = picked.snapshot_id
    if picked.operation == Operation.APPEND or _is_dynamic_overwrite(picked):
        _check_wap(metadata, picked)
        if _is_dynamic_overwrite(picked) and not (
            picked.parent_snapshot_id is None or _in_main_history(metadata, picked.parent_snapshot_id)
        ):
            raise ValidationError(
                f"cannot cherry-pick overwrite snapshot {sid}: it is not based on a snapshot in "
                "main's history, so the partitions it replaces cannot be checked",
                snapshot_id=sid,
            )
        return
    if not is_fast_forward(metadata, picked):
        raise ValidationError(
            f"cannot cherry-pick snapshot {sid} ({picked.operation.value}): only appends, dynamic "
            "overwrites and fast-forwards (a snapshot whose parent is main's head) can be picked",
            hint="replace or fast-forward the branch instead (manage_snapshots().replace_branch)",
            snapshot_id=sid,
        )


def _in_main_history(metadata: TableMetadata, snapshot_id: int) -> bool:
    return any(s.snapshot_id == snapshot_id for s in metadata.ancestors(metadata.current_snapshot_id))


def _check_wap(metadata: TableMetadata, picked: Snapshot) -> None:
    wap_id = staged_wap_id(picked)
    if wap_id and is_wap_id_published(metadata, wap_id):
        raise ValidationError(
            f"wap id {wap_id!r} of snapshot {picked.snapshot_id} was already published",
            hint="a staged write is published once; audit and publish a new write instead",
            snapshot_id=picked.snapshot_id,
            wap_id=wap_id,
        )


def _check_not_picked(metadata: TableMetadata, picked: Snapshot) -> None:
    sid = picked.snapshot_id
    for s in metadata.ancestors(metadata.current_snapshot_id):
        if s.snapshot_id == sid:
            raise ValidationError(
                f"cannot cherry-pick snapshot {sid}: it is already in main's history",
                snapshot_id=sid,
            )
        if s.summary.get(SOURCE_SNAPSHOT_ID) == str(sid):
            raise ValidationError(
                f"cannot cherry-pick snapshot {sid}: it was already picked as snapshot {s.snapshot_id}",
                snapshot_id=sid,
            )


class CherryPick(MergingProducer):
    """A new snapshot on main with the changes of an append or a dynamic overwrite."""

    def __init__(self, io: FileIO, metadata: TableMetadata, picked: Snapshot) -> None:
        props = {SOURCE_SNAPSHOT_ID: str(picked.snapshot_id)}
        wap_id = staged_wap_id(picked)
        if wap_id:
            props[PUBLISHED_WAP_ID] = wap_id
        super().__init__(
            io,
            metadata,
            branch=MAIN_BRANCH,
            snapshot_properties=props,
            owns_files=False,  # the files belong to the picked snapshot
        )
        self.picked = picked
        self.operation = picked.operation
        added, removed = snapshot_file_changes(io, picked)
        self.add_data_files(added)
        self.replaced: set[PartitionKey] | None = None
        if _is_dynamic_overwrite(picked):
            self.remove_data_files(removed)
            self.replaced = {(f.spec_id, tuple(f.partition)) for f in added}

    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        super().validate(base, parent)
        _check_not_picked(base, self.picked)
        _check_wap(base, self.picked)
        if self.replaced is not None:
            self._check_replaced_partitions(base)

    def _check_replaced_partitions(self, base: TableMetadata) -> None:
        assert self.replaced is not None
        stop = self.picked.parent_snapshot_id
        if stop is not None and not _in_main_history(base, stop):
            raise ValidationError(
                f"cannot cherry-pick overwrite snapshot {self.picked.snapshot_id}: its parent {stop} "
                "is no longer in main's history",
                snapshot_id=self.picked.snapshot_id,
            )
        for snap in base.ancestors(base.current_snapshot_id):
            if snap.snapshot_id == stop:
                return
            added, _ = snapshot_file_changes(self.io, snap)
            for f in added:
                if (f.spec_id, tuple(f.partition)) in self.replaced:
                    raise ConflictingDataFilesError(
                        f"cannot cherry-pick overwrite snapshot {self.picked.snapshot_id}: snapshot "
                        f"{snap.snapshot_id} added {f.file_path} to a partition it replaces",
                        hint="the partition changed after the overwrite was written; write it again",
                        snapshot_id=snap.snapshot_id,
                        operation="cherry_pick",
                        isolation_level=self.isolation_level,
                        files=[f.file_path],
                    )
