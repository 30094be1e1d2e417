"""Merge-on-read deletes on format v3 tables write deletion vectors (Puffin), one per data file.

Scenarios: a delete writes DVs for several data files into one Puffin file; a second delete
merges the old DV and removes it in the same commit; updates write DVs too; a table upgraded from
v2 folds its position delete files into the DV (file-scoped ones go, partition-scoped ones stay);
two concurrent DVs for one data file conflict."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.arrow.deletes import write_position_deletes
from icefloe.arrow.deletion_vectors import DVTarget, write_deletion_vectors
from icefloe.errors import ConflictingDeletionVectorsError, UnsupportedFeatureError, ValidationError
from icefloe.io.puffin import deletion_vector_positions, read_blob
from icefloe.manifest import DataFileContent, FileFormat, ManifestContent, read_manifest, read_manifest_list

from .conftest import MOR, SCHEMA, rows


def _ids(t: Any) -> list[int]:
    return sorted(r["id"] for r in t.scan().to_arrow().to_pylist())


def _live_deletes(t: Any) -> list[Any]:
    snap = t.current_snapshot()
    return [
        e.data_file
        for m in read_manifest_list(t.io, snap.manifest_list)
        if m.content == ManifestContent.DELETES
        for e in read_manifest(t.io, m)
        if e.is_live
    ]


def _dv_positions(t: Any, dv: Any) -> list[int]:
    blob = read_blob(t.io, dv.file_path, dv.content_offset, dv.content_size_in_bytes)
    return deletion_vector_positions(blob).tolist()


def _v3(catalog: Any, **props: str) -> Any:
    t = catalog.create_table(
        "ns.t", schema=SCHEMA, partition_by=["cat"], properties={"format-version": "3", **MOR, **props}
    )
    t.append(rows(range(20)))
    return t


def test_delete_writes_one_puffin_with_a_dv_per_data_file(catalog: Any) -> None:
    t = _v3(catalog)
    t.delete("id < 4")
    dvs = _live_deletes(t)
    assert len(dvs) == 2
    assert len({d.file_path for d in dvs}) == 1 and dvs[0].file_path.endswith("-deletes.puffin")
    data = {task.file.file_path: task.file for task in t.scan().plan_files()}
    for dv in dvs:
        assert dv.content == DataFileContent.POSITION_DELETES and dv.file_format == FileFormat.PUFFIN
        assert dv.referenced_data_file in data
        assert dv.partition == data[dv.referenced_data_file].partition
        assert dv.content_offset >= 4 and dv.content_size_in_bytes > 12
        assert dv.record_count == 2 == len(_dv_positions(t, dv))
        assert dv.lower_bounds is None
    assert _ids(t) == list(range(4, 20))
    summary = t.current_snapshot().summary.properties
    assert summary["added-dvs"] == "2" and summary["added-position-deletes"] == "4"
    assert "added-position-delete-files" not in summary


def test_second_delete_merges_and_replaces_the_dv(catalog: Any) -> None:
    t = _v3(catalog)
    t.delete("id = 2")
    (old,) = _live_deletes(t)
    t.delete("id = 4 or id = 6")
    (new,) = _live_deletes(t)  # exactly one live DV for the data file
    assert new.file_path != old.file_path
    assert new.referenced_data_file == old.referenced_data_file
    assert _dv_positions(t, new) == [1, 2, 3]  # ids 2, 4, 6 are rows 1..3 of the "a" file
    summary = t.current_snapshot().summary.properties
    assert summary["removed-dvs"] == "1" and summary["added-dvs"] == "1"
    assert _ids(t) == [i for i in range(20) if i not in (2, 4, 6)]
    # the old snapshot still reads through its own DV
    first = t.snapshots()[1].snapshot_id
    assert sorted(r["id"] for r in t.scan(snapshot_id=first).to_arrow().to_pylist()) == [
        i for i in range(20) if i != 2
    ]


def test_dvs_of_other_data_files_in_the_same_puffin_survive(catalog: Any) -> None:
    t = _v3(catalog)
    t.delete("id in (2, 3)")  # one Puffin file, DVs for the "a" and the "b" file
    t.delete("id = 4")  # replaces only the "a" file's DV
    live = _live_deletes(t)
    assert len(live) == 2 and len({d.file_path for d in live}) == 2
    assert _ids(t) == [i for i in range(20) if i not in (2, 3, 4)]


def test_update_writes_dvs(catalog: Any) -> None:
    t = _v3(catalog)
    t.delete("id = 0")
    t.update("id < 5", {"cat": "z"})
    got = sorted((r["id"], r["cat"]) for r in t.scan().to_arrow().to_pylist())
    assert got == [(i, "z" if i < 5 else "ab"[i % 2]) for i in range(1, 20)]
    dvs = [d for d in _live_deletes(t) if d.file_format == FileFormat.PUFFIN]
    assert len(dvs) == 2 and len({d.referenced_data_file for d in dvs}) == 2


def test_deleting_every_row_drops_file_and_dv(catalog: Any) -> None:
    t = _v3(catalog)
    t.delete("id = 0")
    t.delete("cat = 'a'")
    assert _live_deletes(t) == []
    assert _ids(t) == list(range(1, 20, 2))


def test_upgraded_table_folds_position_deletes(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t", schema=SCHEMA, partition_by=["cat"], properties={"format-version": "2", **MOR}
    )
    t.append(rows(range(0, 20, 2)))  # two data files in partition "a"
    t.append(rows(range(20, 40, 2)))
    t.delete("id = 0")  # a file-scoped position delete file
    files = {pq.read_table(task.file.file_path)["id"][0].as_py(): task.file for task in t.scan().plan_files()}
    first, second = files[0], files[20]
    # a partition-scoped position delete file covering both data files
    shared = write_position_deletes(
        t.io, t.metadata, {first.file_path: [2], second.file_path: [0]}, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=shared)
    assert _ids(t) == [i for i in range(2, 40, 2) if i not in (4, 20)]

    t.upgrade_format_version(3)
    assert _ids(t) == [i for i in range(2, 40, 2) if i not in (4, 20)]  # old deletes still apply
    t.delete("id = 6")
    live = _live_deletes(t)
    dvs = [d for d in live if d.file_format == FileFormat.PUFFIN]
    parquet = [d for d in live if d.file_format == FileFormat.PARQUET]
    assert len(dvs) == 1 and dvs[0].referenced_data_file == first.file_path
    # the DV holds every delete of the file: the old file-scoped one (row 0), the shared one
    # (row 2) and the new one (row 3); the file-scoped file is gone, the shared one stays
    assert _dv_positions(t, dvs[0]) == [0, 2, 3]
    assert [d.file_path for d in parquet] == [shared[0].file_path]
    assert _ids(t) == [i for i in range(2, 40, 2) if i not in (4, 6, 20)]


def test_concurrent_dvs_for_one_data_file_conflict(catalog: Any) -> None:
    t = _v3(catalog, **{"write.delete.isolation-level": "snapshot"})
    other = catalog.load_table("ns.t")
    tx = other.transaction()
    tx.delete("id = 4")  # reads the table now
    t.delete("id = 2")  # commits a DV for the same data file first
    with pytest.raises(ConflictingDeletionVectorsError) as e:
        tx.commit()
    assert e.value.hint and "one deletion vector per data file" in e.value.hint
    assert _ids(catalog.load_table("ns.t")) == [i for i in range(20) if i != 2]
    # the statement on the table restarts on the new snapshot and merges both deletes
    other.refresh()
    other.delete("id = 4")
    assert _ids(other) == [i for i in range(20) if i not in (2, 4)]
    (dv,) = [d for d in _live_deletes(other) if d.referenced_data_file and "a" in str(d.partition)]
    assert _dv_positions(other, dv) == [1, 2]


def test_two_dvs_for_one_file_in_one_commit_are_refused(catalog: Any) -> None:
    t = _v3(catalog)
    task = next(iter(t.scan().plan_files()))
    a = write_deletion_vectors(t.io, t.metadata, [DVTarget(task.file, [0])]).added
    b = write_deletion_vectors(t.io, t.metadata, [DVTarget(task.file, [1])]).added
    with pytest.raises(ValidationError, match="two deletion vectors"), t.transaction() as tx:
        tx.row_delta(add_delete_files=[*a, *b])


def test_writers_refuse_the_wrong_format_version(catalog: Any) -> None:
    t = _v3(catalog)
    task = next(iter(t.scan().plan_files()))
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        write_position_deletes(t.io, t.metadata, {task.file.file_path: [0]}, partition=task.file.partition)
    v2 = catalog.create_table("ns.v2", schema=SCHEMA, properties={"format-version": "2"})
    with pytest.raises(UnsupportedFeatureError, match="format version 3"):
        write_deletion_vectors(v2.io, v2.metadata, [DVTarget(task.file, [0])])


def test_row_delta_takes_many_dvs_of_one_puffin_file(catalog: Any) -> None:
    """A caller's Puffin file with the vectors of two data files commits through row_delta (a
    vector is named by file and offset); the same vector twice is refused, nothing committed."""
    t = _v3(catalog)
    tasks = sorted(t.scan().plan_files(), key=lambda task: task.file.partition)
    dvs = write_deletion_vectors(t.io, t.metadata, [DVTarget(task.file, [0]) for task in tasks])
    assert len(dvs.added) == 2 and len({d.file_path for d in dvs.added}) == 1
    before = t.metadata_location
    with pytest.raises(ValidationError, match="deletion vector is given twice"):
        t.transaction().row_delta(add_delete_files=[dvs.added[0], dvs.added[0]])
    assert t.refresh().metadata_location == before
    tx = t.transaction()
    tx.row_delta(add_delete_files=dvs.added, referenced_data_files=[task.file.file_path for task in tasks])
    tx.commit()
    assert _ids(t.refresh()) == [i for i in range(20) if i not in (0, 1)]
