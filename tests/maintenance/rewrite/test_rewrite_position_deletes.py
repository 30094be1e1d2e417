"""``table.maintenance.rewrite_position_delete_files`` and ``remove-dangling-deletes``: small
position delete files merged per partition, deletes of data files that are gone dropped, the
newest data sequence number kept, equality deletes left alone."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rewrite_checks import (
    MOR,
    check_snapshots_intact,
    data_files,
    delete_files,
    every_snapshot_rows,
    files_under,
    live_entries,
    make_table,
    orphans,
    table_rows,
)

from icefloe.arrow.deletes import write_equality_deletes, write_position_deletes
from icefloe.errors import ConfigError, ExpressionError
from icefloe.io.local import local_path
from icefloe.maintenance.dangling_deletes import find_dangling_deletes
from icefloe.manifest import DataFileContent


def _many_small_deletes(catalog: Any, name: str) -> Any:
    t = make_table(catalog, name, files=6, properties=MOR)
    for i in (1, 3, 5, 51, 53, 101, 2, 4):  # six in partition a, two in b
        t.delete(f"id = {i}")
    return t


def test_small_delete_files_are_merged_per_partition(catalog: Any) -> None:
    t = _many_small_deletes(catalog, "merge")
    before = every_snapshot_rows(t)
    expected = table_rows(t)
    seqs = {
        e.data_file.file_path: e.sequence_number
        for e in live_entries(t)
        if e.data_file.content != DataFileContent.DATA
    }
    result = t.maintenance.rewrite_position_delete_files()
    # partition a has 6 small files (>= min-input-files 5): one group; b's 2 files stay
    assert [r.info.partition for r in result.rewrite_results] == [("a",)]
    (group,) = result.rewrite_results
    assert group.rewritten_delete_files_count == 6 and group.added_delete_files_count == 1
    assert group.rewritten_records_count == group.added_records_count == 6
    assert table_rows(t) == expected
    merged = [
        e
        for e in live_entries(t)
        if e.data_file.content != DataFileContent.DATA and e.data_file.partition == ("a",)
    ]
    assert len(merged) == 1
    a_seqs = [s for p, s in seqs.items() if "part=a" in p]
    assert merged[0].sequence_number == max(a_seqs)  # the newest of the files it replaces
    assert t.current_snapshot().summary.operation.value == "replace"
    path = local_path(merged[0].data_file.file_path)
    table = pq.read_table(path)
    pairs = list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))
    assert pairs == sorted(pairs)
    check_snapshots_intact(t, before)
    assert orphans(t) == set()


def test_deletes_of_files_that_are_gone_are_dropped(catalog: Any) -> None:
    t = make_table(catalog, "gone", files=3, part="a")
    first, second, third = sorted(data_files(t), key=lambda f: f.file_path)
    # one position delete file for three data files (partition-scoped, as Java's writers make)
    deletes = write_position_deletes(
        t.io,
        t.metadata,
        {first.file_path: [0, 1], second.file_path: [2], third.file_path: [3, 4]},
        spec_id=0,
        partition=("a",),
    )
    assert deletes[0].referenced_data_file is None
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=deletes, delete_on_failure=True)
    with t.transaction() as tx:
        tx.delete_files([second])  # the second file goes whole; its deletes stay in the file
    expected = table_rows(t)
    before = every_snapshot_rows(t)
    result = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert result.rewritten_delete_files_count == 1 and result.added_delete_files_count == 1
    assert result.rewrite_results[0].added_records_count == 4
    (new,) = delete_files(t)
    refs = set(pq.read_table(local_path(new.file_path)).column(0).to_pylist())
    assert refs == {first.file_path, third.file_path}
    assert table_rows(t) == expected
    check_snapshots_intact(t, before)


def test_a_group_of_only_dead_deletes_is_removed(catalog: Any) -> None:
    t = make_table(catalog, "dead", files=2, part="a")
    first, second = sorted(data_files(t), key=lambda f: f.file_path)
    deletes = write_position_deletes(
        t.io, t.metadata, {first.file_path: [0], second.file_path: [1]}, spec_id=0, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=deletes, delete_on_failure=True)
    with t.transaction() as tx:
        tx.delete_files([first, second])
    result = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert result.rewritten_delete_files_count == 1 and result.added_delete_files_count == 0
    assert delete_files(t) == []


def test_equality_deletes_are_not_rewritten(catalog: Any) -> None:
    t = make_table(catalog, "eqonly", files=3, part="a")
    for i in range(6):
        files = write_equality_deletes(
            t.io, t.metadata, pa.table({"id": [i]}), ["id"], spec_id=0, partition=("a",)
        )
        with t.transaction() as tx:
            tx.row_delta(add_delete_files=files, delete_on_failure=True)
    result = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert result.rewrite_results == ()
    assert len(delete_files(t)) == 6


def test_where_and_options(catalog: Any) -> None:
    t = _many_small_deletes(catalog, "whereopts")
    location, on_disk = t.metadata_location, files_under(t.location)
    with pytest.raises(ConfigError, match="does not know"):
        t.maintenance.rewrite_position_delete_files(options={"delete-file-threshold": "3"})
    with pytest.raises(ExpressionError):
        t.maintenance.rewrite_position_delete_files(where="nope = 1")
    assert t.refresh().metadata_location == location and files_under(t.location) == on_disk
    result = t.maintenance.rewrite_position_delete_files(where="part = 'b'", options={"rewrite-all": "true"})
    assert [r.info.partition for r in result.rewrite_results] == [("b",)]
    result = t.maintenance.rewrite_position_delete_files(
        options={
            "min-input-files": "2",
            "partial-progress.enabled": "true",
            "partial-progress.max-commits": "5",
        }
    )
    assert [r.info.partition for r in result.rewrite_results] == [("a",)]


def test_remove_dangling_deletes_rules(catalog: Any) -> None:
    """Java's rules: a position delete older than every data file of its partition, an equality
    delete not newer than all of them, a delete in a partition without data, and (icefloe) a
    file-scoped position delete whose data file is gone, all dangle."""
    t = make_table(catalog, "dangle", files=2)
    a_files = sorted((f for f in data_files(t) if f.partition == ("a",)), key=lambda f: f.file_path)
    eq_old = write_equality_deletes(
        t.io, t.metadata, pa.table({"id": [1]}), ["id"], spec_id=0, partition=("a",)
    )
    pos_old = write_position_deletes(
        t.io, t.metadata, {a_files[0].file_path: [0]}, spec_id=0, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=[*eq_old, *pos_old], delete_on_failure=True)
    assert find_dangling_deletes(t.io, t.metadata, t.current_snapshot()) == []
    expected = table_rows(t)
    # compacting partition a leaves only data files with the compaction's starting sequence number
    t.maintenance.rewrite_data_files(where="part = 'a'", options={"rewrite-all": "true"})
    assert table_rows(t) == expected
    dangling = {d.file_path for d in find_dangling_deletes(t.io, t.metadata, t.current_snapshot())}
    # the file-scoped position delete went with its file; the equality delete now dangles
    assert dangling == {eq_old[0].file_path}
    result = t.maintenance.rewrite_data_files(
        options={"remove-dangling-deletes": "true", "min-input-files": "100"}
    )
    assert result.removed_delete_files_count == 1 and delete_files(t) == []
    assert table_rows(t) == expected
