"""``table.maintenance.expire_snapshots``: which files go (exactly those no retained snapshot of
any ref reaches), dry runs, bad input, unknown commit outcomes, statistics files and staged
(write-audit-publish) snapshots."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cleanup_checks import (
    SCHEMA,
    assert_intact,
    expected_unreachable,
    files_under,
    local,
    reach_by_snapshot,
    referenced,
    rows,
)

from icefloe.errors import CommitStateUnknownError, NoSuchSnapshotError, ValidationError
from icefloe.maintenance.expire_snapshots import ExpireSnapshotsResult
from icefloe.testing import CommitFault, FaultInjectingCatalog


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_history(catalog: Any, mode: str = "copy-on-write", name: str = "ns.t") -> Any:
    """Appends, deletes, an overwrite, a compaction, a tag, a branch with its own commits, a
    staged write and its cherry-pick: every way a file can stop being reachable."""
    from icefloe.arrow.writer import write_data_files

    t = catalog.create_table(
        name,
        schema=SCHEMA,
        partition_by=["cat"],
        properties={"write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode},
    )
    t.append(rows(1, 2, 3, cat="a"))
    t.append(rows(4, 5, cat="b"))
    t.append(rows(6, cat="a"))
    with t.manage_snapshots() as ms:
        ms.create_tag("v1")
    t.delete("id = 2")
    t.append(rows(7, 8, cat="b"), branch="dev")
    t.delete("id = 4", branch="dev")
    t.delete("id = 4")
    t.overwrite(rows(10, 11, cat="a"), "cat = 'a'")
    tasks = t.scan(row_filter="cat = 'b'").plan_files()
    small = [task.file for task in tasks]
    deletes = list({d.file_path: d for task in tasks for d in task.delete_files}.values())
    compacted = write_data_files(t.io, t.metadata, t.scan(row_filter="cat = 'b'").to_arrow())
    with t.transaction() as tx:
        tx.rewrite_files(remove=small, add=compacted, remove_deletes=deletes, delete_on_failure=True)
    t.upsert(rows(5, 12, cat="b"), ["id"])
    with t.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    staged = t.append(rows(20, cat="c"), snapshot_properties={"wap.id": "w1"})
    t.append(rows(30, cat="c"), snapshot_properties={"wap.id": "w2"})  # staged, never published
    assert staged is not None
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    t.append(rows(40, cat="d"))
    return t


def scans(t: Any) -> dict[str, list[int]]:
    out = {
        f"ref:{name}": sorted(t.scan(ref=name).to_arrow().column("id").to_pylist())
        for name in t.metadata.refs
    }
    return out


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_expiry_deletes_exactly_what_no_retained_snapshot_reaches(catalog: Any, mode: str) -> None:
    t = build_history(catalog, mode)
    before_md, before_refs, reach = t.metadata, scans(t), reach_by_snapshot(t)
    on_disk = files_under(t.location)
    result = t.maintenance.expire_snapshots(older_than=now_ms() + 1, retain_last=1)
    assert isinstance(result, ExpireSnapshotsResult)
    after = catalog.load_table("ns.t")
    expired = set(result.expired_snapshot_ids)
    # kept: main's head, the tag, dev's head; everything else is old enough and on no ref
    kept = {before_md.refs[n].snapshot_id for n in ("main", "v1", "dev")}
    assert expired == {s.snapshot_id for s in before_md.snapshots} - kept
    assert set(after.metadata.snapshots_by_id) == kept
    want = expected_unreachable(reach, before_md, after.metadata, expired)
    got = {local(p) for p in result.deleted_files}
    assert got == want
    assert result.deleted_manifest_lists_count == len(expired)
    assert result.deleted_data_files_count > 0 and result.deleted_manifests_count > 0
    if mode == "merge-on-read":
        assert result.deleted_position_delete_files_count > 0
    assert not result.not_deleted and not result.unreadable and not result.already_missing
    # nothing else on disk went; one metadata file came
    now_on_disk = files_under(t.location)
    assert on_disk - now_on_disk == want
    assert len(now_on_disk - on_disk) == 1
    assert scans(after) == before_refs
    assert t.metadata_location == after.metadata_location  # the handle was refreshed
    assert_intact(after)
    assert referenced(after) <= files_under(t.location)


def test_dry_run_changes_nothing_and_names_the_same_files(catalog: Any) -> None:
    t = build_history(catalog)
    location, on_disk = t.metadata_location, files_under(t.location)
    older_than = now_ms() + 1
    dry = t.maintenance.expire_snapshots(older_than=older_than, retain_last=2, dry_run=True)
    assert dry.dry_run and dry.expired_snapshot_ids
    assert catalog.load_table("ns.t").metadata_location == location
    assert files_under(t.location) == on_disk
    real = t.maintenance.expire_snapshots(older_than=older_than, retain_last=2)
    assert real.expired_snapshot_ids == dry.expired_snapshot_ids
    assert real.removed_refs == dry.removed_refs
    assert {k: set(v) for k, v in real.files.items()} == {k: set(v) for k, v in dry.files.items()}
    assert_intact(t)


def test_without_clean_expired_files_only_metadata_changes(catalog: Any) -> None:
    t = build_history(catalog)
    on_disk = files_under(t.location)
    result = t.maintenance.expire_snapshots(older_than=now_ms() + 1, clean_expired_files=False)
    assert result.expired_snapshot_ids and not result.files and not result.cleaned
    assert len(catalog.load_table("ns.t").snapshots()) == 3
    assert on_disk <= files_under(t.location)
    # the files are orphans now: remove_orphan_files finds exactly them (and old metadata files
    # are still in the log)
    assert_intact(t)


def test_nothing_to_expire_commits_nothing(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA)
    t.append(rows(1))
    location = t.metadata_location
    result = t.maintenance.expire_snapshots()  # 5 days by default: nothing is that old
    assert result.expired_snapshot_ids == () and result.removed_refs == ()
    assert catalog.load_table("ns.t").metadata_location == location
    empty = catalog.create_table("ns.empty", schema=SCHEMA)
    assert empty.maintenance.expire_snapshots(older_than=now_ms()).expired_snapshot_ids == ()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"retain_last": 0}, ValidationError, "at least 1"),
        ({"retain_last": -3}, ValidationError, "at least 1"),
        ({"retain_last": 1.5}, ValidationError, "integer"),
        ({"older_than": "yesterday"}, ValidationError, "ISO"),
        ({"snapshot_ids": [123]}, NoSuchSnapshotError, "no such snapshot"),
        ({"snapshot_ids": ["x"]}, ValidationError, "integers"),
        ({"snapshot_ids": "head"}, ValidationError, "head of main"),
        ({"snapshot_ids": "tag"}, ValidationError, "head of v1"),
    ],
)
def test_bad_input_is_a_typed_error_and_changes_nothing(
    catalog: Any, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA)
    first = t.append(rows(1))
    t.append(rows(2))
    assert first is not None
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", first.snapshot_id)
    if kwargs.get("snapshot_ids") == "head":
        kwargs = {"snapshot_ids": [t.current_snapshot().snapshot_id]}
    elif kwargs.get("snapshot_ids") == "tag":
        kwargs = {"snapshot_ids": [first.snapshot_id]}
    location, on_disk = t.metadata_location, files_under(t.location)
    with pytest.raises(error, match=match):
        t.maintenance.expire_snapshots(**kwargs)
    assert catalog.load_table("ns.t").metadata_location == location
    assert files_under(t.location) == on_disk


def test_gc_disabled_tables_are_refused(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"gc.enabled": "false"})
    t.append(rows(1))
    with pytest.raises(ValidationError, match=r"gc\.enabled"):
        t.maintenance.expire_snapshots(older_than=now_ms())
    with pytest.raises(ValidationError, match=r"gc\.enabled"):
        t.maintenance.remove_orphan_files(older_than=now_ms())


@pytest.mark.parametrize("fault", [CommitFault.UNKNOWN_APPLIED, CommitFault.UNKNOWN_NOT_APPLIED])
def test_an_unknown_commit_outcome_deletes_nothing(catalog: Any, fault: CommitFault) -> None:
    build_history(catalog)
    faulty = FaultInjectingCatalog(catalog)
    t = faulty.load_table("ns.t")
    on_disk = files_under(t.location)
    faulty.inject(fault)
    with pytest.raises(CommitStateUnknownError):
        t.maintenance.expire_snapshots(older_than=now_ms() + 1)
    after = files_under(t.location)
    assert on_disk <= after and len(after - on_disk) == 1  # only the metadata file it tried
    assert_intact(catalog.load_table("ns.t"))


def test_expiring_chosen_snapshots(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA)
    ids = []
    for i in range(4):
        s = t.append(rows(i))
        assert s is not None
        ids.append(s.snapshot_id)
    t.delete("id = 1")
    result = t.maintenance.expire_snapshots(snapshot_ids=[ids[1], ids[2]])
    assert set(result.expired_snapshot_ids) == {ids[1], ids[2]}
    # the file of row 1 is deleted in the current snapshot, still live in snapshot ids[3]: kept
    assert result.deleted_data_files_count == 0 and result.deleted_manifest_lists_count == 2
    assert_intact(t)
    assert sorted(t.scan(snapshot_id=ids[3]).to_arrow().column("id").to_pylist()) == [0, 1, 2, 3]


def test_staged_snapshots_expire_by_age_and_published_data_survives(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"write.wap.enabled": "true"})
    t.append(rows(1))
    published = t.append(rows(2), snapshot_properties={"wap.id": "a"})
    dropped = t.append(rows(3), snapshot_properties={"wap.id": "b"})
    t.append(rows(4))  # main moved on: publishing re-applies the staged append as a new snapshot
    assert published is not None and dropped is not None
    with t.manage_snapshots() as ms:
        ms.cherry_pick(published.snapshot_id)
    dropped_files = {f.file_path for f in _added_files(t, dropped)}
    assert published.snapshot_id not in {
        s.snapshot_id for s in t.metadata.ancestors(t.metadata.current_snapshot_id)
    }
    young = t.maintenance.expire_snapshots(retain_last=1)
    assert young.expired_snapshot_ids == ()  # staged snapshots younger than 5 days stay
    result = t.maintenance.expire_snapshots(older_than=now_ms() + 1)
    assert published.snapshot_id in result.expired_snapshot_ids
    assert dropped.snapshot_id in result.expired_snapshot_ids
    # the cherry-picked copy on main reads the published file: only the dropped write's file goes
    assert result.deleted_data_files_count == 1
    assert set(result.files["data"]) == dropped_files
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2, 4]
    assert_intact(t)


def _added_files(t: Any, snapshot: Any) -> list[Any]:
    from icefloe.manifest import read_manifest, read_manifest_list

    return [
        e.data_file
        for m in read_manifest_list(t.io, snapshot.manifest_list, cache=False)
        if m.added_snapshot_id == snapshot.snapshot_id
        for e in read_manifest(t.io, m, cache=False)
        if e.status.name == "ADDED"
    ]


def test_expired_refs_are_removed_and_their_snapshots_expire(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA)
    t.append(rows(1))
    t.append(rows(2), branch="b")
    with t.manage_snapshots() as ms:
        ms.create_tag("old", max_ref_age_ms=1)
        ms.set_max_ref_age_ms("b", 1)
    time.sleep(0.01)
    t.append(rows(3))
    result = t.maintenance.expire_snapshots(older_than=now_ms() + 1)
    assert set(result.removed_refs) == {"old", "b"}
    assert set(t.refs()) == {"main"} and len(t.snapshots()) == 1
    assert result.deleted_data_files_count == 1  # row 2 lived only on branch b
    assert_intact(t)


def test_statistics_files_of_expired_snapshots_are_deleted(catalog: Any, tmp_path: Path) -> None:
    """Statistics and partition-statistics files (written by other engines) go with their
    snapshot, and stay with a retained one."""
    t = catalog.create_table("ns.t", schema=SCHEMA)
    old = t.append(rows(1))
    t.append(rows(2))
    new = t.current_snapshot()
    assert old is not None and new is not None
    doc = json.loads(Path(local(t.metadata_location)).read_text())
    meta_dir = Path(local(t.metadata_location)).parent
    stats = {}
    for label, sid in (("old", old.snapshot_id), ("new", new.snapshot_id)):
        for kind in ("statistics", "partition-statistics"):
            p = meta_dir / f"{kind}-{label}-{uuid.uuid4()}.puffin"
            p.write_bytes(b"PFA1")
            stats[(label, kind)] = p
            entry: dict[str, Any] = {
                "snapshot-id": sid,
                "statistics-path": p.as_uri(),
                "file-size-in-bytes": 4,
            }
            if kind == "statistics":
                entry |= {"file-footer-size-in-bytes": 4, "blob-metadata": []}
            doc.setdefault(kind, []).append(entry)
    crafted = meta_dir / f"00099-{uuid.uuid4()}.metadata.json"
    crafted.write_text(json.dumps(doc))
    catalog.register_table("ns.s", crafted.as_uri())
    s = catalog.load_table("ns.s")
    assert len(s.metadata.statistics) == 2 and len(s.metadata.partition_statistics) == 2
    result = s.maintenance.expire_snapshots(older_than=now_ms() + 1)
    assert result.expired_snapshot_ids == (old.snapshot_id,)
    assert result.deleted_statistics_files_count == 2
    assert {local(p) for p in result.files["statistics"]} == {
        str(stats[("old", "statistics")]),
        str(stats[("old", "partition-statistics")]),
    }
    assert stats[("new", "statistics")].exists() and stats[("new", "partition-statistics")].exists()
    assert not stats[("old", "statistics")].exists()
    assert [st["snapshot-id"] for st in s.metadata.statistics] == [new.snapshot_id]
