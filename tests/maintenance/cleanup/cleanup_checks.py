"""Independent checks: what a table references, that every retained snapshot reads, and which
files exist under a location."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from icefloe.io.local import local_path
from icefloe.manifest import read_manifest, read_manifest_list

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string())])


def rows(*ids: int, cat: str = "a") -> pa.Table:
    """A small batch of the tests' two-column schema."""
    return pa.table({"id": list(ids), "cat": [cat] * len(ids)}, schema=SCHEMA)


def local(location: str) -> str:
    return os.path.normpath(local_path(location))


def snapshot_files(table: Any, snapshot: Any) -> set[str]:
    """The manifest list, manifests and live content files of one snapshot (local paths)."""
    out = {local(snapshot.manifest_list)}
    for m in read_manifest_list(table.io, snapshot.manifest_list, cache=False):
        out.add(local(m.manifest_path))
        for e in read_manifest(table.io, m, cache=False):
            if e.is_live:
                out.add(local(e.data_file.file_path))
    return out


def statistics_of(metadata: Any, snapshot_ids: Iterable[int] | None = None) -> set[str]:
    ids = None if snapshot_ids is None else set(snapshot_ids)
    return {
        local(s["statistics-path"])
        for s in (*metadata.statistics, *metadata.partition_statistics)
        if ids is None or s.get("snapshot-id") in ids
    }


def referenced(table: Any) -> set[str]:
    """Every file the table's current metadata references (local paths)."""
    md = table.metadata
    out = {local(table.metadata_location)} | {local(e.metadata_file) for e in md.metadata_log}
    for s in md.snapshots:
        out |= snapshot_files(table, s)
    return out | statistics_of(md)


def files_under(location: str) -> set[str]:
    root = local(location)
    out = set()
    for d, _, names in os.walk(root):
        out |= {os.path.normpath(os.path.join(d, n)) for n in names}
    return out


def assert_intact(table: Any) -> None:
    """Every snapshot and every ref of the table scans completely and every file it references
    exists."""
    table.refresh()
    for s in table.metadata.snapshots:
        table.scan(snapshot_id=s.snapshot_id).to_arrow()
    for name in table.metadata.refs:
        table.scan(ref=name).to_arrow()
    missing = sorted(p for p in referenced(table) if not os.path.exists(p))
    assert not missing, f"referenced files are gone: {missing[:5]}"


def reach_by_snapshot(table: Any) -> dict[int, set[str]]:
    """Each snapshot's files (take it before an expiry deletes them)."""
    return {s.snapshot_id: snapshot_files(table, s) for s in table.metadata.snapshots}


def expected_unreachable(
    reach: dict[int, set[str]], metadata_before: Any, after: Any, expired: Iterable[int]
) -> set[str]:
    """Files reached by the expired snapshots (``reach``, taken before the expiry) and by no
    snapshot of ``after`` (local paths)."""
    expired = set(expired)
    gone: set[str] = set()
    kept: set[str] = set()
    for sid, files in reach.items():
        if sid in expired:
            gone |= files
    for s in after.snapshots:
        kept |= reach[s.snapshot_id]
    gone |= statistics_of(metadata_before, expired)
    kept |= statistics_of(after)
    return gone - kept
