"""``icefloe.spark.sql``: which names are icefloe tables, INSERT INTO / OVERWRITE, SELECT with time
travel, statements that go to Spark unchanged, and the ones refused with what to do instead."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dml_model import SCHEMA, arrow, key, target_rows

import icefloe.spark
from icefloe.errors import UnsupportedFeatureError, ValidationError


def _rows(catalog: Any, name: str) -> list[tuple[Any, ...]]:
    return key(catalog.load_table(name).scan().to_arrow().to_pylist())


@pytest.fixture
def table(spark_catalog: Any, table_name: str) -> str:
    t = spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["cat"])
    t.append(arrow(target_rows(9)))
    return table_name


def test_select_resolves_icefloe_tables_and_leaves_spark_names(spark: Any, table: str) -> None:
    spark.createDataFrame([(1, "one"), (4, "four")], "id long, word string").createOrReplaceTempView("words")
    df = icefloe.spark.sql(
        spark,
        f"SELECT t.id, w.word, '{{not a placeholder}}' AS lit "
        f"FROM {table} t JOIN words w ON t.id = w.id ORDER BY t.id",
    )
    assert [tuple(r) for r in df.collect()] == [
        (1, "one", "{not a placeholder}"),
        (4, "four", "{not a placeholder}"),
    ]
    assert icefloe.spark.sql(spark, "SELECT count(*) FROM words").first()[0] == 2  # Spark's own view
    assert icefloe.spark.sql(spark, f"SELECT count(*) FROM default.{table}").first()[0] == 9  # catalog prefix
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        icefloe.spark.sql(spark, "SELECT * FROM spark.no_such_table")  # not icefloe's: Spark says so
    spark.catalog.dropTempView("words")


def test_time_travel(spark: Any, spark_catalog: Any, table: str) -> None:
    t = spark_catalog.load_table(table)
    first = t.current_snapshot()
    icefloe.spark.sql(spark, f"DELETE FROM {table} WHERE id < 4")
    with t.refresh().manage_snapshots() as ms:
        ms.create_tag("before", first.snapshot_id)
    count = f"SELECT count(*) FROM {table}"
    assert icefloe.spark.sql(spark, count).first()[0] == 5
    assert icefloe.spark.sql(spark, f"{count} VERSION AS OF {first.snapshot_id}").first()[0] == 9
    assert icefloe.spark.sql(spark, f"{count} FOR VERSION AS OF 'before'").first()[0] == 9
    ts = first.timestamp_ms
    assert icefloe.spark.sql(spark, f"{count} TIMESTAMP AS OF timestamp_millis({ts})").first()[0] == 9
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:  # a timestamp text is in the session's zone, as in Spark
        import datetime as dt
        from zoneinfo import ZoneInfo

        # exactly the snapshot's millisecond: a later DELETE may be less than a second after it
        utc = dt.datetime.fromtimestamp(ts // 1000, dt.UTC) + dt.timedelta(milliseconds=ts % 1000)
        local = utc.astimezone(ZoneInfo("America/New_York")).replace(tzinfo=None)
        text = local.isoformat(sep=" ")
        assert icefloe.spark.sql(spark, f"{count} TIMESTAMP AS OF '{text}'").first()[0] == 9
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_insert_into_and_overwrite(spark: Any, spark_catalog: Any, table: str) -> None:
    out = icefloe.spark.sql(spark, f"INSERT INTO {table} VALUES (100, 'a', 1, 'x'), (101, 'b', 2, NULL)")
    assert out.first()["num_inserted_rows"] == 2
    icefloe.spark.sql(
        spark, f"INSERT INTO TABLE {table} (id, cat) SELECT id + 200, cat FROM {table} WHERE id < 2"
    )
    want = [
        *target_rows(9),
        {"id": 100, "cat": "a", "v": 1, "note": "x"},
        {"id": 101, "cat": "b", "v": 2, "note": None},
        {"id": 200, "cat": "a", "v": None, "note": None},
        {"id": 201, "cat": "b", "v": None, "note": None},
    ]
    assert _rows(spark_catalog, table) == key(want)
    # a static partition: only that partition is replaced
    icefloe.spark.sql(spark, f"INSERT OVERWRITE {table} PARTITION (cat = 'a') SELECT 7, 70, 'only-a'")
    want = [r for r in want if r["cat"] != "a"] + [{"id": 7, "cat": "a", "v": 70, "note": "only-a"}]
    assert _rows(spark_catalog, table) == key(want)
    # dynamic (Spark's conf): the partitions the query has rows in
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        icefloe.spark.sql(spark, f"INSERT OVERWRITE {table} SELECT 8, 'b', 80, 'only-b'")
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    want = [r for r in want if r["cat"] != "b"] + [{"id": 8, "cat": "b", "v": 80, "note": "only-b"}]
    assert _rows(spark_catalog, table) == key(want)
    icefloe.spark.sql(spark, f"INSERT OVERWRITE {table} SELECT 9, 'c', 90, 'all'")
    assert _rows(spark_catalog, table) == key([{"id": 9, "cat": "c", "v": 90, "note": "all"}])
    with pytest.raises(ValidationError, match="gives 2 columns"):
        icefloe.spark.sql(spark, f"INSERT INTO {table} SELECT 1, 'a'")


def test_several_statements_and_dml_results(spark: Any, spark_catalog: Any, table: str) -> None:
    out = icefloe.spark.sql(
        spark,
        f"UPDATE {table} SET note = 'semi;colon' WHERE id = 1; DELETE FROM {table} WHERE id = 2;\n"
        f"SELECT id, note FROM {table} WHERE id < 3 ORDER BY id;",
    )
    assert [tuple(r) for r in out.collect()] == [(0, None), (1, "semi;colon")]
    res = icefloe.spark.sql(spark, f"DELETE FROM {table}").first().asDict()
    assert res == {
        "num_affected_rows": 8,
        "num_updated_rows": 0,
        "num_deleted_rows": 8,
        "num_inserted_rows": 0,
    }
    assert _rows(spark_catalog, table) == []


def test_merge_with_an_icefloe_source_and_case_expressions(
    spark: Any, spark_catalog: Any, table: str
) -> None:
    other = table + "_src"
    t2 = spark_catalog.create_table(other, schema=SCHEMA)
    t2.append(
        arrow([{"id": 1, "cat": "b", "v": 5, "note": "n"}, {"id": 50, "cat": "a", "v": 6, "note": None}])
    )
    icefloe.spark.sql(
        spark,
        f"""MERGE INTO {table} AS t
            USING (SELECT * FROM {other} WHERE v > 0) AS s
            ON t.id = s.id
            WHEN MATCHED AND CASE WHEN s.v > 3 THEN true ELSE false END THEN
              UPDATE SET t.v = CASE WHEN s.note IS NULL THEN -1 ELSE s.v END, note = 'matched, then updated'
            WHEN NOT MATCHED THEN INSERT *""",
    )
    want = [{**r, "v": 5, "note": "matched, then updated"} if r["id"] == 1 else r for r in target_rows(9)]
    want.append({"id": 50, "cat": "a", "v": 6, "note": None})
    assert _rows(spark_catalog, table) == key(want)


def test_statements_refused_with_what_to_do(spark: Any, spark_catalog: Any, table: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match="CREATE TEMPORARY VIEW") as e:
        icefloe.spark.sql(spark, f"CREATE TABLE foo USING icefloe OPTIONS (table '{table}')")
    assert "OPTIONS" in str(e.value)
    with pytest.raises(UnsupportedFeatureError, match="icefloe API"):
        icefloe.spark.sql(spark, f"DROP TABLE {table}")
    assert spark_catalog.table_exists(table)
    # what the message proposes works, and so does spark.table on it
    icefloe.spark.sql(spark, f"CREATE TEMPORARY VIEW ice_view USING icefloe OPTIONS (table '{table}')")
    assert spark.table("ice_view").count() == 9
    assert icefloe.spark.sql(spark, "SELECT max(id) FROM ice_view").first()[0] == 8
    spark.catalog.dropTempView("ice_view")
    assert icefloe.spark.sql(spark, "SELECT 1 AS one").first()["one"] == 1
