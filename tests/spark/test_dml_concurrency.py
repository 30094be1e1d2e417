"""Spark row-level changes racing Arrow writers on one table, scenario by scenario.

Each scenario: a table; a Spark DELETE / UPDATE / MERGE that has read the table and written its
files; an Arrow writer that commits just before the Spark change does (the hook
``icefloe.spark._dml_exec._before_commit``); then either the Spark change fails with a typed
``ConflictError`` and the table holds exactly the Arrow writer's result, or both changes land.
Never a lost row, never a resurrected one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dml_model import COLUMNS, SCHEMA, SOURCE_DDL, arrow, key, target_rows

import icefloe.spark
from icefloe.errors import (
    ConflictError,
    ConflictingDataFilesError,
    ConflictingDeleteFilesError,
    MissingFilesError,
)
from icefloe.spark import _dml_exec


def _table(catalog: Any, name: str, mode: str, **props: str) -> Any:
    properties = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    properties.update(props)
    t = catalog.create_table(name, schema=SCHEMA, partition_by=["cat"], properties=properties)
    t.append(arrow(target_rows(30)))
    return t


def _race(
    monkeypatch: pytest.MonkeyPatch, catalog: Any, name: str, concurrent: Callable[[Any], None]
) -> list[int]:
    """Run ``concurrent`` on a fresh handle right before the Spark change commits."""
    calls: list[int] = []

    def hook(table: Any) -> None:
        if not calls:
            calls.append(1)
            concurrent(catalog.load_table(name))

    monkeypatch.setattr(_dml_exec, "_before_commit", hook)
    return calls


def _rows(catalog: Any, name: str) -> list[tuple[Any, ...]]:
    return key(catalog.load_table(name).scan().to_arrow().to_pylist())


NEW_A = {"id": 100, "cat": "a", "v": 500, "note": "new"}
NEW_C = {"id": 101, "cat": "c", "v": 500, "note": "new"}


def test_delete_vs_append_matching_rows_serializable(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The appended row matches the DELETE's condition: at serializable isolation the DELETE
    would have deleted it, so it must fail."""
    _table(spark_catalog, table_name, "merge-on-read")
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([NEW_A])))
    with pytest.raises(ConflictingDataFilesError) as e:
        icefloe.spark.table(spark, table_name).delete("cat = 'a' AND v > 100")
    assert e.value.hint
    assert _rows(spark_catalog, table_name) == key([*target_rows(30), NEW_A])


def test_delete_vs_append_matching_rows_snapshot_isolation(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(spark_catalog, table_name, "copy-on-write", **{"write.delete.isolation-level": "snapshot"})
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([NEW_A])))
    icefloe.spark.table(spark, table_name).delete("cat = 'a' AND v > 100")
    want = [r for r in target_rows(30) if not (r["cat"] == "a" and r["v"] > 100)] + [NEW_A]
    assert _rows(spark_catalog, table_name) == key(want)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_change_vs_append_elsewhere(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A concurrent append outside the change's conflict filter: both land."""
    _table(spark_catalog, table_name, mode)
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([NEW_C])))
    src = spark.createDataFrame([(3, "a", -3, "m", "U"), (200, "a", 1, "x", "I")], SOURCE_DDL)
    (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id AND t.cat = 'a'")
        .when_matched_update(set={"v": "s.v"})
        .when_not_matched_insert(values={c: f"s.{c}" for c in COLUMNS})
        .execute()
    )
    want = [{**r, "v": -3} if r["id"] == 3 else r for r in target_rows(30)]
    want += [NEW_C, {"id": 200, "cat": "a", "v": 1, "note": "x"}]
    assert _rows(spark_catalog, table_name) == key(want)


def test_copy_on_write_update_vs_delete_of_a_rewritten_file(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arrow's copy-on-write delete replaced the file the UPDATE rewrites: the UPDATE would
    bring the deleted row back, so it fails."""
    _table(spark_catalog, table_name, "copy-on-write")
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.delete("id = 6"))
    with pytest.raises(ConflictError) as e:
        icefloe.spark.table(spark, table_name).update("cat = 'a'", set={"v": "v + 1"})
    assert isinstance(e.value, MissingFilesError | ConflictingDeleteFilesError)
    assert _rows(spark_catalog, table_name) == key([r for r in target_rows(30) if r["id"] != 6])


def test_merge_on_read_merge_vs_delete_of_the_same_row(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Arrow merge-on-read delete of a row the MERGE updates: new delete files for the data the
    MERGE read -> ConflictingDeleteFilesError (the deleted row must not come back updated)."""
    _table(spark_catalog, table_name, "merge-on-read")
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.delete("id = 7"))
    src = spark.createDataFrame([(7, "b", -7, "m", "U")], SOURCE_DDL)
    with pytest.raises(ConflictingDeleteFilesError):
        (
            icefloe.spark.table(spark, table_name)
            .alias("t")
            .merge(src.alias("s"), "t.id = s.id")
            .when_matched_update_all()
            .execute()
        )
    assert _rows(spark_catalog, table_name) == key([r for r in target_rows(30) if r["id"] != 7])


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_spark_delete_vs_arrow_update_of_another_partition(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Arrow's ``table.update`` in partition c while Spark deletes in partition a: both land."""
    _table(spark_catalog, table_name, mode)
    _race(
        monkeypatch,
        spark_catalog,
        table_name,
        lambda t: t.update("cat = 'c' AND id < 10", set={"v": pc.field("v") * 2}),
    )
    icefloe.spark.table(spark, table_name).delete("cat = 'a' AND id < 10")
    want = [r for r in target_rows(30) if not (r["cat"] == "a" and r["id"] < 10)]
    want = [{**r, "v": r["v"] * 2} if r["cat"] == "c" and r["id"] < 10 else r for r in want]
    assert _rows(spark_catalog, table_name) == key(want)


def test_conflict_leaves_no_files_behind(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(spark_catalog, table_name, "merge-on-read")
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([NEW_A])))
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    with pytest.raises(ConflictError):
        icefloe.spark.table(spark, table_name).update("cat = 'a'", set={"note": "'x'"})
    on_disk = {str(p) for p in data_dir.rglob("*.parquet")}
    table_files = {
        p.removeprefix("file://")
        for p in spark_catalog.load_table(table_name).inspect.all_files().column("file_path").to_pylist()
    }
    assert on_disk == table_files  # the UPDATE's data and delete files are gone


def _key_merge(spark: Any, name: str) -> None:
    """MERGE of ids 3 (update), 29 (update) and 50 (insert): the source's few keys become the
    conflict filter ``id IN (3, 29, 50)``."""
    src = spark.createDataFrame(
        [(3, "a", -3, "m", "U"), (29, "c", -29, "m", "U"), (50, "c", 5, "x", "I")], SOURCE_DDL
    )
    (
        icefloe.spark.table(spark, name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .when_matched_update(set={"v": "s.v"})
        .when_not_matched_insert(values={c: f"s.{c}" for c in COLUMNS})
        .execute()
    )


MERGED = [{**r, "v": -r["id"]} if r["id"] in (3, 29) else r for r in target_rows(30)]
ROW_50 = {"id": 50, "cat": "c", "v": 5, "note": "x"}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_vs_append_of_a_key_the_source_has(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The appended row has key 50, which the MERGE inserts: at serializable isolation the MERGE
    would have matched it, so it fails (no duplicate key)."""
    _table(spark_catalog, table_name, mode)
    appended = {"id": 50, "cat": "c", "v": 0, "note": "arrow"}
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([appended])))
    with pytest.raises(ConflictingDataFilesError):
        _key_merge(spark, table_name)
    assert _rows(spark_catalog, table_name) == key([*target_rows(30), appended])


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_vs_append_of_other_keys_in_the_same_partition(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Key 40 is not one of the source's keys (the conflict filter comes from the join keys, not
    only the partitions): both land, at serializable isolation."""
    _table(spark_catalog, table_name, mode)
    appended = {"id": 40, "cat": "c", "v": 0, "note": "arrow"}
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([appended])))
    _key_merge(spark, table_name)
    assert _rows(spark_catalog, table_name) == key([*MERGED, ROW_50, appended])


def test_merge_snapshot_isolation_vs_append_of_a_key_the_source_has(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At snapshot isolation new data files are not checked (as in Iceberg's Spark integration):
    both land, key 50 twice."""
    _table(spark_catalog, table_name, "merge-on-read", **{"write.merge.isolation-level": "snapshot"})
    appended = {"id": 50, "cat": "c", "v": 0, "note": "arrow"}
    _race(monkeypatch, spark_catalog, table_name, lambda t: t.append(arrow([appended])))
    _key_merge(spark, table_name)
    assert _rows(spark_catalog, table_name) == key([*MERGED, ROW_50, appended])


def test_merge_on_read_update_vs_compaction_of_the_file(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction replaced the data file the UPDATE's position deletes point at: the deletes would
    miss the rewritten rows (validateDataFilesExist) -> MissingFilesError, the compaction stays."""
    _table(spark_catalog, table_name, "merge-on-read", **{"write.update.isolation-level": "snapshot"})
    _race(
        monkeypatch,
        spark_catalog,
        table_name,
        lambda t: t.maintenance.rewrite_data_files(options={"rewrite-all": "true"}),
    )
    with pytest.raises(MissingFilesError):
        icefloe.spark.table(spark, table_name).update("id = 4", set={"v": "0"})
    assert _rows(spark_catalog, table_name) == key(target_rows(30))
