"""Row lineage of format v3 tables on Spark.

Scenarios: ``icefloe.spark.read(..., metadata_columns=["_row_id", "_last_updated_sequence_number"])``
and the data source's ``metadata-columns`` option give the values the Arrow scan gives (deletes
applied); tables below v3 refuse them; Spark's DELETE, UPDATE and MERGE, copy-on-write and
merge-on-read, keep every surviving row's ``_row_id``, give changed rows the new sequence number
and inserted rows new ids; compaction run by the Spark runner keeps both values."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import icefloe.spark
from icefloe.errors import UnsupportedFeatureError


def _load_spark_fixtures() -> Any:
    path = Path(__file__).resolve().parents[1] / "spark" / "conftest.py"
    spec = importlib.util.spec_from_file_location("icefloe_row_lineage_spark_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_fixtures = _load_spark_fixtures()
spark_warehouse = _fixtures.spark_warehouse
spark = _fixtures.spark
spark_catalog = _fixtures.spark_catalog
table_name = _fixtures.table_name

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()), pa.field("v", pa.int64())]
)
LINEAGE = ["_row_id", "_last_updated_sequence_number"]
MODES = ["copy-on-write", "merge-on-read"]


def _rows(ids: range | list[int]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "cat": "abc"[i % 3], "v": i} for i in ids], schema=SCHEMA)


def _make(catalog: Any, name: str, mode: str = "copy-on-write", version: int = 3) -> Any:
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    t = catalog.create_table(
        name, schema=SCHEMA, partition_by=["cat"], properties={"format-version": str(version), **props}
    )
    t.append(_rows(range(12)))
    t.append(_rows(range(12, 20)))
    return t


def arrow_lineage(catalog: Any, name: str) -> dict[int, tuple[int, int]]:
    t = catalog.load_table(name)
    rows = t.scan(selected_fields=("id", *LINEAGE)).to_arrow().to_pylist()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}


def spark_lineage(df: Any) -> dict[int, tuple[int, int]]:
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in df.collect()}


def current_seq(catalog: Any, name: str) -> int:
    return int(catalog.load_table(name).current_snapshot().sequence_number)


@pytest.mark.parametrize("engine", ["auto", "source"])
def test_read_gives_the_arrow_scans_values(
    spark: Any, spark_catalog: Any, table_name: str, engine: str
) -> None:
    t = _make(spark_catalog, table_name, "merge-on-read")
    t.delete("id = 4")  # a deletion vector: positions of the other rows stay
    t.update("id = 7", set={"v": -7})
    df = icefloe.spark.read(
        spark, table_name, columns=["id"], engine=engine, metadata_columns=["_pos", *LINEAGE]
    )
    assert df.columns == ["id", "_pos", *LINEAGE]
    got = spark_lineage(df)
    assert got == arrow_lineage(spark_catalog, table_name)
    assert 4 not in got and got[7][1] == current_seq(spark_catalog, table_name)
    # the data source directly, with a filter
    src = (
        spark.read.format("icefloe")
        .option("metadata-columns", ",".join(LINEAGE))
        .option("filter", "id < 10")
        .load(table_name)
    )
    assert spark_lineage(src) == {k: v for k, v in got.items() if k < 10}


def test_tables_below_v3_refuse_the_columns(spark: Any, spark_catalog: Any, table_name: str) -> None:
    _make(spark_catalog, table_name, version=2)
    with pytest.raises(UnsupportedFeatureError, match="format v3"):
        icefloe.spark.read(spark, table_name, metadata_columns=["_row_id"])
    with pytest.raises(Exception, match="format v3"):
        spark.read.format("icefloe").option("metadata-columns", "_row_id").load(table_name).collect()


@pytest.mark.parametrize("mode", MODES)
def test_dml_keeps_row_ids(spark: Any, spark_catalog: Any, table_name: str, mode: str) -> None:
    from pyspark.sql import functions as F

    _make(spark_catalog, table_name, mode)
    before = arrow_lineage(spark_catalog, table_name)
    t = icefloe.spark.table(spark, table_name)
    t.delete("id = 3")
    t.update("id in (1, 13)", set={"v": "v + 100"})
    s_update = current_seq(spark_catalog, table_name)
    src = spark.createDataFrame([(2, "c", 200), (30, "a", 300)], "id long, cat string, v long")
    (
        icefloe.spark.table(spark, table_name)
        .alias("t")
        .merge(src.alias("s"), F.col("t.id") == F.col("s.id"))
        .when_matched_update(set={"v": "s.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    s_merge = current_seq(spark_catalog, table_name)
    after = arrow_lineage(spark_catalog, table_name)
    assert set(after) == (set(before) - {3}) | {30}
    for i, (row_id, last) in after.items():
        if i == 30:
            assert row_id not in {v[0] for v in before.values()} and last == s_merge
            continue
        assert row_id == before[i][0], i
        expected = s_update if i in (1, 13) else s_merge if i == 2 else before[i][1]
        assert last == expected, i
    assert len({v[0] for v in after.values()}) == len(after)
    # Spark reads what the Arrow scan reads
    df = icefloe.spark.read(spark, table_name, columns=["id"], metadata_columns=LINEAGE)
    assert spark_lineage(df) == after


@pytest.mark.parametrize("strategy", ["binpack", "sort"])
def test_spark_compaction_keeps_lineage(
    spark: Any, spark_catalog: Any, table_name: str, strategy: str
) -> None:
    """Bin-pack (tasks read and write whole splits) and a sort into several files per group
    (Spark shuffles the rows between reading and writing them)."""
    t = _make(spark_catalog, table_name, "merge-on-read")
    t.append(_rows(range(20, 60)))
    t.delete("id in (2, 5, 14)")
    t.update("id = 6", set={"v": 66})
    before = arrow_lineage(spark_catalog, table_name)
    options = {"rewrite-all": "true"}
    kwargs: dict[str, Any] = {}
    if strategy == "sort":
        options["target-file-size-bytes"] = "1024"  # several output files: the shuffled path
        kwargs["sort_order"] = "v desc"
    result = spark_catalog.load_table(table_name).maintenance.rewrite_data_files(
        strategy=strategy, options=options, spark=spark, **kwargs
    )
    assert result.rewritten_data_files_count > 0
    if strategy == "sort":
        assert result.added_data_files_count > 3
    assert arrow_lineage(spark_catalog, table_name) == before
    table = spark_catalog.load_table(table_name)
    assert not any(task.delete_files for task in table.scan().plan_files())


def test_merge_on_read_writes_one_puffin_file_per_task(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """A DELETE over three data files (cats a, b, c) runs in at most two write tasks (two shuffle
    partitions): some task writes the vectors of two data files into one Puffin file."""
    from icefloe.manifest import ManifestContent, read_manifest, read_manifest_list

    _make(spark_catalog, table_name, "merge-on-read")
    before = arrow_lineage(spark_catalog, table_name)
    icefloe.spark.table(spark, table_name).delete("id in (0, 1, 2, 15)")
    t = spark_catalog.load_table(table_name)
    dvs = [
        e.data_file
        for m in read_manifest_list(t.io, t.current_snapshot().manifest_list)
        if m.content == ManifestContent.DELETES
        for e in read_manifest(t.io, m)
        if e.is_live
    ]
    assert len({d.referenced_data_file for d in dvs}) == len(dvs) >= 3
    assert len({d.file_path for d in dvs}) < len(dvs)
    assert arrow_lineage(spark_catalog, table_name) == {
        k: v for k, v in before.items() if k not in (0, 1, 2, 15)
    }
