"""Selective manifest-list reads (issue 17, cold planning): the compiled selector
(``compile_selector``) picks the same values the full decoder decodes and finds every record's
offset, for random schemas; ``read_manifest_list_selected`` decodes in full (and validates) only
the manifests it keeps, falls back to full decoding for summaries it cannot pick, and reads lists
of any codec; the manifest evaluator agrees on raw summary tuples and PartitionFieldSummary
objects, including bounds narrower than the column's type (a promoted column)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.errors import CorruptFileError
from icefloe.expressions import EqualTo, GreaterThan, LessThan, bind
from icefloe.expressions.visitors import ManifestEvaluator
from icefloe.io.local import LocalFileIO
from icefloe.manifest import ManifestContent, ManifestFile, PartitionFieldSummary, read_manifest_list
from icefloe.manifest._avro_decoder import NotCompilable, compile_decoder, compile_selector
from icefloe.manifest.manifest_list import (
    clear_manifest_list_cache,
    read_manifest_list_selected,
    write_manifest_list,
)
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, LongType, NestedField
from icefloe.spec.values import to_bytes
from icefloe.transforms import IdentityTransform

from .test_manifest_decoder import _schema_and_values

IO = LocalFileIO()


def _blocks(schema: dict[str, Any], records: list[Any], interval: int) -> list[tuple[bytes, int]]:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="null", sync_interval=interval)
    buf.seek(0)
    return [(b.bytes_.getvalue(), b.num_records) for b in fastavro.block_reader(buf)]


def _element_fields(field_schema: Any) -> int | None:
    """The number of fields of the records in an (optionally nullable) array field, else None."""
    if isinstance(field_schema, list):
        field_schema = next((b for b in field_schema if b != "null"), None)
    if (
        isinstance(field_schema, dict)
        and field_schema.get("type") == "array"
        and field_schema.get("logicalType") != "map"  # decoded as a dict
    ):
        items = field_schema["items"]
        if isinstance(items, dict) and items.get("type") == "record":
            return len(items["fields"])
    return None


@settings(max_examples=100, deadline=None)
@given(case=_schema_and_values(), interval=st.sampled_from([1, 300, 16000]), data=st.data())
def test_selector_picks_what_the_decoder_decodes(
    case: tuple[dict[str, Any], list[Any]], interval: int, data: st.DataObject
) -> None:
    schema, records = case
    fields = schema["fields"]
    positions = data.draw(st.lists(st.integers(0, len(fields) - 1), max_size=len(fields), unique=True))
    picks: list[Any] = []
    for p in positions:
        n = _element_fields(fields[p]["type"])
        if n and data.draw(st.booleans()):
            order = tuple(data.draw(st.lists(st.one_of(st.none(), st.integers(0, n - 1)), max_size=4)))
            picks.append((p, order))
        else:
            picks.append((p, None))
    if data.draw(st.booleans()):
        picks.insert(0, None)  # a field the schema lacks
    text = json.dumps(schema)
    select, decode = compile_selector(text, tuple(picks)), compile_decoder(text)
    for block, count in _blocks(schema, records, interval):
        full = decode(block, count)
        rows = select(block, count)
        starts = [r[0] for r in rows] + [len(block)]
        for i, (row, record) in enumerate(zip(rows, full, strict=True)):
            # Each record decodes alone from its offsets: what a kept manifest's full read does.
            assert decode(block[starts[i] : starts[i + 1]], 1) == [record]
            expected = []
            for pick in picks:
                if pick is None:
                    expected.append(None)
                    continue
                value = record[pick[0]]
                if pick[1] is not None and value is not None:
                    value = [tuple(None if k is None else e[k] for k in pick[1]) for e in value]
                expected.append(value)
            assert list(row[1:]) == expected


SIMPLE = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "s", "type": "string"},
        {"name": "a", "type": {"type": "array", "items": "long"}},
        {"name": "x", "type": "long"},
        {"name": "y", "type": "long"},
        {"name": "u", "type": ["null", "long"]},
    ],
}


def test_selector_steps_over_sized_array_blocks_and_rejects_damage() -> None:
    select = compile_selector(json.dumps(SIMPLE), ((4, None),))
    # "ab", an array written as one block of -2 items with its byte size (2), then an empty
    # block, x = 1, y = -1 (one run of two numbers), u = branch 1 holding 300.
    record = b"\x04ab" + b"\x03\x04\x02\x04\x00" + b"\x02\x01" + b"\x02\xd8\x04"
    assert select(record + record, 2) == [(0, 300), (len(record), 300)]
    assert compile_decoder(json.dumps(SIMPLE))(record, 1) == [("ab", [1, 2], 1, -1, 300)]
    with pytest.raises(ValueError, match="left over"):
        select(record + b"\x00", 1)
    with pytest.raises(ValueError, match="past the end"):
        select(b"\x0aab", 1)  # a string longer than the block
    with pytest.raises(ValueError, match="union branch"):
        select(record[:-3] + b"\x06\x00", 1)
    with pytest.raises((ValueError, IndexError)):
        select(record[:-1], 1)  # the block ends inside a record
    with pytest.raises(ValueError, match="number past the end"):
        select(b"\x04ab\x00\x81", 1)  # the run of x, y never ends
    with pytest.raises(NotCompilable):
        compile_selector(json.dumps(SIMPLE), ((1, (0,)),))  # not an array of records
    with pytest.raises(NotCompilable):
        compile_selector('"long"', ((0, None),))


# ------------------------------------------------------------------ manifest lists

SCHEMA = Schema(NestedField(1, "x", IntegerType(), False))
SPEC = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "x"), spec_id=0)


def _manifest(i: int, **changes: Any) -> ManifestFile:
    fields: dict[str, Any] = {
        "manifest_path": f"/m/{i}.avro",
        "manifest_length": 10 + i,
        "partition_spec_id": 0,
        "sequence_number": 1,
        "min_sequence_number": 1,
        "added_snapshot_id": 7,
        "added_files_count": 1,
        "existing_files_count": 0,
        "deleted_files_count": 0,
        "added_rows_count": 5,
        "existing_rows_count": 0,
        "deleted_rows_count": 0,
        "partitions": (
            PartitionFieldSummary(False, None, to_bytes(IntegerType(), i), to_bytes(IntegerType(), i)),
        ),
    }
    fields.update(changes)
    return ManifestFile(**fields)


def _keep_x(value: int) -> Any:
    test = ManifestEvaluator(SPEC, SCHEMA, bind(SCHEMA, EqualTo("x", value))).eval_summaries

    def keep(spec_id: int, content: ManifestContent, added: Any, existing: Any, partitions: Any) -> bool:
        assert partitions is None or all(type(p) is tuple and len(p) == 4 for p in partitions)
        return test(partitions)

    return keep


def _reencode(path: str, change: Any, codec: str | None = None) -> None:
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema = fastavro.parse_schema(json.loads(reader.metadata["avro.schema"]))
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = list(reader)
        used = codec or reader.codec
    change(records)
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec=used, metadata=meta, sync_interval=64)


def test_only_kept_manifests_are_validated_and_a_full_read_still_validates_all(tmp_path: Path) -> None:
    path = str(tmp_path / "snap.avro")
    write_manifest_list(IO, path, 7, None, 1, [_manifest(i) for i in range(6)])

    def damage(records: list[dict[str, Any]]) -> None:
        records[2]["manifest_length"] = -5

    _reencode(path, damage)
    clear_manifest_list_cache()
    total, kept = read_manifest_list_selected(IO, path, _keep_x(4))
    assert total == 6 and [m.manifest_path for m in kept] == ["/m/4.avro"]
    with pytest.raises(CorruptFileError, match="manifest_length"):
        read_manifest_list_selected(IO, path, _keep_x(2))  # the damaged one is kept
    with pytest.raises(CorruptFileError, match="manifest_length"):
        read_manifest_list(IO, path)  # from the same cache entry
    with pytest.raises(CorruptFileError, match="manifest_length"):
        read_manifest_list(IO, path, cache=False)


def test_an_unknown_content_or_negative_spec_id_is_corrupt_even_when_not_kept(tmp_path: Path) -> None:
    for field, value in (("content", 7), ("partition_spec_id", -1)):
        path = str(tmp_path / f"snap-{field}.avro")
        write_manifest_list(IO, path, 7, None, 1, [_manifest(i) for i in range(3)])

        def damage(records: list[dict[str, Any]], field: str = field, value: int = value) -> None:
            records[1][field] = value

        _reencode(path, damage)
        with pytest.raises(CorruptFileError):
            read_manifest_list_selected(IO, path, lambda *a: False, cache=False)


def test_lists_of_other_codecs_select_the_same_manifests(tmp_path: Path) -> None:
    path = str(tmp_path / "snap.avro")
    manifests = [_manifest(i, content=ManifestContent(i % 2)) for i in range(200)]
    write_manifest_list(IO, path, 7, None, 1, manifests)
    _reencode(path, lambda records: None, codec="bzip2")
    for value in (0, 57, 199, 500):
        total, kept = read_manifest_list_selected(IO, path, _keep_x(value), cache=False)
        assert total == 200
        assert kept == [
            m for m in read_manifest_list(IO, path, cache=False) if m.manifest_path == f"/m/{value}.avro"
        ]


def test_summaries_of_unknown_shape_fall_back_to_full_decoding(tmp_path: Path) -> None:
    """A list whose partition summaries are not records (no Iceberg writer makes one): selection
    decodes every entry in full, as before, and sees summaries without flags or bounds."""
    path = str(tmp_path / "snap.avro")
    write_manifest_list(IO, path, 7, None, 1, [_manifest(i) for i in range(3)])
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema = json.loads(reader.metadata["avro.schema"])
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = list(reader)
    for field in schema["fields"]:
        if field["name"] == "partitions":
            field["type"] = ["null", {"type": "array", "items": "string", "element-id": 508}]
    for r in records:
        r["partitions"] = ["opaque"]
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec="deflate", metadata=meta)
    seen: list[Any] = []

    def keep(spec_id: int, content: Any, added: Any, existing: Any, partitions: Any) -> bool:
        seen.append(partitions)
        return spec_id == 0

    total, kept = read_manifest_list_selected(IO, path, keep, cache=False)
    assert total == 3 and seen == [[(False, None, None, None)]] * 3
    assert kept == read_manifest_list(IO, path, cache=False)
    assert [m.partitions for m in kept] == [(PartitionFieldSummary(False),)] * 3


def test_raw_and_object_summaries_evaluate_alike_with_narrow_bounds() -> None:
    """A long column promoted from int keeps 4-byte bounds in old manifests: the raw fast path
    (fixed-width unpacking) falls back to the decoder for them."""
    schema = Schema(NestedField(1, "x", LongType(), False))
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "x"), spec_id=0)
    summaries = [
        PartitionFieldSummary(False, None, to_bytes(IntegerType(), -3), to_bytes(IntegerType(), 9)),
        PartitionFieldSummary(False, None, to_bytes(LongType(), 2**40), to_bytes(LongType(), 2**41)),
        PartitionFieldSummary(True, None, None, None),
        PartitionFieldSummary(False, None, to_bytes(LongType(), 5), None),
    ]
    expected = {
        "x = 4": [True, False, False, True],
        "x = 2**40 + 1": [False, True, False, True],
        "x < -3": [False, False, False, True],
        "x > 9": [False, True, False, True],
    }
    exprs = {
        "x = 4": EqualTo("x", 4),
        "x = 2**40 + 1": EqualTo("x", 2**40 + 1),
        "x < -3": LessThan("x", -3),
        "x > 9": GreaterThan("x", 9),
    }
    for name, expr in exprs.items():
        ev = ManifestEvaluator(spec, schema, bind(schema, expr))
        got = []
        for s in summaries:
            raw = [(s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound)]
            assert ev.raw_test(raw) == ev.eval_summaries(raw) == ev.eval_summaries((s,)), (name, s)
            got.append(ev.raw_test(raw))
        assert got == expected[name], name


def test_a_map_is_not_picked_as_a_list_of_records() -> None:
    kv = {
        "type": "record",
        "name": "kv",
        "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "long"}],
    }
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "m", "type": {"type": "array", "logicalType": "map", "items": kv}}],
    }
    with pytest.raises(NotCompilable, match="map"):
        compile_selector(json.dumps(schema), ((0, (1, 0)),))
    assert compile_selector(json.dumps(schema), ((0, None),))(b"\x02\x02\x04\x00", 1) == [(0, {1: 2})]


def test_cached_selectors_and_decoders_are_found_without_generating_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code cache names entries by schema (and picks) and the generator's digest: a fresh
    process (here: the in-process caches cleared) that finds them generates no source."""
    from icefloe.manifest import _avro_decoder

    monkeypatch.setenv(_avro_decoder.CODE_CACHE_ENV, str(tmp_path))
    text = json.dumps(SIMPLE)
    record = b"\x04ab" + b"\x03\x04\x02\x04\x00" + b"\x02\x01" + b"\x02\xd8\x04"
    _avro_decoder._compile.cache_clear()
    _avro_decoder._compile_selector.cache_clear()
    assert compile_selector(text, ((4, None),))(record, 1) == [(0, 300)]
    assert compile_selector(text, ((2, None),))(record, 1) == [(0, 1)]
    assert compile_decoder(text)(record, 1) == [("ab", [1, 2], 1, -1, 300)]
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".tmp-")]) == 3

    def no_source(*args: Any) -> Any:
        raise AssertionError("generated source although a cache entry exists")

    _avro_decoder._compile.cache_clear()
    _avro_decoder._compile_selector.cache_clear()
    monkeypatch.setattr(_avro_decoder, "_source", no_source)
    monkeypatch.setattr(_avro_decoder, "_selector_source", no_source)
    try:
        assert compile_selector(text, ((4, None),))(record, 1) == [(0, 300)]
        assert compile_selector(text, ((2, None),))(record, 1) == [(0, 1)]
        assert compile_decoder(text)(record, 1) == [("ab", [1, 2], 1, -1, 300)]
    finally:
        _avro_decoder._compile.cache_clear()
        _avro_decoder._compile_selector.cache_clear()
