"""Tables and invariant checks shared by the rewrite tests.

Every check reads with plain ``icefloe.manifest`` and ``pyarrow`` calls: what each snapshot
references, that those files exist, the rows of every snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from icefloe.io.local import local_path
from icefloe.manifest import DataFileContent, ManifestEntry, read_manifest, read_manifest_list

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("part", pa.string()),
        ("v", pa.float64()),
        ("s", pa.string()),
    ]
)
FAST_RETRIES = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
COW = {
    "write.delete.mode": "copy-on-write",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
}

Row = tuple[Any, ...]


def rows(ids: Iterable[int], part: str | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "part": [part if part is not None else ("a" if i % 2 else "b") for i in ids],
            "v": [((i * 37) % 101) / 4 for i in ids],
            "s": [f"s{(i * 13) % 97:03d}" for i in ids],
        },
        schema=SCHEMA,
    )


def make_table(
    catalog: Any,
    name: str,
    *,
    files: int = 12,
    rows_per_file: int = 50,
    partition_by: Sequence[str] = ("part",),
    properties: dict[str, str] | None = None,
    part: str | None = None,
) -> Any:
    """A table of ``files`` appends of ``rows_per_file`` rows each (ids 0, 1, 2, ...)."""
    t = catalog.create_table(
        f"ns.{name}",
        schema=SCHEMA,
        partition_by=list(partition_by),
        properties={**FAST_RETRIES, **(properties or {})},
    )
    for i in range(files):
        t.append(rows(range(i * rows_per_file, (i + 1) * rows_per_file), part))
    return t


def table_rows(table: Any, snapshot_id: int | None = None) -> list[Row]:
    data = table.scan(snapshot_id=snapshot_id).to_arrow()
    return sorted(tuple(r.values()) for r in data.to_pylist())


def every_snapshot_rows(table: Any) -> dict[int, list[Row]]:
    return {s.snapshot_id: table_rows(table, s.snapshot_id) for s in table.snapshots()}


def live_entries(table: Any, snapshot_id: int | None = None) -> list[ManifestEntry]:
    snap = table.current_snapshot() if snapshot_id is None else table.snapshot_by_id(snapshot_id)
    if snap is None:
        return []
    return [
        e
        for m in read_manifest_list(table.io, snap.manifest_list)
        for e in read_manifest(table.io, m, discard_deleted=True)
    ]


def data_files(table: Any, snapshot_id: int | None = None) -> list[Any]:
    return [
        e.data_file for e in live_entries(table, snapshot_id) if e.data_file.content == DataFileContent.DATA
    ]


def delete_files(table: Any, snapshot_id: int | None = None) -> list[Any]:
    return [
        e.data_file for e in live_entries(table, snapshot_id) if e.data_file.content != DataFileContent.DATA
    ]


def referenced_files(table: Any, snapshot_id: int) -> set[str]:
    """Manifest list, manifests, data and delete files a snapshot reaches (local paths)."""
    snap = table.snapshot_by_id(snapshot_id)
    out = {local_path(snap.manifest_list)}
    for m in read_manifest_list(table.io, snap.manifest_list):
        out.add(local_path(m.manifest_path))
        for e in read_manifest(table.io, m, discard_deleted=True):
            out.add(local_path(e.data_file.file_path))
    return out


def check_snapshots_intact(table: Any, before: dict[int, list[Row]]) -> None:
    """Every snapshot still in the table reads the rows it read before, and every file it
    reaches exists: no retained snapshot lost a file or a row."""
    table.refresh()
    for s in table.snapshots():
        missing = sorted(p for p in referenced_files(table, s.snapshot_id) if not os.path.exists(p))
        assert not missing, f"snapshot {s.snapshot_id} lost files: {missing[:3]}"
        if s.snapshot_id in before:
            assert table_rows(table, s.snapshot_id) == before[s.snapshot_id], (
                f"rows of {s.snapshot_id} changed"
            )


def files_under(location: str) -> set[str]:
    root = local_path(location)
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def reachable_files(table: Any) -> set[str]:
    """Everything the table's metadata references, in every snapshot (local paths)."""
    md = table.metadata
    out = {local_path(table.metadata_location)}
    out.update(local_path(e.metadata_file) for e in md.metadata_log)
    for s in md.snapshots:
        out |= referenced_files(table, s.snapshot_id)
        for m in read_manifest_list(table.io, s.manifest_list):
            out.update(local_path(e.data_file.file_path) for e in read_manifest(table.io, m))
    return out


def orphans(table: Any) -> set[str]:
    """Files under the table's location that no metadata references."""
    table.refresh()
    return files_under(table.location) - reachable_files(table)
