"""Branches, tags, rollback, cherry-pick and write-audit-publish on the Arrow API, and scenario
tests of ref changes racing data commits."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import (
    ConflictError,
    ConflictingDataFilesError,
    IcefloeError,
    NoSuchSnapshotError,
    ValidationError,
)
from icefloe.table import Table
from icefloe.testing import CommitFault, FaultInjectingCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string())])


def rows(*ids: int, cat: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "cat": [cat] * len(ids)}, schema=SCHEMA)


def ids(t: Table, **scan: object) -> list[int]:
    return sorted(t.scan(**scan).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = InMemoryCatalog("m", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


@pytest.fixture
def table(catalog: InMemoryCatalog) -> Table:
    return catalog.create_table("ns.t", schema=SCHEMA, partition_by=["cat"])


# ------------------------------------------------------------------ branches and tags


def test_create_tag_and_branch_then_write_to_branch(table: Table) -> None:
    s1 = table.append(rows(1, 2))
    assert s1 is not None
    with table.manage_snapshots() as ms:
        ms.create_tag("v1", s1.snapshot_id, max_ref_age_ms=86_400_000)
        ms.create_branch("dev", min_snapshots_to_keep=3)
    refs = table.refs()
    assert refs["v1"].snapshot_id == s1.snapshot_id and refs["v1"].max_ref_age_ms == 86_400_000
    assert refs["dev"].snapshot_id == s1.snapshot_id and refs["dev"].min_snapshots_to_keep == 3

    dev = table.append(rows(3), branch="dev")
    assert dev is not None and dev.parent_snapshot_id == s1.snapshot_id
    # main did not move; the branch keeps its retention settings
    assert table.current_snapshot() == s1
    assert table.refs()["dev"].min_snapshots_to_keep == 3
    assert ids(table) == [1, 2]
    assert ids(table, ref="dev") == [1, 2, 3]
    assert ids(table, ref="v1") == [1, 2]

    table.delete("id = 1", branch="dev")
    table.overwrite(rows(10, cat="b"), "cat = 'b'", branch="dev")
    table.upsert(rows(2, 20, cat="a"), ["id"], branch="dev")
    table.replace_partitions(rows(30, cat="c"), branch="dev")
    assert ids(table, ref="dev") == [2, 3, 10, 20, 30]
    assert ids(table) == [1, 2]
    with table.transaction(branch="dev") as tx:
        tx.append(rows(40))
        tx.append(rows(50), branch="main")
    assert ids(table, ref="dev") == [2, 3, 10, 20, 30, 40]
    assert ids(table) == [1, 2, 50]


def test_write_to_a_new_branch_starts_from_main(table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1 is not None
    snap = table.append(rows(2), branch="feature")
    assert snap is not None and snap.parent_snapshot_id == s1.snapshot_id
    assert ids(table, ref="feature") == [1, 2]
    assert ids(table) == [1]


def test_writing_to_a_tag_is_refused(table: Table) -> None:
    table.append(rows(1))
    with table.manage_snapshots() as ms:
        ms.create_tag("t")
    before = table.metadata
    with pytest.raises(ValidationError, match="tag"):
        table.append(rows(2), branch="t")
    with pytest.raises(ValidationError, match="tag"):
        table.transaction(branch="t")
    assert table.refresh().metadata.snapshots == before.snapshots


def test_ref_errors_are_typed_and_change_nothing(table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1 is not None
    with table.manage_snapshots() as ms:
        ms.create_tag("t", s1.snapshot_id)
        ms.create_branch("b", s1.snapshot_id)
    before = table.refresh().metadata_location
    cases = [
        lambda ms: ms.create_tag("t", s1.snapshot_id),  # exists
        lambda ms: ms.create_branch("b"),  # exists
        lambda ms: ms.create_branch("x", 12345),  # unknown snapshot
        lambda ms: ms.remove_branch("t"),  # a tag
        lambda ms: ms.remove_tag("b"),  # a branch
        lambda ms: ms.remove_branch("nope"),
        lambda ms: ms.remove_branch("main"),
        lambda ms: ms.rename_branch("main", "m2"),
        lambda ms: ms.rename_branch("b", "t"),  # target exists
        lambda ms: ms.replace_branch("t", s1.snapshot_id),  # a tag
        lambda ms: ms.set_min_snapshots_to_keep("t", 2),  # tags keep no snapshots
        lambda ms: ms.set_max_ref_age_ms("b", 0),  # must be positive
        lambda ms: ms.create_branch("", s1.snapshot_id),
        lambda ms: ms.rollback_to(999),
        lambda ms: ms.set_current_snapshot(999),
        lambda ms: ms.cherry_pick(999),
        lambda ms: ms.rollback_to_timestamp(0),
        lambda ms: ms.fast_forward("b", "nope"),
    ]
    for case in cases:
        with pytest.raises(IcefloeError) as info, table.manage_snapshots() as ms:
            case(ms)
        assert isinstance(info.value, ValidationError | NoSuchSnapshotError), info.value
        assert table.refresh().metadata_location == before


def test_one_atomic_commit_with_many_steps(table: Table) -> None:
    s1 = table.append(rows(1))
    s2 = table.append(rows(2))
    assert s1 and s2
    location = table.metadata_location
    with table.manage_snapshots() as ms:
        ms.create_branch("b1", s1.snapshot_id)
        ms.rename_branch("b1", "b2")
        ms.create_tag("t", s2.snapshot_id)
        ms.replace_tag("t", s1.snapshot_id)
        ms.set_max_snapshot_age_ms("b2", 1000)
        ms.set_max_ref_age_ms("t", 5000)
        ms.rollback_to(s1.snapshot_id)
        assert ms.metadata.current_snapshot_id == s1.snapshot_id
        # nothing is visible before the block ends
        assert table.refresh().current_snapshot() == s2
    # exactly one new metadata file
    assert table.metadata_location != location
    assert len(table.metadata.metadata_log) == len(table.catalog.load_table("ns.t").metadata.metadata_log)
    refs = table.refs()
    assert set(refs) == {"main", "b2", "t"}
    assert refs["b2"].max_snapshot_age_ms == 1000 and refs["t"].max_ref_age_ms == 5000
    assert refs["t"].snapshot_id == s1.snapshot_id
    assert table.current_snapshot() == s1
    # the snapshot log records the rollback (history, main's ancestry)
    assert table.metadata.snapshot_log[-1].snapshot_id == s1.snapshot_id


def test_an_exception_in_the_block_commits_nothing(table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1
    location = table.metadata_location
    with pytest.raises(RuntimeError), table.manage_snapshots() as ms:
        ms.create_tag("t", s1.snapshot_id)
        raise RuntimeError("boom")
    assert table.refresh().metadata_location == location


def test_replace_and_fast_forward_branches(table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1
    with table.manage_snapshots() as ms:
        ms.create_branch("dev")
    table.append(rows(2), branch="dev")
    d2 = table.append(rows(3), branch="dev")
    assert d2
    with table.manage_snapshots() as ms:
        ms.fast_forward("main", "dev")
    assert table.current_snapshot() == d2
    assert ids(table) == [1, 2, 3]
    # diverge: main gets a commit dev does not have
    table.append(rows(4))
    table.append(rows(5), branch="dev")
    with pytest.raises(ValidationError, match="not an ancestor"), table.manage_snapshots() as ms:
        ms.fast_forward("main", "dev")
    with table.manage_snapshots() as ms:
        ms.replace_branch("main", "dev")  # allowed to lose main's commit
        ms.replace_branch("other", "main")  # creates other
    assert ids(table) == [1, 2, 3, 5]
    assert table.refs()["other"].snapshot_id == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    with table.manage_snapshots() as ms:
        ms.replace_branch("other", s1.snapshot_id)
    assert ids(table, ref="other") == [1]


def test_rollback_rules(table: Table) -> None:
    s1 = table.append(rows(1))
    s2 = table.append(rows(2))
    assert s1 and s2
    with table.manage_snapshots() as ms:
        ms.rollback_to(s1.snapshot_id)
    s3 = table.append(rows(3))
    assert s3 and s3.parent_snapshot_id == s1.snapshot_id
    # s2 is no longer in main's history: rollback_to refuses, set_current_snapshot does it
    with pytest.raises(ValidationError, match="not an ancestor"), table.manage_snapshots() as ms:
        ms.rollback_to(s2.snapshot_id)
    with table.manage_snapshots() as ms:
        ms.set_current_snapshot(s2.snapshot_id)
    assert ids(table) == [1, 2]
    with table.manage_snapshots() as ms:
        ms.rollback_to_timestamp(s2.timestamp_ms)  # strictly older than: s1
    assert table.current_snapshot() == s1


def test_create_branch_on_an_empty_table_makes_an_empty_snapshot(table: Table) -> None:
    with table.manage_snapshots() as ms:
        ms.create_branch("dev")
    assert table.current_snapshot() is None
    head = table.metadata.snapshot_for_ref("dev")
    assert head.parent_snapshot_id is None
    assert table.scan(ref="dev").to_arrow().num_rows == 0
    table.append(rows(1), branch="dev")
    assert ids(table, ref="dev") == [1]


# ------------------------------------------------------------------ write-audit-publish and cherry-pick


def test_wap_stage_audit_publish(table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1
    table.catalog.commit_table  # noqa: B018 - the catalog is the only CAS
    with table.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    staged = table.append(rows(2), snapshot_properties={"wap.id": "job-1"})
    assert staged is not None and staged.summary.get("wap.id") == "job-1"
    # staged: in the table, not current, not on any branch
    assert table.current_snapshot() == s1
    assert staged.snapshot_id in table.metadata.snapshots_by_id
    assert all(r.snapshot_id != staged.snapshot_id for r in table.refs().values())
    assert ids(table) == [1]
    assert ids(table, snapshot_id=staged.snapshot_id) == [1, 2]  # audit
    # a staged write may not also name a branch
    with pytest.raises(ValidationError, match="staged"):
        table.append(rows(9), snapshot_properties={"wap.id": "x"}, branch="dev")
    # publish: main has not moved, so this is a fast-forward to the staged snapshot itself
    with table.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    assert table.current_snapshot() == staged
    # the wap id cannot be published twice
    staged2 = table.append(rows(3), snapshot_properties={"wap.id": "job-1"})
    assert staged2
    with pytest.raises(ValidationError, match="already published"), table.manage_snapshots() as ms:
        ms.cherry_pick(staged2.snapshot_id)


def test_cherry_pick_append_onto_moved_main(table: Table) -> None:
    table.append(rows(1))
    with table.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    staged = table.append(rows(2), snapshot_properties={"wap.id": "w"})
    s3 = table.append(rows(3))  # main moves past the staged snapshot's parent
    assert staged and s3
    with table.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    head = table.current_snapshot()
    assert head is not None and head.parent_snapshot_id == s3.snapshot_id
    assert head.summary.get("source-snapshot-id") == str(staged.snapshot_id)
    assert head.summary.get("published-wap-id") == "w"
    assert head.operation.value == "append"
    assert ids(table) == [1, 2, 3]
    # picking it again is refused
    with pytest.raises(ValidationError, match=r"already (picked|published)"), table.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    # the staged snapshot's files are still referenced: nothing was deleted
    assert ids(table, snapshot_id=staged.snapshot_id) == [1, 2]


def test_cherry_pick_from_a_branch_and_refusals(table: Table) -> None:
    table.append(rows(1))
    with table.manage_snapshots() as ms:
        ms.create_branch("dev")
    dev_append = table.append(rows(2), branch="dev")
    dev_delete = table.delete("id = 1", branch="dev")
    table.append(rows(3))
    assert dev_append and dev_delete
    with table.manage_snapshots() as ms:
        ms.cherry_pick(dev_append.snapshot_id)
    assert ids(table) == [1, 2, 3]
    # a delete can only be fast-forwarded
    with pytest.raises(ValidationError, match="only appends"), table.manage_snapshots() as ms:
        ms.cherry_pick(dev_delete.snapshot_id)
    with pytest.raises(ValidationError, match="already in main"), table.manage_snapshots() as ms:
        ms.cherry_pick(table.current_snapshot().snapshot_id)  # type: ignore[union-attr]


def test_cherry_pick_dynamic_overwrite(table: Table) -> None:
    table.append(rows(1, 2, cat="a"))
    table.append(rows(3, cat="b"))
    with table.manage_snapshots() as ms:
        ms.create_branch("stage")
    over = table.replace_partitions(rows(10, cat="a"), branch="stage")
    assert over and over.summary.get("replace-partitions") == "true"
    table.append(rows(4, cat="b"))  # another partition changes on main: still pickable
    with table.manage_snapshots() as ms:
        ms.cherry_pick(over.snapshot_id)
    assert ids(table) == [3, 4, 10]
    assert table.current_snapshot().operation.value == "overwrite"  # type: ignore[union-attr]

    # based on a snapshot outside main's history: refused
    over_b = table.replace_partitions(rows(20, cat="b"), branch="stage")
    assert over_b
    with pytest.raises(ValidationError, match="not based on"), table.manage_snapshots() as ms:
        ms.cherry_pick(over_b.snapshot_id)
    # a replaced partition that changed on main since: refused
    with table.manage_snapshots() as ms:
        ms.replace_branch("stage", "main")
    over2 = table.replace_partitions(rows(20, cat="b"), branch="stage")
    table.append(rows(5, cat="b"))
    assert over2
    with pytest.raises(ConflictingDataFilesError), table.manage_snapshots() as ms:
        ms.cherry_pick(over2.snapshot_id)
    assert ids(table) == [3, 4, 5, 10]


# ------------------------------------------------------------------ concurrency scenarios


def test_concurrent_data_commit_on_another_branch_is_merged(catalog: InMemoryCatalog, table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1
    ms = table.manage_snapshots()
    ms.create_tag("t", s1.snapshot_id)
    ms.create_branch("dev", s1.snapshot_id)
    # meanwhile another writer appends to main
    other = catalog.load_table("ns.t")
    s2 = other.append(rows(2))
    ms.commit()
    table.refresh()
    assert table.current_snapshot() == s2  # nothing lost
    assert set(table.refs()) == {"main", "t", "dev"}


def test_concurrent_move_of_a_ref_we_change_is_a_conflict(catalog: InMemoryCatalog, table: Table) -> None:
    s1 = table.append(rows(1))
    s2 = table.append(rows(2))
    assert s1 and s2
    ms = table.manage_snapshots()
    ms.rollback_to(s1.snapshot_id)
    other = catalog.load_table("ns.t")
    s3 = other.append(rows(3))
    with pytest.raises(ConflictError, match="changed concurrently"):
        ms.commit()
    assert table.refresh().current_snapshot() == s3  # the concurrent commit stands


def test_concurrent_ref_creation_conflicts(catalog: InMemoryCatalog, table: Table) -> None:
    s1 = table.append(rows(1))
    assert s1
    ms = table.manage_snapshots()
    ms.create_branch("dev", s1.snapshot_id)
    other = catalog.load_table("ns.t")
    other.append(rows(2), branch="dev")  # creates dev concurrently
    with pytest.raises(ConflictError):
        ms.commit()
    assert ids(table.refresh(), ref="dev") == [1, 2]


def test_branch_write_validates_against_the_branch_history(catalog: InMemoryCatalog, table: Table) -> None:
    table.append(rows(1, cat="a"))
    with table.manage_snapshots() as ms:
        ms.create_branch("dev")
    tx = table.transaction(branch="dev")
    tx.overwrite(rows(9, cat="a"), "cat = 'a'")  # replaces what dev had in partition a
    # concurrently: main gets data in partition a (not dev's history: no conflict) ...
    catalog.load_table("ns.t").append(rows(2, cat="a"))
    # ... and dev gets data in partition a (dev's history: a serializable conflict)
    catalog.load_table("ns.t").append(rows(3, cat="a"), branch="dev")
    with pytest.raises(ConflictingDataFilesError):
        tx.commit()
    t = table.refresh()
    assert ids(t) == [1, 2] and ids(t, ref="dev") == [1, 3]
    # without the concurrent dev commit, the main commit alone does not conflict
    with t.transaction(branch="dev") as tx2:
        tx2.overwrite(rows(9, cat="a"), "cat = 'a'")
        catalog.load_table("ns.t").append(rows(4, cat="a"))
    assert ids(t.refresh(), ref="dev") == [9] and ids(t) == [1, 2, 4]


def test_branch_writes_race_on_sequence_numbers(catalog: InMemoryCatalog, table: Table) -> None:
    """A write to a branch prepared before a commit to main gets a stale sequence number: the
    retry loop re-applies it instead of failing."""
    table.append(rows(1))
    with table.manage_snapshots() as ms:
        ms.create_branch("dev")
    tx = table.transaction(branch="dev")
    tx.append(rows(2))
    catalog.load_table("ns.t").append(rows(3))
    tx.commit()
    t = table.refresh()
    assert ids(t) == [1, 3] and ids(t, ref="dev") == [1, 2]
    seqs = [s.sequence_number for s in t.snapshots()]
    assert len(set(seqs)) == len(seqs)


def test_staged_snapshot_races_a_commit(catalog: InMemoryCatalog, table: Table) -> None:
    table.append(rows(1))
    with table.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    tx = table.transaction()
    tx.append(rows(2), snapshot_properties={"wap.id": "w"})
    catalog.load_table("ns.t").append(rows(3))
    [staged] = tx.commit()
    t = table.refresh()
    assert ids(t) == [1, 3]
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    assert ids(t) == [1, 2, 3]


# ------------------------------------------------------------------ fault injection


@pytest.fixture
def faulty(tmp_path: Path) -> FaultInjectingCatalog:
    wh = tmp_path / "fwh"
    wh.mkdir()
    cat = FaultInjectingCatalog(InMemoryCatalog("m", warehouse=wh.as_uri()))
    cat.create_namespace("ns")
    return cat


def test_lost_swap_is_retried(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    s1 = t.append(rows(1))
    assert s1
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    with t.manage_snapshots() as ms:
        ms.create_tag("t", s1.snapshot_id)
    assert faulty.pending_faults == 0
    assert t.refresh().refs()["t"].snapshot_id == s1.snapshot_id


def test_race_in_the_commit_window(faulty: FaultInjectingCatalog) -> None:
    """A concurrent append to main lands between our validation and our swap: a tag is merged on
    retry; a rollback of main is a conflict."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    s1 = t.append(rows(1))
    assert s1
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.append(rows(2)))
    with t.manage_snapshots() as ms:
        ms.create_tag("t", s1.snapshot_id)
    assert ids(t.refresh()) == [1, 2] and "t" in t.refs()
    faulty.before_next_swap(lambda: other.refresh().append(rows(3)))
    with pytest.raises(ConflictError), t.manage_snapshots() as ms:
        ms.rollback_to(s1.snapshot_id)
    assert ids(t.refresh()) == [1, 2, 3]


def test_cherry_pick_with_an_unknown_outcome_that_landed(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    t.append(rows(1))
    with t.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    staged = t.append(rows(2), snapshot_properties={"wap.id": "w"})
    t.append(rows(3))
    assert staged
    faulty.inject(CommitFault.UNKNOWN_APPLIED)
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    t.refresh()
    assert ids(t) == [1, 2, 3]
    # every file the new snapshot references exists (nothing was cleaned up)
    assert t.scan().to_arrow().num_rows == 3
    assert t.current_snapshot().summary.get("published-wap-id") == "w"  # type: ignore[union-attr]
