"""Rewrite manifests: replace some of the branch head's manifests by new ones holding the same live
entries (clustered by partition), in a snapshot with operation ``replace`` that changes no data
(Iceberg Java's ``BaseRewriteManifests`` with manifests deleted and added directly).

One attempt::

    parent's manifest list ─▶ every replaced manifest must still be in it (MissingFilesError
                              otherwise: a concurrent commit rewrote or removed it)
                           ─▶ new manifests first (stamped with this snapshot's id), then the
                              parent's other manifests as they are
    summary                ─▶ manifests-created, manifests-kept, manifests-replaced,
                              entries-processed (Java's keys) and the unchanged totals

The new manifests hold EXISTING entries only (their snapshot ids and sequence numbers kept), as
many live files as the replaced ones. A commit that fails for sure deletes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from icefloe.errors import FileIOError, MissingFilesError, ValidationError
from icefloe.manifest import ManifestFile, read_manifest_list
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._producer import SnapshotProducer
from icefloe.transaction.summary import SnapshotSummaryBuilder

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["RewriteManifests"]


def _live(m: ManifestFile) -> int:
    if m.added_files_count is None or m.existing_files_count is None:
        raise ValidationError(
            f"manifest {m.manifest_path} has no file counts",
            hint="manifests written by format v1 writers without counts cannot be rewritten",
        )
    return m.added_files_count + m.existing_files_count


class RewriteManifests(SnapshotProducer):
    operation = Operation.REPLACE

    def __init__(
        self,
        io: FileIO,
        *,
        replaced: Sequence[ManifestFile],
        added: Sequence[ManifestFile],
        entries_processed: int,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        owns_manifests: bool = True,
    ) -> None:
        super().__init__(io, branch=branch, snapshot_properties=snapshot_properties)
        if not replaced:
            raise ValidationError("a manifest rewrite must replace at least one manifest")
        for m in added:
            if m.added_files_count or m.deleted_files_count:
                raise ValidationError(
                    f"manifest {m.manifest_path} has added or deleted entries; a manifest rewrite "
                    "adds manifests of existing entries only"
                )
        if sum(_live(m) for m in added) != sum(_live(m) for m in replaced):
            raise ValidationError(
                "replaced and created manifests must have the same number of live files: "
                f"{sum(_live(m) for m in added)} (new), {sum(_live(m) for m in replaced)} (old)"
            )
        self.replaced = list(replaced)
        self.added = list(added)
        self.entries_processed = entries_processed
        self._owns_manifests = owns_manifests
        self._kept: list[ManifestFile] = []

    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        current = (
            {m.manifest_path for m in read_manifest_list(self.io, parent.manifest_list)} if parent else set()
        )
        missing = sorted(m.manifest_path for m in self.replaced if m.manifest_path not in current)
        if missing:
            raise MissingFilesError(
                f"the manifest rewrite replaces manifests that are no longer in the table's current "
                f"snapshot {parent.snapshot_id if parent else None}: {', '.join(missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""),
                hint="a concurrent commit rewrote them; run rewrite_manifests again",
                snapshot_id=parent.snapshot_id if parent else None,
                operation=type(self).__name__,
                files=missing,
            )

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        assert parent is not None  # validate() refused a table without snapshots
        replaced = {m.manifest_path for m in self.replaced}
        self._kept = [
            m for m in read_manifest_list(self.io, parent.manifest_list) if m.manifest_path not in replaced
        ]
        new = [replace(m, added_snapshot_id=self.snapshot_id) for m in self.added]
        return [*new, *self._kept]

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        b = SnapshotSummaryBuilder()
        b.set("manifests-created", str(len(self.added)))
        b.set("manifests-kept", str(len(self._kept)))
        b.set("manifests-replaced", str(len(self.replaced)))
        b.set("entries-processed", str(self.entries_processed))
        return b.build(parent.summary.properties if parent else None)

    def cleanup(self, *, committed: bool) -> None:
        super().cleanup(committed=committed)
        if not committed and self._owns_manifests:
            for m in self.added:
                with contextlib.suppress(FileIOError):
                    self.io.delete(m.manifest_path)
