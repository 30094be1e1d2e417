"""``rewrite_position_delete_files`` on format v3 tables: the v2 position delete files left by an
upgrade become deletion vectors (as Iceberg Java's action does on v3), one per data file holding
every position deleted from it, in one validated ``replace`` commit; a v3 table without v2
position delete files is left alone. Java reads the converted table in tests/v3/test_v3_interop.py.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from rewrite_checks import (
    MOR,
    check_snapshots_intact,
    data_files,
    every_snapshot_rows,
    live_entries,
    make_table,
    orphans,
    table_rows,
)

from icefloe.arrow.deletes import write_position_deletes
from icefloe.errors import ConflictError, ConflictingDeletionVectorsError, MissingFilesError
from icefloe.maintenance.rewrite_position_deletes import RewritePositionDeleteFiles
from icefloe.manifest import DataFileContent, FileFormat


def _deletes(t: Any) -> list[Any]:
    return [e.data_file for e in live_entries(t) if e.data_file.content == DataFileContent.POSITION_DELETES]


def _legacy(t: Any) -> list[Any]:
    return [d for d in _deletes(t) if d.file_format != FileFormat.PUFFIN]


def _dvs_per_data_file(t: Any) -> Counter[str]:
    return Counter(d.referenced_data_file for d in _deletes(t) if d.file_format == FileFormat.PUFFIN)


def _upgraded(catalog: Any, name: str) -> Any:
    """A v2 table with eight file-scoped position delete files (six in partition a, two in b) and
    one partition-scoped file shared by two data files of a; then upgraded to v3."""
    t = make_table(catalog, name, files=6, properties={**MOR, "format-version": "2"})
    for i in (1, 3, 5, 51, 53, 101, 2, 4):
        t.delete(f"id = {i}")
    first, second = sorted((f for f in data_files(t) if f.partition == ("a",)), key=lambda f: f.file_path)[:2]
    shared = write_position_deletes(
        t.io, t.metadata, {first.file_path: [7], second.file_path: [9]}, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=shared)
    t.upgrade_format_version(3)
    return t.refresh()


def test_v3_turns_v2_position_delete_files_into_deletion_vectors(catalog: Any) -> None:
    t = _upgraded(catalog, "convert")
    before = every_snapshot_rows(t)
    expected = table_rows(t)
    assert len(_legacy(t)) == 9
    # Java's planner: partition a has 7 small files (>= min-input-files 5), b's 2 stay.
    result = t.maintenance.rewrite_position_delete_files()
    assert [r.info.partition for r in result.rewrite_results] == [("a",)]
    (group,) = result.rewrite_results
    assert group.rewritten_delete_files_count == 7
    assert t.current_snapshot().summary.operation.value == "replace"
    assert table_rows(t) == expected
    assert all(d.partition == ("b",) for d in _legacy(t))
    dvs = _dvs_per_data_file(t)
    assert group.added_delete_files_count == len(dvs) and set(dvs.values()) == {1}
    # rewrite-all converts partition b too; nothing of v2 is left, one vector per data file
    t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert _legacy(t) == []
    assert set(_dvs_per_data_file(t).values()) == {1}
    assert table_rows(t) == expected
    check_snapshots_intact(t, before)
    assert orphans(t) == set()
    # and again: nothing left to convert
    snapshot = t.current_snapshot().snapshot_id
    assert t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"}).snapshot_ids == ()
    assert t.refresh().current_snapshot().snapshot_id == snapshot


def test_an_existing_vector_is_merged_not_doubled(catalog: Any) -> None:
    """A v3 delete in a data file that the shared (partition-scoped) file also applies to gives
    it a vector and keeps the shared file; converting the shared file replaces that vector with
    one holding both deletes."""
    t = _upgraded(catalog, "merge")
    t.delete("id = 0")  # the first data file of a (ids 0-49): folds its file-scoped deletes
    expected = table_rows(t)
    assert len(_dvs_per_data_file(t)) == 1
    result = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert result.rewrite_results
    assert _legacy(t) == []
    assert set(_dvs_per_data_file(t).values()) == {1}
    assert table_rows(t) == expected
    assert 0 not in {r[0] for r in table_rows(t)}


def test_v3_without_v2_position_deletes_does_nothing(catalog: Any) -> None:
    t = make_table(catalog, "nothing", files=3, properties={**MOR, "format-version": "3"})
    t.delete("id = 1 or id = 60")
    snapshot = t.current_snapshot().snapshot_id
    result = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert result.rewrite_results == () and result.snapshot_ids == ()
    assert t.refresh().current_snapshot().snapshot_id == snapshot


def test_a_vector_added_meanwhile_for_the_same_data_file_conflicts(catalog: Any) -> None:
    """Only a partition-scoped v2 file applies to the data file, so a concurrent delete that
    gives the file a vector keeps it: the conversion's own vector for that file would be a second
    one. The commit fails typed, the table keeps the concurrent delete, and the conversion's
    Puffin file is deleted."""
    t = make_table(catalog, "race", files=2, part="a", properties={**MOR, "format-version": "2"})
    first, second = sorted(data_files(t), key=lambda f: f.file_path)
    shared = write_position_deletes(
        t.io, t.metadata, {first.file_path: [1], second.file_path: [2]}, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=shared)
    t.upgrade_format_version(3)
    t = t.refresh()
    action = RewritePositionDeleteFiles(t, options={"rewrite-all": "true"})
    plan = action.plan()
    other = catalog.load_table("ns.race")
    other.delete("id = 10")  # in the first data file: a vector for it; the shared file stays
    expected = table_rows(other)
    with pytest.raises(ConflictError) as raised:
        action.execute(plan)
    assert isinstance(raised.value, ConflictingDeletionVectorsError), raised.value
    t = t.refresh()
    assert table_rows(t) == expected
    assert len(_legacy(t)) == 1
    assert orphans(t) == set()
    # run again on the new state: converted, one vector per data file
    t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert _legacy(t) == [] and set(_dvs_per_data_file(t).values()) == {1}
    assert table_rows(t) == expected


def test_one_group_a_partition_however_the_planner_bins_the_files(catalog: Any) -> None:
    """Tiny file groups would put the shared file and the first data file's own delete file in
    different groups, each writing a vector for that data file: on v3 a partition is one group."""
    t = _upgraded(catalog, "bins")
    expected = table_rows(t)
    result = t.maintenance.rewrite_position_delete_files(
        options={"rewrite-all": "true", "max-file-group-size-bytes": "1"}
    )
    assert sorted(r.info.partition for r in result.rewrite_results) == [("a",), ("b",)]
    assert result.rewrite_failures == ()
    assert _legacy(t) == [] and set(_dvs_per_data_file(t).values()) == {1}
    assert table_rows(t) == expected


def test_data_files_compacted_meanwhile_fail_it(catalog: Any) -> None:
    """A compaction that committed after the plan rewrote the data files the vectors would
    reference (and took their delete files with it): the conversion fails typed, the table is
    the compaction's, and the conversion's Puffin file is deleted."""
    t = _upgraded(catalog, "compacted")
    expected = table_rows(t)
    action = RewritePositionDeleteFiles(t, options={"rewrite-all": "true"})
    plan = action.plan()
    other = catalog.load_table("ns.compacted")
    other.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    snapshot = other.refresh().current_snapshot().snapshot_id
    with pytest.raises(MissingFilesError):
        action.execute(plan)
    t = t.refresh()
    assert t.current_snapshot().snapshot_id == snapshot
    assert table_rows(t) == expected
    assert orphans(t) == set()
