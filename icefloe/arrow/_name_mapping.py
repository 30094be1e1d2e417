"""Assigning Iceberg field ids to the columns of files written without them.

Files imported from outside Iceberg (plain Parquet, Hive tables) have no field ids. The table
property ``schema.name-mapping.default`` (the spec's "Column Projection" name mapping, JSON: a
list of ``{"field-id": id, "names": [...], "fields": [...]}``) says which names mean which id.
Without a mapping, columns are matched by name against the table schema (a documented icefloe
fallback; renamed columns then read as missing).

TODO(integrator): the name-mapping model belongs in ``icefloe.spec``; this is the reader's
minimal private version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from icefloe.arrow.schema import FIELD_ID_KEY, field_id_of
from icefloe.errors import InvalidMetadataError
from icefloe.spec.schema import Schema
from icefloe.spec.types import IcebergType, ListType, MapType, StructType

__all__ = ["MappedField", "annotate_field_ids", "mapping_from_schema", "parse_name_mapping"]


@dataclass(frozen=True)
class MappedField:
    field_id: int | None
    names: tuple[str, ...]
    fields: tuple[MappedField, ...] = field(default=())

    def child(self, name: str) -> MappedField | None:
        return _find(self.fields, name)


def _find(fields: Sequence[MappedField], name: str) -> MappedField | None:
    for f in fields:
        if name in f.names:
            return f
    return None


def _parse(obj: Any) -> MappedField:
    if not isinstance(obj, Mapping) or "names" not in obj:
        raise InvalidMetadataError(f"invalid name mapping entry: {obj!r}")
    fid = obj.get("field-id")
    names = obj["names"]
    children = obj.get("fields") or []
    if fid is not None and (isinstance(fid, bool) or not isinstance(fid, int)):
        raise InvalidMetadataError(f"name mapping 'field-id' must be an integer: {obj!r}")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidMetadataError(f"name mapping 'names' must be a list of strings: {obj!r}")
    if not isinstance(children, list):
        raise InvalidMetadataError(f"name mapping 'fields' must be a list: {obj!r}")
    return MappedField(fid, tuple(names), tuple(_parse(c) for c in children))


def parse_name_mapping(text: str | Sequence[Any]) -> tuple[MappedField, ...]:
    """Parse the JSON of ``schema.name-mapping.default`` (text or already decoded)."""
    try:
        obj = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as e:
        raise InvalidMetadataError(f"schema.name-mapping.default is not valid JSON: {e}") from None
    if not isinstance(obj, list):
        raise InvalidMetadataError("schema.name-mapping.default must be a JSON list")
    return tuple(_parse(o) for o in obj)


def mapping_from_schema(schema: Schema) -> tuple[MappedField, ...]:
    """A name mapping that matches each field by its current name."""

    def children(t: IcebergType) -> tuple[MappedField, ...]:
        if isinstance(t, StructType | ListType | MapType):
            return tuple(MappedField(f.field_id, (f.name,), children(f.field_type)) for f in t.fields)
        return ()

    return children(schema.as_struct())


def _with_id(f: pa.Field, typ: pa.DataType, fid: int | None) -> pa.Field:
    md = dict(f.metadata or {})
    md.pop(FIELD_ID_KEY, None)
    if fid is not None:
        md[FIELD_ID_KEY] = str(fid).encode()
    return pa.field(f.name, typ, f.nullable, md or None)


def _annotate(f: pa.Field, mapped: MappedField | None) -> pa.Field:
    t = f.type
    kids = mapped.fields if mapped is not None else ()
    if pa.types.is_struct(t):
        t = pa.struct([_annotate(t.field(i), _find(kids, t.field(i).name)) for i in range(t.num_fields)])
    elif pa.types.is_map(t):
        t = pa.map_(_annotate(t.key_field, _find(kids, "key")), _annotate(t.item_field, _find(kids, "value")))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        elem = _annotate(t.value_field, _find(kids, "element"))
        t = pa.list_(elem) if pa.types.is_list(t) else pa.large_list(elem)
    return _with_id(f, t, mapped.field_id if mapped is not None else None)


def annotate_field_ids(file_schema: pa.Schema, mapping: Sequence[MappedField]) -> pa.Schema:
    """``file_schema`` with field ids from ``mapping``; unmapped fields get none (not read)."""
    return pa.schema([_annotate(f, _find(mapping, f.name)) for f in file_schema])


def has_field_ids(file_schema: pa.Schema) -> bool:
    return all(field_id_of(f) is not None for f in file_schema)
