"""How the rows of a Spark row-level change name their data file on the way to the writers
(``icefloe.spark._dml_exec.target_frame``): a number (the file's length in bytes with Spark's
Parquet reader when the planned files' lengths differ, a count with icefloe's reader) or, when
two planned files have the same length, the path as Spark spells it. Both ways give the model's
rows, the multiple-match error names the right file, and a number no planned file has fails the
write task. Also: a MERGE skips the job that fetches a join key's few values when they fill the
key's range."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dml_model import COLUMNS, SCHEMA, SOURCE_DDL, MClause, arrow, key, merge_model, target_rows

import icefloe.spark
from icefloe.errors import InvalidMetadataError
from icefloe.expressions import And, In
from icefloe.spark._conditions import JoinKey
from icefloe.spark._dml_exec import _size_ids, target_frame
from icefloe.spark._dml_merge import Clause, MergeChange, _dense
from icefloe.spark._dml_runner import FileInfo, UnknownFile, WriteJob, _file
from icefloe.spark._metadata_columns import KEY, path_key

MODES = ["copy-on-write", "merge-on-read"]


def _table(catalog: Any, name: str, mode: str, same_lengths: bool) -> Any:
    """Two files: the same rows twice (same length) or different rows (different lengths);
    the second file's ids are shifted by 100 so that every row has its own id."""
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    t = catalog.create_table(name, schema=SCHEMA, properties=props)
    first = target_rows(10)
    second = [{**r, "id": r["id"] + 100} for r in (first if same_lengths else target_rows(14))]
    t.append(arrow(first))
    t.append(arrow(second))
    return t, first + second


def _rows(catalog: Any, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = catalog.load_table(name).scan().to_arrow().to_pylist()
    return rows


def _source(spark: Any, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame([tuple(r.get(c) for c in [*COLUMNS, "op"]) for r in rows], SOURCE_DDL)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("same_lengths", [False, True])
def test_merge_with_numbered_and_spelled_file_keys(
    spark: Any, spark_catalog: Any, table_name: str, mode: str, same_lengths: bool
) -> None:
    t, before = _table(spark_catalog, table_name, mode, same_lengths)
    tasks = list(t.scan().plan_files())
    sizes = {task.file.file_size_in_bytes for task in tasks}
    assert (len(sizes) == 1) is same_lengths
    numbered = _size_ids(tasks)
    assert (numbered is None) is same_lengths
    if numbered is not None:
        assert numbered == {task.file.file_size_in_bytes: path_key(task.file.file_path) for task in tasks}
    target = target_frame(spark, t, t.metadata, tasks)
    assert target.fast and (target.ids is None) is same_lengths
    key_type = dict(target.frame.dtypes)[KEY]
    assert key_type == ("string" if same_lengths else "bigint")
    # every row's key names its own file (checked against icefloe's reader's positions)
    by_file = {target.file_key(t, r[KEY]) for r in target.frame.select(KEY).collect()}
    assert by_file == {path_key(task.file.file_path) for task in tasks}

    src = [
        {"id": 3, "cat": "z", "v": -3, "note": "s3", "op": "U"},
        {"id": 104, "cat": "z", "v": -104, "note": None, "op": "U"},
        {"id": 107, "cat": "z", "v": 0, "note": None, "op": "D"},
        {"id": 500, "cat": "q", "v": 5, "note": "new", "op": "I"},
    ]
    r = (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(_source(spark, src).alias("s"), "t.id = s.id")
        .when_matched_delete(condition="s.op = 'D'")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    want = merge_model(
        before,
        src,
        lambda a, b: a["id"] == b["id"],
        [
            MClause("matched", "delete", lambda a, b: b["op"] == "D"),
            MClause("matched", "update", None, lambda a, b: {c: b[c] for c in COLUMNS}),
            MClause("not_matched", "insert", None, lambda b: {c: b[c] for c in COLUMNS}),
        ],
    )
    assert key(_rows(spark_catalog, table_name)) == key(want)
    assert (r.rows_updated, r.rows_deleted, r.rows_inserted) == (2, 1, 1)
    if mode == "merge-on-read":
        assert r.delete_files_added == 2  # one per data file: the rows of a file met in one task
    else:
        assert r.files_rewritten == r.data_files_removed == 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("same_lengths", [False, True])
def test_multiple_match_names_the_file(
    spark: Any, spark_catalog: Any, table_name: str, mode: str, same_lengths: bool
) -> None:
    t, before = _table(spark_catalog, table_name, mode, same_lengths)
    second = [task.file.file_path for task in t.scan(row_filter="id >= 100").plan_files()]
    assert len(second) == 1
    src = [{"id": 105, "cat": "a", "v": 1, "note": None, "op": "U"}] * 2
    builder = (
        icefloe.spark.table(spark, table_name).alias("t").merge(_source(spark, src).alias("s"), "t.id = s.id")
    )
    with pytest.raises(icefloe.spark.MergeCardinalityError) as e:
        builder.when_matched_update_all().execute()
    assert path_key(e.value.context["file"]) == path_key(second[0])
    assert e.value.context["position"] == 5
    assert key(_rows(spark_catalog, table_name)) == key(before)


def test_a_number_no_planned_file_has_fails_the_task() -> None:
    info = FileInfo("file:/w/a.parquet", 0, (), 3)
    job = WriteJob(
        "{}", {}, {"file:/w/a.parquet": info}, False, True, False, "w", ids={711: "file:/w/a.parquet"}
    )
    assert _file(job, 711) is info
    with pytest.raises(UnknownFile, match="not a planned data file"):
        _file(job, 712)
    spelled = WriteJob("{}", {}, {"file:/w/a b.parquet": info}, False, True, False, "w")
    assert _file(spelled, "file:/w/a%20b.parquet") is info


@pytest.mark.parametrize("mode", MODES)
def test_a_file_length_the_metadata_does_not_have(
    spark: Any, spark_catalog: Any, table_name: str, mode: str
) -> None:
    """A data file replaced behind the table's back by one of another length (icefloe's commits
    check the lengths, so only that way): the change fails with InvalidMetadataError and leaves
    the table and its files as they were."""
    import pyarrow.parquet as pq

    t, rows = _table(spark_catalog, table_name, mode, same_lengths=False)
    (second,) = [task.file for task in t.scan(row_filter="id >= 100").plan_files()]
    local = Path(second.file_path.removeprefix("file://").removeprefix("file:"))
    pq.write_table(pq.read_table(local), local, compression="gzip")  # same rows and field ids
    assert local.stat().st_size != second.file_size_in_bytes
    snapshot = spark_catalog.load_table(table_name).current_snapshot().snapshot_id
    data_dir = local.parent
    before = sorted(p.name for p in data_dir.rglob("*") if p.is_file())
    src = [{"id": 104, "cat": "z", "v": -104, "note": None, "op": "U"}]
    builder = (
        icefloe.spark.table(spark, table_name).alias("t").merge(_source(spark, src).alias("s"), "t.id = s.id")
    )
    with pytest.raises(InvalidMetadataError, match="matches no planned data file"):
        builder.when_matched_update_all().execute()
    assert spark_catalog.load_table(table_name).current_snapshot().snapshot_id == snapshot
    assert key(_rows(spark_catalog, table_name)) == key(rows)
    assert sorted(p.name for p in data_dir.rglob("*") if p.is_file()) == before


def test_dense_values() -> None:
    assert _dense(1, 7, 7) and _dense(5, 5, 1) and _dense(-3, 3, 9)
    assert not _dense(1, 9, 3)  # gaps: the values prune more than the range
    assert not _dense("a", "c", 3) and not _dense(Decimal(1), Decimal(2), 2) and not _dense(False, True, 2)


def test_key_values_fetched_only_when_they_leave_gaps(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, schema=SCHEMA)
    t.append(pa.Table.from_pylist([], schema=SCHEMA))
    schema = t.schema()

    def ranges(ids: list[int]) -> Any:
        src = spark.createDataFrame([(i,) for i in ids], "id long")
        change = MergeChange(
            spark, lambda: t, "t", src, "t.id = s.id", [Clause("matched", "delete")], schema_evolution=False
        )
        jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
        out = change._key_ranges(schema, [JoinKey("id", "id")])
        jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) - jobs_before
        return out, jobs

    dense, dense_jobs = ranges([3, 1, 2, 4, 4])
    assert len(dense) == 1 and isinstance(dense[0], And)  # the range 1..4 only
    sparse, sparse_jobs = ranges([1, 9, 30])
    assert len(sparse) == 1 and isinstance(sparse[0], In)
    assert sorted(getattr(v, "value", v) for v in sparse[0].literals) == [1, 9, 30]
    assert sparse_jobs > dense_jobs


def test_small_source_joins_by_hash_and_the_setting_is_restored(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """A small source: Spark may hash it (adaptive execution's local map threshold is set to the
    advisory partition size for the statement's jobs, and unset after); a large or nested source,
    or a threshold the user set, leaves the session's settings alone."""
    from pyspark.sql import types as st

    from icefloe.spark._dml_merge import _LOCAL_MAP_THRESHOLD, _row_width

    t, before = _table(spark_catalog, table_name, "merge-on-read", same_lengths=False)
    src = [{"id": 3, "cat": "z", "v": -3, "note": "s3", "op": "U"}]
    change = MergeChange(
        spark,
        lambda: t,
        "t",
        _source(spark, src),
        "t.id = s.id",
        [Clause("matched", "update", all_columns=True)],
        schema_evolution=False,
    )
    assert change.join_confs() == {}  # not counted yet
    change._key_ranges(t.schema(), [JoinKey("id", "id")])
    assert change._source_rows == 1
    advisory = spark.conf.get("spark.sql.adaptive.advisoryPartitionSizeInBytes")
    assert change.join_confs() == {_LOCAL_MAP_THRESHOLD: advisory}
    change._source_rows = 10**12
    assert change.join_confs() == {}
    change._source_rows = 1
    spark.conf.set(_LOCAL_MAP_THRESHOLD, "1g")
    try:
        assert change.join_confs() == {}
    finally:
        spark.conf.unset(_LOCAL_MAP_THRESHOLD)
    nested = st.StructType([st.StructField("a", st.ArrayType(st.LongType()))])
    assert _row_width(nested) is None
    assert (
        _row_width(st.StructType([st.StructField("a", st.LongType()), st.StructField("b", st.StringType())]))
        == 48
    )

    r = (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(_source(spark, src).alias("s"), "t.id = s.id")
        .when_matched_update_all()
        .execute()
    )
    assert r.rows_updated == 1
    want = [{**x, "cat": "z", "v": -3, "note": "s3"} if x["id"] == 3 else x for x in before]
    assert key(_rows(spark_catalog, table_name)) == key(want)
    assert spark.conf.get(_LOCAL_MAP_THRESHOLD, None) in (None, "0", "0b")
