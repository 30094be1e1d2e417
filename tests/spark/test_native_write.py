"""``icefloe.spark.write``'s native path (icefloe/spark/_native_write.py): Spark's own Parquet
writer writes the files, the driver builds the DataFiles from the footers and commits them as the
data source does.

The reference for every table is the same DataFrame written through the data source
(``engine="source"``): the rows, the partition tuples with their record and null counts and the
column bounds per partition must agree; sort orders hold inside every file; cases the native path
cannot write fall back automatically (or raise with ``engine="native"``); overwrite modes commit
what the data source commits; failures commit nothing and delete only the write's own files; and
Iceberg Java 1.10 (the oracle) reads a natively written table.
"""

from __future__ import annotations

import datetime as dt
import decimal
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icefloe.spark
from icefloe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from icefloe.io.local import local_path
from icefloe.manifest import DataFile
from icefloe.spark import _native_write as nw
from icefloe.spark.types import to_spark_schema
from icefloe.spec.values import from_bytes

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("i", pa.int32()),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
        ("f", pa.float32()),
        ("x", pa.float64()),
        ("flag", pa.bool_()),
        ("st", pa.struct([("a", pa.int32()), ("c", pa.string())])),
    ]
)

LONG = "q" * 120  # 240 hex digits: an identity partition value hashed in the directory name


def _data(n: int = 30, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    base = dt.datetime(1969, 12, 31, 22, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": ids,
            "i": [None if k % 7 == 0 else (k * 37) % 200 - 100 for k in ids],
            "s": [None if k % 5 == 0 else ["", "a_b", "ü/=%", LONG, "zz"][k % 4] for k in ids],
            "b": [None if k % 6 == 0 else bytes([k % 3, 255]) for k in ids],
            "d": [None if k % 9 == 0 else dt.date(1969, 12, 30) + dt.timedelta(days=k * 11) for k in ids],
            "ts": [None if k % 8 == 0 else base + dt.timedelta(hours=k * 7) for k in ids],
            "ntz": [dt.datetime(1999, 12, 31, 23) + dt.timedelta(hours=k * 13) for k in ids],
            "dec": [None if k % 4 == 0 else decimal.Decimal(k * 37 - 900).scaleb(-2) for k in ids],
            "f": [None if k % 10 == 0 else [0.1, -0.0, 2.5][k % 3] for k in ids],
            "x": [None if k % 11 == 0 else [float("nan"), 1e-5, -3.0][k % 3] for k in ids],
            "flag": [None if k % 3 == 0 else k % 2 == 0 for k in ids],
            "st": [None if k % 12 == 0 else {"a": None if k % 5 == 1 else k, "c": f"c{k % 3}"} for k in ids],
        },
        schema=SCHEMA,
    )


def _df(spark: Any, table: Any, data: pa.Table, partitions: int = 2) -> Any:
    return spark.createDataFrame(data, schema=to_spark_schema(table.schema())).repartition(partitions)


def _files(table: Any) -> list[DataFile]:
    return [t.file for t in table.refresh().scan().plan_files()]


def _native(files: list[DataFile]) -> bool:
    return bool(files) and all("/data/spark-" in f.file_path for f in files)


def _staging_dirs(table: Any) -> set[str]:
    return {f.file_path.split("/data/spark-")[1].split("/")[0] for f in _files(table) if _native([f])}


def _rows(table: Any) -> list[tuple[Any, ...]]:
    t = table.refresh().scan().to_arrow()
    return sorted((tuple(repr(v) for v in r.values()) for r in t.to_pylist()), key=str)


def _by_partition(table: Any) -> dict[Any, dict[str, Any]]:
    """Per partition: records, null counts, and the bounds over its files (floats excluded)."""
    schema = table.schema()
    out: dict[Any, dict[str, Any]] = defaultdict(
        lambda: {"rows": 0, "nulls": defaultdict(int), "lo": {}, "hi": {}}
    )
    for f in _files(table):
        p = out[repr(f.partition)]  # repr: NaN partition values compare equal
        p["rows"] += f.record_count
        for fid, n in (f.null_value_counts or {}).items():
            p["nulls"][fid] += n
        for key, bounds, pick in (("lo", f.lower_bounds, min), ("hi", f.upper_bounds, max)):
            for fid, raw in (bounds or {}).items():
                t = schema.find_type(fid)
                if str(t) in ("float", "double"):
                    continue
                v = from_bytes(t, raw)
                p[key][fid] = pick(p[key][fid], v) if fid in p[key] else v
    return {
        k: {"rows": v["rows"], "nulls": dict(v["nulls"]), "lo": v["lo"], "hi": v["hi"]}
        for k, v in out.items()
    }


def _pair(spark_catalog: Any, name: str, partition_by: list[str], **kw: Any) -> tuple[Any, Any]:
    a = spark_catalog.create_table(name + "_src", SCHEMA, partition_by=partition_by, **kw)
    b = spark_catalog.create_table(name + "_nat", SCHEMA, partition_by=partition_by, **kw)
    return a, b


@pytest.mark.parametrize(
    "partition_by",
    [
        ["s", "bucket(3, id)", "truncate(2, s)", "truncate(50, i)", "day(ts)", "year(ntz)"],
        ["d", "ts", "b", "dec", "flag", "f", "x", "st.c", "month(d)", "hour(ts)", "truncate(3, dec)"],
        [],
    ],
    ids=["strings-buckets-days", "identity-types", "unpartitioned"],
)
def test_same_files_as_the_data_source(
    spark: Any, spark_catalog: Any, table_name: str, partition_by: list[str]
) -> None:
    _check_same_files(spark, spark_catalog, table_name, partition_by)


def test_the_column_projection_writes_the_same_files(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the pass-through plan cannot be built, the Column projection writes the same files."""
    monkeypatch.setattr(nw, "_passthrough", lambda df, target: None)
    _check_same_files(spark, spark_catalog, table_name, ["s", "bucket(3, id)", "day(ts)", "st.c"])


def test_a_flat_write_without_null_checks_projects_nothing(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    from icefloe.spark.write import write_requirements

    flat = pa.schema([f for f in SCHEMA if f.name != "st"])
    t = spark_catalog.create_table(table_name, flat)
    data = _data(6).drop_columns(["st"])
    plain = _df(spark, t, data)
    # a plain DataFrame: the optimizer would drop the ids with the projection, so Columns it is
    assert nw._passthrough(plain, to_spark_schema(t.schema(), with_field_ids=True)) is None
    df = plain.cache()  # a cached one: the cached relation takes the projection's attributes
    target = to_spark_schema(t.schema(), with_field_ids=True)
    out = nw._prepare(df, t, write_requirements(t.metadata, None, None), None)
    # Spark's writer takes the rows as they come: no projection copies them
    plan = out._jdf.queryExecution().executedPlan().toString()
    assert "Project" not in plan, plan
    # the DataFrame's own types and nullability, with the table's field ids
    assert [(f.name, f.dataType, f.nullable) for f in out.schema.fields] == [
        (f.name, f.dataType, f.nullable) for f in df.schema.fields
    ]
    assert [f.metadata for f in out.schema.fields] == [f.metadata for f in target.fields]
    # and the files carry them (checked in every footer, else engine="native" would raise)
    icefloe.spark.write(df, t.name, engine="native")
    assert _native(_files(t))
    assert _rows(t) == sorted((tuple(repr(v) for v in r.values()) for r in data.to_pylist()), key=str)
    for f in _files(t):
        ids = [int(x.metadata[b"PARQUET:field_id"]) for x in pq.read_schema(local_path(f.file_path))]
        assert ids == [f.field_id for f in t.schema().fields]
    df.unpersist()


def test_the_pass_through_plan_puts_ids_on_nested_fields(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA)
    df = _df(spark, t, _data(6)).cache()
    target = to_spark_schema(t.schema(), with_field_ids=True)
    out = nw._passthrough(df, target)
    assert out is not None and out.columns == [f.name for f in target.fields]
    assert [f.metadata for f in out.schema.fields] == [f.metadata for f in target.fields]
    assert out.schema["st"].dataType["c"].metadata == target["st"].dataType["c"].metadata
    assert out.schema["st"].dataType["a"].nullable == df.schema["st"].dataType["a"].nullable
    assert sorted(map(repr, out.collect())) == sorted(map(repr, df.collect()))
    # anything the JVM refuses (here: a missing column) means the Column projection instead
    assert nw._passthrough(df.drop("flag"), target) is None
    df.unpersist()


def _check_same_files(spark: Any, spark_catalog: Any, table_name: str, partition_by: list[str]) -> None:
    src, nat = _pair(spark_catalog, table_name, partition_by)
    data = _data()
    icefloe.spark.write(_df(spark, src, data), src.name, engine="source")
    icefloe.spark.write(_df(spark, nat, data), nat.name, engine="native")
    assert _native(_files(nat)) and not _native(_files(src))
    assert _rows(nat) == _rows(src)
    assert _by_partition(nat) == _by_partition(src)
    for f in _files(nat):
        assert f.nan_value_counts == {}
        assert f.file_size_in_bytes == Path(local_path(f.file_path)).stat().st_size
        assert f.record_count == pq.read_metadata(local_path(f.file_path)).num_rows


def test_sort_order_is_honoured_in_every_file(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["truncate(50, i)"])
    t.replace_sort_order("id desc")
    df = _df(spark, t, _data(40), partitions=3).cache()  # cached: the pass-through plan, key and sort
    icefloe.spark.write(df, t.name, engine="native")
    df.unpersist()
    files = _files(t)
    assert _native(files)
    order_id = t.refresh().sort_order().order_id
    for f in files:
        ids = pq.read_table(local_path(f.file_path), columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
        assert f.sort_order_id == order_id


def test_what_the_native_path_cannot_write_falls_back(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    base = spark_catalog.create_table(table_name, SCHEMA)
    df = _df(spark, base, _data(6))

    def problem(schema: Any = SCHEMA, options: dict[str, str] | None = None, **kw: Any) -> str | None:
        name = f"{table_name}_{len(created)}"
        created.append(name)
        t = spark_catalog.create_table(name, schema, **kw)
        frame = df if schema is SCHEMA else spark.createDataFrame([], to_spark_schema(t.schema()))
        return nw.native_problem(spark, frame, t, options or {})

    created: list[str] = []
    assert problem() is None
    with_list = pa.schema([*SCHEMA, ("tags", pa.list_(pa.string()))])
    assert "list" in (problem(with_list) or "")
    assert "uuid" in (problem(pa.schema([("u", pa.uuid())])) or "")
    assert "time" in (problem(pa.schema([("t", pa.time64("us"))])) or "")
    assert "target-file-size-bytes" in (problem(options={"target-file-size-bytes": "1000"}) or "")
    assert "timestamp without zone" in (problem(partition_by=["ntz"]) or "")
    assert "s3://" in (problem(properties={"write.data.path": "s3://bucket/data"}) or "")
    assert "target-file-size" in (problem(properties={"write.target-file-size-bytes": "1000"}) or "")
    assert "bloom" in (problem(properties={"write.parquet.bloom-filter-enabled.column.id": "true"}) or "")
    assert "format version" in (problem(properties={"format-version": "1"}) or "")
    # a nullable DataFrame struct for a required table struct: the data source checks the values
    req_struct = pa.schema([pa.field("st", pa.struct([("a", pa.int32())]), nullable=False)])
    t = spark_catalog.create_table(table_name + "_rs", req_struct)
    frame = spark.createDataFrame([], "st struct<a: int>")
    assert "required" in (nw.native_problem(spark, frame, t, {}) or "")
    # a DataFrame that is not the table's
    assert "columns" in (nw.native_problem(spark, df.drop("flag"), base, {}) or "")

    t = spark_catalog.create_table(table_name + "_tags", with_list, partition_by=["s"])
    data = _data(6).append_column("tags", pa.array([["a"], None, [], ["b", None], ["c"], ["d"]]))
    with pytest.raises(UnsupportedFeatureError, match="list"):
        icefloe.spark.write(_df(spark, t, data), t.name, engine="native")
    assert t.refresh().current_snapshot() is None
    icefloe.spark.write(_df(spark, t, data), t.name)  # auto: the data source writes it
    files = _files(t)
    assert files and not _native(files)
    assert sum(f.record_count for f in files) == 6


def test_overwrite_modes_commit_what_the_data_source_commits(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["flag"])

    def write(data: pa.Table, mode: str, **options: str) -> None:
        before = _staging_dirs(t)
        icefloe.spark.write(_df(spark, t, data), t.name, mode, options=options, engine="native")
        assert len(_staging_dirs(t) - before) == 1  # the new rows are in Spark-written files

    def ids() -> list[int]:
        return sorted(t.refresh().scan().to_arrow().column("id").to_pylist())

    write(_data(20), "append")
    write(_data(5, start=100), "overwrite", **{"overwrite-filter": "id < 10"})
    assert ids() == list(range(10, 20)) + list(range(100, 105))
    # dynamic: replaces the partitions it writes (flag true only) and keeps the others
    only_true = _data(6, start=200).filter(pa.array([k % 2 == 0 and k % 3 != 0 for k in range(200, 206)]))
    before = t.refresh().scan().to_arrow().to_pylist()
    write(only_true, "overwrite", **{"partition-overwrite-mode": "dynamic"})
    kept = sorted(r["id"] for r in before if r["flag"] is not True)
    assert ids() == sorted(kept + only_true.column("id").to_pylist())
    write(_data(3, start=300), "overwrite")
    assert ids() == [300, 301, 302]
    ops = [s.summary.operation.value for s in t.refresh().snapshots()]
    assert ops == ["append", "overwrite", "overwrite", "overwrite"]


def test_nullable_columns_for_required_ones_are_checked_in_the_write(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["bucket(2, id)"])
    from pyspark.sql import types as st

    nullable = pa.schema([f.with_nullable(True) for f in SCHEMA])
    spark_schema = st.StructType([st.StructField(f.name, f.dataType) for f in to_spark_schema(t.schema())])
    frame = spark.createDataFrame(_data(6).cast(nullable), schema=spark_schema)
    assert frame.schema["id"].nullable and nw.native_problem(spark, frame, t, {}) is None
    icefloe.spark.write(frame, t.name, engine="native")
    assert _native(_files(t)) and sorted(_ids(t)) == list(range(6))
    with_null = pa.table({c: _data(4, start=10).column(c) for c in SCHEMA.names}, schema=nullable)
    with_null = with_null.set_column(0, "id", pa.array([10, None, 12, 13], pa.int64()))
    with pytest.raises(SchemaMismatchError, match="'id' is required"):
        icefloe.spark.write(spark.createDataFrame(with_null, schema=spark_schema), t.name, engine="native")
    assert sorted(_ids(t)) == list(range(6))
    assert len(_staging_dirs(t)) == 1 and len(list(_data_dir(t).iterdir())) == 1


def _ids(t: Any) -> list[int]:
    return t.refresh().scan().to_arrow().column("id").to_pylist()


def _data_dir(t: Any) -> Path:
    return Path(local_path(t.refresh().location)) / "data"


def test_a_failed_spark_job_commits_nothing_and_deletes_only_its_files(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    from pyspark.sql import functions as F

    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["bucket(2, id)"])
    icefloe.spark.write(_df(spark, t, _data(8)), t.name, engine="native")
    committed = {f.file_path for f in _files(t)}
    stray = _data_dir(t) / "user-file.txt"
    stray.write_text("not icefloe's")
    before = sorted(p for p in _data_dir(t).rglob("*") if p.is_file())
    snapshot = t.refresh().current_snapshot()
    bad = _df(spark, t, _data(8, start=50)).withColumn(
        "s", F.when(F.col("id") == 53, F.raise_error(F.lit("boom"))).otherwise(F.col("s"))
    )
    with pytest.raises(Exception, match="boom"):
        icefloe.spark.write(bad, t.name, engine="native")
    assert t.refresh().current_snapshot() == snapshot
    assert sorted(p for p in _data_dir(t).rglob("*") if p.is_file()) == before
    assert {f.file_path for f in _files(t)} == committed


@pytest.mark.parametrize("error", [CommitFailedError, CommitStateUnknownError])
def test_a_failed_commit_deletes_its_files_unless_the_outcome_is_unknown(
    spark: Any, spark_catalog: Any, table_name: str, monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    from icefloe.table.transaction import Transaction

    t = spark_catalog.create_table(table_name, SCHEMA)
    stray = _data_dir(t) / "user-file.txt"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_text("not icefloe's")

    def fail(self: Any) -> Any:
        raise error("injected")

    monkeypatch.setattr(Transaction, "commit", fail)
    with pytest.raises(error, match="injected"):
        icefloe.spark.write(_df(spark, t, _data(6)), t.name, engine="native")
    monkeypatch.undo()
    assert t.refresh().current_snapshot() is None
    parquet = [p for p in _data_dir(t).rglob("*.parquet")]
    assert stray.exists()
    if error is CommitStateUnknownError:
        assert parquet  # it may have committed: nothing is deleted
    else:
        assert parquet == [] and [p.name for p in _data_dir(t).iterdir()] == ["user-file.txt"]


# ---------------------------------------------------------------- Iceberg Java reads it


@pytest.mark.oracle
@pytest.mark.java
def test_java_reads_a_natively_written_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    import interop_support as sup

    sup.require_oracle()
    root = tmp_path_factory.mktemp("native_write_oracle")
    db, wh = root / "catalog.db", root / "warehouse"
    wh.mkdir()
    cat = sup.icefloe_catalog("native_oracle", db, wh)
    cat.create_namespace("n")
    partition_by = ["bucket(3, id)", "day(ts)", "truncate(2, s)", "month(d)", "dec", "st.c"]
    t = cat.create_table("n.t", SCHEMA, partition_by=partition_by)
    t.replace_sort_order("id desc")
    opts = {"uri": f"sqlite:///{db}", "warehouse": wh.as_uri()}
    data = [_data(30), _data(20, start=100)]
    for batch in data:
        icefloe.spark.write(
            _df(spark, t, batch), "n.t", catalog="native_oracle", catalog_properties=opts, engine="native"
        )
    t = t.refresh()
    assert _native(_files(t))
    expected, rows = {}, []
    for snap, batch in zip(t.snapshots(), data, strict=True):
        rows += sup.arrow_rows(batch)
        expected[snap.snapshot_id] = sup.checksum(
            sup.schema_json(t.metadata_location, snap.snapshot_id), rows
        )
    job = sup.VerifyJob(
        name="native_write",
        metadata_location=t.metadata_location,
        current_snapshot_id=t.current_snapshot().snapshot_id,
        snapshots=expected,
    )
    outcome = sup.run_verify_batch([job], root / "verify", engines=("spark", "pyiceberg"))["native_write"]
    assert not outcome.problems, sup.format_outcome(outcome)
