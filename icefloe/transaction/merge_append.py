"""Merge append: a fast append that also merges small manifests, per ``commit.manifest.*``.

Per partition spec, the new manifest and the parent's data manifests (newest first) are packed
from the oldest end into bins of about ``commit.manifest.target-size-bytes`` (8 MiB); a bin with
one manifest is kept, the bin holding the new manifest is merged only once it has at least
``commit.manifest.min-count-to-merge`` (100) manifests, any other bin is merged. Merging carries
live entries as EXISTING with their snapshot ids and sequence numbers and drops old DELETED ones;
the new files stay ADDED. ``commit.manifest-merge.enabled=false`` makes it a fast append.
Merged manifests are cached by their inputs, so a retry on an unchanged parent reuses them.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from icefloe.errors import FileIOError
from icefloe.manifest import (
    ManifestContent,
    ManifestFile,
    ManifestWriter,
    read_manifest,
)
from icefloe.spec.properties import bool_property, int_property
from icefloe.transaction.fast_append import FastAppend

if TYPE_CHECKING:
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["MergeAppend"]

MERGE_ENABLED = "commit.manifest-merge.enabled"
MIN_COUNT_TO_MERGE = "commit.manifest.min-count-to-merge"
TARGET_SIZE = "commit.manifest.target-size-bytes"


class MergeAppend(FastAppend):
    _merged: dict[tuple[str, ...], ManifestFile]
    _used: set[str]

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        candidates = super().manifests(base, parent)
        props = dict(base.properties)
        if not bool_property(props, MERGE_ENABLED, True):
            self._used = {m.manifest_path for m in candidates}
            return candidates
        if not hasattr(self, "_merged"):
            self._merged = {}
        min_count = max(int_property(props, MIN_COUNT_TO_MERGE, 100), 1)
        target = int_property(props, TARGET_SIZE, 8 * 1024 * 1024)
        new_paths = {m.manifest_path for m in self._new_manifests or ()}
        groups: dict[int, list[ManifestFile]] = {}
        out: list[ManifestFile] = []
        for m in candidates:
            if m.content == ManifestContent.DATA:
                groups.setdefault(m.partition_spec_id, []).append(m)
        for spec_id, group in groups.items():
            for bin_ in self._pack(group, target):
                has_new = any(m.manifest_path in new_paths for m in bin_)
                if len(bin_) == 1 or (has_new and len(bin_) < min_count):
                    out.extend(bin_)
                else:
                    out.append(self._merge(base, spec_id, bin_, new_paths))
        out.extend(m for m in candidates if m.content != ManifestContent.DATA)
        self._used = {m.manifest_path for m in out}
        return out

    @staticmethod
    def _pack(group: list[ManifestFile], target: int) -> list[list[ManifestFile]]:
        """Greedy bins from the oldest end, so old manifests settle into stable full bins."""
        bins: list[list[ManifestFile]] = []
        current: list[ManifestFile] = []
        size = 0
        for m in reversed(group):
            if current and size + m.manifest_length > target:
                bins.append(current)
                current, size = [], 0
            current.insert(0, m)
            size += m.manifest_length
        if current:
            bins.append(current)
        bins.reverse()
        return bins

    def _merge(
        self, base: TableMetadata, spec_id: int, bin_: list[ManifestFile], new_paths: set[str]
    ) -> ManifestFile:
        key = tuple(m.manifest_path for m in bin_)
        cached = self._merged.get(key)
        if cached is not None:
            return cached
        with ManifestWriter(
            self.io,
            self.new_manifest_path(base),
            base.spec_by_id(spec_id),
            base.schema(),
            self.snapshot_id,
            ManifestContent.DATA,
            format_version=base.format_version,
        ) as writer:
            for m in bin_:
                if m.manifest_path in new_paths:
                    # Our own new files: still ADDED, their sequence number inherited.
                    for f in self.files:
                        if f.spec_id == spec_id:
                            writer.add(f)
                    continue
                for e in read_manifest(self.io, m):
                    if e.is_live:
                        writer.existing(e)
        merged = writer.close()
        self._merged[key] = merged
        return merged

    def cleanup(self, *, committed: bool) -> None:
        super().cleanup(committed=committed)
        if committed and hasattr(self, "_used"):
            for p in self._written_manifests:
                if p not in self._used:
                    with contextlib.suppress(FileIOError):
                        self.io.delete(p)
