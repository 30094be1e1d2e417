"""Iceberg Java (on Spark 3.5), PyIceberg and DuckDB read what the streaming sink wrote: every
snapshot of a partitioned table written by a two-batch stream, checked by the oracle's
``verify_table.py`` against checksums computed from the input rows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import interop_support as sup

pytestmark = [pytest.mark.oracle, pytest.mark.java]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()), ("x", pa.float64())])


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "cat": [None if i % 7 == 0 else f"c{i % 3}" for i in ids], "x": [i / 4 for i in ids]},
        schema=SCHEMA,
    )


def test_oracle_reads_stream_written_table(
    spark: Any, spark_catalog: Any, table_name: str, tmp_path: Path
) -> None:
    sup.require_oracle()
    table = spark_catalog.create_table(table_name, schema=SCHEMA, partition_by=["cat", "bucket(2, id)"])
    src = tmp_path / "input"
    src.mkdir()
    batches = [_rows(0, 30), _rows(30, 30)]
    for i, rows in enumerate(batches):
        pq.write_table(rows, src / f"part-{i}.parquet")
    query = (
        spark.readStream.schema("id long, cat string, x double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
        .writeStream.format("icefloe")
        .option("table", table_name)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()

    table.refresh()
    snaps = table.snapshots()
    assert len(snaps) == 2
    # the file source takes the files in modification-time order: pair snapshots by their ids
    first_ids = set(table.scan(snapshot_id=snaps[0].snapshot_id).to_arrow().column("id").to_pylist())
    ordered = batches if first_ids == set(range(30)) else batches[::-1]
    expected, seen = {}, []
    for snap, rows in zip(snaps, ordered, strict=True):
        seen += sup.arrow_rows(rows)
        schema = sup.schema_json(table.metadata_location, snap.snapshot_id)
        expected[snap.snapshot_id] = sup.checksum(schema, seen)
    job = sup.VerifyJob(
        name="stream_sink",
        metadata_location=table.metadata_location,
        current_snapshot_id=snaps[-1].snapshot_id,
        snapshots=expected,
    )
    outcome = sup.run_verify_batch([job], tmp_path / "verify")["stream_sink"]
    assert not outcome.problems, sup.format_outcome(outcome)
