"""Schema evolution: Iceberg Java's ``UpdateSchema`` rules, as a pure function of a schema.

::

    SchemaEvolution(current schema, last-column-id, case_sensitive, allow_incompatible_changes)
      add_column | delete_column | rename_column | update_column | update_column_default
      | move_first/_before/_after | set_identifier_fields | union_by_name
                                  each call checked at once (typed errors)
      -> apply()                  the new Schema: new ids from last-column-id + 1, identifier
                                  fields checked (required, primitive, not float/double, only
                                  inside required structs)
      -> check_table(metadata)    the new schema against the table: the current partition spec
                                  and sort order must still find their source columns
      -> property_updates(props)  the name mapping and per-column properties follow renames,
                                  deletions and additions (as Java updates them)

Columns are named by full dotted path the way Java names them (``address.city``,
``points.element.x``, ``locations.value.lat``) or by a tuple of names (for names that contain a
dot). Columns added in the same update can be moved, updated and made identifier fields, but not
renamed or deleted; a column cannot be deleted and changed in the same update (Java's rules).

Format v3 only: types ``timestamp_ns``, ``timestamptz_ns`` and ``unknown`` (always optional; it
may be promoted to any type), and column defaults. A column added with a default gets it as both
``initial-default`` (what rows written before it read) and ``write-default`` (what writes that
lack the column store); a required column may then be added without
``allow_incompatible_changes``. ``update_column_default`` changes only the write default.

Engine-free: types are icefloe types here. ``icefloe.table.update_schema`` is the user-facing
context manager that also takes Arrow types and commits the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from icefloe.errors import IncompatibleSchemaChangeError, SchemaError
from icefloe.spec._evolution_properties import (
    COLUMN_PROPERTY_PREFIXES,
    NAME_MAPPING_PROPERTY,
    property_updates,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    UnknownType,
    is_promotion_allowed,
)
from icefloe.spec.values import default_from_python
from icefloe.transforms import Transform, TransformKind

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["COLUMN_PROPERTY_PREFIXES", "NAME_MAPPING_PROPERTY", "ColumnPath", "SchemaEvolution"]

ColumnPath = str | Sequence[str]
"""A column: its full dotted name (``"a.b"``) or its names from the top (``("a", "b")``)."""

_ROOT = -1
_PROMOTIONS = (
    "int -> long, float -> double, decimal(P, S) -> decimal(P', S) with P' > P "
    "(and on format v3 tables date -> timestamp and unknown -> any type)"
)
# Partition transforms whose values stay the same when a date column becomes a timestamp.
_DATE_SAFE = frozenset({TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY, TransformKind.VOID})


@dataclass(frozen=True)
class _Move:
    field_id: int
    kind: Literal["first", "before", "after"]
    reference_id: int | None = None


def _incompatible(message: str, column: str, hint: str | None = None) -> IncompatibleSchemaChangeError:
    return IncompatibleSchemaChangeError(message, hint=hint, column=column)


def _is_float(t: IcebergType) -> bool:
    return isinstance(t, FloatType | DoubleType)


def _v3_only(t: IcebergType) -> IcebergType | None:
    """The first type inside ``t`` that only format v3 tables may hold, or None."""
    if isinstance(t, TimestampNsType | TimestamptzNsType | UnknownType):
        return t
    for f in getattr(t, "fields", ()):
        found = _v3_only(f.field_type)
        if found is not None:
            return found
    return None


class SchemaEvolution:
    """Pending changes to ``schema`` (a table's current schema, whose table has assigned ids up
    to ``last_column_id``). See the module docstring; method names follow Java's
    ``UpdateSchema`` in snake case."""

    def __init__(
        self,
        schema: Schema,
        last_column_id: int,
        *,
        case_sensitive: bool = True,
        allow_incompatible_changes: bool = False,
        format_version: int = 2,
    ) -> None:
        self.base = schema
        self.last_column_id = max(last_column_id, schema.highest_field_id)
        self.case_sensitive = case_sensitive
        self.allow_incompatible = allow_incompatible_changes
        self.format_version = format_version
        self._parents: dict[int, int] = {}
        for fid in schema.field_ids():
            parent = schema.parent_id(fid)
            if parent is not None:
                self._parents[fid] = parent
        self._deletes: list[int] = []
        self._updates: dict[int, NestedField] = {}  # field id -> the field as it will be
        self._adds: dict[int, list[int]] = {}  # parent id (_ROOT for the table) -> added ids
        self._added_names: dict[str, int] = {}  # full name (lower-cased if case-insensitive) -> id
        self._moves: dict[int, list[_Move]] = {}
        # ids, or names to resolve in the new schema (columns this update renames into place)
        self._identifiers: list[int | str] = list(schema.identifier_field_ids)
        self._identifiers_set = False

    # ------------------------------------------------------------------ lookups
    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    @staticmethod
    def _name(path: ColumnPath) -> str:
        if isinstance(path, str):
            if not path:
                raise SchemaError("a column name must not be empty")
            return path
        parts = list(path)
        if not parts or not all(isinstance(p, str) and p for p in parts):
            raise SchemaError(f"a column path must be a dotted name or a tuple of names, got {path!r}")
        return ".".join(parts)

    def _find(self, name: str) -> NestedField | None:
        """A column of the schema being changed (not one added by this update)."""
        try:
            return self.base.find_field(name, self.case_sensitive)
        except SchemaError:
            return None

    def _missing(self, what: str, name: str) -> SchemaError:
        top = ", ".join(f.name for f in self.base.fields)
        return SchemaError(
            f"cannot {what} {name!r}: there is no such column",
            hint=f"name nested columns by their full dotted path (e.g. 'a.b', 'points.element.x', "
            f"'m.value.y'); the top-level columns are: {top}",
            column=name,
        )

    def _find_for_update(self, name: str) -> NestedField | None:
        """The column as it will be: with this update's earlier changes, or a column it adds."""
        existing = self._find(name)
        if existing is not None:
            return self._updates.get(existing.field_id, existing)
        added = self._added_names.get(self._key(name))
        return self._updates[added] if added is not None else None

    def _find_for_move(self, name: str) -> int | None:
        added = self._added_names.get(self._key(name))
        if added is not None:
            return added
        existing = self._find(name)
        return existing.field_id if existing is not None else None

    def _role(self, field_id: int) -> Literal["element", "key", "value"] | None:
        """Whether a field is a list element or a map key/value (they have no name of their own)."""
        parent = self._parents.get(field_id)
        if parent is None:
            return None
        pf = self.base.find_field_or_none(parent)
        if pf is None:
            return None
        t = pf.field_type
        if isinstance(t, ListType):
            return "element"
        if isinstance(t, MapType):
            return "key" if field_id == t.key_id else "value"
        return None

    def _label(self, field_id: int) -> str:
        if self.base.find_field_or_none(field_id) is not None:
            return self.base.column_name(field_id)
        for name, fid in self._added_names.items():
            if fid == field_id:
                return name
        return str(field_id)

    def _check_not_deleted(self, what: str, name: str, field_id: int) -> None:
        if field_id in self._deletes:
            raise SchemaError(
                f"cannot {what} {name!r}: it will be deleted by this update",
                hint="a column cannot be deleted and changed in the same update",
                column=name,
            )

    def _in_map_key(self, field_id: int) -> bool:
        """Whether a field is a map's key or inside one (Java: "Cannot alter map keys")."""
        fid = field_id
        parent = self._parents.get(fid)
        while parent is not None:
            pt = self.base.find_type(parent)
            if isinstance(pt, MapType) and pt.key_id == fid:
                return True
            fid, parent = parent, self._parents.get(parent)
        return False

    def _check_not_in_key(self, what: str, name: str, field_id: int) -> None:
        if self._in_map_key(field_id):
            raise SchemaError(
                f"cannot {what} {name!r}: map keys cannot change",
                hint="a map's keys identify its entries; to change them, add a new map column",
                column=name,
            )

    def _next_id(self) -> int:
        self.last_column_id += 1
        return self.last_column_id

    def _fresh_ids(self, t: IcebergType) -> IcebergType:
        """``t`` with new ids, assigned the way Java assigns them (a struct's fields first, then
        their children; a map's key, then its value)."""
        if isinstance(t, StructType):
            ids = [self._next_id() for _ in t.fields]
            return StructType(
                *(
                    NestedField(
                        new,
                        f.name,
                        self._fresh_ids(f.field_type),
                        f.required,
                        f.doc,
                        f.initial_default,
                        f.write_default,
                    )
                    for new, f in zip(ids, t.fields, strict=True)
                )
            )
        if isinstance(t, ListType):
            eid = self._next_id()
            return ListType(eid, self._fresh_ids(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = self._next_id(), self._next_id()
            return MapType(
                kid, self._fresh_ids(t.key_type), vid, self._fresh_ids(t.value_type), t.value_required
            )
        return t

    # ------------------------------------------------------------------ add, delete, rename
    def _check_version(self, name: str, t: IcebergType, what: str) -> None:
        bad = _v3_only(t)
        if bad is not None and self.format_version < 3:
            raise SchemaError(
                f"cannot {what} {name!r}: type {bad} needs table format version 3, this table is "
                f"v{self.format_version}",
                hint="upgrade the table first (table.upgrade_format_version(3)) or use another type",
                column=name,
            )

    def _default(self, name: str, t: IcebergType, default: Any) -> Any:
        """``default`` checked against ``t`` (internal representation); format v3 only."""
        if default is None:
            return None
        if self.format_version < 3:
            raise SchemaError(
                f"cannot set a default for {name!r}: column defaults need table format version 3, "
                f"this table is v{self.format_version}",
                hint="upgrade the table first: table.upgrade_format_version(3)",
                column=name,
            )
        return default_from_python(t, default, name)

    def add_column(
        self,
        path: ColumnPath,
        field_type: IcebergType,
        doc: str | None = None,
        required: bool = False,
        default: Any = None,
    ) -> int:
        """Add a column (optional unless ``required``). A required one needs a ``default``
        (format v3) or ``allow_incompatible_changes``, since existing rows have no value for it.
        ``default`` becomes the column's initial and write default. A dotted name adds to the
        struct its prefix names; inside a list or map, to the element's or value's struct
        (``points.element.z`` and ``points.z`` alike). Returns the new field id."""
        if isinstance(path, str):
            name = self._name(path)
            parent_name, _, leaf = name.rpartition(".")
            parent = parent_name or None
        else:
            full = self._name(path)
            parts = list(path)
            parent, leaf = (".".join(parts[:-1]) or None), parts[-1]
            name = full
        if not isinstance(field_type, IcebergType):
            raise SchemaError(
                f"cannot add column {name!r}: {field_type!r} is not an Iceberg type", column=name
            )
        parent_id = _ROOT
        siblings: StructType = self.base.as_struct()
        if parent is not None:
            pf = self._find(parent)
            if pf is None:
                raise SchemaError(
                    f"cannot add column {name!r}: its parent {parent!r} is not a column",
                    hint="add the parent struct first (with its fields, as one struct type), or pass "
                    "the path as a tuple if the column's own name contains a dot: ('a.b',)",
                    column=name,
                )
            if isinstance(pf.field_type, MapType):
                pf = pf.field_type.value_field
            elif isinstance(pf.field_type, ListType):
                pf = pf.field_type.element_field
            if not isinstance(pf.field_type, StructType):
                raise SchemaError(
                    f"cannot add column {name!r}: {parent!r} is a {pf.field_type}, not a struct",
                    column=name,
                )
            parent_id = pf.field_id
            self._check_not_deleted("add a column to", parent, parent_id)
            self._check_not_in_key("add a column to", parent, parent_id)
            siblings = pf.field_type
            name = f"{self.base.column_name(parent_id)}.{leaf}"
        clash = [f for f in siblings.fields if self._key(f.name) == self._key(leaf)]
        if any(f.field_id not in self._deletes for f in clash) or self._key(name) in self._added_names:
            raise SchemaError(
                f"cannot add column {name!r}: a column with that name already exists",
                hint="rename or delete the existing column first, or pick another name",
                column=name,
            )
        self._check_version(name, field_type, "add column")
        value = self._default(name, field_type, default)
        if required and isinstance(field_type, UnknownType):
            raise SchemaError(
                f"cannot add required column {name!r}: a column of type unknown is always optional",
                column=name,
            )
        if required and value is None and not self.allow_incompatible:
            raise _incompatible(
                f"cannot add required column {name!r}: the rows already in the table have no value for it",
                name,
                "add it as an optional column (the default), give it a default (format v3), or call "
                "allow_incompatible_changes() first if no reader will ever read the existing rows",
            )
        new_id = self._next_id()
        field = NestedField(new_id, leaf, self._fresh_ids(field_type), required, doc, value, value)
        self._updates[new_id] = field
        self._adds.setdefault(parent_id, []).append(new_id)
        if parent_id != _ROOT:
            self._parents[new_id] = parent_id
        self._added_names[self._key(name)] = new_id
        return new_id

    def delete_column(self, path: ColumnPath) -> None:
        """Delete a column (its field id is never reused)."""
        name = self._name(path)
        field = self._find(name)
        if field is None:
            raise self._missing("delete", name)
        fid = field.field_id
        if fid in self._adds:
            raise SchemaError(f"cannot delete {name!r}: this update adds columns to it", column=name)
        if fid in self._updates:
            raise SchemaError(
                f"cannot delete {name!r}: this update also changes it",
                hint="a column cannot be deleted and changed in the same update",
                column=name,
            )
        role = self._role(fid)
        if role is not None:
            container = "list" if role == "element" else "map"
            raise SchemaError(
                f"cannot delete {name!r}: the {role} of a {container} cannot be deleted",
                hint=f"delete the {container} column itself",
                column=name,
            )
        self._check_not_in_key("delete", name, fid)
        if fid not in self._deletes:
            self._deletes.append(fid)

    def rename_column(self, path: ColumnPath, new_name: str) -> None:
        """Rename a column; nested ones keep their parent (``rename_column("a.b", "c")`` makes
        ``a.c``). Data files keep reading by field id."""
        name = self._name(path)
        if not isinstance(new_name, str) or not new_name:
            raise SchemaError(f"cannot rename {name!r}: the new name must be a non-empty string", column=name)
        field = self._find(name)
        if field is None:
            raise self._missing("rename", name)
        fid = field.field_id
        self._check_not_deleted("rename", name, fid)
        role = self._role(fid)
        if role is not None:
            raise SchemaError(f"cannot rename {name!r}: a {role} has no name of its own", column=name)
        self._check_not_in_key("rename", name, fid)
        self._updates[fid] = replace(self._updates.get(fid, field), name=new_name)

    # ------------------------------------------------------------------ updates
    def update_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> None:
        """Change a column's type (only the spec's promotions), requiredness (required ->
        optional always; optional -> required only with ``allow_incompatible_changes``) or doc.
        ``None`` leaves that attribute as it is."""
        name = self._name(path)
        field = self._find_for_update(name)
        if field is None:
            raise self._missing("update", name)
        self._check_not_deleted("update", name, field.field_id)
        if field_type is not None:
            self._update_type(name, field, field_type)
        if required is not None:
            self._update_required(name, self._find_for_update(name) or field, required)
        if doc is not None:
            self._update_doc(name, self._find_for_update(name) or field, doc)

    def update_column_default(self, path: ColumnPath, default: Any) -> None:
        """Set a column's write default (format v3): what writes that lack the column store.
        ``None`` removes it. The initial default (what older rows read) never changes."""
        name = self._name(path)
        field = self._find_for_update(name)
        if field is None:
            raise self._missing("update the default of", name)
        self._check_not_deleted("update the default of", name, field.field_id)
        role = self._role(field.field_id)
        if role is not None:
            raise SchemaError(f"cannot set a default on {name!r}: a {role} has no default", column=name)
        if default is None and self.format_version < 3:
            return
        value = self._default(name, field.field_type, default)
        if value == field.write_default and type(value) is type(field.write_default):
            return
        self._updates[field.field_id] = replace(field, write_default=value)

    def _update_type(self, name: str, field: NestedField, new: IcebergType) -> None:
        current = field.field_type
        if not isinstance(new, IcebergType):
            raise SchemaError(f"cannot update {name!r}: {new!r} is not an Iceberg type", column=name)
        if new == current:
            return
        self._check_version(name, new, "change the type of")
        if isinstance(current, UnknownType) and self.format_version >= 3:
            # unknown -> any type: no data file holds the column, so nothing to convert
            self._check_not_in_key("update", name, field.field_id)
            self._updates[field.field_id] = replace(field, field_type=self._fresh_ids(new))
            return
        if not isinstance(current, PrimitiveType) or not isinstance(new, PrimitiveType):
            raise _incompatible(
                f"cannot change column {name!r} from {current} to {new}: only primitive types can be "
                "promoted",
                name,
                "change the fields of a struct, list or map one by one (e.g. 'points.element.x')",
            )
        self._check_not_in_key("update", name, field.field_id)
        if not self._promotable(current, new):
            narrowing = is_promotion_allowed(new, current)
            raise _incompatible(
                f"cannot change column {name!r} from {current} to {new}"
                + (": that narrows the type, so existing values may not fit" if narrowing else ""),
                name,
                f"the allowed type changes are {_PROMOTIONS}; otherwise add a new column, copy the "
                "values into it, and delete the old one",
            )
        self._updates[field.field_id] = replace(field, field_type=new)

    def _promotable(self, current: PrimitiveType, new: PrimitiveType) -> bool:
        if is_promotion_allowed(current, new):
            return True
        # format v3: date -> timestamp / timestamp_ns (never to the tz types)
        return (
            self.format_version >= 3
            and isinstance(current, DateType)
            and isinstance(new, TimestampType | TimestampNsType)
        )

    def _update_required(self, name: str, field: NestedField, required: bool) -> None:
        if field.required == required:
            return
        if required and isinstance(field.field_type, UnknownType):
            raise SchemaError(
                f"cannot make column {name!r} required: a column of type unknown is always optional",
                hint="promote it to its type first (update_column(name, field_type=...))",
                column=name,
            )
        if required and not self.allow_incompatible:
            raise _incompatible(
                f"cannot make column {name!r} required (optional -> required): existing rows may "
                "hold nulls in it",
                name,
                "call allow_incompatible_changes() first if you know that no row is null",
            )
        self._check_not_in_key("update", name, field.field_id)
        self._updates[field.field_id] = replace(field, required=required)

    def _update_doc(self, name: str, field: NestedField, doc: str) -> None:
        if field.doc == doc:
            return
        role = self._role(field.field_id)
        if role is not None:
            raise SchemaError(f"cannot set a doc on {name!r}: a {role} has no doc", column=name)
        self._check_not_in_key("update", name, field.field_id)
        self._updates[field.field_id] = replace(field, doc=doc)

    # ------------------------------------------------------------------ moves
    def move_first(self, path: ColumnPath) -> None:
        """Move a column to the front of its struct."""
        name = self._name(path)
        fid = self._find_for_move(name)
        if fid is None:
            raise self._missing("move", name)
        self._move(name, _Move(fid, "first"))

    def move_before(self, path: ColumnPath, before: ColumnPath) -> None:
        """Move a column just before another one of the same struct."""
        self._move_relative(path, before, "before")

    def move_after(self, path: ColumnPath, after: ColumnPath) -> None:
        """Move a column just after another one of the same struct."""
        self._move_relative(path, after, "after")

    def _move_relative(self, path: ColumnPath, other: ColumnPath, kind: Literal["before", "after"]) -> None:
        name, ref_name = self._name(path), self._name(other)
        fid = self._find_for_move(name)
        if fid is None:
            raise self._missing("move", name)
        ref = self._find_for_move(ref_name)
        if ref is None:
            raise SchemaError(
                f"cannot move {name!r} {kind} {ref_name!r}: there is no such column", column=name
            )
        if ref == fid:
            raise SchemaError(f"cannot move {name!r} {kind} itself", column=name)
        self._check_not_deleted(f"move a column {kind}", ref_name, ref)
        self._move(name, _Move(fid, kind, ref))

    def _move(self, name: str, move: _Move) -> None:
        self._check_not_deleted("move", name, move.field_id)
        self._check_not_in_key("move", name, move.field_id)
        parent = self._parents.get(move.field_id)
        if parent is not None:
            pf = self.base.find_field(parent)
            if not isinstance(pf.field_type, StructType):
                raise SchemaError(
                    f"cannot move {name!r}: fields of a {pf.field_type} cannot move", column=name
                )
        if move.reference_id is not None and self._parents.get(move.reference_id) != parent:
            raise SchemaError(
                f"cannot move {name!r} to a different struct",
                hint="moves reorder the fields of one struct; to move a field elsewhere, add a new "
                "column there and delete this one",
                column=name,
            )
        self._moves.setdefault(_ROOT if parent is None else parent, []).append(move)

    # ------------------------------------------------------------------ identifier fields
    def set_identifier_fields(self, *names: str) -> None:
        """Replace the identifier fields (the row key of upserts and changelogs); no names clears
        them. Each must end up a required primitive column, not float or double, outside lists
        and maps and inside required structs only (checked when the update is applied)."""
        out: list[int | str] = []
        for n in names:
            name = self._name(n)
            fid = self._find_for_move(name)
            out.append(fid if fid is not None else name)
        self._identifiers = out
        self._identifiers_set = True

    # ------------------------------------------------------------------ union by name
    def union_by_name(self, other: Schema | StructType, *, relax_required: bool = True) -> None:
        """Make the schema a union of itself and ``other``, matching columns by name (field ids in
        ``other`` are ignored), as Java's ``unionByNameWith``: columns only in ``other`` are added
        (optional), types widen where ``other``'s is wider (a narrower one is kept), docs are
        taken from ``other``, and a required column that is optional in ``other`` becomes
        optional unless ``relax_required`` is false. Columns missing from ``other`` stay."""
        struct = other.as_struct() if isinstance(other, Schema) else other
        self._union_struct(struct, _ROOT, relax_required)

    def _child(self, struct: StructType, name: str) -> NestedField | None:
        if self.case_sensitive:
            return struct.field_by_name(name)
        return next((f for f in struct.fields if f.name.lower() == name.lower()), None)

    def _union_struct(self, struct: StructType, partner_id: int, relax: bool) -> None:
        partner_type = self.base.as_struct() if partner_id == _ROOT else self.base.find_type(partner_id)
        assert isinstance(partner_type, StructType)
        partners = [self._child(partner_type, f.name) for f in struct.fields]
        # Java visits children first: additions inside existing structs get their ids first.
        for f, pf in zip(struct.fields, partners, strict=True):
            if pf is not None:
                self._union_type(f.field_type, pf, relax)
        for f, pf in zip(struct.fields, partners, strict=True):
            if pf is None:
                parent = () if partner_id == _ROOT else tuple(self._path_of(partner_id))
                self.add_column((*parent, f.name), f.field_type, f.doc)
            else:
                self._union_update(f, pf, relax)

    def _path_of(self, field_id: int) -> list[str]:
        names: list[str] = []
        fid: int | None = field_id
        while fid is not None:
            names.append(self.base.find_field(fid).name)
            fid = self._parents.get(fid)
        return names[::-1]

    def _union_type(self, t: IcebergType, partner: NestedField, relax: bool) -> None:
        pt = partner.field_type
        label = self.base.column_name(partner.field_id)
        kinds = (StructType, ListType, MapType)
        for kind in kinds:
            if isinstance(t, kind) != isinstance(pt, kind):
                raise _incompatible(
                    f"cannot merge column {label!r}: it is a {pt} in the table and a {t} in the new schema",
                    label,
                    "rename one of them; a column cannot change between struct, list, map and primitive",
                )
        if isinstance(t, StructType):
            self._union_struct(t, partner.field_id, relax)
        elif isinstance(t, ListType):
            assert isinstance(pt, ListType)
            self._union_type(t.element_type, pt.element_field, relax)
            self._union_update(t.element_field, pt.element_field, relax)
        elif isinstance(t, MapType):
            assert isinstance(pt, MapType)
            self._union_type(t.key_type, pt.key_field, relax)
            self._union_type(t.value_type, pt.value_field, relax)
            self._union_update(t.key_field, pt.key_field, relax)
            self._union_update(t.value_field, pt.value_field, relax)

    def _union_update(self, f: NestedField, existing: NestedField, relax: bool) -> None:
        name = self.base.column_name(existing.field_id)
        current = self._updates.get(existing.field_id, existing)
        if relax and f.optional and existing.required:
            self._update_required(name, current, False)
        new, old = f.field_type, existing.field_type
        if (
            isinstance(new, PrimitiveType)
            and isinstance(old, PrimitiveType)
            and not is_promotion_allowed(new, old)
        ):
            self._update_type(name, self._updates.get(existing.field_id, existing), new)
        if f.doc is not None and f.doc != existing.doc:
            self._update_doc(name, self._updates.get(existing.field_id, existing), f.doc)

    # ------------------------------------------------------------------ result
    @property
    def has_changes(self) -> bool:
        return bool(self._deletes or self._updates or self._moves or self._identifiers_set)

    def apply(self) -> Schema:
        """The schema with every change applied (its schema id is the base's; the table assigns
        the real one). Raises a typed error when the result breaks a rule."""
        self._check_identifier_deletes()
        struct = self._apply_struct(self.base.as_struct(), _ROOT)
        plain = Schema(*struct.fields)
        ids = self._identifier_ids(plain)
        return Schema(*struct.fields, schema_id=self.base.schema_id, identifier_field_ids=ids)

    def _check_identifier_deletes(self) -> None:
        for ident in self._identifiers:
            if not isinstance(ident, int) or self.base.find_field_or_none(ident) is None:
                continue
            name = self.base.column_name(ident)
            if ident in self._deletes:
                raise _incompatible(
                    f"cannot delete identifier field {name!r}",
                    name,
                    "to delete it, also call set_identifier_fields(...) without it in the same update",
                )
            parent = self._parents.get(ident)
            while parent is not None:
                if parent in self._deletes:
                    pname = self.base.column_name(parent)
                    raise _incompatible(
                        f"cannot delete {pname!r}: it contains identifier field {name!r}",
                        pname,
                        "also call set_identifier_fields(...) without it in the same update",
                    )
                parent = self._parents.get(parent)

    def _identifier_ids(self, new: Schema) -> tuple[int, ...]:
        ids: list[int] = []
        for ident in self._identifiers:
            if isinstance(ident, str):
                try:
                    fid = new.find_field(ident, self.case_sensitive).field_id
                except SchemaError:
                    raise SchemaError(
                        f"cannot make {ident!r} an identifier field: it is not in the schema or the "
                        "added columns",
                        column=ident,
                    ) from None
            else:
                fid = ident
            _check_identifier(new, fid)
            if fid not in ids:
                ids.append(fid)
        if set(ids) == set(self.base.identifier_field_ids):
            return self.base.identifier_field_ids
        return tuple(sorted(ids)) if self._identifiers_set else tuple(ids)

    def _apply_struct(self, struct: StructType, parent_id: int) -> StructType:
        fields: list[NestedField] = []
        for f in struct.fields:
            if f.field_id in self._deletes:
                continue
            base = self._updates.get(f.field_id, f)
            fields.append(replace(base, field_type=self._apply_type(f)))
        fields += [self._updates[i] for i in self._adds.get(parent_id, ())]
        for move in self._moves.get(parent_id, ()):
            fields = self._apply_move(fields, move)
        where = "the table" if parent_id == _ROOT else repr(self.base.column_name(parent_id))
        if not fields and struct.fields:
            raise SchemaError(
                f"cannot delete every column of {where}",
                hint="a struct needs at least one field (Parquet cannot store an empty one); delete "
                "the struct column itself instead",
            )
        seen: dict[str, str] = {}
        for f in fields:
            key = self._key(f.name)
            if key in seen:
                raise SchemaError(
                    f"two columns of {where} would be named {f.name!r}",
                    hint="rename or delete one of them in the same update",
                    column=f.name,
                )
            seen[key] = f.name
        return StructType(*fields)

    def _apply_type(self, f: NestedField) -> IcebergType:
        t = f.field_type
        update = self._updates.get(f.field_id)
        if update is not None and isinstance(t, PrimitiveType):
            return update.field_type
        if isinstance(t, StructType):
            return self._apply_struct(t, f.field_id)
        if isinstance(t, ListType):
            element = self._updates.get(t.element_id)
            required = element.required if element is not None else t.element_required
            return ListType(t.element_id, self._apply_type(t.element_field), required)
        if isinstance(t, MapType):
            value = self._updates.get(t.value_id)
            required = value.required if value is not None else t.value_required
            return MapType(t.key_id, t.key_type, t.value_id, self._apply_type(t.value_field), required)
        return t

    def _apply_move(self, fields: list[NestedField], move: _Move) -> list[NestedField]:
        ids = [f.field_id for f in fields]
        name = self._label(move.field_id)
        if move.field_id not in ids:
            raise SchemaError(f"cannot move {name!r}: it is deleted by this update", column=name)
        moved = fields[ids.index(move.field_id)]
        rest = [f for f in fields if f.field_id != move.field_id]
        if move.kind == "first":
            return [moved, *rest]
        rest_ids = [f.field_id for f in rest]
        if move.reference_id not in rest_ids:
            ref = self._label(move.reference_id) if move.reference_id is not None else "?"
            raise SchemaError(f"cannot move {name!r} {move.kind} {ref!r}: it is deleted by this update")
        at = rest_ids.index(move.reference_id) + (1 if move.kind == "after" else 0)
        return [*rest[:at], moved, *rest[at:]]

    # ------------------------------------------------------------------ against the table
    def check_table(self, metadata: TableMetadata, new: Schema) -> None:
        """Refuse a new schema that the table's current partition spec or sort order cannot use
        (Java fails the commit then) and a date -> timestamp promotion of a column whose partition
        values would change. Like Java, a column that only older partition specs use may be
        deleted (their files keep being read: ``PartitionSpec.with_dropped_source_types``)."""
        old = self.base
        for pf in metadata.spec().fields:
            if pf.transform.is_void:
                continue
            self._check_source(
                new, pf.source_id, pf.transform, f"partition field {pf.name!r}", "partition spec"
            )
        for sf in metadata.sort_order().fields:
            self._check_source(new, sf.source_id, sf.transform, "a sort field", "sort order")
        for spec in metadata.partition_specs:
            for pf in spec.fields:
                before, after = old.find_field_or_none(pf.source_id), new.find_field_or_none(pf.source_id)
                if (
                    before is not None
                    and after is not None
                    and isinstance(before.field_type, DateType)
                    and not isinstance(after.field_type, DateType)
                    and pf.transform.kind not in _DATE_SAFE
                ):
                    name = old.column_name(pf.source_id)
                    raise _incompatible(
                        f"cannot change column {name!r} from date to {after.field_type}: partition "
                        f"field {pf.name!r} ({pf.transform}) would give other values for it",
                        name,
                        "only year, month and day partitions keep their values across that promotion",
                    )

    def _check_source(self, new: Schema, source_id: int, transform: Transform, what: str, owner: str) -> None:
        field = new.find_field_or_none(source_id)
        if field is None:
            old = self.base.find_field_or_none(source_id)
            name = self.base.column_name(source_id) if old is not None else str(source_id)
            hint = (
                "evolve the partition spec so that it no longer uses the column, then delete the column"
                if owner == "partition spec"
                else "replace the table's sort order first, then delete the column"
            )
            raise _incompatible(
                f"cannot delete column {name!r}: {what} of the table's {owner} uses it", name, hint
            )
        if not transform.can_transform(field.field_type):
            name = new.column_name(source_id)
            raise _incompatible(
                f"cannot change column {name!r} to {field.field_type}: {what} of the table's {owner} "
                f"({transform}) cannot use that type",
                name,
            )

    # ------------------------------------------------------------------ table properties
    def property_updates(
        self, properties: Mapping[str, str], new: Schema
    ) -> tuple[dict[str, str], list[str]]:
        """The table properties to set and to remove so that they follow this update, as Java does:
        the name mapping (``schema.name-mapping.default``) learns new names and new columns, and
        per-column properties (metrics modes, bloom filters, stats) follow renames and deletions."""
        return property_updates(properties, self.base, new, self._updates, self._adds, self._deletes)


def _check_identifier(schema: Schema, field_id: int) -> None:
    """Java's rules for an identifier field."""
    field = schema.find_field_or_none(field_id)
    if field is None:
        raise SchemaError(f"cannot make field id {field_id} an identifier field: it does not exist")
    name = schema.column_name(field_id)

    def refuse(why: str, hint: str | None = None) -> SchemaError:
        return SchemaError(f"cannot make {name!r} an identifier field: {why}", hint=hint, column=name)

    if not isinstance(field.field_type, PrimitiveType):
        raise refuse("it is not a primitive column")
    if not field.required:
        raise refuse(
            "it is optional",
            "identifier fields must be required: make it required first (update_column(..., "
            "required=True) with allow_incompatible_changes())",
        )
    if _is_float(field.field_type):
        raise refuse("float and double columns cannot identify rows")
    parent = schema.parent_id(field_id)
    chain: list[int] = []
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    for pid in reversed(chain):
        pf = schema.find_field(pid)
        if not isinstance(pf.field_type, StructType):
            raise refuse(f"it is inside {schema.column_name(pid)!r}, a {pf.field_type}")
        if not pf.required:
            raise refuse(f"it is inside the optional struct {schema.column_name(pid)!r}")
