"""Planning with delete manifests, end to end: data appended through the table, delete files
written with icefloe's writers and committed as a row delta, then scanned (current and time
travel), with the sequence-number rules and delete-manifest pruning visible in the results."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icefloe
from icefloe.arrow.deletes import write_equality_deletes, write_position_deletes
from icefloe.manifest import DataFile, DataFileContent
from icefloe.spec.table_metadata import read_metadata_json
from icefloe.table import Table
from icefloe.testing import CountingFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])


def rows(ids: list[int], cat: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": [cat] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def table(any_catalog: icefloe.Catalog) -> Table:
    any_catalog.create_namespace("ns")
    t = any_catalog.create_table("ns.t", schema=SCHEMA, partition_by=["cat"])
    t.append(pa.concat_tables([rows(list(range(0, 10)), "a"), rows(list(range(10, 20)), "b")]))
    return t.refresh()


def data_files(t: Table) -> dict[str, DataFile]:
    """Live data files by partition value."""
    return {task.file.partition[0]: task.file for task in t.scan().plan_files()}


def positions_of(f: DataFile, ids: set[int]) -> list[int]:
    col = pq.read_table(f.file_path, columns=["id"]).column("id").to_pylist()
    return [i for i, v in enumerate(col) if v in ids]


def commit_deletes(t: Table, files: list[DataFile]) -> Table:
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=files)
    return t.refresh()


def ids(t: Table, **scan: Any) -> list[int]:
    return sorted(t.scan(**scan).to_arrow().column("id").to_pylist())


def test_position_and_equality_deletes_apply(table: Table) -> None:
    files = data_files(table)
    first = table.current_snapshot()
    assert first is not None
    spec_id = table.spec().spec_id
    pos = write_position_deletes(
        table.io,
        table.metadata,
        {files["a"].file_path: positions_of(files["a"], {1, 3})},
        spec_id=spec_id,
        partition=("a",),
    )
    eq = write_equality_deletes(
        table.io,
        table.metadata,
        pa.table({"id": pa.array([12, 15], pa.int64())}),
        ["id"],
        spec_id=spec_id,
        partition=("b",),
    )
    t = commit_deletes(table, pos + eq)
    expected = sorted(set(range(20)) - {1, 3, 12, 15})
    assert ids(t) == expected
    assert ids(t, snapshot_id=first.snapshot_id) == list(range(20))
    tasks = t.scan().plan_files()
    by_part = {task.file.partition[0]: task for task in tasks}
    assert [d.content for d in by_part["a"].delete_files] == [DataFileContent.POSITION_DELETES]
    assert [d.content for d in by_part["b"].delete_files] == [DataFileContent.EQUALITY_DELETES]
    # Filters and projections that leave out the equality column still see the deletes.
    assert (
        sorted(t.scan(row_filter="cat = 'b'", selected_fields=("cat",)).to_arrow().column("cat").to_pylist())
        == ["b"] * 8
    )
    assert t.scan().count() == len(expected)


def test_equality_deletes_do_not_touch_later_data(table: Table) -> None:
    eq = write_equality_deletes(
        table.io,
        table.metadata,
        pa.table({"id": pa.array([5], pa.int64())}),
        ["id"],
        spec_id=table.spec().spec_id,
        partition=("a",),
    )
    t = commit_deletes(table, eq)
    assert 5 not in ids(t)
    t.append(rows([5], "a"))  # re-inserted after the delete: a higher data sequence number
    t = t.refresh()
    assert ids(t).count(5) == 1


def test_position_deletes_committed_with_equal_sequence_number_apply(table: Table) -> None:
    # A row delta adding a data file and position deletes for it: same sequence number, applies.
    (new,) = icefloe.arrow.writer.write_data_files(table.io, table.metadata, rows([100, 101, 102], "a"))
    pos = write_position_deletes(
        table.io, table.metadata, {new.file_path: [1]}, spec_id=table.spec().spec_id, partition=("a",)
    )
    with table.transaction() as tx:
        tx.row_delta(add_data_files=[new], add_delete_files=pos)
    t = table.refresh()
    assert [i for i in ids(t) if i >= 100] == [100, 102]


def test_delete_manifests_are_pruned_and_opened_only_when_needed(table: Table) -> None:
    files = data_files(table)
    pos = write_position_deletes(
        table.io, table.metadata, {files["a"].file_path: [0]}, spec_id=table.spec().spec_id, partition=("a",)
    )
    t = commit_deletes(table, pos)
    counting = CountingFileIO(t.io)
    with counting.new_input(t.metadata_location).open() as f:
        metadata = read_metadata_json(f.read())
    handle = Table(t.identifier, metadata, t.metadata_location, counting, t.catalog)
    scan = handle.scan(row_filter="cat = 'b'")
    tasks = scan.plan_files()
    assert [task.file.partition for task in tasks] == [("b",)]
    assert tasks[0].delete_files == ()
    snap = metadata.current_snapshot()
    assert snap is not None
    opened = dict(counting.opened)
    opened.pop(t.metadata_location)
    opened.pop(snap.manifest_list)
    # the data manifest only: the delete manifest's partition summary excludes cat = 'b'
    assert len(opened) == 1, opened
    assert scan.planning_stats.manifests_skipped == 1
    scan_a = handle.scan(row_filter="cat = 'a'")
    (task,) = scan_a.plan_files()
    assert len(task.delete_files) == 1
    assert scan_a.planning_stats.delete_files == 1
