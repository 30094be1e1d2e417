"""The Spark builder API (``icefloe.spark.table(...).delete / update / merge``) in copy-on-write
and merge-on-read, against the serial model of ``dml_model.py``; what each change reads, writes and
reports; the multiple-match error; metadata columns; pruning."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dml_model import (
    COLUMNS,
    SCHEMA,
    SOURCE_DDL,
    CardinalityViolation,
    MClause,
    arrow,
    cmp,
    key,
    merge_model,
    source_rows,
    target_rows,
)

import icefloe.spark
from icefloe.errors import SchemaError, ValidationError

MODES = ["copy-on-write", "merge-on-read"]


def make_table(catalog: Any, name: str, mode: str, rows: list[dict[str, Any]], **kwargs: Any) -> Any:
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    t = catalog.create_table(
        name,
        schema=kwargs.pop("schema", SCHEMA),
        partition_by=kwargs.pop("partition_by", ["cat"]),
        properties=props,
    )
    half = len(rows) // 2
    t.append(arrow(rows[:half]))
    t.append(arrow(rows[half:]))
    return t


def rows_of(catalog: Any, name: str) -> list[dict[str, Any]]:
    """The table's rows read by icefloe's Arrow reader (not the Spark path under test)."""
    rows: list[dict[str, Any]] = catalog.load_table(name).scan().to_arrow().to_pylist()
    return rows


def source_df(spark: Any, rows: list[dict[str, Any]] | None = None) -> Any:
    data = source_rows() if rows is None else rows
    return spark.createDataFrame([tuple(r.get(c) for c in [*COLUMNS, "op"]) for r in data], SOURCE_DDL)


@pytest.mark.parametrize("mode", MODES)
def test_merge_builder_matches_model(spark: Any, spark_catalog: Any, table_name: str, mode: str) -> None:
    from pyspark.sql import functions as F

    make_table(spark_catalog, table_name, mode, target_rows())
    src = source_df(spark)
    result = (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), F.col("t.id") == F.col("s.id"))
        .when_matched_delete(condition=F.col("s.op") == "D")
        .when_matched_update(set={"v": "s.v * 2", "note": F.lit("upd")}, condition="s.v < -10")
        .when_matched_update(set={"note": "'late'"})
        .when_not_matched_insert(values={"id": "s.id", "cat": "s.cat", "v": "s.v"}, condition="s.op = 'I'")
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update(set={"v": "t.v + 1"}, condition="t.cat = 'a' AND t.id > 30")
        .when_not_matched_by_source_delete(condition="t.note IS NULL")
        .execute()
    )
    want = merge_model(
        target_rows(),
        source_rows(),
        lambda t, s: cmp(t["id"], "=", s["id"]),
        [
            MClause("matched", "delete", lambda t, s: cmp(s["op"], "=", "D")),
            MClause(
                "matched", "update", lambda t, s: s["v"] < -10, lambda t, s: {"v": s["v"] * 2, "note": "upd"}
            ),
            MClause("matched", "update", None, lambda t, s: {"note": "late"}),
            MClause(
                "not_matched",
                "insert",
                lambda s: cmp(s["op"], "=", "I"),
                lambda s: {"id": s["id"], "cat": s["cat"], "v": s["v"]},
            ),
            MClause("not_matched", "insert", None, lambda s: {c: s[c] for c in COLUMNS}),
            MClause(
                "by_source", "update", lambda t: t["cat"] == "a" and t["id"] > 30, lambda t: {"v": t["v"] + 1}
            ),
            MClause("by_source", "delete", lambda t: t["note"] is None),
        ],
    )
    assert key(rows_of(spark_catalog, table_name)) == key(want)
    assert result.operation == "merge" and result.mode == mode
    assert result.rows_inserted == 4 and result.rows_deleted > 0 and result.rows_updated > 0
    assert result.snapshot_id == spark_catalog.load_table(table_name).current_snapshot().snapshot_id
    snap = spark_catalog.load_table(table_name).current_snapshot()
    assert snap.summary.props.get("icefloe.spark.operation") == "merge"
    if mode == "merge-on-read":
        assert result.delete_files_added > 0 and result.files_rewritten == 0
    else:
        assert result.delete_files_added == 0 and result.data_files_removed == result.files_rewritten > 0


@pytest.mark.parametrize("mode", MODES)
def test_delete_and_update_builder(spark: Any, spark_catalog: Any, table_name: str, mode: str) -> None:
    from pyspark.sql import functions as F

    make_table(spark_catalog, table_name, mode, target_rows())
    t = icefloe.spark.table(spark, table_name)
    r1 = t.delete(F.col("v") >= 300)
    r2 = t.update("note IS NULL", set={"note": F.concat(F.lit("was-null-"), F.col("id").cast("string"))})
    r3 = t.update(F.col("id") == 1, set={"cat": "'q'", "v": "v - 1000"})
    r4 = t.delete("id = 12345")  # nothing matches: no commit
    want = [r for r in target_rows() if r["v"] < 300]
    want = [{**r, "note": f"was-null-{r['id']}"} if r["note"] is None else r for r in want]
    want = [{**r, "cat": "q", "v": r["v"] - 1000} if r["id"] == 1 else r for r in want]
    assert key(rows_of(spark_catalog, table_name)) == key(want)
    assert (r1.rows_deleted, r2.rows_updated, r3.rows_updated, r4.rows_affected) == (10, 5, 1, 0)
    assert r4.snapshot_id is None
    assert len(spark_catalog.load_table(table_name).snapshots()) == 5  # 2 appends + 3 changes


@pytest.mark.parametrize("mode", MODES)
def test_target_row_matched_twice_fails(spark: Any, spark_catalog: Any, table_name: str, mode: str) -> None:
    t0 = make_table(spark_catalog, table_name, mode, target_rows(12))
    data_dir = Path(t0.location.removeprefix("file://")) / "data"
    before = sorted(p.name for p in data_dir.rglob("*") if p.is_file())
    src = source_df(spark, [{"id": 4, "cat": "b", "v": 1, "note": None, "op": "U"}] * 2)
    builder = icefloe.spark.table(spark, table_name).alias("t").merge(src.alias("s"), "t.id = s.id")
    with pytest.raises(icefloe.spark.MergeCardinalityError) as e:
        builder.when_matched_update_all().when_not_matched_insert_all().execute()
    assert isinstance(e.value, ValidationError) and e.value.context["position"] >= 0
    assert "de-duplicate" in (e.value.hint or "")
    assert key(rows_of(spark_catalog, table_name)) == key(target_rows(12))
    assert sorted(p.name for p in data_dir.rglob("*") if p.is_file()) == before  # nothing left behind
    with pytest.raises(CardinalityViolation):
        merge_model(
            target_rows(12), [{"id": 4}] * 2, lambda a, b: a["id"] == b["id"], [MClause("matched", "delete")]
        )


@pytest.mark.parametrize("mode", MODES)
def test_several_matches_without_matched_clauses(
    spark: Any, spark_catalog: Any, table_name: str, mode: str
) -> None:
    """Spark raises only with MATCHED clauses; a target row joined twice is still kept once."""
    make_table(spark_catalog, table_name, mode, target_rows(12))
    dup = [{"id": 4, "cat": "b", "v": 1, "note": None, "op": "U"}] * 2 + [
        {"id": 99, "cat": "a", "v": 9, "note": "x", "op": "I"}
    ]
    (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(source_df(spark, dup).alias("s"), "t.id = s.id")
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update(set={"note": "'unmatched'"}, condition="t.id > 9")
        .execute()
    )
    want = [{**r, "note": "unmatched"} if r["id"] > 9 else r for r in target_rows(12)]
    want.append({"id": 99, "cat": "a", "v": 9, "note": "x"})
    assert key(rows_of(spark_catalog, table_name)) == key(want)


def test_clause_checks(spark: Any, spark_catalog: Any, table_name: str) -> None:
    make_table(spark_catalog, table_name, "merge-on-read", target_rows(6))
    t = icefloe.spark.table(spark, table_name).alias("t")
    src = source_df(spark).alias("s")
    with pytest.raises(ValidationError, match="only the last"):
        t.merge(src, "t.id = s.id").when_matched_delete().when_matched_update_all().execute()
    with pytest.raises(ValidationError, match="at least one WHEN"):
        t.merge(src, "t.id = s.id").execute()
    with pytest.raises(SchemaError, match="source column 'cat'"):
        t.merge(
            src.select("id", "v", "note", "op").alias("s"), "t.id = s.id"
        ).when_matched_update_all().execute()
    with pytest.raises(SchemaError, match="nope"):
        t.update("id = 1", set={"nope": "1"})
    with pytest.raises(ValidationError, match="set="):
        t.update("id = 1", set={})
    assert key(rows_of(spark_catalog, table_name)) == key(target_rows(6))


def test_merge_condition_keywords(spark: Any, spark_catalog: Any, table_name: str) -> None:
    """The ON condition as the issue names it (``on``) and as delta-spark does (``condition``)."""
    from pyspark.sql import functions as F

    make_table(spark_catalog, table_name, "merge-on-read", target_rows(6))
    t = icefloe.spark.table(spark, table_name).alias("t")
    src = source_df(spark).alias("s")
    with pytest.raises(ValidationError, match="once"):
        t.merge(src, on="t.id = s.id", condition="t.id = s.id")
    with pytest.raises(ValidationError, match="ON condition"):
        t.merge(src)
    t.merge(src, on="t.id = s.id").when_matched_update(set={"note": "'on'"}, condition="t.id = 2").execute()
    r = (
        t.merge(src, condition=F.col("t.id") == F.col("s.id"))
        .when_matched_update(set={"note": "'condition'"}, condition=F.col("t.id") == 5)
        .execute()
    )
    assert (r.rows_updated, r.rows_inserted, r.rows_deleted) == (1, 0, 0)
    notes = {2: "on", 5: "condition"}
    want = [{**r, "note": notes[r["id"]]} if r["id"] in notes else r for r in target_rows(6)]
    assert key(rows_of(spark_catalog, table_name)) == key(want)


@pytest.mark.parametrize("mode", MODES)
def test_schema_evolution(spark: Any, spark_catalog: Any, table_name: str, mode: str) -> None:
    make_table(spark_catalog, table_name, mode, target_rows(6))
    src = spark.createDataFrame(
        [(1, "b", 100, "x", 3.5), (77, "c", 7, None, 0.5)],
        "id long, cat string, v long, note string, score double",
    )
    (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .with_schema_evolution()
        .execute()
    )
    t = spark_catalog.load_table(table_name)
    assert [f.name for f in t.schema().fields] == [*COLUMNS, "score"]
    got = {r["id"]: r for r in rows_of(spark_catalog, table_name)}
    assert got[1] == {"id": 1, "cat": "b", "v": 100, "note": "x", "score": 3.5}
    assert got[77]["score"] == 0.5 and got[2]["score"] is None
    assert len(got) == 7
    assert len(t.snapshots()) == 3  # the schema change and the rows: one commit


@pytest.mark.parametrize("mode", MODES)
def test_merge_into_empty_table_and_repeated_changes(
    spark: Any, spark_catalog: Any, table_name: str, mode: str
) -> None:
    """An empty table takes inserts; merge-on-read changes then read through earlier delete files
    (Spark's reader with the anti-join) and copy-on-write ones replace rewritten files."""
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["bucket(2, id)"], properties=props)
    t = icefloe.spark.table(spark, table_name).alias("t")
    src = source_df(spark, target_rows(30)[5:])
    t.merge(src.alias("s"), "t.id = s.id").when_not_matched_insert_all().execute()
    assert key(rows_of(spark_catalog, table_name)) == key(target_rows(30)[5:])
    t.delete("id % 2 = 0")
    t.update("id % 3 = 0", set={"v": "-v"})
    r = (
        t.merge(source_df(spark, target_rows(30)).alias("s"), "t.id = s.id")
        .when_matched_update(set={"note": "'again'"})
        .when_not_matched_insert_all()
        .execute()
    )
    model = [r for r in target_rows(30)[5:] if r["id"] % 2]
    model = [{**r, "v": -r["v"]} if r["id"] % 3 == 0 else r for r in model]
    model = [{**r, "note": "again"} for r in model]
    present = {r["id"] for r in model}
    model += [r for r in target_rows(30) if r["id"] not in present]
    assert key(rows_of(spark_catalog, table_name)) == key(model)
    assert r.metrics["fast_path"] is True
    assert r.rows_updated == len(present)


def test_fallback_reader_for_columns_spark_parquet_cannot_read(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """A uuid column: the target is read by icefloe's reader in Python workers."""
    import uuid

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("u", pa.uuid()), ("v", pa.int64())])
    t = spark_catalog.create_table(
        table_name, schema=schema, properties={"write.merge.mode": "merge-on-read"}
    )
    ids = [uuid.UUID(int=i) for i in range(6)]
    t.append(
        pa.table(
            {"id": list(range(6)), "u": pa.array([u.bytes for u in ids], pa.uuid()), "v": list(range(6))}
        )
    )
    t.delete("id = 0")  # an Arrow merge-on-read delete: the reader applies it
    src = spark.createDataFrame(
        [(1, str(uuid.UUID(int=9)), 10), (9, str(uuid.UUID(int=9)), 90)], "id long, u string, v long"
    )
    r = (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert r.metrics["fast_path"] is False
    got = {row["id"]: (uuid.UUID(str(row["u"])), row["v"]) for row in rows_of(spark_catalog, table_name)}
    nine = uuid.UUID(int=9)
    want = {1: (nine, 10), 9: (nine, 90), **{i: (ids[i], i) for i in (2, 3, 4, 5)}}
    assert got == want


@pytest.mark.parametrize("mode", MODES)
def test_merge_prunes_to_the_source_partition(
    spark: Any, spark_catalog: Any, table_name: str, mode: str
) -> None:
    """Source keys in one partition: only that partition's files are planned and read."""
    t = make_table(spark_catalog, table_name, mode, target_rows(60), partition_by=["truncate(10, id)"])
    files = [task.file for task in t.scan().plan_files()]
    in_partition = [f for f in files if f.partition[0] == 20]
    assert len(files) > len(in_partition) >= 1
    src = source_df(spark, [{"id": i, "cat": "a", "v": -i, "note": None, "op": "U"} for i in (21, 23, 29)])
    r = (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .when_matched_update(set={"v": "s.v"})
        .execute()
    )
    assert r.files_planned == len(in_partition)
    if mode == "copy-on-write":
        assert r.files_rewritten <= len(in_partition)
    want = [{**x, "v": -x["id"]} if x["id"] in (21, 23, 29) else x for x in target_rows(60)]
    assert key(rows_of(spark_catalog, table_name)) == key(want)
    # the same by a target-only conjunct of the ON condition (identity partition on cat)
    t2 = make_table(spark_catalog, table_name + "_cat", mode, target_rows(60))
    cat_a = [task.file for task in t2.scan(row_filter="cat = 'a'").plan_files()]
    src2 = source_df(spark, [{"id": i, "cat": "a", "v": 0, "note": None, "op": "U"} for i in range(0, 60, 3)])
    r2 = (
        icefloe.spark.table(spark, table_name + "_cat")
        .alias("t")
        .merge(src2.alias("s"), "t.id = s.id AND t.cat = 'a'")
        .when_matched_delete()
        .execute()
    )
    assert r2.files_planned == len(cat_a) and r2.rows_deleted == 20


@pytest.mark.parametrize("mode", MODES)
def test_delete_drops_whole_files_by_metadata(
    spark: Any, spark_catalog: Any, table_name: str, mode: str
) -> None:
    make_table(spark_catalog, table_name, mode, target_rows())
    r = icefloe.spark.table(spark, table_name).delete("cat = 'b' OR cat = 'c'")
    assert r.data_files_added == 0 and r.delete_files_added == 0 and r.data_files_removed == 4
    assert r.rows_deleted == len([x for x in target_rows() if x["cat"] != "a"])
    assert key(rows_of(spark_catalog, table_name)) == key([x for x in target_rows() if x["cat"] == "a"])


@pytest.mark.parametrize("engine", ["auto", "source"])
def test_read_metadata_columns(spark: Any, spark_catalog: Any, table_name: str, engine: str) -> None:
    t = make_table(spark_catalog, table_name, "merge-on-read", target_rows(20))
    t.delete("id = 3")  # a position delete: positions of the other rows are unchanged
    df = icefloe.spark.read(
        spark,
        table_name,
        columns=["id"],
        engine=engine,
        metadata_columns=["_file", "_pos", "_spec_id", "_partition"],
    )
    assert df.columns == ["id", "_file", "_pos", "_spec_id", "_partition"]
    rows = df.collect()
    assert sorted(r["id"] for r in rows) == [i for i in range(20) if i != 3]
    paths = {f.file_path for f in (task.file for task in t.scan().plan_files())}
    for r in rows:
        assert r["_file"] in paths and r["_spec_id"] == 0 and r["_partition"]["cat"] == "abc"[r["id"] % 3]
    # positions count every row of the file, deleted ones too: the first append wrote ids 0..9,
    # cat a = 0, 3, 6, 9 at positions 0..3 (3 is deleted), cat b = 1, 4, 7
    pos = {r["id"]: r["_pos"] for r in rows}
    assert (pos[0], pos[6], pos[9], pos[1], pos[4]) == (0, 2, 3, 0, 1)


def test_copy_on_write_rewrites_only_files_with_a_match(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """Six candidate files (the source's ids 2 and 35 fall in every file's id range); only the
    two files holding ids 2 and 35 (both cat c) are read again and replaced."""
    make_table(spark_catalog, table_name, "copy-on-write", target_rows(40))
    src = source_df(spark, [{"id": i, "cat": "x", "v": -i, "note": None, "op": "U"} for i in (2, 35)])
    r = (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .when_matched_update(set={"v": "s.v"})
        .execute()
    )
    assert (r.files_planned, r.files_rewritten, r.data_files_removed) == (6, 2, 2)
    assert r.rows_updated == 2 and r.rows_copied == len([x for x in target_rows(40) if x["cat"] == "c"]) - 2
    want = [{**x, "v": -x["id"]} if x["id"] in (2, 35) else x for x in target_rows(40)]
    assert key(rows_of(spark_catalog, table_name)) == key(want)
