"""Snapshot producers: the manifests, entries, sequence numbers and summaries each one writes, and
the commit loop's file handling (reuse across retries, cleanup after failure, never after an
unknown outcome)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import CommitFailedError, CommitStateUnknownError, MissingFilesError, ValidationError
from icefloe.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest,
    read_manifest_list,
)
from icefloe.spec.snapshot import Operation, Snapshot
from icefloe.table import Table
from icefloe.testing import CommitFault, FaultInjectingCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string())])
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "2"}


def rows(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [part] * len(ids)}, schema=SCHEMA)


def make_table(catalog: InMemoryCatalog, **props: str) -> Table:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["part"], properties={**FAST, **props})
    t.append(rows([1, 2], "a"))  # sequence number 1
    t.append(rows([3, 4], "b"))  # sequence number 2
    return t


def entries(t: Table, snap: Snapshot | None = None) -> list[tuple[ManifestContent, ManifestEntry]]:
    snap = snap or t.current_snapshot()
    assert snap is not None
    out = []
    for m in read_manifest_list(t.io, snap.manifest_list):
        out += [(m.content, e) for e in read_manifest(t.io, m)]
    return out


def by_status(t: Table, status: ManifestEntryStatus) -> dict[str, ManifestEntry]:
    return {e.data_file.file_path: e for _, e in entries(t) if e.status == status}


def live_data(t: Table) -> dict[str, DataFile]:
    return {
        e.data_file.file_path: e.data_file for c, e in entries(t) if e.is_live and c == ManifestContent.DATA
    }


def files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


def data_file(t: Table, part: str) -> DataFile:
    return next(f for f in live_data(t).values() if f.partition == (part,))


def test_overwrite_files_marks_removed_entries_deleted_and_keeps_existing_sequence_numbers(
    catalog: InMemoryCatalog,
) -> None:
    t = make_table(catalog)
    old_a, old_b = data_file(t, "a"), data_file(t, "b")
    seq_b = by_status(t, ManifestEntryStatus.ADDED)[old_b.file_path].sequence_number
    with t.transaction() as tx:
        new = tx.append(rows([5], "a"))  # staged: sequence number 3
        tx.overwrite_files([], "part = 'a' and id < 10")
    snaps = t.snapshots()
    append_snap, overwrite_snap = snaps[-2], snaps[-1]
    assert (append_snap.sequence_number, overwrite_snap.sequence_number) == (3, 4)
    assert overwrite_snap.summary.operation == Operation.DELETE
    deleted = by_status(t, ManifestEntryStatus.DELETED)
    assert set(deleted) == {old_a.file_path, new[0].file_path}
    for path, e in deleted.items():
        assert e.snapshot_id == overwrite_snap.snapshot_id
        assert e.sequence_number == (1 if path == old_a.file_path else 3)  # the original ones
    existing = by_status(t, ManifestEntryStatus.EXISTING)
    # The b manifest was not touched, so its entry is still ADDED by the second append.
    assert old_b.file_path not in existing
    assert by_status(t, ManifestEntryStatus.ADDED)[old_b.file_path].sequence_number == seq_b
    s = overwrite_snap.summary.properties
    assert s["deleted-data-files"] == "2"
    assert s["deleted-records"] == "3"
    assert s["total-data-files"] == "1"
    assert s["total-records"] == "2"
    assert t.scan().to_arrow().column("id").to_pylist() == [3, 4]


def test_copy_on_write_rewrite_adds_file_with_new_sequence_number_and_carries_others_existing(
    catalog: InMemoryCatalog,
) -> None:
    t = make_table(catalog)
    t.append(rows([7, 8], "a"))  # a second file in partition a, sequence number 3
    t.delete("id = 1")  # rewrites the first a file only
    snap = t.current_snapshot()
    assert snap is not None and snap.summary.operation == Operation.OVERWRITE
    added = by_status(t, ManifestEntryStatus.ADDED)
    new = [e for e in added.values() if e.snapshot_id == snap.snapshot_id]
    assert len(new) == 1
    assert new[0].sequence_number == snap.sequence_number == 4
    assert new[0].file_sequence_number == 4
    assert new[0].data_file.record_count == 1
    s = snap.summary.properties
    assert (s["added-data-files"], s["deleted-data-files"], s["added-records"], s["deleted-records"]) == (
        "1",
        "1",
        "1",
        "2",
    )
    assert s["total-records"] == "5"
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4, 7, 8]


def test_rewrite_files_keeps_the_starting_snapshot_sequence_number(catalog: InMemoryCatalog) -> None:
    from icefloe.arrow.writer import write_data_files

    t = make_table(catalog)
    old = list(live_data(t).values())
    new = write_data_files(t.io, t.metadata, rows([1, 2, 3, 4], "a").slice(0, 2))
    new += write_data_files(t.io, t.metadata, rows([3, 4], "b"))
    with t.transaction() as tx:
        tx.rewrite_files(remove=old, add=new)
    snap = t.current_snapshot()
    assert snap is not None
    assert snap.summary.operation == Operation.REPLACE and snap.sequence_number == 3
    added = [e for e in by_status(t, ManifestEntryStatus.ADDED).values() if e.snapshot_id == snap.snapshot_id]
    assert {e.sequence_number for e in added} == {2}  # data sequence number of the starting snapshot
    assert {e.file_sequence_number for e in added} == {3}  # file sequence number is the new one
    assert snap.summary.properties["total-records"] == "4"
    # Read back through the manifest list: the pinned number survives inheritance.
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]


def test_rewrite_files_without_keeping_the_sequence_number_inherits_the_new_one(
    catalog: InMemoryCatalog,
) -> None:
    from icefloe.arrow.writer import write_data_files

    t = make_table(catalog)
    old = data_file(t, "a")
    new = write_data_files(t.io, t.metadata, rows([1, 2], "a"))
    with t.transaction() as tx:
        tx.rewrite_files(remove=[old], add=new, keep_sequence_number=False)
    snap = t.current_snapshot()
    assert snap is not None
    added = [e for e in by_status(t, ManifestEntryStatus.ADDED).values() if e.snapshot_id == snap.snapshot_id]
    assert [e.sequence_number for e in added] == [3]


def test_rewrite_of_nothing_is_refused(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog)
    with pytest.raises(ValidationError, match="at least one file"):
        t.transaction().rewrite_files(remove=[], add=[])


def test_row_delta_with_only_delete_files_is_a_delete_with_inherited_sequence_numbers(
    catalog: InMemoryCatalog,
) -> None:
    from icefloe.arrow.deletes import write_position_deletes

    t = make_table(catalog)
    a = data_file(t, "a")
    deletes = write_position_deletes(t.io, t.metadata, {a.file_path: [0]}, spec_id=0, partition=("a",))
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=deletes)
    snap = t.current_snapshot()
    assert snap is not None and snap.summary.operation == Operation.DELETE
    delete_entries = [e for c, e in entries(t) if c == ManifestContent.DELETES]
    assert [(e.status, e.sequence_number, e.snapshot_id) for e in delete_entries] == [
        (ManifestEntryStatus.ADDED, 3, snap.snapshot_id)
    ]
    s = snap.summary.properties
    assert s["added-position-deletes"] == "1" and s["total-delete-files"] == "1"
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4]


def test_removing_a_data_file_removes_its_file_scoped_position_deletes(catalog: InMemoryCatalog) -> None:
    from icefloe.arrow.deletes import write_position_deletes

    t = make_table(catalog)
    a = data_file(t, "a")
    deletes = write_position_deletes(t.io, t.metadata, {a.file_path: [0]}, spec_id=0, partition=("a",))
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=deletes)
    t.delete("part = 'a'")  # drops the file whole
    assert [e.status for c, e in entries(t) if c == ManifestContent.DELETES] == [ManifestEntryStatus.DELETED]
    s = t.current_snapshot().summary.properties  # type: ignore[union-attr]
    assert s["removed-delete-files"] == "1" and s["total-delete-files"] == "0"


def test_replace_partitions_drops_only_the_partitions_it_writes(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog)
    t.replace_partitions(rows([10, 11, 12], "a"))
    snap = t.current_snapshot()
    assert snap is not None and snap.summary.operation == Operation.OVERWRITE
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [3, 4, 10, 11, 12]
    s = snap.summary.properties
    assert (s["deleted-data-files"], s["added-data-files"], s["total-records"]) == ("1", "1", "5")


def test_merge_append_merges_small_manifests(catalog: InMemoryCatalog) -> None:
    t = make_table(
        catalog, **{"commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "3"}
    )
    # make_table's two appends already merged nothing (fewer than 3 manifests).
    snap = t.current_snapshot()
    assert snap is not None and len(read_manifest_list(t.io, snap.manifest_list)) == 2
    t.append(rows([5], "a"))
    snap = t.current_snapshot()
    assert snap is not None
    manifests = read_manifest_list(t.io, snap.manifest_list)
    assert len(manifests) == 1
    es = {e.data_file.record_count: e for e in read_manifest(t.io, manifests[0])}
    assert es[1].status == ManifestEntryStatus.ADDED and es[1].sequence_number == 3
    assert {es[2].status} == {ManifestEntryStatus.EXISTING}
    assert sorted(e.sequence_number or 0 for e in read_manifest(t.io, manifests[0])) == [1, 2, 3]
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    # The unused unmerged new manifest was deleted after the commit.
    meta = Path(t.location.removeprefix("file://")) / "metadata"
    referenced = {
        m.manifest_path.removeprefix("file://")
        for s in t.snapshots()
        for m in read_manifest_list(t.io, s.manifest_list)
    }
    assert {str(p) for p in meta.glob("*-m*.avro")} == referenced


def test_retries_reuse_written_manifests(catalog: InMemoryCatalog) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog)
    t = faulty.load_table("db.t")
    meta = Path(t.location.removeprefix("file://")) / "metadata"
    before = {p.name for p in meta.glob("*.avro")}
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    tx = t.transaction()
    tx.delete("id = 1")  # copy-on-write: one rewritten data file, one new and one filtered manifest
    tx.commit()
    assert tx.stats.retries == 2
    new = {p.name for p in meta.glob("*.avro")} - before
    manifests = {n for n in new if not n.startswith("snap-")}
    lists = {n for n in new if n.startswith("snap-")}
    assert len(manifests) == 2  # written once, reused by all three attempts
    assert len(lists) == 1  # the lists of the failed attempts (and of staging) were deleted
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4]


def test_failed_commit_leaves_the_table_and_the_disk_unchanged(
    catalog: InMemoryCatalog, tmp_path: Path
) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog, **{"commit.retry.num-retries": "1"})
    t = faulty.load_table("db.t")
    before_files = files_under(tmp_path / "warehouse")
    before_snapshots = [s.snapshot_id for s in t.snapshots()]
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    with pytest.raises(CommitFailedError):
        t.upsert(rows([1, 9], "a"), ["id"])
    after = files_under(tmp_path / "warehouse") - before_files
    assert after == set()
    fresh = catalog.load_table("db.t")
    assert [s.snapshot_id for s in fresh.snapshots()] == before_snapshots


def test_unknown_outcome_that_landed_is_resolved_and_keeps_files(catalog: InMemoryCatalog) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog)
    t = faulty.load_table("db.t")
    faulty.inject(CommitFault.UNKNOWN_APPLIED)
    snap = t.delete("id = 1")
    assert snap is not None
    fresh = catalog.load_table("db.t")
    assert fresh.current_snapshot() == snap
    assert sorted(fresh.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4]


def test_unknown_outcome_not_landed_is_raised_and_deletes_nothing(
    catalog: InMemoryCatalog, tmp_path: Path
) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog)
    t = faulty.load_table("db.t")
    before = files_under(tmp_path / "warehouse")
    faulty.inject(CommitFault.UNKNOWN_NOT_APPLIED)
    tx = t.transaction()
    tx.delete("id = 1")
    with pytest.raises(CommitStateUnknownError):
        tx.commit()
    written = files_under(tmp_path / "warehouse") - before
    # The manifests, the manifest list and the rewritten data file all stay: the commit may be live.
    assert any("snap-" in p for p in written)
    assert any(p.endswith(".parquet") for p in written)


def test_unknown_outcome_is_resolved_through_the_metadata_log(catalog: InMemoryCatalog) -> None:
    """The catalog names the metadata file it tried to install; if a later commit already built on
    it, it is in the metadata log and the outcome is known even though our snapshot may be gone."""
    from icefloe.transaction._commit import _landed

    make_table(catalog)
    t = catalog.load_table("db.t")
    previous = t.metadata_location
    t.append(rows([9], "c"))
    assert _landed(catalog, ("db", "t"), [], previous)
    assert _landed(catalog, ("db", "t"), [], t.metadata_location)
    assert not _landed(catalog, ("db", "t"), [], previous + ".nope")


def test_removing_a_file_that_is_gone_raises_missing_files(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog)
    a = data_file(t, "a")
    t.transaction().delete_files([a])  # staged on the transaction's own metadata only
    stale = catalog.load_table("db.t")
    t.delete("part = 'a'")
    with pytest.raises(MissingFilesError) as info, stale.transaction() as tx:
        tx.delete_files([a])
    assert info.value.context["files"] == [a.file_path]
    assert info.value.hint


def test_producers_reject_the_wrong_kind_of_file(catalog: InMemoryCatalog) -> None:
    from icefloe.arrow.deletes import write_position_deletes

    t = make_table(catalog)
    a = data_file(t, "a")
    deletes = write_position_deletes(t.io, t.metadata, {a.file_path: [0]}, spec_id=0, partition=("a",))
    with pytest.raises(ValidationError):
        t.transaction().row_delta(add_data_files=deletes)
    with pytest.raises(ValidationError):
        t.transaction().row_delta(add_delete_files=[a])
    assert deletes[0].content == DataFileContent.POSITION_DELETES


def test_a_retry_on_a_changed_base_reuses_rewrites_and_carries_the_new_files(
    catalog: InMemoryCatalog,
) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog, **{"write.delete.isolation-level": "snapshot"})
    t = faulty.load_table("db.t")
    meta = Path(t.location.removeprefix("file://")) / "metadata"
    faulty.before_next_swap(lambda: catalog.load_table("db.t").append(rows([9], "c")))
    tx = t.transaction()
    before = {p.name for p in meta.glob("*-m*.avro")}
    tx.delete("id = 1")
    tx.commit()
    ours = {p.name for p in meta.glob("*-m*.avro")} - before
    assert tx.stats.retries == 1
    # one new data manifest + one filtered manifest, written once; the concurrent append wrote its own
    assert len([p for p in ours if p.startswith(tx._actions[0].commit_uuid)]) == 2
    snap = t.current_snapshot()
    assert snap is not None and snap.sequence_number == 4  # after the concurrent append's 3
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4, 9]


def test_a_multi_action_transaction_writes_one_manifest_list_per_action(
    catalog: InMemoryCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.transaction import _producer

    t = make_table(catalog)
    written: list[str] = []
    real = _producer.write_manifest_list

    def counting(io: object, path: str, *args: object, **kwargs: object) -> object:
        written.append(path)
        return real(io, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_producer, "write_manifest_list", counting)
    tx = t.transaction()
    tx.append(rows([5], "a"))
    tx.set_properties(note="between the actions")
    tx.append(rows([6], "c"))
    tx.delete("id = 1")
    snapshots = tx.commit()
    assert len(snapshots) == 3 and len(written) == 3  # staged once, committed as staged
    assert [s.manifest_list for s in snapshots] == written
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4, 5, 6]
    assert t.metadata.properties["note"] == "between the actions"
    # The table moved before the commit: the actions are applied again on the new base.
    written.clear()
    tx = t.transaction()
    tx.append(rows([7], "a"))
    tx.append(rows([8], "b"))
    catalog.load_table("db.t").append(rows([9], "d"))
    tx.commit()
    assert len(written) == 5  # 2 staged, 1 by the other writer, 2 for the retry on the new base
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3, 4, 5, 6, 7, 8, 9]
