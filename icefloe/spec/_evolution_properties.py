"""Table properties that follow a schema change, as Iceberg Java updates them.

* ``schema.name-mapping.default`` (files written without field ids are read by name): a renamed
  field gains its new name (old names stay, for the files written before), an added field gets
  an entry, and a name now given to another field of the same struct is taken away from the old
  one (Java's ``MappingUtil.update``). A mapping that does not parse is left alone, as in Java.
* per-column properties (``write.metadata.metrics.column.<name>``, bloom filters, column stats)
  move with a renamed column and go with a deleted one (Java's ``PropertyUtil.applySchemaChanges``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.spec.schema import Schema
from icefloe.spec.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = ["COLUMN_PROPERTY_PREFIXES", "NAME_MAPPING_PROPERTY", "property_updates"]

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
COLUMN_PROPERTY_PREFIXES = (
    "write.metadata.metrics.column.",
    "write.parquet.bloom-filter-enabled.column.",
    "write.parquet.stats-enabled.column.",
)
"""Table properties keyed by a column name; Java renames and drops them with the column."""

_ROOT = -1


def property_updates(
    properties: Mapping[str, str],
    old: Schema,
    new: Schema,
    updates: Mapping[int, NestedField],
    adds: Mapping[int, Sequence[int]],
    deletes: Sequence[int],
) -> tuple[dict[str, str], list[str]]:
    """The properties to set and to remove after a schema change from ``old`` to ``new``:
    ``updates`` are the changed and added fields by id, ``adds`` the added ids by parent id
    (-1 for the table), ``deletes`` the deleted ids."""
    sets: dict[str, str] = {}
    removals: list[str] = []
    mapping = properties.get(NAME_MAPPING_PROPERTY)
    if mapping is not None:
        updated = _update_name_mapping(mapping, updates, adds)
        if updated is not None and updated != mapping:
            sets[NAME_MAPPING_PROPERTY] = updated
    deleted = {old.column_name(i) for i in deletes}
    renamed = {
        old.column_name(i): new.column_name(i)
        for i in updates
        if old.find_field_or_none(i) is not None
        and new.find_field_or_none(i) is not None
        and old.column_name(i) != new.column_name(i)
    }
    for key, value in properties.items():
        prefix = next((p for p in COLUMN_PROPERTY_PREFIXES if key.startswith(p)), None)
        if prefix is None:
            continue
        column = key[len(prefix) :]
        if column in renamed:
            removals.append(key)
            sets[prefix + renamed[column]] = value
        elif column in deleted:
            removals.append(key)
    return sets, [k for k in removals if k not in sets]


def _update_name_mapping(
    text: str, updates: Mapping[int, NestedField], adds: Mapping[int, Sequence[int]]
) -> str | None:
    try:
        mapping = json.loads(text)
        if not isinstance(mapping, list):
            return None
        return json.dumps(_mapped_fields(mapping, _ROOT, updates, adds), separators=(",", ":"))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _mapped_fields(
    fields: list[Any], parent_id: int, updates: Mapping[int, NestedField], adds: Mapping[int, Sequence[int]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for mf in fields:
        entry = dict(mf)
        fid = entry.get("field-id")
        names = [str(n) for n in entry.get("names", [])]
        update = updates.get(fid) if isinstance(fid, int) else None
        if update is not None and update.name not in names:
            names.append(update.name)
        entry["names"] = names
        nested = entry.get("fields")
        if isinstance(fid, int) and (isinstance(nested, list) or fid in adds):
            entry["fields"] = _mapped_fields(nested if isinstance(nested, list) else [], fid, updates, adds)
        out.append(entry)
    out += [_mapping_of(updates[i]) for i in adds.get(parent_id, ())]
    # a name now given to another field of this struct is taken away from the old one
    assigned: dict[str, int] = {}
    for e in out:
        fid = e.get("field-id")
        update = updates.get(fid) if isinstance(fid, int) else None
        if update is not None and isinstance(fid, int):
            assigned[update.name] = fid
    for e in out:
        e["names"] = [n for n in e["names"] if assigned.get(n, e.get("field-id")) == e.get("field-id")]
    return out


def _mapping_of(f: NestedField) -> dict[str, Any]:
    entry: dict[str, Any] = {"field-id": f.field_id, "names": [f.name]}
    nested = _mapping_children(f.field_type)
    if nested:
        entry["fields"] = nested
    return entry


def _mapping_children(t: IcebergType) -> list[dict[str, Any]]:
    if isinstance(t, StructType | ListType | MapType):
        return [_mapping_of(f) for f in t.fields]
    return []
