"""``table.update_schema()``: schema evolution in one atomic commit.

::

    with table.update_schema() as u:
        u.add_column("address.zip", pa.string(), doc="postal code")
        u.add_column("region", pa.string(), required=True, default="EU")   # format v3
        u.update_column_default("region", "US")                # later writes only
        u.rename_column("name", "full_name")
        u.update_column("amount", field_type=pa.int64())      # int -> long
        u.move_first("id")
    # one commit here (AddSchema + SetCurrentSchema); on an exception nothing is committed

Each call is checked at once (:mod:`icefloe.spec.schema_evolution` holds the rules, Iceberg
Java's ``SchemaUpdate``), and the result again when the block commits: identifier fields, the
current partition spec and sort order. Types are icefloe types, Arrow types or type strings
(``"long"``, ``"decimal(12, 2)"``).

The commit::

    attempt on base metadata
      -> the table's current schema and last-column-id still those the block started from?
         (no: ConflictError, nothing committed; a concurrent schema change must be looked at)
      -> partition spec and sort order still satisfied (they may have changed meanwhile)
      -> AddSchema(new schema, last-column-id) + SetCurrentSchema(-1) (+ name mapping and
         per-column properties), requirements AssertCurrentSchemaId + AssertLastAssignedFieldId

A concurrent data commit does not change the schema, so the retry loop re-applies the change on
the new metadata, as Java does. A result equal to an earlier schema reuses that schema's id.

Inside a transaction (``tx.update_schema()``), the change is queued with the transaction's other
changes and commits atomically with them; writes queued after it use the new schema. That is how
``append(data, schema_evolution="merge")`` adds the input's new columns and widens types in the
same commit as the data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from icefloe.errors import ConflictError, SchemaError, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.schema_evolution import ColumnPath, SchemaEvolution
from icefloe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    parse_primitive,
)
from icefloe.spec.updates import (
    AssertCurrentSchemaId,
    AssertLastAssignedFieldId,
    AssertTableUUID,
    MetadataUpdate,
    TableRequirement,
)
from icefloe.transaction._commit import commit_actions
from icefloe.transaction._producer import PendingChanges, SnapshotProducer

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.io import FileIO
    from icefloe.manifest import ManifestFile
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table
    from icefloe.table.transaction import Transaction

__all__ = [
    "SCHEMA_EVOLUTION_MODES",
    "UpdateSchema",
    "merge_input_schema",
    "merged_metadata",
    "queue_merged_schema",
]

SCHEMA_EVOLUTION_MODES = ("merge",)
"""Values of a write's ``schema_evolution=`` (``None``: the data must fit the table's schema)."""


class _SchemaChange(SnapshotProducer):
    """The schema change as one action of the commit loop: each attempt checks that the table's
    schema is still the one the change was computed on, then emits the updates."""

    def __init__(
        self,
        io: FileIO,
        evolution: SchemaEvolution,
        new_schema: Schema,
        expected_schema_id: int,
        expected_last_column_id: int,
        *,
        assert_base: bool = True,
    ) -> None:
        super().__init__(io)
        self._evolution = evolution
        self._new = new_schema
        self._expected_schema_id = expected_schema_id
        self._expected_last_column_id = expected_last_column_id
        # Only the first schema change of a transaction asserts the table's base schema: a later
        # one builds on the first one's result, which the catalog never sees as a base.
        self._assert_base = assert_base

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        raise AssertionError("a schema change writes no manifests")  # pragma: no cover

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        raise AssertionError("a schema change writes no snapshot")  # pragma: no cover

    def _apply(self, base: TableMetadata) -> PendingChanges:
        from icefloe.spec.metadata_builder import TableMetadataBuilder

        if (
            base.current_schema_id != self._expected_schema_id
            or base.last_column_id != self._expected_last_column_id
        ):
            raise ConflictError(
                f"the table's schema changed concurrently: its current schema is "
                f"{base.current_schema_id} (last column id {base.last_column_id}), this change was "
                f"made on schema {self._expected_schema_id} (last column id "
                f"{self._expected_last_column_id})",
                hint="refresh the table, look at its new schema and apply the schema change again",
                operation="update_schema",
                snapshot_id=None,
                files=[],
            )
        self._evolution.check_table(base, self._new)
        builder = TableMetadataBuilder.from_metadata(base)
        builder.add_schema(self._new, self._evolution.last_column_id)
        builder.set_current_schema(-1)
        sets, removals = self._evolution.property_updates(base.properties, self._new)
        if sets:
            builder.set_properties(sets)
        if removals:
            builder.remove_properties(removals)
        updates: list[MetadataUpdate] = list(builder.updates)
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        if self._assert_base:
            requirements += [
                AssertCurrentSchemaId(self._expected_schema_id),
                AssertLastAssignedFieldId(self._expected_last_column_id),
            ]
        return PendingChanges(updates, requirements)


def to_iceberg_type(t: object, format_version: int = 2, what: str = "type") -> IcebergType:
    """An icefloe type for an icefloe type, an Arrow type (or field) or a primitive's name."""
    if isinstance(t, IcebergType):
        return t
    if isinstance(t, str):
        return parse_primitive(t)
    import pyarrow as pa

    from icefloe.arrow.schema import arrow_to_schema

    if isinstance(t, pa.Field):
        t = t.type
    if isinstance(t, pa.DataType):
        one = pa.schema([pa.field("c", t)])
        converted = arrow_to_schema(one, format_version=format_version)
        return converted.fields[0].field_type
    raise SchemaError(f"{what} must be an icefloe type, an Arrow type or a type name like 'long', got {t!r}")


class UpdateSchema:
    """Changes to a table's schema, committed together when the ``with`` block ends (or by
    :meth:`commit`). Method names follow Iceberg Java's ``UpdateSchema``; each returns ``self``
    so calls can be chained. Columns are full dotted names (``"a.b"``, ``"points.element.x"``,
    ``"m.value.y"``) or tuples of names."""

    def __init__(
        self,
        table: Table,
        *,
        case_sensitive: bool = True,
        allow_incompatible_changes: bool = False,
        transaction: Transaction | None = None,
    ) -> None:
        self._table = table
        self._transaction = transaction
        base = transaction._working if transaction is not None else table.metadata
        self._base = base
        self._evolution = SchemaEvolution(
            base.schema(),
            base.last_column_id,
            case_sensitive=case_sensitive,
            allow_incompatible_changes=allow_incompatible_changes,
            format_version=base.format_version,
        )
        self._done = False

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError("this update_schema() block was already committed or abandoned")

    def _type(self, t: object, what: str) -> IcebergType:
        return to_iceberg_type(t, self._base.format_version, what)

    # ------------------------------------------------------------------ options
    def allow_incompatible_changes(self) -> UpdateSchema:
        """Allow adding required columns and making columns required (Java's
        ``allowIncompatibleChanges``). Existing rows have no value for a new required column and
        may hold nulls in a column made required: readers may then fail. Type changes beyond the
        spec's promotions stay refused."""
        self._check_open()
        self._evolution.allow_incompatible = True
        return self

    # ------------------------------------------------------------------ changes
    def add_column(
        self,
        path: ColumnPath,
        field_type: Any,
        doc: str | None = None,
        required: bool = False,
        default: Any = None,
    ) -> UpdateSchema:
        """Add a column (optional by default). A dotted path adds into a struct
        (``"address.zip"``), a list's element struct (``"points.element.z"``) or a map's value
        struct (``"m.value.w"``); a nested type gets new field ids.

        ``default`` (format v3 tables) becomes the column's ``initial-default`` (the value rows
        written before have in it) and its ``write-default`` (what appends lacking the column
        store). It is checked against the type: Python values (``datetime``, ``date``,
        ``Decimal``, ``uuid.UUID``, ``bytes``) or their ISO/text forms. With a default a column
        may be added as ``required``."""
        self._check_open()
        self._evolution.add_column(path, self._type(field_type, "field_type"), doc, required, default)
        return self

    def update_column_default(self, path: ColumnPath, default: Any) -> UpdateSchema:
        """Change a column's ``write-default`` (format v3; Java's ``updateColumnDefault``): what
        later writes without the column store. Rows already written keep their values and the
        ``initial-default`` never changes. ``None`` removes the write default."""
        self._check_open()
        self._evolution.update_column_default(path, default)
        return self

    def delete_column(self, path: ColumnPath) -> UpdateSchema:
        """Delete a column. Data files keep it; readers no longer see it."""
        self._check_open()
        self._evolution.delete_column(path)
        return self

    def rename_column(self, path: ColumnPath, new_name: str) -> UpdateSchema:
        """Rename a column (``rename_column("a.b", "c")`` makes ``a.c``)."""
        self._check_open()
        self._evolution.rename_column(path, new_name)
        return self

    def update_column(
        self,
        path: ColumnPath,
        field_type: Any = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> UpdateSchema:
        """Widen a column's type (int -> long, float -> double, decimal precision; on format v3
        also date -> timestamp(_ns) and unknown -> any type), make it optional
        (``required=False``) or, with :meth:`allow_incompatible_changes`, required, or set its
        doc. ``None`` keeps an attribute as it is."""
        self._check_open()
        t = None if field_type is None else self._type(field_type, "field_type")
        self._evolution.update_column(path, t, required, doc)
        return self

    def make_column_optional(self, path: ColumnPath) -> UpdateSchema:
        """Java's ``makeColumnOptional``: ``update_column(path, required=False)``."""
        return self.update_column(path, required=False)

    def move_first(self, path: ColumnPath) -> UpdateSchema:
        self._check_open()
        self._evolution.move_first(path)
        return self

    def move_before(self, path: ColumnPath, before: ColumnPath) -> UpdateSchema:
        self._check_open()
        self._evolution.move_before(path, before)
        return self

    def move_after(self, path: ColumnPath, after: ColumnPath) -> UpdateSchema:
        self._check_open()
        self._evolution.move_after(path, after)
        return self

    def set_identifier_fields(self, *names: str) -> UpdateSchema:
        """Make ``names`` the identifier fields (no names: none). Each must be a required
        primitive column, not float/double, not inside a list, map or optional struct."""
        self._check_open()
        self._evolution.set_identifier_fields(*names)
        return self

    def union_by_name(self, schema: Any, *, relax_required: bool = True) -> UpdateSchema:
        """Merge ``schema`` (an Arrow schema or an icefloe :class:`Schema`) into the table's by
        column name, as Java's ``unionByNameWith``: new columns are added (optional), wider
        types promote the table's (int -> long, ...), narrower ones are ignored, docs are taken
        over, and a required column that is nullable in ``schema`` becomes optional unless
        ``relax_required=False``. Columns ``schema`` lacks are kept. Arrow types that icefloe's
        writer accepts for a column as it is (int32 for long, large_string for string, a
        tz-aware timestamp for timestamptz, ...) leave the column unchanged."""
        self._check_open()
        if isinstance(schema, Schema):
            source: Schema | StructType = schema
        else:
            source = arrow_union_source(schema, self._evolution.base, self._base.format_version)
        self._evolution.union_by_name(source, relax_required=relax_required)
        return self

    # ------------------------------------------------------------------ outcome
    def apply(self) -> Schema:
        """The schema as it will be after the block commits (nothing is committed)."""
        return self._evolution.apply()

    @property
    def last_column_id(self) -> int:
        """The highest field id assigned so far (the table's, plus the new columns')."""
        return self._evolution.last_column_id

    def _action(self) -> _SchemaChange | None:
        new = self._evolution.apply()
        self._evolution.check_table(self._base, new)
        sets, removals = self._evolution.property_updates(self._base.properties, new)
        if new == self._base.schema() and not sets and not removals:
            return None
        earlier = self._transaction is not None and any(
            isinstance(a, _SchemaChange) for a in self._transaction._actions
        )
        return _SchemaChange(
            self._table.io,
            self._evolution,
            new,
            self._base.current_schema_id,
            self._base.last_column_id,
            assert_base=not earlier,
        )

    def commit(self) -> TableMetadata:
        """Commit the changes (or, inside a transaction, queue them with the transaction's other
        changes) and return the table metadata as it is now (for a transaction: as it will be).
        Nothing changes when the result is the current schema."""
        self._check_open()
        self._done = True
        action = self._action()
        if self._transaction is not None:
            if action is not None:
                self._transaction._queue(action)
            return self._transaction._working
        if action is None:
            return self._table.metadata
        metadata, location = commit_actions(
            self._table.catalog, self._table.identifier, self._table.metadata, [action]
        )
        self._table.metadata = metadata
        self._table.metadata_location = location
        return metadata

    def abandon(self) -> None:
        self._done = True

    def __enter__(self) -> UpdateSchema:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            if not self._done:
                self.commit()
        else:
            self.abandon()

    def __repr__(self) -> str:
        return f"UpdateSchema({self._table.name!r}, base_schema_id={self._base.current_schema_id})"


# --------------------------------------------------------------------------- Arrow inputs


def arrow_union_source(pa_schema: pa.Schema, table_schema: Schema, format_version: int = 2) -> StructType:
    """The Iceberg struct of an Arrow schema for :meth:`UpdateSchema.union_by_name`: where the
    table has a column of the same name that icefloe's writer fills from this Arrow type as it is
    (int32 into long, string views into string, fixed_size_binary(16) into uuid, a tz-aware
    timestamp into timestamptz, ...), the column's own type, so that the union changes nothing
    there; elsewhere the Arrow type's Iceberg type."""
    import pyarrow as pa

    from icefloe.arrow.schema import arrow_to_schema

    if not isinstance(pa_schema, pa.Schema):
        raise SchemaError(f"expected a pyarrow Schema or an icefloe Schema, got {type(pa_schema).__name__}")
    converted = arrow_to_schema(
        pa_schema, timestamp_ns="keep" if format_version >= 3 else "downcast", format_version=format_version
    )
    return _adopt_struct(converted.as_struct(), list(pa_schema), table_schema.as_struct())


def _adopt_struct(struct: StructType, arrow_fields: list[pa.Field], partner: StructType | None) -> StructType:
    out = []
    for f, af in zip(struct.fields, arrow_fields, strict=True):
        pf = partner.field_by_name(f.name) if partner is not None else None
        t = _adopt(f.field_type, af.type, pf.field_type if pf is not None else None)
        out.append(NestedField(f.field_id, f.name, t, f.required, f.doc))
    return StructType(*out)


def _adopt(t: IcebergType, at: pa.DataType, partner: IcebergType | None) -> IcebergType:
    import pyarrow as pa

    while pa.types.is_dictionary(at):
        at = at.value_type
    if isinstance(t, StructType) and isinstance(partner, StructType):
        return _adopt_struct(t, [at.field(i) for i in range(at.num_fields)], partner)
    if isinstance(t, ListType) and isinstance(partner, ListType):
        return ListType(
            t.element_id, _adopt(t.element_type, at.value_type, partner.element_type), t.element_required
        )
    if isinstance(t, MapType) and isinstance(partner, MapType):
        return MapType(
            t.key_id,
            _adopt(t.key_type, at.key_type, partner.key_type),
            t.value_id,
            _adopt(t.value_type, at.item_type, partner.value_type),
            t.value_required,
        )
    if isinstance(t, PrimitiveType) and isinstance(partner, PrimitiveType) and _fits(at, partner):
        return partner
    return t


def _fits(at: pa.DataType, t: PrimitiveType) -> bool:
    import pyarrow as pa

    from icefloe.arrow.conform import check_arrow_schema
    from icefloe.errors import SchemaMismatchError

    try:
        check_arrow_schema(pa.schema([pa.field("c", at)]), Schema(NestedField(1, "c", t, False)))
    except SchemaMismatchError:
        return False
    return True


def _peek(data: object) -> tuple[pa.Schema | None, object]:
    """The Arrow schema of a write's input, and the input to write (an iterable's first batch is
    put back)."""
    import pyarrow as pa

    if isinstance(data, pa.Table | pa.RecordBatch | pa.RecordBatchReader):
        return data.schema, data
    if isinstance(data, Iterable) and not isinstance(data, str | bytes):
        it = iter(data)
        first = next(it, None)
        if first is None:
            return None, iter(())
        if not isinstance(first, pa.RecordBatch):
            return None, _chain(first, it)  # the writer reports what is wrong with it
        return first.schema, _chain(first, it)
    return None, data


def _chain(first: object, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def merge_input_schema(tx: Transaction, data: Any, schema_evolution: str | None) -> Any:
    """For a write with ``schema_evolution="merge"``: queue in ``tx`` the schema change that lets
    ``data`` in (its new columns added, wider types promoted; Java's ``unionByNameWith``), and
    return the input to write. Required columns stay required: the write refuses nulls in
    them. ``None`` changes nothing."""
    if schema_evolution is None:
        return data
    if schema_evolution not in SCHEMA_EVOLUTION_MODES:
        raise ValidationError(
            f"schema_evolution must be one of {SCHEMA_EVOLUTION_MODES} or None, got {schema_evolution!r}"
        )
    arrow_schema, data = _peek(data)
    if arrow_schema is None:
        return data
    with UpdateSchema(tx._table, transaction=tx) as update:
        update.union_by_name(arrow_schema, relax_required=False)
    return data


def queue_merged_schema(
    tx: Transaction, incoming: Schema, expected_schema_id: int, expected_last_column_id: int
) -> None:
    """Queue in ``tx`` the union of the table's schema with ``incoming``, computed earlier on the
    schema ``expected_schema_id`` (data files may already be written with its field ids: a
    Spark job with ``merge-schema``). If the table's schema moved since, the ids would differ:
    :class:`ConflictError`, nothing queued."""
    working = tx._working
    if working.current_schema_id != expected_schema_id or working.last_column_id != expected_last_column_id:
        raise ConflictError(
            f"the table's schema changed while the write ran: it is schema {working.current_schema_id} "
            f"now, the data was written for a merge into schema {expected_schema_id}",
            hint="run the write again: it merges its columns into the new schema",
            operation="update_schema",
            snapshot_id=None,
            files=[],
        )
    with UpdateSchema(tx._table, transaction=tx) as update:
        update.union_by_name(incoming, relax_required=False)


def merged_metadata(metadata: TableMetadata, incoming: Schema | StructType) -> TableMetadata:
    """``metadata`` with its schema merged with ``incoming`` as a write merges it (the union,
    required columns kept), not committed: what executors write with before the driver commits
    the same change (:func:`queue_merged_schema`). Raises the union's typed errors."""
    from icefloe.spec.updates import AddSchema, SetCurrentSchema, apply_updates

    evolution = SchemaEvolution(
        metadata.schema(), metadata.last_column_id, format_version=metadata.format_version
    )
    evolution.union_by_name(incoming, relax_required=False)
    new = evolution.apply()
    evolution.check_table(metadata, new)
    if new == metadata.schema():
        return metadata
    return apply_updates(metadata, [AddSchema(new, evolution.last_column_id), SetCurrentSchema(-1)])
