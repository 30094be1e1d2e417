"""Row lineage (format v3): the ``_row_id`` and ``_last_updated_sequence_number`` metadata columns.

Every row of a v3 table has an id that stays with it through updates and rewrites, and the data
sequence number of the snapshot that last changed it. Data files may store both as columns (with
the reserved field ids below); a null in the file (or a file without the column) inherits::

    _row_id                         = data file's first_row_id + the row's position in the file
    _last_updated_sequence_number   = data file's data sequence number

Values stored in the file win. Writers that copy rows (copy-on-write, compaction) store the
values so that the rows keep them; rows written for the first time store nulls.

This module names the columns and resolves which of them a scan asks for; the Arrow reader fills
them (:mod:`icefloe.arrow.reader`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from icefloe.errors import SchemaError, UnsupportedFeatureError
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "LAST_UPDATED_SEQUENCE_NUMBER",
    "LAST_UPDATED_SEQUENCE_NUMBER_FIELD",
    "LINEAGE_FIELD_IDS",
    "ROW_ID",
    "ROW_ID_FIELD",
    "check_row_lineage",
    "lineage_field",
    "lineage_ids",
    "split_lineage",
    "with_lineage",
    "without_lineage",
]

ROW_ID = "_row_id"
LAST_UPDATED_SEQUENCE_NUMBER = "_last_updated_sequence_number"

ROW_ID_FIELD = NestedField(
    2147483540, ROW_ID, LongType(), False, doc="Implicit row ID that is automatically assigned"
)
LAST_UPDATED_SEQUENCE_NUMBER_FIELD = NestedField(
    2147483539,
    LAST_UPDATED_SEQUENCE_NUMBER,
    LongType(),
    False,
    doc="Sequence number when the row was last updated",
)
_FIELDS = {ROW_ID: ROW_ID_FIELD, LAST_UPDATED_SEQUENCE_NUMBER: LAST_UPDATED_SEQUENCE_NUMBER_FIELD}
LINEAGE_FIELD_IDS = frozenset(f.field_id for f in _FIELDS.values())


def lineage_field(name: str) -> NestedField:
    return _FIELDS[name]


def check_row_lineage(metadata: TableMetadata, what: str = "reading _row_id") -> None:
    """Row lineage exists from format v3 on; older tables have no row ids to read or keep."""
    if metadata.format_version < 3:
        raise UnsupportedFeatureError(
            f"{what} needs a format v3 table; this table is format v{metadata.format_version}",
            hint="row lineage (_row_id, _last_updated_sequence_number) starts with format v3: "
            "table.upgrade_format_version(3) enables it for rows written afterwards",
        )


def split_lineage(
    schema: Schema, names: Sequence[str], case_sensitive: bool = True
) -> tuple[list[str], list[str]]:
    """``names`` split into table columns and row lineage columns (in the order given). A table
    column that happens to be called ``_row_id`` stays a table column."""
    columns: list[str] = []
    lineage: list[str] = []
    for n in names:
        key = n if case_sensitive else n.lower()
        if key in _FIELDS and _find(schema, n, case_sensitive) is None:
            if key not in lineage:
                lineage.append(key)
        else:
            columns.append(n)
    return columns, lineage


def _find(schema: Schema, name: str, case_sensitive: bool) -> NestedField | None:
    try:
        return schema.find_field(name, case_sensitive)
    except SchemaError:
        return None


def with_lineage(schema: Schema, names: Iterable[str]) -> Schema:
    """``schema`` with the lineage columns ``names`` appended (as the last top-level fields)."""
    extra = [_FIELDS[n] for n in names if _FIELDS[n].field_id not in schema.field_ids()]
    if not extra:
        return schema
    return Schema(
        *schema.fields, *extra, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids
    )


def without_lineage(schema: Schema) -> Schema:
    """``schema`` without its lineage columns (the table columns only)."""
    if not any(f.field_id in LINEAGE_FIELD_IDS for f in schema.fields):
        return schema
    return Schema(
        *(f for f in schema.fields if f.field_id not in LINEAGE_FIELD_IDS),
        schema_id=schema.schema_id,
        identifier_field_ids=schema.identifier_field_ids,
    )


def lineage_ids(schema: Schema) -> set[int]:
    """The lineage field ids among ``schema``'s top-level fields."""
    return {f.field_id for f in schema.fields if f.field_id in LINEAGE_FIELD_IDS}
