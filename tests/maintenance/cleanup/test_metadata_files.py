"""Metadata-file cleanup on commit (``write.metadata.delete-after-commit.enabled``,
``write.metadata.previous-versions-max``) and purges that leave nothing behind."""

from __future__ import annotations

import time
from typing import Any

import pytest
from cleanup_checks import SCHEMA, assert_intact, files_under, local, rows

from icefloe.catalog import TableCommit
from icefloe.spec.updates import SetProperties


def metadata_files(t: Any) -> set[str]:
    return {p for p in files_under(t.location) if p.endswith(".metadata.json")}


def commit_many(t: Any, n: int, start: int = 0) -> None:
    """``n`` commits of every kind: data, deletes, properties, refs."""
    for i in range(start, start + n):
        kind = i % 4
        if kind == 0:
            t.append(rows(i, cat=f"c{i % 3}"))
        elif kind == 1:
            with t.transaction() as tx:
                tx.set_properties(**{"note": str(i)})
        elif kind == 2:
            t.delete(f"id = {i - 2}")
        else:
            with t.manage_snapshots() as ms:
                ms.create_tag(f"tag{i}")


@pytest.mark.parametrize(("keep", "commits"), [(1, 6), (3, 11), (5, 5)])
def test_delete_after_commit_keeps_previous_versions_max_plus_the_current(
    catalog: Any, keep: int, commits: int
) -> None:
    t = catalog.create_table(
        "ns.t",
        schema=SCHEMA,
        partition_by=["cat"],
        properties={
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": str(keep),
        },
    )
    commit_many(t, commits)
    t.refresh()
    total = commits + 1  # the create wrote one too
    assert len(t.metadata.metadata_log) == min(keep, total - 1)
    expected = {local(t.metadata_location)} | {local(e.metadata_file) for e in t.metadata.metadata_log}
    assert metadata_files(t) == expected
    assert len(metadata_files(t)) == min(keep + 1, total)
    assert_intact(t)


def test_without_delete_after_commit_old_files_stay_and_the_log_is_trimmed(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"write.metadata.previous-versions-max": "2"})
    commit_many(t, 7)
    t.refresh()
    assert len(t.metadata.metadata_log) == 2
    assert len(metadata_files(t)) == 8


def test_the_default_log_holds_one_hundred_files(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t", schema=SCHEMA, properties={"write.metadata.delete-after-commit.enabled": "true"}
    )
    for i in range(104):
        with t.transaction() as tx:
            tx.set_properties(n=str(i))
    t.refresh()
    assert len(t.metadata.metadata_log) == 100
    assert len(metadata_files(t)) == 101


def test_turning_it_on_deletes_what_the_next_commit_drops(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, properties={"write.metadata.previous-versions-max": "2"})
    commit_many(t, 5)
    assert len(metadata_files(t)) == 6
    with t.transaction() as tx:
        tx.set_properties(**{"write.metadata.delete-after-commit.enabled": "true"})
    # Java: only the files this commit dropped from the log go (older ones are orphans now)
    assert len(metadata_files(t)) == 6
    t.append(rows(100))
    assert len(metadata_files(t)) == 6


def test_multi_table_commits_clean_up_too(catalog: Any) -> None:
    props = {
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "1",
    }
    a = catalog.create_table("ns.a", schema=SCHEMA, properties=props)
    b = catalog.create_table("ns.b", schema=SCHEMA, properties=props)
    for i in range(3):
        catalog.commit_tables(
            [
                TableCommit(("ns", "a"), (), [SetProperties({"n": str(i)})]),
                TableCommit(("ns", "b"), (), [SetProperties({"n": str(i)})]),
            ]
        )
    assert len(metadata_files(a)) == 2 and len(metadata_files(b)) == 2


@pytest.mark.parametrize("delete_after_commit", ["false", "true"])
def test_purge_leaves_no_file_under_the_table_location(catalog: Any, delete_after_commit: str) -> None:
    t = catalog.create_table(
        "ns.t",
        schema=SCHEMA,
        partition_by=["cat"],
        properties={
            "write.metadata.previous-versions-max": "3",
            "write.metadata.delete-after-commit.enabled": delete_after_commit,
            "write.delete.mode": "merge-on-read",
        },
    )
    commit_many(t, 24)
    t.maintenance.expire_snapshots(older_than=time.time_ns() // 1_000_000 + 1, retain_last=3)
    commit_many(t, 5, start=100)
    assert len(metadata_files(t)) > 4 or delete_after_commit == "true"
    report = catalog.drop_table("ns.t", purge=True)
    assert report is not None and report.complete, report
    assert files_under(t.location) == set()


def test_purge_follows_the_metadata_log_back_to_the_first_file(catalog: Any) -> None:
    """The issue's report: 402 metadata files, 301 left after a purge (only the current log of
    100 was followed)."""
    t = catalog.create_table("ns.t", schema=SCHEMA)
    t.append(rows(1))
    for i in range(400):
        with t.transaction() as tx:
            tx.set_properties(n=str(i))
    assert len(metadata_files(t)) == 402
    report = catalog.drop_table("ns.t", purge=True)
    assert report is not None and report.complete
    assert files_under(t.location) == set()
