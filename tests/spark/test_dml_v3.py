"""Spark DELETE, UPDATE and MERGE on format v3 tables.

The same statements on a v2 and a v3 table give the same rows (copy-on-write and merge-on-read);
merge-on-read on v3 writes deletion vectors (Puffin, ``referenced_data_file`` set), one live DV
per data file: a second change merges the earlier DV and removes its entry in the same commit; a
concurrent DV for the same data file conflicts; copy-on-write gives the new files row ids."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dml_model import SCHEMA, SOURCE_DDL, arrow, key, source_rows, target_rows

import icefloe.spark
from icefloe.errors import ConflictingDeletionVectorsError, UnsupportedFeatureError
from icefloe.io.puffin import deletion_vector_positions, read_blob
from icefloe.manifest import FileFormat, ManifestContent, read_manifest, read_manifest_list

MODES = ["copy-on-write", "merge-on-read"]
MOR = {f"write.{c}.mode": "merge-on-read" for c in ("delete", "update", "merge")}


def make_table(catalog: Any, name: str, mode: str, version: int) -> Any:
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    t = catalog.create_table(
        name, schema=SCHEMA, partition_by=["cat"], properties={"format-version": str(version), **props}
    )
    rows = target_rows()
    t.append(arrow(rows[:20]))
    t.append(arrow(rows[20:]))
    return t


def rows_of(catalog: Any, name: str) -> list[tuple[Any, ...]]:
    return key(catalog.load_table(name).scan().to_arrow().to_pylist())


def live_deletes(t: Any) -> list[Any]:
    snap = t.current_snapshot()
    return [
        e.data_file
        for m in read_manifest_list(t.io, snap.manifest_list)
        if m.content == ManifestContent.DELETES
        for e in read_manifest(t.io, m)
        if e.is_live
    ]


def dv_positions(t: Any, dv: Any) -> list[int]:
    blob = read_blob(t.io, dv.file_path, dv.content_offset, dv.content_size_in_bytes)
    return list(deletion_vector_positions(blob).tolist())


def statements(spark: Any, name: str) -> None:
    """A DELETE, an UPDATE and a MERGE, touching some files twice."""
    from pyspark.sql import functions as F

    t = icefloe.spark.table(spark, name)
    t.delete("v % 30 = 0")
    t.update("id % 4 = 1", set={"note": "'upd'", "v": "v + 1"})
    src = spark.createDataFrame(
        [tuple(r.get(c) for c in ["id", "cat", "v", "note", "op"]) for r in source_rows()], SOURCE_DDL
    )
    (
        icefloe.spark.table(spark, name)
        .alias("t")
        .merge(src.alias("s"), F.col("t.id") == F.col("s.id"))
        .when_matched_delete(condition=F.col("s.op") == "D")
        .when_matched_update(set={"v": "s.v", "note": "'merged'"})
        .when_not_matched_insert_all()
        .execute()
    )
    t.delete("id = 7 OR id = 8")


@pytest.mark.parametrize("mode", MODES)
def test_v3_gives_the_rows_of_v2(spark: Any, spark_catalog: Any, table_name: str, mode: str) -> None:
    v2, v3 = f"{table_name}_v2", f"{table_name}_v3"
    make_table(spark_catalog, v2, mode, 2)
    make_table(spark_catalog, v3, mode, 3)
    statements(spark, v2)
    statements(spark, v3)
    assert rows_of(spark_catalog, v3) == rows_of(spark_catalog, v2)
    t = spark_catalog.load_table(v3)
    deletes = live_deletes(t)
    data = {task.file.file_path for task in t.scan().plan_files()}
    if mode == "merge-on-read":
        assert deletes and all(d.file_format == FileFormat.PUFFIN for d in deletes)
        assert all(d.referenced_data_file in data for d in deletes)
        referenced = [d.referenced_data_file for d in deletes]
        assert len(referenced) == len(set(referenced))  # one live DV per data file
        summary = t.current_snapshot().summary.properties
        assert "added-position-delete-files" not in summary
    else:
        assert deletes == []
    # row lineage: every data file has row ids, and the next row id covers them
    files = [task.file for task in t.scan().plan_files()]
    assert all(f.first_row_id is not None for f in files)
    end = max(f.first_row_id + f.record_count for f in files)
    assert t.metadata.next_row_id >= end


def test_second_delete_replaces_the_dv(spark: Any, spark_catalog: Any, table_name: str) -> None:
    spark_catalog.create_table(
        table_name, schema=SCHEMA, partition_by=["cat"], properties={"format-version": "3", **MOR}
    )
    spark_catalog.load_table(table_name).append(arrow(target_rows(12)))
    t = icefloe.spark.table(spark, table_name)
    r1 = t.delete("id = 3")
    assert r1.delete_files_added == 1
    (old,) = live_deletes(spark_catalog.load_table(table_name))
    assert old.file_format == FileFormat.PUFFIN and old.file_path.endswith("-deletes.puffin")
    t.delete("id = 6 OR id = 9")  # the same data file (cat 'a')
    table = spark_catalog.load_table(table_name)
    (new,) = live_deletes(table)
    assert new.file_path != old.file_path
    assert new.referenced_data_file == old.referenced_data_file
    assert dv_positions(table, new) == [1, 2, 3]  # ids 3, 6, 9 are rows 1..3 of the 'a' file
    summary = table.current_snapshot().summary.properties
    assert summary["removed-dvs"] == "1" and summary["added-dvs"] == "1"
    t.update("id = 0", set={"v": "-1"})  # an UPDATE replaces it too
    table = spark_catalog.load_table(table_name)
    (newer,) = [d for d in live_deletes(table) if d.referenced_data_file == old.referenced_data_file]
    assert dv_positions(table, newer) == [0, 1, 2, 3]
    want = [r for r in target_rows(12) if r["id"] not in (3, 6, 9)]
    want = [{**r, "v": -1} if r["id"] == 0 else r for r in want]
    assert rows_of(spark_catalog, table_name) == key(want)


def test_position_deletes_of_an_upgraded_table_fold_into_the_dv(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    spark_catalog.create_table(
        table_name, schema=SCHEMA, partition_by=["cat"], properties={"format-version": "2", **MOR}
    )
    spark_catalog.load_table(table_name).append(arrow(target_rows(12)))
    t = icefloe.spark.table(spark, table_name)
    t.delete("id = 3")  # a v2 position delete file
    (pos,) = live_deletes(spark_catalog.load_table(table_name))
    assert pos.file_format == FileFormat.PARQUET
    spark_catalog.load_table(table_name).upgrade_format_version(3)
    t.delete("id = 6")
    table = spark_catalog.load_table(table_name)
    (dv,) = live_deletes(table)
    assert dv.file_format == FileFormat.PUFFIN and dv_positions(table, dv) == [1, 2]
    assert rows_of(spark_catalog, table_name) == key([r for r in target_rows(12) if r["id"] not in (3, 6)])


def test_concurrent_dv_for_the_same_file_conflicts(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.spark import _dml_exec

    spark_catalog.create_table(
        table_name, schema=SCHEMA, partition_by=["cat"], properties={"format-version": "3", **MOR}
    )
    spark_catalog.load_table(table_name).append(arrow(target_rows(12)))
    calls: list[int] = []

    def hook(table: Any) -> None:
        if not calls:
            calls.append(1)
            spark_catalog.load_table(table_name).delete("id = 6")  # the Arrow path: a DV too

    monkeypatch.setattr(_dml_exec, "_before_commit", hook)
    with pytest.raises(ConflictingDeletionVectorsError):
        icefloe.spark.table(spark, table_name).delete("id = 3")
    assert rows_of(spark_catalog, table_name) == key([r for r in target_rows(12) if r["id"] != 6])
    table = spark_catalog.load_table(table_name)
    (live,) = live_deletes(table)
    # the refused change's deletion vector was deleted: only the committed one is left
    assert _puffins(table) == [Path(live.file_path).name]


def _puffins(table: Any) -> list[str]:
    root = Path(table.location.removeprefix("file://")) / "data"
    return sorted(p.name for p in root.rglob("*.puffin"))


def test_v1_is_refused(spark: Any, spark_catalog: Any, table_name: str) -> None:
    spark_catalog.create_table(table_name, schema=SCHEMA, properties={"format-version": "1"})
    with pytest.raises(UnsupportedFeatureError):
        icefloe.spark.table(spark, table_name).delete("id = 1")
