"""Rewriting the parent snapshot's manifests so that the files an action removes become DELETED.

For each manifest of the parent::

    no live entry to remove ─▶ kept as it is (not even rewritten)
    some entries to remove  ─▶ new manifest: removed entries DELETED (with their original
                               sequence numbers), other live entries EXISTING (keeping their
                               snapshot ids and sequence numbers), older DELETED entries dropped

Rewritten manifests are cached by the source manifest's path: a retry whose new base still has
that manifest reuses the rewrite instead of writing it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from icefloe.manifest import ManifestEntry, ManifestFile, ManifestWriter, read_manifest

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["FilterResult", "ManifestFilter"]

EntryPredicate = Callable[[ManifestEntry], bool]


class FilterResult:
    def __init__(self, manifests: list[ManifestFile], removed: list[ManifestEntry]) -> None:
        self.manifests = manifests
        self.removed = removed


class ManifestFilter:
    """Applies one fixed removal predicate to successive bases, caching the rewrites."""

    def __init__(
        self,
        io: FileIO,
        snapshot_id: int,
        new_path: Callable[[TableMetadata], str],
        should_remove: EntryPredicate,
        may_contain: Callable[[ManifestFile], bool] = lambda m: True,
    ) -> None:
        self.io = io
        self.snapshot_id = snapshot_id
        self._new_path = new_path
        self._should_remove = should_remove
        self._may_contain = may_contain
        self._cache: dict[tuple[str, object], tuple[ManifestFile, list[ManifestEntry]]] = {}
        #: rewritten manifest paths, for cleanup of the ones the final commit did not use
        self.written: list[str] = []

    def filter(
        self, base: TableMetadata, manifests: list[ManifestFile], token: object = None
    ) -> FilterResult:
        """``token`` names the state the predicate depends on beyond the action's fixed inputs
        (a rewrite is reused only for the same manifest and the same token)."""
        out: list[ManifestFile] = []
        removed: list[ManifestEntry] = []
        for m in manifests:
            key = (m.manifest_path, token)
            cached = self._cache.get(key)
            if cached is None:
                cached = self._filter_one(base, m)
                self._cache[key] = cached
            out.append(cached[0])
            removed.extend(cached[1])
        return FilterResult(out, removed)

    def _filter_one(self, base: TableMetadata, m: ManifestFile) -> tuple[ManifestFile, list[ManifestEntry]]:
        live = (m.added_files_count or 0) + (m.existing_files_count or 0)
        if (m.added_files_count is not None and m.existing_files_count is not None and live == 0) or not (
            self._may_contain(m)
        ):
            return m, []
        entries = list(read_manifest(self.io, m))
        hits = [e for e in entries if e.is_live and self._should_remove(e)]
        if not hits:
            return m, []
        hit_ids = {id(e) for e in hits}
        path = self._new_path(base)
        self.written.append(path)
        with ManifestWriter(
            self.io,
            path,
            base.spec_by_id(m.partition_spec_id),
            base.schema(),
            self.snapshot_id,
            m.content,
            format_version=base.format_version,
        ) as writer:
            for e in entries:
                if not e.is_live:
                    continue
                if id(e) in hit_ids:
                    writer.delete(e)
                else:
                    writer.existing(e)
        return writer.close(), hits
