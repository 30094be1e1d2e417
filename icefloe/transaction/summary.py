"""Snapshot summaries: the spec's counters of what a snapshot added and removed, and the table totals.

Totals are carried forward from the parent snapshot's summary; when the parent has no totals
(e.g. written by an engine that omits them) the totals are left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping

from icefloe.manifest import DataFile, DataFileContent, FileFormat

__all__ = ["SnapshotSummaryBuilder"]

_TOTALS = (
    ("total-data-files", "added-data-files", "deleted-data-files"),
    ("total-delete-files", "added-delete-files", "removed-delete-files"),
    ("total-records", "added-records", "deleted-records"),
    ("total-files-size", "added-files-size", "removed-files-size"),
    ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
    ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"),
)


class SnapshotSummaryBuilder:
    """Accumulates added and removed files, then renders the summary properties."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._partitions: set[tuple[int, tuple[object, ...]]] = set()
        self._extra: dict[str, str] = {}

    def _inc(self, key: str, n: int) -> None:
        self._counts[key] = self._counts.get(key, 0) + n

    def _track_partition(self, f: DataFile) -> None:
        self._partitions.add((f.spec_id, tuple(f.partition)))

    def added_file(self, f: DataFile) -> None:
        self._track_partition(f)
        if f.content == DataFileContent.DATA:
            self._inc("added-data-files", 1)
            self._inc("added-records", f.record_count)
        else:
            self._inc("added-delete-files", 1)
            if f.content == DataFileContent.POSITION_DELETES:
                # Java counts deletion vectors apart from position delete files (``added-dvs``)
                self._inc("added-dvs" if _is_dv(f) else "added-position-delete-files", 1)
                self._inc("added-position-deletes", f.record_count)
            else:
                self._inc("added-equality-delete-files", 1)
                self._inc("added-equality-deletes", f.record_count)
        self._inc("added-files-size", _content_size(f))

    def removed_file(self, f: DataFile) -> None:
        self._track_partition(f)
        if f.content == DataFileContent.DATA:
            self._inc("deleted-data-files", 1)
            self._inc("deleted-records", f.record_count)
        else:
            self._inc("removed-delete-files", 1)
            if f.content == DataFileContent.POSITION_DELETES:
                self._inc("removed-dvs" if _is_dv(f) else "removed-position-delete-files", 1)
                self._inc("removed-position-deletes", f.record_count)
            else:
                self._inc("removed-equality-delete-files", 1)
                self._inc("removed-equality-deletes", f.record_count)
        self._inc("removed-files-size", _content_size(f))

    def set(self, key: str, value: str) -> None:
        self._extra[key] = value

    def build(self, parent_summary: Mapping[str, str] | None) -> dict[str, str]:
        out: dict[str, str] = {k: str(v) for k, v in self._counts.items() if v}
        out["changed-partition-count"] = str(len(self._partitions))
        parent = parent_summary or {}
        for total, added, removed in _TOTALS:
            if parent_summary is None:
                previous = 0
            elif total in parent:
                try:
                    previous = int(parent[total])
                except ValueError:
                    continue
            else:
                continue
            out[total] = str(previous + self._counts.get(added, 0) - self._counts.get(removed, 0))
        out.update(self._extra)
        return out


def _is_dv(f: DataFile) -> bool:
    return f.file_format == FileFormat.PUFFIN


def _content_size(f: DataFile) -> int:
    """A deletion vector's size is its blob's (a Puffin file holds many), as Java counts it."""
    if _is_dv(f) and f.content_size_in_bytes is not None:
        return f.content_size_in_bytes
    return f.file_size_in_bytes
