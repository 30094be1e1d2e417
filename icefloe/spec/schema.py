"""Table schemas: a struct of fields with unique ids, plus identifier field ids.

Columns are addressed by id everywhere inside icefloe; names are resolved once, when a user's
column reference is bound. Nested names are dotted the way Iceberg Java names them:
``address.city``, ``tags.element``, ``props.key``, ``props.value``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any

from icefloe.errors import SchemaError
from icefloe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    type_from_json,
    type_to_json,
)

__all__ = ["Schema", "assign_fresh_ids"]


class Schema:
    """An immutable Iceberg schema."""

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = 0,
        identifier_field_ids: Iterable[int] = (),
    ) -> None:
        self._struct = StructType(*fields)
        self.schema_id = schema_id
        self.identifier_field_ids: tuple[int, ...] = tuple(identifier_field_ids)
        by_id = self._index_by_id
        for fid in self.identifier_field_ids:
            f = by_id.get(fid)
            if f is None:
                raise SchemaError(f"identifier field id {fid} is not in the schema")
            if not f.required or not isinstance(f.field_type, PrimitiveType):
                raise SchemaError(
                    f"identifier field {self.column_name(fid)!r} must be a required primitive field"
                )

    # ------------------------------------------------------------------ basic views
    @property
    def fields(self) -> tuple[NestedField, ...]:
        return self._struct.fields

    def as_struct(self) -> StructType:
        return self._struct

    def __len__(self) -> int:
        return len(self._struct)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self._struct == other._struct and self.identifier_field_ids == other.identifier_field_ids

    def same_columns(self, other: Schema) -> bool:
        """Equal but for the schema id."""
        return self == other

    def __hash__(self) -> int:
        return hash((self._struct, self.identifier_field_ids))

    def __repr__(self) -> str:
        # one line a person can read: "Schema(schema_id=0, [1: id: required long, 2: s: optional string])"
        ids = f", identifier_field_ids={list(self.identifier_field_ids)}" if self.identifier_field_ids else ""
        return f"Schema(schema_id={self.schema_id}, [{', '.join(str(f) for f in self.fields)}]{ids})"

    def __str__(self) -> str:
        lines = ["table {"] + [f"  {f}" for f in self.fields] + ["}"]
        return "\n".join(lines)

    # ------------------------------------------------------------------ indexes
    @cached_property
    def _index_by_id(self) -> dict[int, NestedField]:
        out: dict[int, NestedField] = {}

        def walk(t: IcebergType) -> None:
            for f in t.fields if isinstance(t, StructType | ListType | MapType) else ():
                if f.field_id in out:
                    raise SchemaError(f"duplicate field id {f.field_id} in schema")
                out[f.field_id] = f
                walk(f.field_type)

        walk(self._struct)
        return out

    @cached_property
    def _parents(self) -> dict[int, int]:
        """field id -> id of the field that contains it (top-level fields are absent)."""
        out: dict[int, int] = {}

        def walk(t: IcebergType, parent: int | None) -> None:
            if isinstance(t, StructType | ListType | MapType):
                for f in t.fields:
                    if parent is not None:
                        out[f.field_id] = parent
                    walk(f.field_type, f.field_id)

        walk(self._struct, None)
        return out

    @cached_property
    def _index_by_name(self) -> dict[str, int]:
        """Full dotted name -> field id, for every field including list elements and map keys."""
        out: dict[str, int] = {}

        def walk(t: IcebergType, prefix: str) -> None:
            if isinstance(t, StructType | ListType | MapType):
                for f in t.fields:
                    name = f"{prefix}{f.name}"
                    out[name] = f.field_id
                    walk(f.field_type, name + ".")

        walk(self._struct, "")
        return out

    @cached_property
    def _index_by_lower_name(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, fid in self._index_by_name.items():
            out.setdefault(name.lower(), fid)
        return out

    @cached_property
    def _id_to_name(self) -> dict[int, str]:
        return {fid: name for name, fid in self._index_by_name.items()}

    @cached_property
    def highest_field_id(self) -> int:
        return max(self._index_by_id, default=0)

    # ------------------------------------------------------------------ lookups
    def find_field(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField:
        """The field with this id or full dotted name; :class:`SchemaError` if there is none."""
        if isinstance(name_or_id, int):
            f = self._index_by_id.get(name_or_id)
            if f is None:
                raise SchemaError(f"no field with id {name_or_id} in the schema")
            return f
        fid = (
            self._index_by_name.get(name_or_id)
            if case_sensitive
            else self._index_by_lower_name.get(name_or_id.lower())
        )
        if fid is None:
            known = ", ".join(sorted(n for n in self._index_by_name if "." not in n))
            raise SchemaError(
                f"no column named {name_or_id!r} in the schema",
                hint=f"top-level columns are: {known}",
                column=name_or_id,
            )
        return self._index_by_id[fid]

    def find_field_or_none(self, field_id: int) -> NestedField | None:
        return self._index_by_id.get(field_id)

    def find_type(self, name_or_id: str | int, case_sensitive: bool = True) -> IcebergType:
        return self.find_field(name_or_id, case_sensitive).field_type

    def column_name(self, field_id: int) -> str:
        """Full dotted name of a field id."""
        name = self._id_to_name.get(field_id)
        if name is None:
            raise SchemaError(f"no field with id {field_id} in the schema")
        return name

    def parent_id(self, field_id: int) -> int | None:
        return self._parents.get(field_id)

    def field_ids(self) -> set[int]:
        return set(self._index_by_id)

    def is_in_repeated(self, field_id: int) -> bool:
        """Whether a field sits (at any depth) inside a list or map."""
        pid = self._parents.get(field_id)
        while pid is not None:
            if isinstance(self._index_by_id[pid].field_type, ListType | MapType):
                return True
            pid = self._parents.get(pid)
        return False

    def leaf_field_ids(self) -> list[int]:
        """Ids of every primitive field, in schema order."""
        return [fid for fid, f in self._index_by_id.items() if isinstance(f.field_type, PrimitiveType)]

    # ------------------------------------------------------------------ derivation
    def select(self, names: Sequence[str], case_sensitive: bool = True) -> Schema:
        """Project to the named columns (top-level or nested, dotted), keeping schema order and
        the structs that contain selected nested fields."""
        wanted: set[int] = set()
        for n in names:
            f = self.find_field(n, case_sensitive)
            wanted.add(f.field_id)
        return self.select_ids(wanted)

    def select_ids(self, field_ids: Iterable[int]) -> Schema:
        """Project to these field ids. Selecting a struct selects all of it; selecting a nested
        field keeps its parents with only the selected children."""
        wanted = set(field_ids)
        keep: set[int] = set()
        for fid in wanted:
            keep.add(fid)
            pid = self._parents.get(fid)
            while pid is not None:
                keep.add(pid)
                pid = self._parents.get(pid)

        def prune_struct(st: StructType) -> StructType:
            out = []
            for f in st.fields:
                if f.field_id not in keep:
                    continue
                if f.field_id in wanted:
                    out.append(f)
                else:
                    out.append(_replace_type(f, prune(f.field_type)))
            return StructType(*out)

        def prune(t: IcebergType) -> IcebergType:
            if isinstance(t, StructType):
                return prune_struct(t)
            if isinstance(t, ListType):
                return ListType(t.element_id, prune(t.element_type), t.element_required)
            if isinstance(t, MapType):
                return MapType(t.key_id, t.key_type, t.value_id, prune(t.value_type), t.value_required)
            return t

        pruned = prune_struct(self._struct)
        ident = tuple(i for i in self.identifier_field_ids if i in keep)
        return Schema(*pruned.fields, schema_id=self.schema_id, identifier_field_ids=ident)

    def with_schema_id(self, schema_id: int) -> Schema:
        return Schema(*self.fields, schema_id=schema_id, identifier_field_ids=self.identifier_field_ids)

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "struct", "schema-id": self.schema_id}
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        out["fields"] = type_to_json(self._struct)["fields"]
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Schema:
        struct = type_from_json({"type": "struct", "fields": obj.get("fields", [])})
        assert isinstance(struct, StructType)
        schema_id = obj.get("schema-id", 0)
        if isinstance(schema_id, bool) or not isinstance(schema_id, int):
            raise SchemaError(f"'schema-id' must be an integer, got {schema_id!r}")
        ids = obj.get("identifier-field-ids") or ()
        if not isinstance(ids, list | tuple) or any(
            isinstance(i, bool) or not isinstance(i, int) for i in ids
        ):
            raise SchemaError(f"'identifier-field-ids' must be a list of integers, got {ids!r}")
        schema = cls(*struct.fields, schema_id=schema_id, identifier_field_ids=ids)
        schema._index_by_id  # noqa: B018 - a field id used twice anywhere in the tree is refused here
        return schema


def _replace_type(f: NestedField, t: IcebergType) -> NestedField:
    return NestedField(f.field_id, f.name, t, f.required, f.doc, f.initial_default, f.write_default)


def assign_fresh_ids(schema: Schema, start: int = 1) -> Schema:
    """Renumber every field id in breadth-first order starting at ``start``, the way Iceberg
    assigns ids to a new table (top-level fields first: 1..n, then nested ones).
    Identifier field ids follow their fields."""
    counter = start - 1

    def next_id() -> int:
        nonlocal counter
        counter += 1
        return counter

    old_to_new: dict[int, int] = {}

    def renumber_struct(st: StructType) -> StructType:
        ids = [next_id() for _ in st.fields]
        for f, new in zip(st.fields, ids, strict=True):
            old_to_new[f.field_id] = new
        return StructType(
            *(
                NestedField(
                    new, f.name, renumber(f.field_type), f.required, f.doc, f.initial_default, f.write_default
                )
                for f, new in zip(st.fields, ids, strict=True)
            )
        )

    def renumber(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            return renumber_struct(t)
        if isinstance(t, ListType):
            eid = next_id()
            old_to_new[t.element_id] = eid
            return ListType(eid, renumber(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = next_id(), next_id()
            old_to_new[t.key_id] = kid
            old_to_new[t.value_id] = vid
            return MapType(kid, renumber(t.key_type), vid, renumber(t.value_type), t.value_required)
        return t

    new_struct = renumber_struct(schema.as_struct())
    return Schema(
        *new_struct.fields,
        schema_id=schema.schema_id,
        identifier_field_ids=[old_to_new[i] for i in schema.identifier_field_ids],
    )
