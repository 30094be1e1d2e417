"""Which snapshots and refs an expiry removes: Iceberg Java's ``RemoveSnapshots`` rules, checked
on synthetic histories (metadata only, timestamps chosen) against the cases of Java's
``TestRemoveSnapshots`` and ``TestSnapshotRefRetention``-style scenarios."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from icefloe.errors import ValidationError
from icefloe.maintenance.expire_snapshots import plan_expiry
from icefloe.spec.metadata_builder import TableMetadataBuilder
from icefloe.spec.partition import UNPARTITIONED_SPEC
from icefloe.spec.schema import Schema
from icefloe.spec.snapshot import Operation, Snapshot, SnapshotRef, SnapshotRefType, Summary
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField

DAY = 86_400_000
NOW = 1_800_000_000_000
BRANCH, TAG = SnapshotRefType.BRANCH, SnapshotRefType.TAG


def history(
    snapshots: Sequence[tuple[int, int | None, int]],
    refs: Mapping[str, SnapshotRef],
    properties: Mapping[str, str] | None = None,
) -> TableMetadata:
    """A table whose snapshots are ``(id, parent, age in days)`` (in commit order) and whose refs
    are ``refs`` (``main`` included)."""
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    b = TableMetadataBuilder.new_table(
        schema, UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, "file:///t", dict(properties or {})
    )
    for seq, (sid, parent, age_days) in enumerate(snapshots, start=1):
        b.add_snapshot(
            Snapshot(
                sid,
                parent,
                seq,
                NOW - int(age_days * DAY),
                f"file:///t/metadata/snap-{sid}.avro",
                Summary(Operation.APPEND),
            )
        )
    # main last: the snapshot log records when main moved, and must not postdate the metadata
    for name, ref in sorted(refs.items(), key=lambda kv: kv[0] == "main"):
        b.set_ref(name, ref)
    return b.build()


def branch(sid: int, **kw: int) -> SnapshotRef:
    return SnapshotRef(sid, BRANCH, kw.get("min_keep"), kw.get("max_age"), kw.get("max_ref_age"))


def tag(sid: int, max_ref_age: int | None = None) -> SnapshotRef:
    return SnapshotRef(sid, TAG, max_ref_age_ms=max_ref_age)


def removed(md: TableMetadata, **kw: object) -> tuple[set[int], set[str]]:
    plan = plan_expiry(md, now_ms=NOW, **kw)  # type: ignore[arg-type]
    return set(plan.snapshot_ids), set(plan.refs)


LINE = [(1, None, 10), (2, 1, 8), (3, 2, 6), (4, 3, 4), (5, 4, 2), (6, 5, 0)]


def test_defaults_expire_snapshots_older_than_five_days_keeping_one() -> None:
    md = history(LINE, {"main": branch(6)})
    assert removed(md) == ({1, 2, 3}, set())


def test_table_properties_set_the_defaults() -> None:
    md = history(LINE, {"main": branch(6)}, {"history.expire.max-snapshot-age-ms": str(3 * DAY)})
    assert removed(md) == ({1, 2, 3, 4}, set())
    md = history(
        LINE,
        {"main": branch(6)},
        {"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "3"},
    )
    assert removed(md) == ({1, 2, 3}, set())


def test_older_than_and_retain_last() -> None:
    md = history(LINE, {"main": branch(6)})
    assert removed(md, older_than_ms=NOW - 3 * DAY) == ({1, 2, 3, 4}, set())
    assert removed(md, older_than_ms=NOW + 1) == ({1, 2, 3, 4, 5}, set())
    # retain_last keeps that many ancestors however old they are
    assert removed(md, older_than_ms=NOW + 1, retain_last=4) == ({1, 2}, set())
    # and does not expire young ones: the age threshold still keeps 4, 5, 6
    assert removed(md, retain_last=2) == ({1, 2, 3}, set())


def test_retention_stops_at_the_first_snapshot_that_is_neither_young_nor_counted() -> None:
    # 3 is old, 2 is young again (a clock went back): Java stops walking at 3
    md = history([(1, None, 10), (2, 1, 1), (3, 2, 9), (4, 3, 0)], {"main": branch(4)})
    assert removed(md) == ({1, 2, 3}, set())


def test_branch_retention_overrides_the_defaults() -> None:
    md = history(
        [*LINE, (7, 3, 7), (8, 7, 6), (9, 8, 1)],
        {"main": branch(6), "audit": branch(9, min_keep=3), "b2": branch(8, max_age=10 * DAY)},
    )
    # audit keeps 9, 8, 7 (three); b2 keeps everything younger than 10 days on its line: 8, 7, 3, 2, 1
    # (ages 6, 7, 6, 8, 10 days: 1 is exactly 10 days old, kept)
    assert removed(md) == (set(), set())
    md = history(
        [*LINE, (7, 3, 7), (8, 7, 6), (9, 8, 1)],
        {"main": branch(6), "audit": branch(9, min_keep=2), "b2": branch(8, max_age=6 * DAY + 1)},
    )
    # audit keeps 9, 8; b2 keeps 8 only (7 is 7 days old); main keeps 6, 5, 4
    assert removed(md) == ({1, 2, 3, 7}, set())


def test_an_explicit_older_than_does_not_override_a_branch_max_snapshot_age() -> None:
    md = history([*LINE, (7, 6, 0)], {"main": branch(6), "b": branch(7, max_age=20 * DAY)})
    # b's own age keeps its whole line (Java: ref.maxSnapshotAgeMs() wins over expireOlderThan)
    assert removed(md, older_than_ms=NOW + 1) == (set(), set())


def test_tags_keep_their_snapshot_but_not_its_ancestors() -> None:
    md = history(LINE, {"main": branch(6), "v1": tag(2)})
    assert removed(md) == ({1, 3}, set())


def test_refs_older_than_their_max_ref_age_are_removed_main_never() -> None:
    md = history(
        LINE,
        {
            "main": branch(1, max_ref_age=1),
            "old_tag": tag(2, max_ref_age=7 * DAY),
            "young_tag": tag(5, max_ref_age=7 * DAY),
            "old_branch": branch(3, max_ref_age=DAY),
        },
    )
    ids, refs = removed(md, retain_last=1)
    assert refs == {"old_tag", "old_branch"}
    # main (at 1) keeps 1; young_tag keeps 5; 4 and 6 are on no ref any more but younger than
    # five days; 2 and 3 lost their refs and are old
    assert ids == {2, 3}


def test_the_table_max_ref_age_applies_to_refs_without_their_own() -> None:
    md = history(
        LINE,
        {"main": branch(6), "t1": tag(1), "t2": tag(2, max_ref_age=100 * DAY), "b": branch(5)},
        {"history.expire.max-ref-age-ms": str(3 * DAY)},
    )
    ids, refs = removed(md)
    assert refs == {"t1"}
    assert ids == {1, 3}


def test_unreferenced_snapshots_expire_by_age_only() -> None:
    """Write-audit-publish staged snapshots, rolled-back snapshots and the sources of
    cherry-picks are on no branch: kept while younger than the default threshold, even when a
    branch keeps more by count."""
    md = history(
        [(1, None, 10), (2, 1, 9), (3, 2, 8), (10, 2, 7), (11, 3, 1)],  # 10 staged old, 11 staged young
        {"main": branch(3, min_keep=5)},
    )
    assert removed(md) == ({10}, set())
    assert removed(md, older_than_ms=NOW - 8 * DAY) == (set(), set())


def test_explicit_snapshot_ids_expire_even_young_snapshots() -> None:
    md = history(LINE, {"main": branch(6), "v": tag(3)})
    assert removed(md, snapshot_ids=[5]) == ({1, 2, 5}, set())
    assert removed(md, snapshot_ids=[99]) == ({1, 2}, set())  # gone already: skipped


def test_a_snapshot_that_a_ref_keeps_cannot_be_expired_explicitly() -> None:
    md = history(LINE, {"main": branch(6), "v": tag(3)})
    with pytest.raises(ValidationError, match="head of v"):
        plan_expiry(md, now_ms=NOW, snapshot_ids=[3])
    with pytest.raises(ValidationError, match="head of main"):
        plan_expiry(md, now_ms=NOW, snapshot_ids=[6])
    # a ref that expires itself does not protect its snapshot
    md = history(LINE, {"main": branch(6), "v": tag(3, max_ref_age=DAY)})
    assert removed(md, snapshot_ids=[3]) == ({1, 2, 3}, {"v"})


def test_an_empty_table_expires_nothing() -> None:
    md = history([], {})
    assert removed(md, older_than_ms=NOW) == (set(), set())
