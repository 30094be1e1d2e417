"""Sort orders from the forms people write, checked against a schema.

A *sort term* is a column or a transform of one, then optionally a direction and a null order,
the way Spark's ``ALTER TABLE ... WRITE ORDERED BY`` and Iceberg Java's ``ReplaceSortOrder``
take them::

    "id"                              identity, ascending, nulls first
    "day(ts) desc"                    descending, nulls last (Java's default for desc)
    "bucket(16, id) asc nulls last"
    "truncate(4, name) DESC NULLS FIRST"
    "address.city"                    a field of a struct

Transforms are the partition transforms in their usual spellings (``identity``, ``bucket(N, c)``,
``truncate(W, c)``, ``year``/``month``/``day``/``hour`` and their plurals, ``void``). Keywords are
case-insensitive; a column whose name holds spaces or keywords is back-quoted (```my col` desc``).

Every refusal is a :class:`SortOrderError` naming the term (``context["term"]``) and, when there
is one, the column (``context["column"]``): an unknown column, a column inside a list or map, a
column that cannot be sorted (struct, list, map), a transform that does not apply to the column's
type, or a term that does not parse. The rules are Iceberg Java's ``SortOrder.checkCompatibility``
plus its binder's refusal of fields inside lists and maps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from icefloe.errors import PartitionSpecError, SchemaError, SortOrderError
from icefloe.spec.partition import _parse_human
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.types import PrimitiveType
from icefloe.transforms import Transform

__all__ = [
    "SortTerm",
    "bind_sort_term",
    "build_sort_order",
    "check_sort_field",
    "describe_sort_field",
    "parse_sort_term",
]

TERM_HINT = "write a sort term as '<column or transform(column)> [asc|desc] [nulls first|last]'"

_MODIFIERS = re.compile(
    r"(?P<expr>.+?)(?:\s+(?P<direction>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class SortTerm:
    """One parsed sort term: the column (a dotted path), its transform, and the direction and
    null order when the text gave them (None: not given)."""

    text: str
    column: str
    transform: Transform
    direction: SortDirection | None
    null_order: NullOrder | None


def parse_sort_term(text: str) -> SortTerm:
    """Parse ``"day(ts) desc nulls last"`` and its relatives (see the module docstring)."""
    if not isinstance(text, str):
        raise SortOrderError(
            f"a sort term must be a string or a SortField, got {text!r}", hint=TERM_HINT, term=repr(text)
        )
    m = _MODIFIERS.fullmatch(text.strip())
    if m is None or not m.group("expr").strip():
        raise SortOrderError(f"empty sort term {text!r}", hint=TERM_HINT, term=text)
    expr = m.group("expr").strip()
    direction = None if m.group("direction") is None else SortDirection(m.group("direction").lower())
    nulls = m.group("nulls")
    null_order = None if nulls is None else NullOrder(f"nulls-{nulls.lower()}")
    try:
        transform, column = _parse_human(expr)
    except PartitionSpecError as e:
        raise SortOrderError(
            f"cannot sort by {text!r}: {e.message}", hint=e.hint or TERM_HINT, term=text
        ) from None
    return SortTerm(text, column, transform, direction, null_order)


def bind_sort_term(
    schema: Schema,
    term: str,
    *,
    direction: SortDirection | None = None,
    null_order: NullOrder | None = None,
    case_sensitive: bool = True,
) -> SortField:
    """The sort field of ``term`` over ``schema``. ``direction`` and ``null_order``, when given,
    are what the caller asked for besides the text (``asc("id")``): then the text itself must not
    carry a direction or null order. Defaults as in Iceberg Java: ascending; nulls first when
    ascending, last when descending."""
    parsed = parse_sort_term(term)
    if direction is not None and (parsed.direction is not None or parsed.null_order is not None):
        raise SortOrderError(
            f"sort term {term!r} has its own direction or null order; "
            f"{direction.value}() takes the column or transform only",
            hint=f"write {direction.value}('{parsed.column}'...) with nulls_first=True/False, "
            "or pass the whole term to replace_sort_order()",
            term=term,
        )
    try:
        field = schema.find_field(parsed.column, case_sensitive)
    except SchemaError as e:
        raise SortOrderError(
            f"cannot sort by {term!r}: no column named {parsed.column!r}",
            hint=TERM_HINT if any(c.isspace() for c in parsed.column) else e.hint,
            term=term,
            column=parsed.column,
        ) from None
    sort_field = SortField(
        field.field_id,
        parsed.transform,
        direction or parsed.direction or SortDirection.ASC,
        null_order if null_order is not None else parsed.null_order,
    )
    check_sort_field(schema, sort_field, term)
    return sort_field


def check_sort_field(schema: Schema, field: SortField, term: str | None = None) -> None:
    """Raise :class:`SortOrderError` unless ``field`` sorts a primitive column of ``schema``
    that is not inside a list or map, with a transform that applies to the column's type."""
    label = term if term is not None else describe_sort_field(schema, field)
    source = schema.find_field_or_none(field.source_id)
    if source is None:
        raise SortOrderError(
            f"cannot sort by {label!r}: column id {field.source_id} is not in the table's schema",
            hint="the column was deleted; replace the sort order with one over existing columns",
            term=label,
            source_id=field.source_id,
        )
    column = schema.column_name(field.source_id)
    if schema.is_in_repeated(field.source_id):
        raise SortOrderError(
            f"cannot sort by {label!r}: column {column!r} is inside a list or map",
            hint="sort columns must be top-level or inside structs only",
            term=label,
            column=column,
        )
    if not isinstance(source.field_type, PrimitiveType):
        raise SortOrderError(
            f"cannot sort by {label!r}: column {column!r} is a {source.field_type}, which cannot be sorted",
            hint="sort by primitive columns (a struct's fields by their dotted names, e.g. 'a.b')",
            term=label,
            column=column,
        )
    if not field.transform.can_transform(source.field_type):
        raise SortOrderError(
            f"cannot sort by {label!r}: {field.transform} does not apply to {source.field_type} "
            f"column {column!r}",
            hint=field.transform.type_hint() or TERM_HINT,
            term=label,
            column=column,
            transform=str(field.transform),
        )


def describe_sort_field(schema: Schema, field: SortField) -> str:
    """A sort field as a term: ``"bucket(16, id) desc nulls last"`` (the column by id when the
    schema does not have it)."""
    source = schema.find_field_or_none(field.source_id)
    column = schema.column_name(field.source_id) if source is not None else f"<column id {field.source_id}>"
    t = field.transform
    kind = str(t)
    if kind == "identity":
        expr = column
    elif "[" in kind:
        name, _, arg = kind.partition("[")
        expr = f"{name}({arg.rstrip(']')}, {column})"
    else:
        expr = f"{kind}({column})"
    assert field.null_order is not None
    return f"{expr} {field.direction.value} {field.null_order.value.replace('-', ' ')}"


def build_sort_order(
    schema: Schema, terms: Iterable[str | SortField], *, case_sensitive: bool = True
) -> SortOrder:
    """The sort order of ``terms`` (text or :class:`SortField`) over ``schema``: order id 1, or the
    unsorted order (id 0) when there are no terms. The table assigns the real id on commit."""
    fields: list[SortField] = []
    for term in terms:
        if isinstance(term, SortField):
            check_sort_field(schema, term)
            fields.append(term)
        else:
            fields.append(bind_sort_term(schema, term, case_sensitive=case_sensitive))
    return SortOrder(1, fields) if fields else UNSORTED_SORT_ORDER
