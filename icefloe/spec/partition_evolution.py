"""Partition evolution rules: Iceberg Java's ``BaseUpdatePartitionSpec``, as pure logic.

:class:`PartitionEvolution` takes a table's current spec, its schema, every spec the table ever
had and its ``last-partition-id``, records changes one call at a time, and :meth:`apply` gives the
new spec. It touches no table: :mod:`icefloe.table.update_spec` commits the result.

The rules (format v2 and v3; Java's names for the refusals)::

    add_field(term, name=None)   term: "hour(ts)", "bucket(16, id)", "truncate(4, s)", "id", ...
        -> the same (source, transform) already in the spec: refused ("duplicate"), unless it was
           removed in this update: then the remove is undone (renamed if ``name`` differs)
        -> the same (source, transform) added twice, or a second time transform of one column
           added in one update (day(ts) and hour(ts)): refused ("redundant"). A time transform
           next to a *current* one (hour(ts) beside an existing day(ts)) is allowed, as in Java
        -> field id: a field with the same source and transform (and ``name``, if given) in any
           earlier spec of the table gives its id (and name) back ("recycling"); otherwise
           last-partition-id + 1. Ids are never reused for anything else
        -> default names: ts_year / ts_month / ts_day / ts_hour, id_bucket_16, s_trunc_4, the
           column's own name for identity (the create-table builder writes id_bucket, s_trunc)
    remove_field(name or term)   v2 and v3 drop the field (v1 would keep it as void: not written)
    rename_field(name, new)      only renames; the field keeps its id and transform

    apply(): kept fields in order (renamed), then the added ones; names unique, and a name may be
             a column's only when that column is the field's source

A spec equal (sources, transforms and names, in order) to one the table already has is reused by
id when committed: that is the metadata builder's job (:meth:`TableMetadataBuilder.add_partition_spec`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from icefloe.errors import PartitionSpecError, SchemaError, UnsupportedFeatureError
from icefloe.spec.partition import (
    PartitionField,
    PartitionSpec,
    _check_source,
    _parse_human,
)
from icefloe.spec.schema import Schema
from icefloe.transforms import IdentityTransform, Transform, TransformKind

__all__ = ["PartitionEvolution", "default_field_name"]

_TIME_KINDS = (TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY, TransformKind.HOUR)


def default_field_name(source_name: str, transform: Transform) -> str:
    """The name Iceberg Java's ``UpdatePartitionSpec`` gives an added field without a name
    (``PartitionNameGenerator``): the source column's full name, plus ``_bucket_N``,
    ``_trunc_W``, ``_year``, ``_month``, ``_day``, ``_hour`` or ``_null``; identity keeps it."""
    kind = transform.kind
    if kind is TransformKind.IDENTITY:
        return source_name
    if kind in (TransformKind.BUCKET, TransformKind.TRUNCATE):
        parameter = str(transform).split("[", 1)[1].rstrip("]")
        word = "bucket" if kind is TransformKind.BUCKET else "trunc"
        return f"{source_name}_{word}_{parameter}"
    if kind is TransformKind.VOID:
        return f"{source_name}_null"
    return f"{source_name}_{kind.value}"


@dataclass(frozen=True)
class _Term:
    """A resolved term: a transform of the column with id ``source_id``, as the user wrote it."""

    source_id: int
    transform: Transform
    text: str

    @property
    def key(self) -> tuple[int, str]:
        # Java keys fields by (source id, transform name)
        return self.source_id, str(self.transform)


@dataclass
class _State:
    adds: list[PartitionField] = field(default_factory=list)
    added_time_fields: dict[int, PartitionField] = field(default_factory=dict)
    transform_to_added: dict[tuple[int, str], PartitionField] = field(default_factory=dict)
    name_to_added: dict[str, PartitionField] = field(default_factory=dict)
    deletes: set[int] = field(default_factory=set)
    renames: dict[str, str] = field(default_factory=dict)
    last_partition_id: int = 0

    def copy(self) -> _State:
        return _State(
            list(self.adds),
            dict(self.added_time_fields),
            dict(self.transform_to_added),
            dict(self.name_to_added),
            set(self.deletes),
            dict(self.renames),
            self.last_partition_id,
        )


def _describe(f: PartitionField, schema: Schema) -> str:
    source = schema.column_name(f.source_id) if schema.find_field_or_none(f.source_id) else f.source_id
    return f"{f.name!r} ({f.transform}({source}), field id {f.field_id})"


class PartitionEvolution:
    """Changes to one partition spec, checked call by call as Java's ``BaseUpdatePartitionSpec``
    checks them; :meth:`apply` returns the resulting spec (spec id 0: the table assigns it).

    ``historical_specs`` are every spec of the table (the current one included): an added field
    that one of them already had gets that field's id back. Each call either succeeds or raises
    :class:`PartitionSpecError` and changes nothing."""

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        last_partition_id: int,
        historical_specs: Iterable[PartitionSpec] = (),
        *,
        format_version: int = 2,
        case_sensitive: bool = True,
    ) -> None:
        if format_version < 2:
            raise UnsupportedFeatureError(
                "partition evolution of a format version 1 table is not supported: v1 keeps removed "
                "fields as void transforms and icefloe writes format versions 2 and 3",
                hint="upgrade the table to format version 2 first",
            )
        self.spec = spec
        self.schema = schema
        self.format_version = format_version
        self.case_sensitive = case_sensitive
        self._historical = list(historical_specs)
        self._name_to_field = {f.name: f for f in spec.fields}
        self._transform_to_field = {(f.source_id, str(f.transform)): f for f in spec.fields}
        self._state = _State(last_partition_id=last_partition_id)

    # ------------------------------------------------------------------ views
    @property
    def last_partition_id(self) -> int:
        """The highest partition field id assigned so far (the table's, plus new fields')."""
        return self._state.last_partition_id

    @property
    def changed(self) -> bool:
        s = self._state
        return bool(s.adds or s.deletes or s.renames)

    # ------------------------------------------------------------------ terms
    def resolve(self, term: str) -> _Term:
        """``"bucket(16, id)"`` -> (id's field id, bucket[16]); a bare column name is identity."""
        if not isinstance(term, str) or not term.strip():
            raise PartitionSpecError(
                "a partition term must be text like 'day(ts)', 'bucket(16, id)' or a column name, "
                f"got {term!r}"
            )
        transform, column = _parse_human(term)
        return self._resolve_column(column, transform, term)

    def _resolve_column(self, column: str, transform: Transform, text: str) -> _Term:
        try:
            source = self.schema.find_field(column, self.case_sensitive)
        except SchemaError as e:
            raise PartitionSpecError(
                f"cannot partition by {text!r}: no column named {column!r}",
                hint=e.hint or "name a column of the table's current schema",
                column=column,
            ) from None
        canonical = self.schema.column_name(source.field_id)
        _check_source(self.schema, source.field_id, transform, canonical)
        return _Term(source.field_id, transform, text.strip())

    def _term_text(self, t: _Term) -> str:
        column = self.schema.column_name(t.source_id)
        kind = t.transform.kind
        if kind is TransformKind.IDENTITY:
            return column
        if kind in (TransformKind.BUCKET, TransformKind.TRUNCATE):
            n = str(t.transform).split("[", 1)[1].rstrip("]")
            return f"{kind.value}({n}, {column})"
        return f"{kind.value}({column})"

    # ------------------------------------------------------------------ changes
    def add_field(self, term: str, name: str | None = None) -> None:
        """Add a partition field for ``term`` (Java's ``addField(name, term)``)."""
        self._add(self.resolve(term), name)

    def add_identity(self, column: str) -> None:
        """Add an identity partition field on ``column`` (the name is taken as it is)."""
        if not isinstance(column, str) or not column:
            raise PartitionSpecError(f"add_identity needs a column name, got {column!r}")
        self._add(self._resolve_column(column, IdentityTransform(), column), None)

    def _add(self, term: _Term, name: str | None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise PartitionSpecError(
                f"a partition field name must be a non-empty string, got {name!r}",
                hint="leave name out for Java's default name",
            )
        if term.transform.is_void:
            raise PartitionSpecError(
                f"cannot add {term.text!r}: void fields are not added in format v2 and later",
                hint="remove_field drops a field; a void field partitions nothing",
                transform=str(term.transform),
            )
        state = self._state.copy()
        what = self._term_text(term)
        already = state.name_to_added.get(name) if name is not None else None
        if already is not None:
            raise PartitionSpecError(
                f"cannot add partition field {name!r} = {what}: a field of that name was already added "
                f"in this update ({_describe(already, self.schema)})",
                hint="give the new field another name",
                partition_field=name,
            )
        existing = self._transform_to_field.get(term.key)
        if existing is not None and existing.field_id in state.deletes:
            # re-adding what this update removed undoes the removal (Java: rewriteDeleteAndAddField)
            state.deletes.discard(existing.field_id)
            before, self._state = self._state, state
            if name is not None and name != existing.name:
                try:
                    self.rename_field(existing.name, name)
                except PartitionSpecError:
                    self._state = before
                    raise
            return
        if existing is not None:
            raise PartitionSpecError(
                f"cannot add partition field {what}: the spec already has it as "
                f"{_describe(existing, self.schema)}",
                hint="it is already there; rename_field renames it, remove_field drops it",
                partition_field=existing.name,
            )
        added = state.transform_to_added.get(term.key)
        if added is not None:
            raise PartitionSpecError(
                f"cannot add partition field {what} twice: it was already added in this update as "
                f"{_describe(added, self.schema)}",
                hint="add each (column, transform) once",
                partition_field=added.name,
            )
        new = self._recycle_or_create(state, term, name)
        if new.transform.kind in _TIME_KINDS:
            other = state.added_time_fields.get(new.source_id)
            if other is not None:
                raise PartitionSpecError(
                    f"cannot add partition field {what}: it is redundant with {other.transform}"
                    f"({self.schema.column_name(other.source_id)}) added in this update as {other.name!r}",
                    hint="add one time transform (year, month, day or hour) of a column per update",
                    partition_field=new.name,
                )
            state.added_time_fields[new.source_id] = new
        state.transform_to_added[term.key] = new
        clash = self._name_to_field.get(new.name)
        if clash is not None and clash.field_id not in state.deletes:
            if clash.transform.is_void:
                # a void field (left by format v1) gives its name up, as in Java
                state.renames[clash.name] = f"{clash.name}_{clash.field_id}"
            else:
                raise PartitionSpecError(
                    f"cannot add partition field {new.name!r} = {what}: the spec already has a field "
                    f"named {new.name!r} ({_describe(clash, self.schema)})",
                    hint="pass another name (add_field(term, name=...)) or rename the existing field first",
                    partition_field=new.name,
                )
        elif clash is not None:
            state.renames[clash.name] = f"{clash.name}_{clash.field_id}"
        state.name_to_added[new.name] = new
        state.adds.append(new)
        self._state = state

    def _recycle_or_create(self, state: _State, term: _Term, name: str | None) -> PartitionField:
        """Java's ``recycleOrCreatePartitionField``: in v2 and later, a field with the same source
        and transform (and name, when given) in any of the table's specs keeps its id (and name).
        Java picks among several such fields in hash order; icefloe takes the newest spec's."""
        for spec in sorted(self._historical, key=lambda s: s.spec_id, reverse=True):
            for f in spec.fields:
                same = f.source_id == term.source_id and f.transform == term.transform
                if same and (name is None or f.name == name):
                    return f
        state.last_partition_id += 1
        if name is None:
            name = default_field_name(self.schema.column_name(term.source_id), term.transform)
        return PartitionField(term.source_id, state.last_partition_id, term.transform, name)

    def remove_field(self, name_or_term: str) -> None:
        """Remove a field, named by its partition field name (Java's ``removeField(String)``) or,
        when no field has that name, by its term (``"day(ts)"``; Java's ``removeField(Term)``)."""
        if not isinstance(name_or_term, str) or not name_or_term:
            raise PartitionSpecError(f"remove_field needs a field name or a term, got {name_or_term!r}")
        state = self._state
        if name_or_term in state.name_to_added:
            raise self._removing_added(state.name_to_added[name_or_term])
        f = self._name_to_field.get(name_or_term)
        if f is None:
            try:
                term = self.resolve(name_or_term)
            except PartitionSpecError:
                raise self._not_found(name_or_term) from None
            added = state.transform_to_added.get(term.key)
            if added is not None:
                raise self._removing_added(added)
            f = self._transform_to_field.get(term.key)
            if f is None:
                raise self._not_found(name_or_term)
        if f.name in state.renames:
            raise PartitionSpecError(
                f"cannot rename and remove partition field {f.name!r} in one update",
                hint="drop the rename_field call, or remove the field in another update",
                partition_field=f.name,
            )
        new = state.copy()
        new.deletes.add(f.field_id)
        self._state = new

    def _removing_added(self, f: PartitionField) -> PartitionSpecError:
        return PartitionSpecError(
            f"cannot remove partition field {f.name!r}: it was added in this update",
            hint="leave out the add_field call instead",
            partition_field=f.name,
        )

    def _not_found(self, what: str) -> PartitionSpecError:
        names = ", ".join(repr(f.name) for f in self.spec.fields) or "(none: the table is unpartitioned)"
        return PartitionSpecError(
            f"cannot remove partition field {what!r}: the current spec has no such field",
            hint=f"name a field of the current spec by its name or its term; fields are: {names}",
            partition_field=what,
        )

    def rename_field(self, name: str, new_name: str) -> None:
        """Rename a field of the current spec; its id and transform stay."""
        if not isinstance(new_name, str) or not new_name:
            raise PartitionSpecError(f"a partition field name must be a non-empty string, got {new_name!r}")
        state = self._state.copy()
        clash = self._name_to_field.get(new_name)
        if clash is not None and clash.transform.is_void:
            state.renames[clash.name] = f"{clash.name}_{clash.field_id}"
        if name in state.name_to_added:
            raise PartitionSpecError(
                f"cannot rename partition field {name!r}: it was added in this update",
                hint="give the name to add_field instead (add_field(term, name=...))",
                partition_field=name,
            )
        f = self._name_to_field.get(name)
        if f is None:
            names = ", ".join(repr(x.name) for x in self.spec.fields) or "(none)"
            raise PartitionSpecError(
                f"cannot rename partition field {name!r}: the current spec has no such field",
                hint=f"fields are: {names}",
                partition_field=name,
            )
        if f.field_id in state.deletes:
            raise PartitionSpecError(
                f"cannot remove and rename partition field {name!r} in one update",
                hint="drop the remove_field call, or rename in another update",
                partition_field=name,
            )
        state.renames[name] = new_name
        self._state = state

    # ------------------------------------------------------------------ result
    def apply(self) -> PartitionSpec:
        """The new spec (spec id 0; the metadata builder gives it an id or reuses an equal spec's).
        Raises :class:`PartitionSpecError` for duplicate names and names that are another column's."""
        state = self._state
        fields: list[PartitionField] = []
        for f in self.spec.fields:
            if f.field_id in state.deletes:
                continue  # format v2 and later: a removed field is dropped
            name = state.renames.get(f.name, f.name)
            fields.append(PartitionField(f.source_id, f.field_id, f.transform, name))
        fields += state.adds
        names: set[str] = set()
        for f in fields:
            if f.name in names:
                raise PartitionSpecError(
                    f"partition field name {f.name!r} would be used twice in the new spec",
                    hint="rename one of the fields",
                    partition_field=f.name,
                )
            names.add(f.name)
            column = self._column(f.name)
            if column is not None and column != f.source_id:
                raise PartitionSpecError(
                    f"partition field name {f.name!r} is the name of column "
                    f"{self.schema.column_name(column)!r}, which is not the field's source",
                    hint="choose another name: a field may share only its own source column's name",
                    partition_field=f.name,
                )
            if not f.transform.is_void:
                _check_source(self.schema, f.source_id, f.transform, f.name)
        return PartitionSpec(*fields)

    def _column(self, name: str) -> int | None:
        try:
            return self.schema.find_field(name).field_id
        except SchemaError:
            return None
