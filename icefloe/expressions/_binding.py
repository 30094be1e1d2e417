"""Binding: resolving column names to schema fields and literals to internal values.

Binding also decides predicates that the schema alone settles, the way Iceberg Java's binder
does: ``is null`` on a column that can never be null is false, an int literal beyond the
column's range makes ``<``/``>``/``=`` constant, ``in`` with one value becomes ``=``, and an empty
``in`` is false. Everything a user can get wrong raises :class:`ExpressionError` naming the column.

A predicate under NOT is decided by its negation, since that is what NOT means (see
:mod:`icefloe.expressions._base`): ``i < 2**40`` on an int column binds to ``i is not null``, whose
negation would keep the null rows, while ``not (i < 2**40)`` means ``i >= 2**40``, which no row
satisfies; so under NOT it binds to the negation of what ``i >= 2**40`` binds to.

A float literal beyond float32's range is not a constant: float columns hold infinities, and NaN
and null fail every comparison. ``f < 1e39`` binds to ``f <= 3.4028235e38`` (every finite value
and -inf), ``f > 1e39`` to ``f > 3.4028235e38`` (+inf only), and likewise below the minimum.
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
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from icefloe.expressions._literals import ABOVE_MAX, FLOAT32_MAX, OutOfRange, to_internal
from icefloe.expressions._tree import map_predicates, rebuild
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, FloatType, IntegerType, LongType, PrimitiveType, StringType

__all__ = ["bind", "unbind"]

# For a literal above the column's maximum, which comparisons hold for every non-null value.
_ABOVE_MAX_TRUE = (LessThan, LessThanOrEqual, NotEqualTo)
_BELOW_MIN_TRUE = (GreaterThan, GreaterThanOrEqual, NotEqualTo)


def bind(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """``expr`` with every column resolved in ``schema`` and every literal converted to the
    column type's internal value. Already-bound predicates are checked against ``schema``.

    The result has its and/or chains balanced and double negations cancelled, so a filter of any
    size binds and evaluates (see :mod:`icefloe.expressions._tree` for the one depth limit)."""
    if not isinstance(expr, BooleanExpression):
        raise ExpressionError(f"cannot bind {expr!r}: not a boolean expression")
    # Binding is pure and expressions are immutable, and one filter is bound many times: by the
    # scan, the planner, every evaluator, the reader of every task (whose residuals are shared).
    # A large unbound and/or/not remembers its last binding (a small one rebinds in microseconds
    # and should not keep its bound copy alive); a bound one the columns it resolved, which
    # settle a rebinding to the same schema or to a projection of it.
    if isinstance(expr, And | Or | Not):
        last = expr._last_binding
        if last is not None and last[0] is schema and last[1] == case_sensitive:
            return last[2]
        columns = expr._bound_columns
        if columns is not None and all(_still_resolves(schema, ref) for ref in columns):
            return expr
    # A large filter names few columns many times: resolve each one once per call. References
    # are keyed by name; bound terms by identity (the expression keeps them alive meanwhile).
    resolved: dict[str | int, BoundReference] = {}

    def resolve(term: Reference | BoundReference) -> BoundReference:
        key = term.name if isinstance(term, Reference) else id(term)
        found = resolved.get(key)
        if found is None:
            found = resolved[key] = _resolve(schema, term, case_sensitive)
        return found

    predicates = 0

    def bind_predicate(pred: Predicate) -> BooleanExpression:
        nonlocal predicates
        predicates += 1
        return _bind_predicate(schema, pred, resolve(pred.term))

    def bind_negated(pred: Predicate) -> BooleanExpression:
        # Under NOT: whatever `not result` is, it must be the negation bound (see the module).
        negation = pred.negate()
        bound = bind_predicate(negation)  # type: ignore[arg-type]  # a predicate's negation is one
        return pred if bound is negation else bound.negate()

    result = rebuild(expr, bind_predicate, negated_leaf=bind_negated)
    if isinstance(result, And | Or | Not):
        object.__setattr__(result, "_bound_columns", tuple({id(r): r for r in resolved.values()}.values()))
    if predicates >= _REMEMBERED_BINDING and isinstance(expr, And | Or | Not) and result is not expr:
        object.__setattr__(expr, "_last_binding", (schema, case_sensitive, result))
    return result


# Filters of at least this many predicates remember their last binding (see bind()).
_REMEMBERED_BINDING = 1000


def _still_resolves(schema: Schema, ref: BoundReference) -> bool:
    return schema.find_field_or_none(ref.field_id) == ref.field


def unbind(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` with bound columns replaced by references to their full names. The literals stay
    in the internal representation, which binding accepts again unchanged."""
    references: dict[str, Reference] = {}

    def unbind_predicate(expr: Predicate) -> BooleanExpression:
        if not isinstance(expr.term, BoundReference):
            return expr
        name = expr.term.name
        ref = references.get(name)
        if ref is None:
            ref = references[name] = Reference(name)
        return expr.with_term(ref)

    return map_predicates(expr, unbind_predicate)


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


def _bind_predicate(schema: Schema, pred: Predicate, ref: BoundReference) -> BooleanExpression:
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
    # Binding a bound filter again (each evaluator binds its input) keeps its predicates.
    return pred if pred.term is ref else pred.with_term(ref)


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
    if isinstance(value, OutOfRange) and isinstance(ref.field_type, FloatType):
        return _float_beyond(ref, pred, value)
    if isinstance(value, OutOfRange):
        # Every non-null value is below ABOVE_MAX (above BELOW_MIN). Null values fail <, >, =
        # but pass !=, so != keeps the null check rather than becoming AlwaysTrue.
        holds = _ABOVE_MAX_TRUE if value is ABOVE_MAX else _BELOW_MIN_TRUE
        if isinstance(pred, NotEqualTo):
            return AlwaysTrue()
        if isinstance(pred, holds):
            return NotNull(ref)
        return AlwaysFalse()
    if value is pred.literal:
        return pred if pred.term is ref else pred.with_term(ref)
    return type(pred)(ref, value)


def _float_beyond(ref: BoundReference, pred: LiteralPredicate, value: OutOfRange) -> BooleanExpression:
    """A comparison of a float column with a finite literal beyond float32's range, as the
    comparison with the largest finite float32 that has the same result for every value."""
    if isinstance(pred, EqualTo):
        return AlwaysFalse()
    if isinstance(pred, NotEqualTo):
        return AlwaysTrue()
    below = isinstance(pred, LessThan | LessThanOrEqual)
    if value is ABOVE_MAX:
        return LessThanOrEqual(ref, FLOAT32_MAX) if below else GreaterThan(ref, FLOAT32_MAX)
    return LessThan(ref, -FLOAT32_MAX) if below else GreaterThanOrEqual(ref, -FLOAT32_MAX)


def _bind_set(ref: BoundReference, pred: SetPredicate) -> BooleanExpression:
    if pred.term is ref and len(pred.literals) > 1 and _already_internal(ref, pred.literals):
        return pred  # bound before: each evaluator binds again, and an `in` may hold 100,000 values
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
    elif not values:
        return AlwaysTrue()  # not in: null and every value are outside an empty set
    elif len(values) == 1:
        return NotEqualTo(ref, next(iter(values)))
    if pred.term is ref and values == pred.literals:
        return pred
    return type(pred)(ref, values)


def _already_internal(ref: BoundReference, values: frozenset[Any]) -> bool:
    """Whether every value is already in the column type's internal representation, tested in
    bulk for the types of long value lists (other types convert value by value)."""
    t = ref.field_type
    if isinstance(t, IntegerType | LongType):
        return all(type(v) is int for v in values) and t.min <= min(values) and max(values) <= t.max
    if isinstance(t, StringType):
        return all(type(v) is str for v in values)
    return False
