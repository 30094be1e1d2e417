"""Mutation fuzzing of table files (issue 15, part 4); the harness is ``fuzz_harness.py`` here.

The suite runs a bounded slice: ``ICEFLOE_FUZZ`` cases per format (default 80, about 25 s for
all formats on one core); the full campaign runs on demand::

    ICEFLOE_FUZZ=3000 .venv/bin/python tests/fuzz/fuzz_harness.py campaign --jobs 2

Then come regression tests, one per bug the fuzzer found, each on a minimal mutated file.
"""

from __future__ import annotations

import io as stdio
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fastavro
import fuzz_harness as fh
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.errors import CorruptFileError
from icefloe.manifest import ManifestContent, read_manifest, read_manifest_list

CASES = int(os.environ.get("ICEFLOE_FUZZ", "80"))
SEED = int(os.environ.get("ICEFLOE_FUZZ_SEED", "1"))

@pytest.fixture(scope="module")
def corpus() -> Iterator[Path]:
    with fh.temporary_corpus() as path:
        yield path


@pytest.mark.parametrize("fmt", fh.FORMATS)
def test_mutated_files_read_or_raise_typed(corpus: Path, fmt: str) -> None:
    counts, findings = fh.run_cases(corpus, fmt, SEED, 0, CASES, timeout=300)
    assert sum(counts.values()) == CASES
    bad = [f for f in findings if f[2] in fh.BAD]
    assert not bad, "\n".join(" | ".join(map(str, f)) for f in bad)
    # Native aborts inside pyarrow are counted, not failed on: the worker restarts after them.
    print(fmt, dict(counts))


# --------------------------------------------------------------------------- regressions


@pytest.fixture(scope="module")
def runner(corpus: Path) -> fh.Runner:
    return fh.Runner(corpus)


def _subject(runner: fh.Runner, name: str = "db.ice_v2") -> fh.Subject:
    return next(s for s in runner.subjects if s.name == name)


def _reencode(data: bytes, change: Callable[[list[dict[str, Any]]], None]) -> bytes:
    reader = fastavro.reader(stdio.BytesIO(data))
    schema = fastavro.parse_schema(json.loads(reader.metadata["avro.schema"]))
    meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    records = list(reader)
    change(records)
    out = stdio.BytesIO()
    fastavro.writer(out, schema, records, codec=reader.codec, metadata=meta)
    return out.getvalue()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("added_files_count", -1),
        ("deleted_rows_count", -(2**63)),
        ("sequence_number", -1),
        ("min_sequence_number", 2**40),  # above the manifest's own sequence number
        ("manifest_length", -5),
    ],
)
def test_a_manifest_list_with_an_impossible_value_is_corrupt(
    runner: fh.Runner, field: str, value: int
) -> None:
    t = _subject(runner).table
    location = t.current_snapshot().manifest_list

    def change(records: list[dict[str, Any]]) -> None:
        records[0][field] = value

    io = fh.OverlayIO(t.io, {location: _reencode(fh.read_bytes(t.io, location), change)})
    with pytest.raises(CorruptFileError, match=field):
        read_manifest_list(io, location, cache=False)


def _delete_manifest(t: Any) -> Any:
    return next(
        m
        for m in read_manifest_list(t.io, t.current_snapshot().manifest_list)
        if m.content == ManifestContent.DELETES
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda df: df.update(file_size_in_bytes=-1), "negative"),
        (lambda df: df.update(record_count=-3), "negative"),
        (lambda df: df.update(file_path=""), "empty file_path"),
        # a position delete file turned into an equality delete file without equality ids
        (lambda df: df.update(content=2, equality_ids=None), "without equality_ids"),
        (lambda df: df.update(content=0), "data file in a deletes manifest"),
    ],
)
def test_a_manifest_entry_with_an_impossible_value_is_corrupt(
    runner: fh.Runner, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    t = _subject(runner).table
    manifest = _delete_manifest(t)

    def mutate(records: list[dict[str, Any]]) -> None:
        change(records[0]["data_file"])

    data = _reencode(fh.read_bytes(t.io, manifest.manifest_path), mutate)
    io = fh.OverlayIO(t.io, {manifest.manifest_path: data})
    with pytest.raises(CorruptFileError, match=message):
        list(read_manifest(io, manifest, cache=False))


def test_a_snapshot_of_an_unknown_schema_is_corrupt_metadata(runner: fh.Runner) -> None:
    from icefloe.spec.table_metadata import read_metadata_json

    s = _subject(runner)
    doc = json.loads(fh.read_bytes(s.table.io, s.metadata_location))
    doc["snapshots"][-1]["schema-id"] = 7
    with pytest.raises(CorruptFileError, match="schema 7"):
        read_metadata_json(json.dumps(doc), s.metadata_location)


def _position_delete_file(t: Any) -> str:
    return next(
        d.file_path
        for task in t.scan().plan_files()
        for d in task.delete_files
        if d.content == 1 and d.file_format.value == "PARQUET"
    )


@pytest.mark.parametrize("column", ["file_path", "pos"])
def test_a_null_in_a_position_delete_file_is_corrupt(runner: fh.Runner, column: str) -> None:
    from icefloe.table import Table

    fh._clear_caches()
    t = _subject(runner).table
    path = _position_delete_file(t)
    table = pq.read_table(stdio.BytesIO(fh.read_bytes(t.io, path)))
    i = table.schema.get_field_index(column)
    values = table.column(i).to_pylist()
    values[0] = None
    field = table.schema.field(i).with_nullable(True)
    table = table.set_column(i, field, pa.array(values, field.type))
    buf = stdio.BytesIO()
    pq.write_table(table, buf)
    io = fh.OverlayIO(t.io, {path: buf.getvalue()})
    with pytest.raises(CorruptFileError, match="null"):
        Table(t.identifier, t.metadata, "x", io, None).scan().to_arrow()  # type: ignore[arg-type]
    fh._clear_caches()


def test_a_null_in_a_required_data_column_is_corrupt(runner: fh.Runner) -> None:
    from icefloe.errors import IcefloeError
    from icefloe.table import Table

    fh._clear_caches()
    t = _subject(runner).table
    path = next(task.file.file_path for task in t.scan().plan_files())
    table = pq.read_table(stdio.BytesIO(fh.read_bytes(t.io, path)))
    i = table.schema.get_field_index("id")
    values = table.column(i).to_pylist()
    values[0] = None
    field = table.schema.field(i).with_nullable(True)
    table = table.set_column(i, field, pa.array(values, field.type))
    buf = stdio.BytesIO()
    pq.write_table(table, buf)
    io = fh.OverlayIO(t.io, {path: buf.getvalue()})
    with pytest.raises(IcefloeError, match="null in required column 'id'") as e:
        Table(t.identifier, t.metadata, "x", io, None).scan().to_arrow()  # type: ignore[arg-type]
    assert isinstance(e.value, CorruptFileError) and e.value.context["path"] == path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["partition-specs"][0]["fields"][0].update({"source-id": 999}), "source column id 999"),
        (lambda d: d["sort-orders"][-1]["fields"][0].update({"source-id": -1}), "source column id -1"),
        # identity -> bucket is fine on a string; hour does not apply to one
        (lambda d: d["partition-specs"][0]["fields"][0].update({"transform": "hour"}), "does not apply"),
    ],
)
def test_specs_and_sort_orders_must_reference_known_columns(
    runner: fh.Runner, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    from icefloe.spec.table_metadata import read_metadata_json

    s = _subject(runner)
    doc = json.loads(fh.read_bytes(s.table.io, s.metadata_location))
    change(doc)
    with pytest.raises(CorruptFileError, match=message):
        read_metadata_json(json.dumps(doc), s.metadata_location)


def test_a_column_of_the_wrong_nested_kind_is_a_typed_error() -> None:
    """A file column carrying a map's field id but holding a struct (fuzz case data 1124) used to
    raise AttributeError deep in the map projection."""
    from icefloe.arrow.reader import to_table_layout
    from icefloe.arrow.schema import FIELD_ID_KEY
    from icefloe.errors import SchemaError
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import IntegerType, MapType, NestedField, StringType

    schema = Schema(NestedField(1, "m", MapType(2, StringType(), 3, IntegerType()), False))
    struct = pa.StructArray.from_arrays([pa.array([1])], names=["x"])
    field = pa.field("m", struct.type, metadata={FIELD_ID_KEY: b"1"})
    with pytest.raises(SchemaError, match="cannot be read as map"):
        to_table_layout(pa.RecordBatch.from_arrays([struct], schema=pa.schema([field])), schema)
