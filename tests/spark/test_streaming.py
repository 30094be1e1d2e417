"""Structured Streaming: the icefloe sink (one snapshot per micro-batch, exactly once across
restarts, append and complete modes, partitioned) and the icefloe source (appended snapshots as
micro-batches, admission control, starting points, non-append snapshots).

Every query runs with ``Trigger.AvailableNow`` so it ends by itself once the input is consumed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.errors import UnsupportedFeatureError
from icefloe.spark.streaming import (
    BATCH_ID_PROPERTY,
    QUERY_ID_PROPERTY,
    IcefloeStreamCommitMessage,
    stream_writer,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string())])
SPARK_DDL = "id long, cat string"
_T0 = time.time() - 3600


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "cat": [f"c{i % 5}" for i in ids]}, schema=SCHEMA)


def _input_dir(tmp_path: Path, chunks: list[tuple[int, int]]) -> Path:
    """A directory of parquet files, one per (start, n) chunk: a file source with
    maxFilesPerTrigger=1 turns each into one micro-batch."""
    src = tmp_path / "input"
    src.mkdir(exist_ok=True)
    for start, n in chunks:
        _write_input(src / f"part-{start:06d}.parquet", _rows(start, n), start)
    return src


def _write_input(path: Path, rows: pa.Table, order: int) -> None:
    # the file source takes files in modification-time order
    pq.write_table(rows, path)
    when = _T0 + order
    os.utime(path, (when, when))


def _run_sink(spark: Any, src: Path, checkpoint: Path, table: str, **options: str) -> Any:
    df = spark.readStream.schema(SPARK_DDL).option("maxFilesPerTrigger", 1).parquet(str(src))
    w = df.writeStream.format("icefloe").option("table", table).option("checkpointLocation", str(checkpoint))
    for k, v in options.items():
        w = w.option(k, v)
    query = w.trigger(availableNow=True).start()
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return query


def _ids(table: Any) -> list[int]:
    return sorted(table.refresh().scan().to_arrow().column("id").to_pylist())


def _same_files(table: Any) -> None:
    """Every parquet file under the table's data folder is live: no garbage left behind."""
    from icefloe.io.local import local_path

    live = {local_path(t.file_path) for t in table.refresh().scan().plan_files()}
    on_disk = {str(p) for p in Path(local_path(table.location), "data").rglob("*.parquet")}
    assert on_disk == live


# --------------------------------------------------------------------------- the sink


def test_sink_commits_each_batch_once_across_a_restart(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    """One snapshot per micro-batch, with the query id and batch id in its summary. Then the
    query is taken as killed after the sink committed batch 2 but before Spark recorded it (its
    entry in the checkpoint's commit log is gone): the restart re-runs batch 2, whose commit is a
    no-op, and goes on with batch 3."""
    table = spark_catalog.create_table(table_name, schema=SCHEMA)
    src = _input_dir(tmp_path, [(0, 10), (10, 10), (20, 10)])
    checkpoint = tmp_path / "cp"
    first = _run_sink(spark, src, checkpoint, table_name)

    snaps = table.refresh().snapshots()
    assert [s.summary.operation.value for s in snaps] == ["append"] * 3
    assert [s.summary.props[QUERY_ID_PROPERTY] for s in snaps] == [str(first.id)] * 3
    assert [s.summary.props[BATCH_ID_PROPERTY] for s in snaps] == ["0", "1", "2"]
    assert _ids(table) == list(range(30))

    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    _input_dir(tmp_path, [(30, 10)])
    second = _run_sink(spark, src, checkpoint, table_name)
    assert second.id == first.id  # the persistent id, from the checkpoint
    snaps = table.refresh().snapshots()
    assert [s.summary.props[BATCH_ID_PROPERTY] for s in snaps] == ["0", "1", "2", "3"]
    assert _ids(table) == list(range(40))  # no duplicates of batch 2
    _same_files(table)  # the re-run's files of batch 2 were deleted


def test_failed_batch_leaves_no_files(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    """A task of batch 1 fails (a null in the required column, found while writing, after the
    rows of other partitions were written): the query stops, the table keeps batch 0 only, and
    no file of batch 1 stays behind."""
    import icefloe.spark
    from icefloe.errors import SchemaMismatchError, ValidationError

    table = spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["cat"])
    src = _input_dir(tmp_path, [(0, 10)])
    bad = pa.table({"id": [*range(10, 20), None], "cat": ["c1"] * 5 + ["c2"] * 6}, schema=SCHEMA)
    nullable = pa.schema([("id", pa.int64()), ("cat", pa.string())])
    _write_input(src / "part-zz.parquet", bad.cast(nullable), 10)
    with pytest.raises(Exception) as failed:
        _run_sink(spark, src, tmp_path / "cp", table_name)
    error = icefloe.spark.icefloe_error(failed.value)
    assert isinstance(error, SchemaMismatchError | ValidationError), failed.value
    assert [s.summary.props[BATCH_ID_PROPERTY] for s in table.refresh().snapshots()] == ["0"]
    _same_files(table)


def _arrow_message(writer: Any, start: int, n: int, query_id: str) -> IcefloeStreamCommitMessage:
    message = writer.write(iter(_rows(start, n).to_batches()))
    return IcefloeStreamCommitMessage(message.files, query_id=query_id)


def test_commit_of_one_batch_twice_is_a_no_op(spark: Any, spark_catalog: Any, table_name: str) -> None:
    """The sink's commit and abort as Spark's driver calls them, without a query."""
    from icefloe.spark._config import spark_catalog_conf
    from icefloe.spark.types import to_spark_schema

    table = spark_catalog.create_table(table_name, schema=SCHEMA)
    options = {"table": table_name}
    conf = spark_catalog_conf(spark)
    writer = stream_writer(options, conf, to_spark_schema(table.schema()), False)

    writer.commit([_arrow_message(writer, 0, 10, "q1")], 0)
    again = _arrow_message(writer, 0, 10, "q1")  # the same batch, written again after a restart
    writer.commit([again, None], 0)
    assert len(table.refresh().snapshots()) == 1
    assert _ids(table) == list(range(10))
    _same_files(table)  # the second copy's files are gone

    # a batch whose tasks failed: its reported files go, and the table is unchanged
    failed = _arrow_message(writer, 10, 10, "q1")
    writer.abort([failed, None], 1)
    _same_files(table)

    # another query (another checkpoint) writing batch 0 is not confused with q1
    writer.commit([_arrow_message(writer, 100, 5, "q2")], 0)
    writer.commit([_arrow_message(writer, 10, 10, "q1")], 1)
    snaps = table.refresh().snapshots()
    assert [(s.summary.props[QUERY_ID_PROPERTY], s.summary.props[BATCH_ID_PROPERTY]) for s in snaps] == [
        ("q1", "0"),
        ("q2", "0"),
        ("q1", "1"),
    ]
    assert _ids(table) == [*range(20), *range(100, 105)]


def test_sink_partitioned_fanout(spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path) -> None:
    table = spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["cat", "bucket(2, id)"])
    src = _input_dir(tmp_path, [(0, 50), (50, 50)])  # every file holds rows of all 10 partitions
    _run_sink(spark, src, tmp_path / "cp", table_name)
    table.refresh()
    assert len(table.snapshots()) == 2
    tasks = table.scan().plan_files()
    assert {t.file.partition for t in tasks} == {(f"c{c}", b) for c in range(5) for b in range(2)}
    assert all(len({r for r in _cats(t.file_path)}) == 1 for t in tasks)
    assert _ids(table) == list(range(100))


def _cats(path: str) -> list[str]:
    return pq.read_table(path.removeprefix("file://"), columns=["cat"]).column("cat").to_pylist()


def test_sink_complete_mode_overwrites_per_batch(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    counts = pa.schema([pa.field("cat", pa.string()), pa.field("n", pa.int64(), nullable=False)])
    table = spark_catalog.create_table(table_name, schema=counts)
    src = _input_dir(tmp_path, [(0, 10), (10, 5)])
    df = spark.readStream.schema(SPARK_DDL).option("maxFilesPerTrigger", 1).parquet(str(src))
    agg = df.groupBy("cat").count().withColumnRenamed("count", "n")
    query = (
        agg.writeStream.format("icefloe")
        .outputMode("complete")
        .option("table", table_name)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    snaps = table.refresh().snapshots()
    assert [s.summary.operation.value for s in snaps] == ["overwrite", "overwrite"]
    rows = table.scan().to_arrow().to_pylist()
    assert sorted((r["cat"], r["n"]) for r in rows) == [(f"c{c}", 3) for c in range(5)]


# --------------------------------------------------------------------------- the source


def _collect(
    spark: Any, table: str, checkpoint: Path, into: list[list[int]] | None = None, **options: str
) -> tuple[list[list[int]], Callable[[], None]]:
    """Run a stream of ``table`` to its end (AvailableNow); the ids of each non-empty batch."""
    batches: list[list[int]] = [] if into is None else into

    def sink(df: Any, batch_id: int) -> None:
        ids = sorted(r.id for r in df.select("id").collect())
        if ids:
            batches.append(ids)

    def run() -> None:
        reader = spark.readStream.format("icefloe").option("table", table)
        for k, v in options.items():
            reader = reader.option(k, v)
        query = (
            reader.load()
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        if query.exception() is not None:
            raise query.exception()

    run()
    return batches, run


def _appends(table: Any, chunks: list[tuple[int, int]]) -> list[int]:
    return [table.append(_rows(start, n)).snapshot_id for start, n in chunks]


def test_source_whole_table_then_appends_with_max_files(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    table = spark_catalog.create_table(table_name, schema=SCHEMA)
    _appends(table, [(0, 10), (10, 10), (20, 10)])
    batches, run = _collect(spark, table_name, tmp_path / "cp", **{"max-files-per-trigger": "2"})
    assert batches == [list(range(20)), list(range(20, 30))]  # the table's 3 files, 2 per batch

    _appends(table, [(30, 10), (40, 10), (50, 10)])
    batches.clear()
    run()  # the same checkpoint: only the new appends
    assert batches == [list(range(30, 50)), list(range(50, 60))]


def test_source_max_records_per_trigger(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    table = spark_catalog.create_table(table_name, schema=SCHEMA)
    _appends(table, [(0, 10), (10, 10), (20, 10), (30, 30)])
    batches, _ = _collect(spark, table_name, tmp_path / "cp", **{"max-records-per-trigger": "25"})
    # two 10-row files fit in 25; a file larger than the limit still goes, alone
    assert batches == [list(range(20)), list(range(20, 30)), list(range(30, 60))]


def test_source_start_snapshot_id_and_timestamp(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    table = spark_catalog.create_table(table_name, schema=SCHEMA)
    ids = _appends(table, [(0, 10), (10, 10), (20, 10)])
    batches, _ = _collect(spark, table_name, tmp_path / "cp1", **{"start-snapshot-id": str(ids[1])})
    assert sorted(i for b in batches for i in b) == list(range(10, 30))  # inclusive
    ts = table.snapshot_by_id(ids[2]).timestamp_ms
    batches, _ = _collect(spark, table_name, tmp_path / "cp2", **{"start-timestamp": str(ts)})
    assert sorted(i for b in batches for i in b) == list(range(20, 30))


def test_source_fails_or_skips_overwrite_and_delete_snapshots(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    import icefloe.spark

    table = spark_catalog.create_table(table_name, schema=SCHEMA)
    first = _appends(table, [(0, 10)])[0]
    table.delete("id < 3")
    _appends(table, [(10, 10)])
    table.overwrite(_rows(100, 5), "id >= 15")
    _appends(table, [(20, 10)])
    table.refresh().maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    ops = [s.summary.operation.value for s in table.refresh().snapshots()]
    assert ops[-1] == "replace" and "overwrite" in ops and ops[1] in ("delete", "overwrite")
    start = {"start-snapshot-id": str(first)}

    delivered: list[list[int]] = []
    with pytest.raises(Exception) as failed:
        _collect(spark, table_name, tmp_path / "cp1", into=delivered, **start)
    assert delivered == [list(range(10))]  # the append before the failing snapshot got through
    error = icefloe.spark.icefloe_error(failed.value)
    assert isinstance(error, UnsupportedFeatureError)
    assert f"streaming-skip-{ops[1]}-snapshots" in (error.hint or "")

    skip = {"streaming-skip-delete-snapshots": "true", "streaming-skip-overwrite-snapshots": "true"}
    batches, _ = _collect(spark, table_name, tmp_path / "cp2", **start, **skip)
    # the appends as appended; the delete, the overwrite and the compaction are skipped
    assert sorted(i for b in batches for i in b) == [*range(10), *range(10, 20), *range(20, 30)]


def test_source_to_sink(spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path) -> None:
    """icefloe to icefloe: the target gets the source's rows, one snapshot per micro-batch."""
    source = spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["cat"])
    _appends(source, [(0, 20), (20, 20)])
    target_name = f"{table_name}_copy"
    target = spark_catalog.create_table(target_name, schema=SCHEMA)
    query = (
        spark.readStream.format("icefloe")
        .option("table", table_name)
        .option("max-files-per-trigger", "5")
        .load()
        .writeStream.format("icefloe")
        .option("table", target_name)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    assert _ids(target) == list(range(40))
    assert len(target.snapshots()) == 2  # 10 files (5 partitions x 2 appends), 5 per batch
