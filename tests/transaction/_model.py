"""Shared helpers for the commit-protocol tests: a tiny operation language over rows keyed by id,
its serial model, how each operation runs on a table handle, and the invariant checks.

A row is ``(id, part, v)``; the table is partitioned by ``identity(part)``. An operation is applied
either to a table handle (which may be stale: the handle's snapshot is "what was read") or to the
model (a sorted list of rows), and a committed history is correct when the table equals the model
run over the committed operations in commit order.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.catalog import Catalog
from icefloe.manifest import DataFile, DataFileContent, ManifestEntryStatus, read_manifest, read_manifest_list
from icefloe.spec.table_metadata import TableMetadata
from icefloe.table import Table
from icefloe.table.transaction import Transaction

Row = tuple[int, str, int]

ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.string(), nullable=False),
        pa.field("v", pa.int64(), nullable=False),
    ]
)

# Fast retries: the tests create contention on purpose and must not sleep for Java's 100 ms+.
FAST_RETRIES = {
    "commit.retry.num-retries": "10",
    "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "20",
}

COW = "copy-on-write"
MOR = "merge-on-read"


def mode_properties(mode: str) -> dict[str, str]:
    """Every row-level command of the table in one write mode (upsert is a MERGE, updates are
    UPDATEs: setting all three keeps the tests independent of which one an operation reads)."""
    return {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}


def isolation_properties(level: str) -> dict[str, str]:
    return {f"write.{c}.isolation-level": level for c in ("delete", "update", "merge")}


def arrow_rows(rows: Iterable[Row]) -> pa.Table:
    rs = list(rows)
    return pa.table(
        {
            "id": pa.array([r[0] for r in rs], pa.int64()),
            "part": pa.array([r[1] for r in rs], pa.string()),
            "v": pa.array([r[2] for r in rs], pa.int64()),
        },
        schema=ARROW_SCHEMA,
    )


def create_table(
    catalog: Catalog, name: str, initial: Sequence[Sequence[Row]], properties: dict[str, str]
) -> Table:
    """A table partitioned by ``part`` holding one data file per group in ``initial``."""
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    table = catalog.create_table(
        f"db.{name}", schema=ARROW_SCHEMA, partition_by=["part"], properties={**FAST_RETRIES, **properties}
    )
    for group in initial:
        table.append(arrow_rows(group))
    return table


def set_properties(table: Table, properties: dict[str, str]) -> None:
    tx = table.transaction()
    tx.set_properties(**properties)
    tx.commit()


def table_rows(table: Table, snapshot_id: int | None = None) -> list[Row]:
    data = table.scan(snapshot_id=snapshot_id).to_arrow()
    return sorted(zip(data["id"].to_pylist(), data["part"].to_pylist(), data["v"].to_pylist(), strict=True))


# ---------------------------------------------------------------------- the operation language
@dataclass(frozen=True)
class Op:
    """``append`` rows; ``delete`` the rows with id ``key``; ``overwrite`` them with ``rows``;
    ``upsert`` rows by id; ``replace_partitions`` with ``rows``; ``compact`` partition ``part``
    (a rewrite that must not change any row)."""

    kind: str
    rows: tuple[Row, ...] = ()
    key: int | None = None
    part: str = "a"

    def __str__(self) -> str:
        if self.kind == "delete":
            return f"delete({self.key})"
        if self.kind == "compact":
            return f"compact({self.part})"
        return f"{self.kind}({','.join(f'{r[0]}:{r[2]}' for r in self.rows)})"


def apply_model(state: Sequence[Row], op: Op) -> list[Row]:
    """The operation's effect on a serial history."""
    rows = list(state)
    if op.kind == "append":
        rows += op.rows
    elif op.kind == "delete":
        rows = [r for r in rows if r[0] != op.key]
    elif op.kind == "overwrite":
        rows = [r for r in rows if r[0] != op.key] + list(op.rows)
    elif op.kind == "upsert":
        keys = {r[0] for r in op.rows}
        rows = [r for r in rows if r[0] not in keys] + list(op.rows)
    elif op.kind == "replace_partitions":
        parts = {r[1] for r in op.rows}
        rows = [r for r in rows if r[1] not in parts] + list(op.rows)
    elif op.kind != "compact":
        raise AssertionError(f"unknown operation {op.kind}")
    return sorted(rows)


def serial(initial: Sequence[Row], ops: Iterable[Op]) -> list[Row]:
    state = sorted(initial)
    for op in ops:
        state = apply_model(state, op)
    return state


def run_op(table: Table, op: Op) -> int | None:
    """Run ``op`` on ``table`` (possibly a stale handle: the operation reads the handle's snapshot)
    and commit it. Returns the id of the snapshot it added (None when it added none)."""
    return run_op_stats(table, op)[0]


def run_op_stats(table: Table, op: Op) -> tuple[int | None, int, int]:
    """`run_op` through the Transaction API, also returning its commit attempts and retries."""
    tx = build_transaction(table, op)
    snapshots = tx.commit()
    return (snapshots[-1].snapshot_id if snapshots else None), tx.stats.attempts, tx.stats.retries


def build_transaction(table: Table, op: Op) -> Transaction:
    """A transaction holding ``op``, built on ``table``'s snapshot, not committed yet."""
    tx = table.transaction()
    if op.kind == "append":
        tx.append(arrow_rows(op.rows))
    elif op.kind == "delete":
        tx.delete(f"id = {op.key}")
    elif op.kind == "overwrite":
        tx.overwrite(arrow_rows(op.rows), where=f"id = {op.key}")
    elif op.kind == "upsert":
        tx.upsert(arrow_rows(op.rows), ["id"])
    elif op.kind == "replace_partitions":
        tx.replace_partitions(arrow_rows(op.rows))
    elif op.kind == "compact":
        queue_compaction(table, tx, op.part)
    else:
        raise AssertionError(f"unknown operation {op.kind}")
    return tx


def queue_compaction(table: Table, tx: Transaction, part: str) -> None:
    """Queue the rewrite of the live data files of one partition (deletes applied) into one new
    file, as of the handle's snapshot: the compaction primitive `rewrite_files`."""
    from icefloe.arrow.writer import write_data_files

    snap = table.current_snapshot()
    if snap is None:
        return
    scan = table.scan(row_filter=f"part = '{part}'", snapshot_id=snap.snapshot_id)
    tasks = scan.plan_files()
    if not tasks:
        return
    data_files = list({t.file.file_path: t.file for t in tasks}.values())
    delete_files = list({d.file_path: d for t in tasks for d in t.delete_files}.values())
    rows = scan.to_arrow()
    new_files = write_data_files(table.io, table.metadata, rows) if rows.num_rows else []
    # The compaction wrote new_files for this operation: they are its own to delete on failure.
    tx.rewrite_files(remove=data_files, add=new_files, remove_deletes=delete_files, delete_on_failure=True)


# ---------------------------------------------------------------------- files and invariants
def local_path(location: str) -> str:
    return urlparse(location).path if location.startswith("file:") else location


@dataclass
class LiveFiles:
    data: dict[str, DataFile] = field(default_factory=dict)
    deletes: dict[str, DataFile] = field(default_factory=dict)
    entries: list[Any] = field(default_factory=list)


def live_files(table: Table, metadata: TableMetadata | None = None) -> LiveFiles:
    md = metadata or table.metadata
    out = LiveFiles()
    snap = md.current_snapshot()
    if snap is None:
        return out
    for m in read_manifest_list(table.io, snap.manifest_list):
        for e in read_manifest(table.io, m, discard_deleted=True):
            out.entries.append(e)
            f = e.data_file
            (out.data if f.content == DataFileContent.DATA else out.deletes)[f.file_path] = f
    return out


def reachable_files(table: Table) -> set[str]:
    """Every file the table's metadata history references: metadata files, manifest lists,
    manifests and the data and delete files of every snapshot (local paths)."""
    md = table.metadata
    out = {local_path(table.metadata_location)}
    out.update(local_path(e.metadata_file) for e in md.metadata_log)
    for snap in md.snapshots:
        out.add(local_path(snap.manifest_list))
        for m in read_manifest_list(table.io, snap.manifest_list):
            out.add(local_path(m.manifest_path))
            for e in read_manifest(table.io, m):
                out.add(local_path(e.data_file.file_path))
    return out


def orphan_files(table: Table) -> set[str]:
    """Files under the table's location that no metadata references: what a failed or retried
    commit left behind."""
    root = local_path(table.location)
    on_disk = {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
    return on_disk - reachable_files(table)


def sequence_number_violations(table: Table) -> list[str]:
    """Snapshot sequence numbers strictly increase along the branch and in commit order; every
    live entry's file sequence number is the one of the snapshot that added it, and its data
    sequence number is not newer than that (compaction keeps an older one)."""
    md = table.metadata
    problems: list[str] = []
    seqs = [s.sequence_number for s in md.snapshots]
    if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
        problems.append(f"snapshot sequence numbers not strictly increasing in commit order: {seqs}")
    if seqs and md.last_sequence_number != max(seqs):
        problems.append(f"last-sequence-number {md.last_sequence_number} != newest snapshot's {max(seqs)}")
    for snap in md.snapshots:
        if snap.parent_snapshot_id is not None:
            parent = md.snapshots_by_id.get(snap.parent_snapshot_id)
            if parent is not None and parent.sequence_number >= snap.sequence_number:
                problems.append(f"snapshot {snap.snapshot_id} seq {snap.sequence_number} <= parent's")
    by_id = md.snapshots_by_id
    for e in live_files(table).entries:
        added_by = by_id.get(e.snapshot_id)
        if added_by is None:
            problems.append(f"{e.data_file.file_path}: added by unknown snapshot {e.snapshot_id}")
            continue
        if (
            e.status == ManifestEntryStatus.ADDED or e.file_sequence_number is not None
        ) and e.file_sequence_number != added_by.sequence_number:
            problems.append(
                f"{e.data_file.file_path}: file seq {e.file_sequence_number} != "
                f"seq {added_by.sequence_number} of the snapshot that added it"
            )
        if e.sequence_number is None or e.sequence_number > added_by.sequence_number:
            problems.append(f"{e.data_file.file_path}: data seq {e.sequence_number} after its snapshot")
    return problems


def dangling_delete_violations(table: Table) -> list[str]:
    """A live position-delete file must reference only data files live in the same snapshot.

    Otherwise it is dangling: either garbage (its data file was removed whole) or, worse, a delete
    that no longer applies to the rows it deleted (they moved to a rewritten file)."""
    live = live_files(table)
    problems: list[str] = []
    for path, f in live.deletes.items():
        if f.content != DataFileContent.POSITION_DELETES:
            continue
        if f.referenced_data_file is not None:
            targets = {f.referenced_data_file}
        else:
            col = pq.read_table(table.io.new_input(path).open(), columns=["file_path"])["file_path"]
            targets = set(col.unique().to_pylist())
        missing = targets - set(live.data)
        if missing:
            problems.append(f"{path} references data files that are not live: {sorted(missing)}")
    return problems
