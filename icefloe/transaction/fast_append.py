"""Fast append: add data files in new manifests and keep every manifest of the parent as it is.

It needs no validation (appending never conflicts with what others committed), so a retry only
re-reads the parent's manifest list and writes a new one; the new manifests are written once. It
retries until ``commit.retry.total-timeout-ms`` (``cannot_conflict``), not num-retries times.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestFile,
    ManifestWriter,
    read_manifest_list,
)
from icefloe.spec.snapshot import MAIN_BRANCH, Operation, Snapshot
from icefloe.transaction._producer import SnapshotProducer
from icefloe.transaction.summary import SnapshotSummaryBuilder

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["FastAppend"]


class FastAppend(SnapshotProducer):
    operation = Operation.APPEND
    cannot_conflict = True

    def __init__(
        self,
        io: FileIO,
        files: Iterable[DataFile],
        *,
        owns_files: bool = False,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(io, branch=branch, snapshot_properties=snapshot_properties)
        self.files = list(files)
        for f in self.files:
            if f.content != DataFileContent.DATA:
                raise ValidationError(
                    f"an append adds data files only, got a {f.content.name.lower()} file: {f.file_path}",
                    hint="write delete files with a row delta",
                )
        self._owns_files = owns_files
        self._new_manifests: list[ManifestFile] | None = None

    def _write_new_manifests(self, base: TableMetadata) -> list[ManifestFile]:
        by_spec: dict[int, list[DataFile]] = {}
        for f in self.files:
            by_spec.setdefault(f.spec_id, []).append(f)
        out: list[ManifestFile] = []
        for spec_id, files in by_spec.items():
            spec = base.spec_by_id(spec_id)
            with ManifestWriter(
                self.io,
                self.new_manifest_path(base),
                spec,
                base.schema(),
                self.snapshot_id,
                ManifestContent.DATA,
                format_version=base.format_version,
            ) as writer:
                for f in files:
                    writer.add(f)
            out.append(writer.close())
        return out

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        if self._new_manifests is None:
            for f in self.files:
                if f.spec_id not in base.partition_specs_by_id:
                    raise ValidationError(f"data file {f.file_path} has unknown partition spec {f.spec_id}")
            self._new_manifests = self._write_new_manifests(base)
        existing = read_manifest_list(self.io, parent.manifest_list) if parent else []
        return [*self._new_manifests, *existing]

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        b = SnapshotSummaryBuilder()
        for f in self.files:
            b.added_file(f)
        return b.build(parent.summary.properties if parent else None)

    def data_files_written(self) -> Sequence[str]:
        return [f.file_path for f in self.files] if self._owns_files else ()
