"""Binding: resolving column names to schema fields and literals to internal values.

Binding also decides predicates that the schema alone settles, the way Iceberg Java's binder
does: ``is null`` on a column that can never be null is false, an int literal beyond the
column's range makes ``<``/``>``/``=`` constant, ``in`` with one value becomes ``=``, and an empty
``in`` is false. Everything a user can get wrong raises :class:`ExpressionError` naming the column.
"""

from __future__ import annotations

import math
from typing import Any

from icefloe.errors import ExpressionError, SchemaError
from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundReference,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    and_,
    not_,
    or_,
)
from icefloe.expressions._literals import ABOVE_MAX, OutOfRange, to_internal
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, FloatType, PrimitiveType, StringType

__all__ = ["bind", "unbind"]

# For a literal above the column's maximum, which comparisons hold for every non-null value.
_ABOVE_MAX_TRUE = (LessThan, LessThanOrEqual, NotEqualTo)
_BELOW_MIN_TRUE = (GreaterThan, GreaterThanOrEqual, NotEqualTo)


def bind(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """``expr`` with every column resolved in ``schema`` and every literal converted to the
    column type's internal value. Already-bound predicates are checked against ``schema``."""
    if isinstance(expr, AlwaysTrue | AlwaysFalse):
        return expr
    if isinstance(expr, And):
        return and_(bind(schema, expr.left, case_sensitive), bind(schema, expr.right, case_sensitive))
    if isinstance(expr, Or):
        return or_(bind(schema, expr.left, case_sensitive), bind(schema, expr.right, case_sensitive))
    if isinstance(expr, Not):
        return not_(bind(schema, expr.child, case_sensitive))
    if isinstance(expr, Predicate):
        return _bind_predicate(schema, expr, case_sensitive)
    raise ExpressionError(f"cannot bind {expr!r}: not a boolean expression")


def unbind(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` with bound columns replaced by references to their full names. The literals stay
    in the internal representation, which binding accepts again unchanged."""
    if isinstance(expr, And):
        return And(unbind(expr.left), unbind(expr.right))
    if isinstance(expr, Or):
        return Or(unbind(expr.left), unbind(expr.right))
    if isinstance(expr, Not):
        return Not(unbind(expr.child))
    if isinstance(expr, Predicate) and isinstance(expr.term, BoundReference):
        ref = Reference(expr.term.name)
        if isinstance(expr, UnaryPredicate):
            return type(expr)(ref)
        if isinstance(expr, LiteralPredicate):
            return type(expr)(ref, expr.literal)
        if isinstance(expr, SetPredicate):
            return type(expr)(ref, expr.literals)
    return expr


def _resolve(schema: Schema, term: Reference | BoundReference, case_sensitive: bool) -> BoundReference:
    if isinstance(term, BoundReference):
        known = schema.find_field_or_none(term.field_id)
        if known != term.field:
            raise ExpressionError(
                f"column {term.name!r} was bound to a different schema (field id {term.field_id})",
                hint="bind the unbound expression to this schema instead",
                column=term.name,
            )
        return term
    try:
        found = schema.find_field(term.name, case_sensitive)
    except SchemaError as e:
        raise ExpressionError(
            f"cannot bind filter: no column named {term.name!r}", hint=e.hint, column=term.name
        ) from None
    full_name = schema.column_name(found.field_id)
    if schema.is_in_repeated(found.field_id):
        raise ExpressionError(
            f"cannot filter on {full_name!r}: it is inside a list or map",
            hint="filters apply to top-level columns and fields of structs",
            column=full_name,
        )
    if not isinstance(found.field_type, PrimitiveType):
        raise ExpressionError(
            f"cannot filter on column {full_name!r} of type {found.field_type}: filters apply to "
            "primitive columns only",
            hint="filter on a field inside it with a dotted name, e.g. 'col.field'",
            column=full_name,
        )
    return BoundReference(found, full_name)


def _never_null(schema: Schema, ref: BoundReference) -> bool:
    """Whether the column can never be null: it and every struct holding it are required."""
    fid: int | None = ref.field_id
    while fid is not None:
        f = schema.find_field_or_none(fid)
        if f is None or not f.required:
            return False
        fid = schema.parent_id(fid)
    return True


def _convert(ref: BoundReference, value: Any) -> Any:
    converted = to_internal(ref.field_type, value, ref.name)
    if isinstance(converted, float) and math.isnan(converted):
        raise ExpressionError(
            f"cannot compare column {ref.name!r} with NaN",
            hint="use is_nan / is not nan to test for NaN",
            column=ref.name,
        )
    return converted


def _bind_predicate(schema: Schema, pred: Predicate, case_sensitive: bool) -> BooleanExpression:
    ref = _resolve(schema, pred.term, case_sensitive)
    if isinstance(pred, UnaryPredicate):
        return _bind_unary(schema, ref, pred)
    if isinstance(pred, LiteralPredicate):
        return _bind_literal(ref, pred)
    if isinstance(pred, SetPredicate):
        return _bind_set(ref, pred)
    raise ExpressionError(f"cannot bind unknown predicate {pred!r}")


def _bind_unary(schema: Schema, ref: BoundReference, pred: UnaryPredicate) -> BooleanExpression:
    if isinstance(pred, IsNaN | NotNaN) and not isinstance(ref.field_type, FloatType | DoubleType):
        raise ExpressionError(
            f"{'is nan' if isinstance(pred, IsNaN) else 'is not nan'} needs a float or double "
            f"column; {ref.name!r} is {ref.field_type}",
            column=ref.name,
        )
    if isinstance(pred, IsNull | NotNull) and _never_null(schema, ref):
        return AlwaysFalse() if isinstance(pred, IsNull) else AlwaysTrue()
    return type(pred)(ref)


def _bind_literal(ref: BoundReference, pred: LiteralPredicate) -> BooleanExpression:
    if isinstance(pred, StartsWith | NotStartsWith):
        if not isinstance(ref.field_type, StringType):
            raise ExpressionError(
                f"starts-with (like) needs a string column; {ref.name!r} is {ref.field_type}",
                column=ref.name,
            )
        if not isinstance(pred.literal, str):
            raise ExpressionError(
                f"starts-with on {ref.name!r} needs a string prefix, got {pred.literal!r}",
                column=ref.name,
            )
    value = _convert(ref, pred.literal)
    if isinstance(value, OutOfRange):
        # Every non-null value is below ABOVE_MAX (above BELOW_MIN). Null values fail <, >, =
        # but pass !=, so != keeps the null check rather than becoming AlwaysTrue.
        holds = _ABOVE_MAX_TRUE if value is ABOVE_MAX else _BELOW_MIN_TRUE
        if isinstance(pred, NotEqualTo):
            return AlwaysTrue()
        if isinstance(pred, holds):
            return NotNull(ref)
        return AlwaysFalse()
    return type(pred)(ref, value)


def _bind_set(ref: BoundReference, pred: SetPredicate) -> BooleanExpression:
    values = set()
    for v in pred.literals:
        converted = _convert(ref, v)
        if not isinstance(converted, OutOfRange):
            values.add(converted)
    if isinstance(pred, In):
        if not values:
            return AlwaysFalse()
        if len(values) == 1:
            return EqualTo(ref, next(iter(values)))
        return In(ref, values)
    if not values:
        return AlwaysTrue()  # not in: null and every value are outside an empty set
    if len(values) == 1:
        return NotEqualTo(ref, next(iter(values)))
    return NotIn(ref, values)
