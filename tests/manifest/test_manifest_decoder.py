"""The schema-compiled Avro decoder (icefloe/manifest/_avro_decoder.py) decodes exactly what
fastavro decodes: for manifests and manifest lists of every shape icefloe writes (v1/v2/v3 fields,
partitions of every type, nulls, bounds), for random Avro schemas and values, and for files whose
blocks are damaged (a typed error naming the file, never wrong values)."""

from __future__ import annotations

import io
import json
import struct
from itertools import count
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.errors import CorruptFileError
from icefloe.io.local import LocalFileIO
from icefloe.manifest import (
    DataFileContent,
    ManifestContent,
    ManifestFile,
    ManifestWriter,
    read_manifest,
    write_manifest_list,
)
from icefloe.manifest._avro import AvroFile
from icefloe.manifest._avro_decoder import NotCompilable, compile_decoder

from ._strategies import ALL_TYPES_SPEC, SCHEMA, data_files

IO = LocalFileIO()
PARTITION_TYPE = ALL_TYPES_SPEC.partition_type(SCHEMA)
_names = count()


# ------------------------------------------------------------------ the reference: fastavro


def _resolve(schema: Any, named: dict[str, Any]) -> Any:
    if isinstance(schema, str) and schema in named:
        return named[schema]
    if isinstance(schema, dict) and isinstance(schema.get("type"), dict | list):
        return schema["type"]
    return schema


def _shape(value: Any, schema: Any, named: dict[str, Any]) -> Any:
    """fastavro's value in the decoder's shape (records as tuples, ``logicalType: map`` arrays as
    dicts), walking the writer schema: an implementation independent of the generated code."""
    schema = _resolve(schema, named)
    if isinstance(schema, list):
        if value is None:
            return None
        for branch in schema:
            b = _resolve(branch, named)
            if b == "null":
                continue
            try:
                return _shape(value, branch, named)
            except (TypeError, KeyError, AttributeError):
                continue
        raise TypeError(f"no branch of {schema} fits {value!r}")
    if not isinstance(schema, dict):
        return value
    kind = schema["type"]
    if kind in ("record", "error"):
        if isinstance(schema.get("name"), str):
            named[schema["name"]] = schema
        if not isinstance(value, dict):
            raise TypeError("not a record")
        return tuple(_shape(value[f["name"]], f["type"], named) for f in schema["fields"])
    if kind == "array":
        items = schema["items"]
        if schema.get("logicalType") == "map":
            record = _resolve(items, named)
            if isinstance(record, dict) and isinstance(record.get("name"), str):
                named[record["name"]] = record
            fields = record["fields"]
            return {
                _shape(kv["key"], fields[0]["type"], named): _shape(kv["value"], fields[1]["type"], named)
                for kv in value
            }
        return [_shape(v, items, named) for v in value]
    if kind == "map":
        return {k: _shape(v, schema["values"], named) for k, v in value.items()}
    if kind in ("fixed", "enum") and isinstance(schema.get("name"), str):
        named[schema["name"]] = schema
    return value


def _both(path: str) -> tuple[list[Any], list[Any]]:
    """(compiled decoder's records, fastavro's records in the same shape) of one file. fastavro
    decodes with the writer's schema stripped of logical types (``AvroFile.__iter__``): raw
    values, as the compiled decoder gives them."""
    with open(path, "rb") as fo:
        avro = AvroFile(fo, path)
    compiled = list(avro.tuples())
    schema = json.loads(avro.metadata["avro.schema"])
    reference = [_shape(r, schema, {}) for r in avro]
    return compiled, reference


# ------------------------------------------------------------------ manifests of every shape


def _tmp(tmp: Path) -> str:
    return str(tmp / f"d{next(_names)}.avro")


@pytest.mark.parametrize("format_version", [1, 2, 3])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_manifests_decode_like_fastavro(tmp_path: Path, format_version: int, data: st.DataObject) -> None:
    """Every partition type (with nulls), every optional field, bounds and counts: the compiled
    decoder gives fastavro's records, and read_manifest gives back the files written."""
    content = (
        ManifestContent.DATA
        if format_version == 1
        else data.draw(st.sampled_from(list(ManifestContent)), label="content")
    )
    kinds = (
        [DataFileContent.DATA]
        if content == ManifestContent.DATA
        else [DataFileContent.POSITION_DELETES, DataFileContent.EQUALITY_DELETES]
    )
    files = data.draw(
        st.lists(
            st.sampled_from(kinds).flatmap(
                lambda c: data_files(
                    PARTITION_TYPE, ALL_TYPES_SPEC.spec_id, content=c, format_version=format_version
                )
            ),
            max_size=6,
        ),
        label="files",
    )
    path = _tmp(tmp_path)
    with ManifestWriter(IO, path, ALL_TYPES_SPEC, SCHEMA, 42, content, format_version) as w:
        for f in files:
            w.add(f)
    manifest = w.close()
    compiled, reference = _both(path)
    assert compiled == reference
    assert len(compiled) == len(files)
    read = [e.data_file for e in read_manifest(IO, _with_seq(manifest), cache=False)]
    assert read == files


def _with_seq(m: ManifestFile) -> ManifestFile:
    import dataclasses

    return dataclasses.replace(m, sequence_number=5, min_sequence_number=5)


@pytest.mark.parametrize("format_version", [1, 2, 3])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_manifest_lists_decode_like_fastavro(
    tmp_path: Path, format_version: int, data: st.DataObject
) -> None:
    """Lists with partition summaries (nulls, NaN, missing bounds), counts and v3 row ids."""
    spec = ALL_TYPES_SPEC
    manifests = []
    for i in range(3):
        path = _tmp(tmp_path)
        files = data.draw(
            st.lists(data_files(PARTITION_TYPE, spec.spec_id, format_version=format_version), max_size=4),
            label=f"files of manifest {i}",
        )
        with ManifestWriter(IO, path, spec, SCHEMA, 102, ManifestContent.DATA, format_version) as w:
            for f in files:
                w.add(f)
        manifests.append(w.close())
    list_path = _tmp(tmp_path)
    first_row_id = 1000 if format_version >= 3 else None
    write_manifest_list(IO, list_path, 102, 101, 9, manifests, format_version, first_row_id=first_row_id)
    compiled, reference = _both(list_path)
    assert compiled == reference
    assert len(compiled) == 3


# ------------------------------------------------------------------ random schemas and values

_PRIMS: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "bytes": st.binary(max_size=300),
    "string": st.text(max_size=200),
}


@st.composite
def _schema_and_values(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    names = count()

    def schema_of(depth: int) -> tuple[Any, st.SearchStrategy[Any]]:
        options = ["prim", "prim", "union", "fixed", "enum"]
        if depth < 3:
            options += ["record", "array", "map", "kvmap"]
        kind = draw(st.sampled_from(options))
        if kind == "prim":
            p = draw(st.sampled_from(list(_PRIMS)))
            return p, _PRIMS[p]
        if kind == "union":
            p = draw(st.sampled_from([k for k in _PRIMS if k != "null"]))
            return ["null", p], st.none() | _PRIMS[p]
        if kind == "fixed":
            size = draw(st.integers(0, 20))
            return {"type": "fixed", "name": f"fx{next(names)}", "size": size}, st.binary(
                min_size=size, max_size=size
            )
        if kind == "enum":
            symbols = [f"S{i}" for i in range(draw(st.integers(1, 5)))]
            return {"type": "enum", "name": f"en{next(names)}", "symbols": symbols}, st.sampled_from(symbols)
        if kind == "array":
            item, values = schema_of(depth + 1)
            return {"type": "array", "items": item}, st.lists(values, max_size=70)
        if kind == "map":
            value, values = schema_of(depth + 1)
            return {"type": "map", "values": value}, st.dictionaries(st.text(max_size=5), values, max_size=5)
        if kind == "kvmap":
            value, values = schema_of(depth + 1)
            record = {
                "type": "record",
                "name": f"k{next(names)}",
                "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": value}],
            }
            pairs = st.lists(
                st.tuples(st.integers(-1000, 1000), values), max_size=5, unique_by=lambda kv: kv[0]
            )
            return {"type": "array", "logicalType": "map", "items": record}, pairs.map(
                lambda kvs: [{"key": k, "value": v} for k, v in kvs]
            )
        return record_of(depth + 1)

    def record_of(depth: int) -> tuple[dict[str, Any], st.SearchStrategy[Any]]:
        fields, strategies = [], {}
        for i in range(draw(st.integers(0 if depth else 1, 5))):
            schema, values = schema_of(depth)
            nullable = draw(st.booleans())
            fields.append({"name": f"f{i}", "type": ["null", schema] if nullable else schema})
            strategies[f"f{i}"] = (st.none() | values) if nullable else values
        return {"type": "record", "name": f"r{next(names)}", "fields": fields}, st.fixed_dictionaries(
            strategies
        )

    schema, records = record_of(0)
    return schema, draw(st.lists(records, max_size=40))


@settings(max_examples=120, deadline=None)
@given(
    case=_schema_and_values(),
    codec=st.sampled_from(["null", "deflate"]),
    interval=st.sampled_from([1, 200, 16000]),
)
def test_random_schemas_decode_like_fastavro(
    case: tuple[dict[str, Any], list[Any]], codec: str, interval: int
) -> None:
    schema, records = case
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, sync_interval=interval)
    data = buf.getvalue()
    avro = AvroFile(io.BytesIO(data), "random.avro")
    compiled = list(avro.tuples())
    reference = [_shape(r, schema, {}) for r in fastavro.reader(io.BytesIO(data))]
    assert compiled == reference
    # floats decode bit-for-bit (the comparison above treats -0.0 == 0.0)
    assert _float_bits(compiled) == _float_bits(reference)


def _float_bits(value: Any) -> Any:
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, tuple | list):
        return [_float_bits(v) for v in value]
    if isinstance(value, dict):
        return sorted((repr(k), _float_bits(v)) for k, v in value.items())
    return value


# ------------------------------------------------------------------ damaged blocks


def _one_block_file(records: list[dict[str, Any]], schema: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="null")
    return buf.getvalue()


SIMPLE = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "s", "type": "string"}, {"name": "u", "type": ["null", "long"]}],
}


def test_decoder_rejects_damaged_blocks() -> None:
    decode = compile_decoder(json.dumps(SIMPLE))
    assert decode(b"\x06abc\x02\x04", 1) == [("abc", 2)]
    with pytest.raises(ValueError, match="past the end"):
        decode(b"\x0aabc\x00", 1)  # a string longer than the block
    with pytest.raises(ValueError, match="union branch"):
        decode(b"\x06abc\x04\x04", 1)  # branch 2 of a two-branch union
    with pytest.raises(ValueError, match="left over"):
        decode(b"\x06abc\x00\x00", 1)  # a byte after the last record
    with pytest.raises(IndexError):
        decode(b"\x06abc", 1)  # the block ends inside a record


def test_damaged_files_raise_corrupt_file_error_naming_the_file() -> None:
    good = _one_block_file([{"s": "abc", "u": 7}, {"s": "", "u": None}], SIMPLE)
    avro = AvroFile(io.BytesIO(good), "ok.avro")
    assert list(avro.tuples()) == [("abc", 7), ("", None)]
    marker = good.index(b"\x06abc")
    # a record count larger than the block holds
    count_at = marker - 2
    assert good[count_at] == 4  # 2 records, zig-zag
    damaged = good[:count_at] + b"\x06" + good[count_at + 1 :]
    with pytest.raises(CorruptFileError, match=r"bad\.avro"):
        list(AvroFile(io.BytesIO(damaged), "bad.avro", "manifest").tuples())
    # a sync marker that does not match
    with pytest.raises(CorruptFileError, match="sync marker"):
        list(AvroFile(io.BytesIO(good[:-1] + bytes([good[-1] ^ 0xFF])), "bad.avro").tuples())
    # truncated inside a block
    with pytest.raises(CorruptFileError, match="past the end"):
        list(AvroFile(io.BytesIO(good[:-20]), "bad.avro").tuples())


def test_recursive_schemas_are_refused() -> None:
    linked = {
        "type": "record",
        "name": "node",
        "fields": [{"name": "next", "type": ["null", "node"]}],
    }
    with pytest.raises(NotCompilable, match="recursive"):
        compile_decoder(json.dumps(linked))
    data = _one_block_file([{"next": None}], linked)
    with pytest.raises(CorruptFileError, match="unsupported Avro schema"):
        list(AvroFile(io.BytesIO(data), "list.avro").tuples())


def test_other_codecs_decode_through_fastavro_blocks(tmp_path: Path) -> None:
    """A codec the container parser does not handle itself (bzip2 here: always available) still
    goes through the compiled decoder, on the blocks fastavro decompresses."""
    records = [{"s": "x" * i, "u": i if i % 2 else None} for i in range(50)]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SIMPLE), records, codec="bzip2", sync_interval=100)
    avro = AvroFile(io.BytesIO(buf.getvalue()), "b.avro")
    assert list(avro.tuples()) == [(r["s"], r["u"]) for r in records]
    assert list(avro) == records
