"""Snapshot expiry and orphan-file removal racing every kind of concurrent change.

Each scenario: a table with history (appends, a tag, a branch, a staged write); what the
maintenance action read; what committed concurrently (slipped in just before the other side's
compare-and-swap by `FaultInjectingCatalog.before_next_swap`); what we try. The outcome is either
a commit (after a retry that plans again) or a typed error, and in every case every snapshot
left in the table and every ref reads completely, with every file it references on disk.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest
from cleanup_checks import SCHEMA, assert_intact, files_under, local, referenced, rows

from icefloe.errors import NoSuchSnapshotError
from icefloe.maintenance.orphan_files import LocalOrphans, remove_orphan_files
from icefloe.testing import FaultInjectingCatalog

DAY_S = 86_400


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def setup_table(catalog: Any) -> dict[str, int]:
    """History: main has four snapshots (the oldest tagged), dev one more, one staged write.
    Returns the snapshot ids scenarios refer to."""
    t = catalog.create_table(
        "ns.t", schema=SCHEMA, partition_by=["cat"], properties={"write.wap.enabled": "true"}
    )
    first = t.append(rows(1, 2, cat="a"))
    second = t.append(rows(3, cat="b"))
    t.append(rows(4, cat="a"))
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", first.snapshot_id)  # type: ignore[union-attr]
    t.append(rows(5, cat="b"), branch="dev")
    staged = t.append(rows(6, cat="c"), snapshot_properties={"wap.id": "w"})
    t.append(rows(7, cat="a"))
    return {
        "first": first.snapshot_id,  # type: ignore[union-attr]
        "second": second.snapshot_id,  # type: ignore[union-attr]
        "staged": staged.snapshot_id,  # type: ignore[union-attr]
    }


def _compact(t: Any) -> None:
    from icefloe.arrow.writer import write_data_files

    small = [task.file for task in t.scan(row_filter="cat = 'a'").plan_files()]
    compacted = write_data_files(t.io, t.metadata, t.scan(row_filter="cat = 'a'").to_arrow())
    with t.transaction() as tx:
        tx.rewrite_files(remove=small, add=compacted, delete_on_failure=True)


def _mor_delete(t: Any) -> None:
    with t.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": "merge-on-read"})
    t.delete("id = 4")


def _expire(t: Any) -> None:
    t.maintenance.expire_snapshots(older_than=now_ms() + 1, retain_last=2)


# name -> (change, what happens to it when an expiry lands in its commit window)
CHANGES: dict[str, tuple[Callable[[Any, dict[str, int]], Any], type[Exception] | None]] = {
    "append": (lambda t, ids: t.append(rows(10, cat="a")), None),
    "delete-cow": (lambda t, ids: t.delete("id = 1"), None),
    "delete-mor": (lambda t, ids: _mor_delete(t), None),
    "overwrite": (lambda t, ids: t.overwrite(rows(11, cat="a"), "cat = 'a'"), None),
    "rewrite": (lambda t, ids: _compact(t), None),
    "expire": (lambda t, ids: _expire(t), None),
    "append-dev": (lambda t, ids: t.append(rows(12, cat="b"), branch="dev"), None),
    # changes that need a snapshot the expiry removes
    "tag-old-snapshot": (
        lambda t, ids: _manage(t, lambda ms: ms.create_tag("t2", ids["second"])),
        NoSuchSnapshotError,
    ),
    "rollback": (lambda t, ids: _manage(t, lambda ms: ms.rollback_to(ids["second"])), NoSuchSnapshotError),
    "publish-staged": (
        lambda t, ids: _manage(t, lambda ms: ms.cherry_pick(ids["staged"])),
        NoSuchSnapshotError,
    ),
}


def _manage(t: Any, step: Callable[[Any], Any]) -> None:
    with t.manage_snapshots() as ms:
        step(ms)


def _expiry(t: Any) -> Any:
    return t.maintenance.expire_snapshots(older_than=now_ms() + 1, retain_last=1)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_lands_while_the_expiry_commits(catalog: Any, change: str) -> None:
    """The expiry planned, the change committed, the expiry's swap lost: it plans again on the
    table with the change and commits; whatever the change made reachable survives."""
    ids = setup_table(catalog)
    faulty = FaultInjectingCatalog(catalog)
    expiring = faulty.load_table("ns.t")
    other = catalog.load_table("ns.t")
    fn, _ = CHANGES[change]
    faulty.before_next_swap(lambda: fn(other, ids))
    result = _expiry(expiring)
    outcomes = [c.outcome for c in faulty.commits]
    assert outcomes[0] == "lost" and outcomes[-1] == "ok", outcomes
    table = catalog.load_table("ns.t")
    assert_intact(table)
    assert not result.not_deleted
    if change == "tag-old-snapshot":
        assert ids["second"] in table.metadata.snapshots_by_id and "t2" in table.refs()
    if change == "rollback":
        assert table.current_snapshot().snapshot_id == ids["second"]  # type: ignore[union-attr]
        assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    if change == "publish-staged":
        assert 6 in table.scan().to_arrow().column("id").to_pylist()


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_lands_between_the_expiry_plan_and_its_commit(
    catalog: Any, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The change commits after the expiry planned but before the catalog reads the table for
    the expiry's commit: the expiry's requirements (every ref where it was, no new ref) fail,
    it plans again and commits. Without them a tag created on an expiring snapshot would vanish
    with the snapshot."""
    import icefloe.maintenance.expire_snapshots as expire

    ids = setup_table(catalog)
    t = catalog.load_table("ns.t")
    other = catalog.load_table("ns.t")
    fn, _ = CHANGES[change]
    real = expire.plan_expiry
    calls: list[int] = []

    def plan_then_race(metadata: Any, **kw: Any) -> Any:
        plan = real(metadata, **kw)
        calls.append(1)
        if len(calls) == 1:
            fn(other, ids)
        return plan

    monkeypatch.setattr(expire, "plan_expiry", plan_then_race)
    result = _expiry(t)
    table = catalog.load_table("ns.t")
    assert_intact(table)
    assert not result.not_deleted
    if change in ("tag-old-snapshot", "rollback", "publish-staged", "append", "append-dev"):
        assert len(calls) >= 2, "a moved or added ref must make the expiry plan again"
    if change == "tag-old-snapshot":
        assert table.refs()["t2"].snapshot_id == ids["second"]


def test_the_requirements_refuse_refs_created_meanwhile(catalog: Any) -> None:
    from icefloe.errors import CommitFailedError
    from icefloe.maintenance.expire_snapshots import plan_expiry

    ids = setup_table(catalog)
    t = catalog.load_table("ns.t")
    plan = plan_expiry(t.metadata, now_ms=now_ms() + 1, older_than_ms=now_ms() + 1, retain_last=1)
    with t.manage_snapshots() as ms:
        ms.create_tag("late", ids["second"])
    with pytest.raises(CommitFailedError, match="created concurrently"):
        for r in plan.requirements(local=True):
            r.validate(catalog.load_table("ns.t").metadata)
    # the REST protocol has no such requirement: only the refs the plan saw are asserted
    names = [getattr(r, "ref", None) for r in plan.requirements(local=False)]
    assert "late" not in names and set(plan.base.refs) <= set(names)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_an_expiry_lands_while_a_change_commits(catalog: Any, change: str) -> None:
    """The change prepared its commit on the old table, the expiry committed and deleted what it
    expired, the change's swap lost: it retries on the expired table and commits, or fails typed
    when it needs a snapshot that is gone."""
    ids = setup_table(catalog)
    faulty = FaultInjectingCatalog(catalog)
    changing = faulty.load_table("ns.t")
    expiring = catalog.load_table("ns.t")
    fn, error = CHANGES[change]
    results: list[Any] = []
    faulty.before_next_swap(lambda: results.append(_expiry(expiring)))
    if error is None:
        fn(changing, ids)
    else:
        with pytest.raises(error):
            fn(changing, ids)
    assert results and results[0].expired_snapshot_ids
    table = catalog.load_table("ns.t")
    assert_intact(table)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_orphan_removal_in_a_commit_window_keeps_the_changes_files(catalog: Any, change: str) -> None:
    """Orphan removal runs between a change writing its files and committing them: with the
    default age threshold the change's new files are too young to be candidates; only the old
    orphans go, and the change commits (or fails typed, as without orphan removal)."""
    ids = setup_table(catalog)
    t = catalog.load_table("ns.t")
    data_dir = local(t.location) + "/data"
    old = time.time() - 4 * DAY_S
    planted = [f"{data_dir}/cat=a/orphan-{i}.parquet" for i in range(3)]
    for p in planted:
        with open(p, "wb") as f:
            f.write(b"x")
        os.utime(p, (old, old))
    faulty = FaultInjectingCatalog(catalog)
    changing = faulty.load_table("ns.t")
    found: list[Any] = []
    faulty.before_next_swap(
        lambda: found.append(catalog.load_table("ns.t").maintenance.remove_orphan_files())
    )
    fn, _ = CHANGES[change]
    fn(changing, ids)  # no expiry in this scenario: every change commits
    assert found and {local(p) for p in found[0].orphan_files} == set(planted)
    table = catalog.load_table("ns.t")
    assert_intact(table)
    assert not any(os.path.exists(p) for p in planted)


def _queue_rewrite(t: Any, tx: Any) -> None:
    from icefloe.arrow.writer import write_data_files

    small = [task.file for task in t.scan(row_filter="cat = 'a'").plan_files()]
    compacted = write_data_files(t.io, t.metadata, t.scan(row_filter="cat = 'a'").to_arrow())
    tx.rewrite_files(remove=small, add=compacted, delete_on_failure=True)


QUEUED: dict[str, Callable[[Any, Any], Any]] = {
    "append": lambda t, tx: tx.append(rows(10, cat="a")),
    "delete-cow": lambda t, tx: tx.delete("id = 1"),
    "overwrite": lambda t, tx: tx.overwrite(rows(11, cat="a"), "cat = 'a'"),
    "rewrite": _queue_rewrite,
}


@pytest.mark.parametrize("change", sorted(QUEUED))
def test_files_committed_after_the_listing_are_not_orphans(catalog: Any, change: str) -> None:
    """Even with ``older_than=now``: a change wrote its data files, the directory was listed
    (they are in the listing, old enough), then the change committed; the table's references
    are read after the listing, so its files are kept."""
    setup_table(catalog)
    t = catalog.load_table("ns.t")
    other = catalog.load_table("ns.t")
    before = files_under(t.location)
    tx = other.transaction()
    QUEUED[change](other, tx)
    written = files_under(t.location) - before
    assert written, "the queued change wrote its data files"
    time.sleep(0.01)

    class CommitAfterListing(LocalOrphans):
        def list_files(self, options: Any) -> Any:
            listed = list(super().list_files(options))
            assert written <= {local(p) for p in listed}
            tx.commit()
            return iter(listed)

    result = remove_orphan_files(t, older_than=now_ms(), runner=CommitAfterListing(t.io))
    assert not written & {local(p) for p in result.orphan_files}
    table = catalog.load_table("ns.t")
    assert_intact(table)
    assert referenced(table) <= files_under(table.location)
