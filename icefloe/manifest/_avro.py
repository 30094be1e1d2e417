"""Avro plumbing for manifests and manifest lists.

* Iceberg struct -> Avro schema the way Iceberg Java names things: records ``r<field id>``,
  int-keyed maps as arrays of ``k<key id>_v<value id>`` records with ``logicalType: map``,
  ``field-id``/``element-id``/``key-id``/``value-id`` properties, fixed types named
  ``fixed_<n>``, ``decimal_<p>_<s>``, ``uuid_fixed`` (a repeated named type is referenced by
  name, as Avro requires).
* Reading decodes with the writer's schema *stripped of logical types*, so dates, times and
  timestamps come back as the plain ints icefloe uses internally (fastavro would build datetime
  objects, which also fail outside years 1..9999). Decimal and UUID are converted from their
  bytes by the caller. Parsed schemas are cached per schema text: a table's manifests share one.
"""

from __future__ import annotations

import io
import json
import uuid
import zlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import lru_cache
from typing import IO, Any

import fastavro
from fastavro import _read as _fastavro_read
from fastavro import schemaless_reader

from icefloe.errors import CorruptFileError, FileIOError, ValidationError
from icefloe.io._decode import note_file
from icefloe.manifest._avro_decoder import compile_decoder
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "AvroFile",
    "collect_named",
    "decimal_required_bytes",
    "struct_to_avro",
    "value_converter",
    "value_to_avro",
]

FIELD_ID = "field-id"


def decimal_required_bytes(precision: int) -> int:
    """Fewest bytes whose two's complement holds every unscaled value of ``precision`` digits."""
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


def _valid_name(name: str) -> bool:
    return (
        bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c == "_" for c in name[1:])
    )


def _sanitize(name: str) -> str:
    """Avro-safe field name, escaped like Iceberg Java: a leading digit gets ``_`` in front, any
    other invalid character becomes ``_x`` + its upper-case hex code."""
    out = []
    for i, ch in enumerate(name):
        if ch.isalpha() or ch == "_" or (i > 0 and ch.isdigit()):
            out.append(ch)
        elif ch.isdigit():
            out.append("_" + ch)
        else:
            out.append("_x" + format(ord(ch), "X"))
    return "".join(out)


class _SchemaBuilder:
    def __init__(self) -> None:
        self.named: set[str] = set()

    def _named(self, name: str, schema: dict[str, Any]) -> Any:
        if name in self.named:
            return name
        self.named.add(name)
        return schema

    def primitive(self, t: IcebergType) -> Any:
        if isinstance(t, BooleanType):
            return "boolean"
        if isinstance(t, IntegerType):
            return "int"
        if isinstance(t, LongType):
            return "long"
        if isinstance(t, FloatType):
            return "float"
        if isinstance(t, DoubleType):
            return "double"
        if isinstance(t, DateType):
            return {"type": "int", "logicalType": "date"}
        if isinstance(t, TimeType):
            return {"type": "long", "logicalType": "time-micros"}
        if isinstance(t, TimestampType | TimestamptzType):
            return {
                "type": "long",
                "logicalType": "timestamp-micros",
                "adjust-to-utc": isinstance(t, TimestamptzType),
            }
        if isinstance(t, TimestampNsType | TimestamptzNsType):
            return {
                "type": "long",
                "logicalType": "timestamp-nanos",
                "adjust-to-utc": isinstance(t, TimestamptzNsType),
            }
        if isinstance(t, StringType):
            return "string"
        if isinstance(t, BinaryType):
            return "bytes"
        if isinstance(t, UUIDType):
            return self._named(
                "uuid_fixed", {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}
            )
        if isinstance(t, FixedType):
            name = f"fixed_{t.length}"
            return self._named(name, {"type": "fixed", "name": name, "size": t.length})
        if isinstance(t, DecimalType):
            name = f"decimal_{t.precision}_{t.scale}"
            return self._named(
                name,
                {
                    "type": "fixed",
                    "name": name,
                    "size": decimal_required_bytes(t.precision),
                    "logicalType": "decimal",
                    "precision": t.precision,
                    "scale": t.scale,
                },
            )
        raise ValidationError(f"type {t} cannot be written to a manifest")

    def type(self, t: IcebergType, field_id: int | None, record_name: str | None = None) -> Any:
        if isinstance(t, StructType):
            return self.struct(t, record_name or f"r{field_id}")
        if isinstance(t, ListType):
            element = self.type(t.element_type, t.element_id)
            return {
                "type": "array",
                "items": element if t.element_required else ["null", element],
                "element-id": t.element_id,
            }
        if isinstance(t, MapType):
            key = self.type(t.key_type, t.key_id)
            value = self.type(t.value_type, t.value_id)
            if not t.value_required:
                value = ["null", value]
            if isinstance(t.key_type, StringType):
                return {"type": "map", "values": value, "key-id": t.key_id, "value-id": t.value_id}
            name = f"k{t.key_id}_v{t.value_id}"
            return {
                "type": "array",
                "items": self._named(
                    name,
                    {
                        "type": "record",
                        "name": name,
                        "fields": [
                            {"name": "key", "type": key, FIELD_ID: t.key_id},
                            {"name": "value", "type": value, FIELD_ID: t.value_id},
                        ],
                    },
                ),
                "logicalType": "map",
            }
        return self.primitive(t)

    def field(self, f: NestedField) -> dict[str, Any]:
        schema = self.type(f.field_type, f.field_id)
        out: dict[str, Any] = {"name": f.name}
        if not _valid_name(f.name):
            out["name"] = _sanitize(f.name)
            out["iceberg-field-name"] = f.name
        out["type"] = schema if f.required else ["null", schema]
        if f.doc:
            out["doc"] = f.doc
        if not f.required:
            out["default"] = None
        out[FIELD_ID] = f.field_id
        return out

    def struct(self, t: StructType, name: str) -> dict[str, Any]:
        return {"type": "record", "name": name, "fields": [self.field(f) for f in t.fields]}


def struct_to_avro(struct: StructType, record_name: str) -> dict[str, Any]:
    """The Avro schema Iceberg Java writes for ``struct`` as a file's top-level record."""
    return _SchemaBuilder().struct(struct, record_name)


# ----------------------------------------------------------------------------- values


def _decimal_to_fixed(t: DecimalType, size: int) -> Callable[[Any], bytes]:
    def convert(v: Any) -> bytes:
        if not isinstance(v, Decimal):
            raise ValidationError(f"expected a Decimal for {t}, got {v!r}")
        sign, digits, exponent = v.as_tuple()
        if not isinstance(exponent, int):
            raise ValidationError(f"cannot store {v} in {t}")
        unscaled: int = int("".join(map(str, digits)) or "0")
        shift = exponent + t.scale
        if shift >= 0:
            unscaled *= 10**shift
        else:
            unscaled, rest = divmod(unscaled, int(10 ** (-shift)))
            if rest:
                raise ValidationError(f"{v} has more than {t.scale} digits after the point for {t}")
        if sign:
            unscaled = -unscaled
        # Not checked against the precision: truncate(W) of a value near the type's limit may
        # need one more digit (truncate(50) of -99999999.99 is -100000000.00 in decimal(10, 2)),
        # and Java writes it because the fixed size for the precision still holds it.
        try:
            return unscaled.to_bytes(size, "big", signed=True)
        except OverflowError:
            raise ValidationError(f"{v} does not fit the {size}-byte Avro fixed of {t}") from None

    return convert


def _uuid_to_bytes(v: Any) -> bytes:
    if isinstance(v, uuid.UUID):
        return v.bytes
    raise ValidationError(f"expected a uuid.UUID, got {v!r}")


def value_to_avro(t: IcebergType) -> Callable[[Any], Any] | None:
    """Converter from icefloe's internal value to the raw Avro value, or None when the value is
    written as it is (ints for dates/times/timestamps, str, bytes, float, bool)."""
    if isinstance(t, DecimalType):
        return _decimal_to_fixed(t, decimal_required_bytes(t.precision))
    if isinstance(t, UUIDType):
        return _uuid_to_bytes
    return None


def _non_null(schema: Any) -> Any:
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return branches[0] if len(branches) == 1 else schema
    return schema


def value_converter(avro_schema: Any, named: dict[str, Any]) -> Callable[[Any], Any] | None:
    """Converter from the raw value decoded (logical types stripped) to icefloe's internal value,
    for one partition field's Avro schema; None when no conversion is needed."""
    s = _non_null(avro_schema)
    if isinstance(s, str):
        s = named.get(s, s)
    if not isinstance(s, dict):
        return None
    logical = s.get("logicalType")
    if logical == "decimal":
        scale = int(s.get("scale", 0))

        def to_decimal(v: Any) -> Any:
            if v is None:
                return None
            unscaled = int.from_bytes(v, "big", signed=True)
            return Decimal((1 if unscaled < 0 else 0, tuple(map(int, str(abs(unscaled)))), -scale))

        return to_decimal
    if logical == "uuid":

        def to_uuid(v: Any) -> Any:
            if v is None:
                return None
            return uuid.UUID(bytes=v) if isinstance(v, bytes) else uuid.UUID(v)

        return to_uuid
    if logical in ("timestamp-millis", "local-timestamp-millis", "time-millis"):

        def millis_to_micros(v: Any) -> Any:
            return None if v is None else v * 1000

        return millis_to_micros
    return None


def collect_named(schema: Any, out: dict[str, Any]) -> dict[str, Any]:
    """Every named type defined in ``schema``, by name (to resolve references)."""
    if isinstance(schema, list):
        for s in schema:
            collect_named(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "fixed", "enum") and "name" in schema:
            out[schema["name"]] = schema
        for f in schema.get("fields", ()):
            collect_named(f["type"], out)
        for key in ("items", "values"):
            if key in schema:
                collect_named(schema[key], out)
        if isinstance(schema.get("type"), dict | list):
            collect_named(schema["type"], out)
    return out


# ----------------------------------------------------------------------------- reading


def _strip_logical(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strip_logical(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    return schema


#: Logical types fastavro leaves alone (Iceberg's int-keyed maps are arrays marked ``map``).
_INERT_LOGICAL_TYPES = frozenset({"map"})


def _logical_types(schema: Any, out: set[str]) -> set[str]:
    if isinstance(schema, list):
        for s in schema:
            _logical_types(s, out)
    elif isinstance(schema, dict):
        logical = schema.get("logicalType")
        if isinstance(logical, str):
            out.add(logical)
        for v in schema.values():
            if isinstance(v, dict | list):
                _logical_types(v, out)
    return out


@lru_cache(maxsize=128)
def _schema_json(schema_text: str) -> dict[str, Any]:
    schema = json.loads(schema_text)
    if not isinstance(schema, dict):
        raise ValueError("the schema is not a JSON object")
    return schema  # type: ignore[no-any-return]


@lru_cache(maxsize=128)
def _parsed(schema_text: str) -> tuple[dict[str, Any], Any, bool, dict[str, Any]]:
    """(schema, parsed schema without logical types, whether the writer's schema has no logical
    type fastavro would convert, the parsed schema's named types for fastavro's block decoder).
    Parsed on first use: the compiled decoder does not need fastavro's parse."""
    schema = _schema_json(schema_text)
    as_written = _logical_types(schema, set()) <= _INERT_LOGICAL_TYPES
    named: dict[str, Any] = _fastavro_read._default_named_schemas()  # type: ignore[attr-defined]
    parsed = fastavro.parse_schema(_strip_logical(schema), named["writer"], _write_hint=False, _force=True)
    return schema, parsed, as_written, named


#: What fastavro's own reader passes its block decoder (record names never returned).
_BLOCK_OPTIONS: dict[str, Any] = {
    "return_record_name": False,
    "return_record_name_override": False,
    "handle_unicode_errors": "strict",
    "return_named_type": False,
    "return_named_type_override": False,
}
#: fastavro's compiled decoder of one block's records (the class its ``block_reader`` yields),
#: given a parsed writer schema and a stream of the block's decompressed bytes.
_Block: Any = _fastavro_read.Block
_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    """One zig-zag varint of ``data`` at ``pos``: (value, position after it)."""
    b = data[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b & 0x80:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def _header(data: bytes) -> tuple[dict[str, str], bytes, int]:
    """(file metadata, sync marker, offset of the first block) of an Avro container."""
    if data[:4] != _MAGIC:
        raise ValueError("no Avro magic bytes")
    pos = 4
    meta: dict[str, str] = {}
    while True:
        count, pos = _read_long(data, pos)
        if count == 0:
            break
        if count < 0:  # a block of -count pairs preceded by its size in bytes
            count = -count
            _, pos = _read_long(data, pos)
        for _ in range(count):
            n, pos = _read_long(data, pos)
            key = data[pos : pos + n].decode()
            pos += n
            n, pos = _read_long(data, pos)
            if n < 0 or pos + n > len(data):
                raise ValueError("metadata value past the end of the file")
            meta[key] = data[pos : pos + n].decode()
            pos += n
    sync = data[pos : pos + _SYNC_SIZE]
    if len(sync) != _SYNC_SIZE:
        raise ValueError("truncated header")
    return meta, sync, pos + _SYNC_SIZE


#: Codecs decompressed here; blocks of the others (snappy, zstandard, ...) go through fastavro's
#: own container reader.
_DECOMPRESS: dict[str, Callable[[bytes], bytes] | None] = {
    "null": None,
    "deflate": lambda b: zlib.decompress(b, -15),
}


class AvroFile:
    """An open Avro container: its metadata, writer schema (as JSON, logical types intact) and
    records decoded without logical types.

    The container (header, blocks, sync markers) is parsed here and each block's records are
    decoded by fastavro's compiled block decoder with a writer schema parsed once per schema text:
    fastavro's own reader parses the schema again for every file, which for a small manifest cost
    as much as decoding its entries. Files with a codec other than null or deflate are read by
    fastavro's container reader.

    Bytes that cannot be decoded (a bad header, schema or block: ``ValueError``, ``EOFError``,
    ``zlib.error``, ``IndexError``, ``SchemaParseException``, ...) raise
    :class:`~icefloe.errors.CorruptFileError` naming the file as ``file_kind``; so does a
    failure while iterating the records."""

    def __init__(self, stream: IO[bytes], location: str, file_kind: str = "Avro file") -> None:
        self.location = location
        self.file_kind = file_kind
        # fastavro issues many tiny reads; on a pyarrow or remote stream each one crosses into
        # native code (or the network). Manifests and lists are small (Java rolls manifests at
        # 8 MiB), so decoding from memory is cheaper.
        try:
            data = stream.read()
        except FileIOError as e:
            note_file(e, location, file_kind)
            raise
        except OSError as e:
            raise FileIOError(
                f"cannot read {file_kind} {location!r}: {e}",
                location=location,
                path=location,
                file_kind=file_kind,
            ) from e
        self._data = data
        try:
            self.metadata, self._sync, self._start = _header(data)
            self.schema: dict[str, Any] = _schema_json(self.metadata["avro.schema"])
            codec = self.metadata.get("avro.codec", "null")
            self._own_container = codec in _DECOMPRESS
            if not self._own_container:
                fastavro.block_reader(io.BytesIO(data))  # fails now on a codec fastavro lacks
        except Exception as e:  # anything fastavro or json raise on these bytes
            raise CorruptFileError.of(
                location, file_kind, f"not a valid Avro file: {type(e).__name__}: {e}"
            ) from e
        self._decompress = _DECOMPRESS.get(codec)

    @property
    def _as_written(self) -> bool:
        return _parsed(self.metadata["avro.schema"])[2]

    def _blocks(self) -> Iterator[tuple[bytes, int]]:
        """(decompressed block bytes, record count) of each block."""
        data, sync, decompress = self._data, self._sync, self._decompress
        pos, end = self._start, len(self._data)
        while pos < end:
            count, pos = _read_long(data, pos)
            size, pos = _read_long(data, pos)
            if count < 0 or size < 0 or pos + size + _SYNC_SIZE > end:
                raise ValueError(f"a block of {count} records and {size} bytes past the end of the file")
            block = data[pos : pos + size]
            pos += size
            if data[pos : pos + _SYNC_SIZE] != sync:
                raise ValueError("sync marker does not match")
            pos += _SYNC_SIZE
            yield (block if decompress is None else decompress(block)), count

    def blocks(self) -> list[tuple[bytes, int]]:
        """(decompressed bytes, record count) of every block, for decoders run by the caller
        (which name this file in their errors too)."""
        try:
            if self._own_container:
                return list(self._blocks())
            blocks = fastavro.block_reader(io.BytesIO(self._data))
            return [(b.bytes_.getvalue(), b.num_records) for b in blocks]
        except Exception as e:
            raise CorruptFileError.of(
                self.location, self.file_kind, f"cannot decode an Avro block: {type(e).__name__}: {e}"
            ) from e

    def tuples(self) -> Iterator[Any]:
        """The records decoded by the schema-compiled decoder (:mod:`icefloe.manifest._avro_decoder`):
        raw values, records as tuples in field order, int-keyed maps as dicts."""
        try:
            decode = compile_decoder(self.metadata["avro.schema"])
        except Exception as e:  # a schema the generator cannot handle: not one any Iceberg writer makes
            raise CorruptFileError.of(
                self.location, self.file_kind, f"unsupported Avro schema: {type(e).__name__}: {e}"
            ) from e
        try:
            if self._own_container:
                for block, count in self._blocks():
                    yield from decode(block, count)
                return
            for fa_block in fastavro.block_reader(io.BytesIO(self._data)):
                yield from decode(fa_block.bytes_.getvalue(), fa_block.num_records)
        except Exception as e:  # only the decoder runs in here: consumers' code is outside the generator
            raise CorruptFileError.of(
                self.location, self.file_kind, f"cannot decode an Avro block: {type(e).__name__}: {e}"
            ) from e

    def __iter__(self) -> Iterator[dict[str, Any]]:
        # fastavro's parse of the schema is needed only here (the compiled decoder does not use it).
        try:
            _, parsed, _, named = _parsed(self.metadata["avro.schema"])
        except Exception as e:  # a schema fastavro cannot parse
            raise CorruptFileError.of(
                self.location, self.file_kind, f"not a valid Avro file: {type(e).__name__}: {e}"
            ) from e
        try:
            if not self._own_container:
                for fa_block in fastavro.block_reader(io.BytesIO(self._data)):
                    if self._as_written:
                        yield from fa_block
                        continue
                    data = fa_block.bytes_
                    for _ in range(fa_block.num_records):
                        yield schemaless_reader(data, parsed, None)
                return
            for block, count in self._blocks():
                stream = io.BytesIO(block)
                yield from _Block(stream, count, "null", None, parsed, named, 0, 0, _BLOCK_OPTIONS)
                if stream.tell() != len(block):
                    raise ValueError(f"{len(block) - stream.tell()} bytes left over after a block's records")
        except Exception as e:  # only the decoder runs in here: consumers' code is outside the generator
            raise CorruptFileError.of(
                self.location, self.file_kind, f"cannot decode an Avro block: {type(e).__name__}: {e}"
            ) from e
