"""Against Iceberg Java 1.10: read its data files by id, and rewrite them to compare metrics.

Uses the reference tables generated at $ICEFLOE_ORACLE_REF (see tests/interop); skipped when absent.
The Java manifests are read with fastavro directly so this test depends only on the Arrow layer.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from icefloe.arrow.reader import read_task
from icefloe.arrow.writer import write_data_files
from icefloe.expressions import AlwaysTrue
from icefloe.manifest import DataFile, FileFormat
from icefloe.scan.task import FileScanTask
from icefloe.spec.schema import Schema

REF = Path(os.environ["ICEFLOE_ORACLE_REF"])
TABLE = REF / "hadoop" / "ref" / "types_v2"


@pytest.fixture(scope="module")
def java_table() -> tuple[Schema, list[dict[str, object]]]:
    if not TABLE.is_dir():
        pytest.skip(f"Iceberg Java reference tables not generated at {REF} (run the oracle generator)")
    metadata = json.loads(
        sorted(TABLE.glob("metadata/v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))[
            -1
        ].read_text()
    )
    schema = Schema.from_json(
        next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    )
    entries = []
    for path in glob.glob(str(TABLE / "metadata" / "*-m*.avro")):
        with open(path, "rb") as f:
            entries += [r["data_file"] for r in fastavro.reader(f) if r["status"] != 2]
    return schema, entries


def _as_dict(pairs: list[dict[str, object]] | None) -> dict[object, object]:
    return {p["key"]: p["value"] for p in pairs or []}


def _java_file(entry: dict[str, object]) -> DataFile:
    return DataFile(
        file_path=str(entry["file_path"]),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=int(entry["record_count"]),  # type: ignore[call-overload]
        file_size_in_bytes=int(entry["file_size_in_bytes"]),  # type: ignore[call-overload]
    )


def test_java_files_read_and_rewrite_with_the_same_metrics(io, meta_factory, java_table) -> None:  # type: ignore[no-untyped-def]
    schema, entries = java_table
    meta = meta_factory(schema, properties={"write.parquet.compression-codec": "zstd"})
    assert entries
    for entry in entries:
        batches = list(read_task(io, FileScanTask(_java_file(entry), AlwaysTrue()), schema, schema))
        table = pa.Table.from_batches(batches)
        assert table.num_rows == entry["record_count"]
        (ours,) = write_data_files(io, meta, table)
        assert ours.record_count == entry["record_count"]
        assert ours.value_counts == _as_dict(entry["value_counts"])  # type: ignore[arg-type]
        assert ours.null_value_counts == _as_dict(entry["null_value_counts"])  # type: ignore[arg-type]
        assert ours.nan_value_counts == _as_dict(entry["nan_value_counts"])  # type: ignore[arg-type]
        assert ours.lower_bounds == _as_dict(entry["lower_bounds"])  # type: ignore[arg-type]
        assert ours.upper_bounds == _as_dict(entry["upper_bounds"])  # type: ignore[arg-type]
        assert set(ours.column_sizes or {}) == set(_as_dict(entry["column_sizes"]))  # type: ignore[arg-type]
        # Reading our file back gives the rows Java wrote.
        again = list(read_task(io, FileScanTask(ours, AlwaysTrue()), schema, schema))
        # (NaN-aware comparison: repr shows NaN as nan on both sides.)
        assert repr(pa.Table.from_batches(again).to_pylist()) == repr(table.to_pylist())
