"""``expression_evaluator``: test Python rows (partition tuples, struct-like sequences).

The bound expression is compiled once into nested closures so that evaluating many partition
tuples costs no visitor dispatch. Semantics are the row-level ones described in
:mod:`icefloe.expressions._base`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from icefloe.errors import ExpressionError
from icefloe.expressions._base import BooleanExpression, BoundReference
from icefloe.expressions._tree import rebalance
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, visit
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.types import IcebergType, StructType

__all__ = ["expression_evaluator", "struct_accessor"]

Row = Sequence[Any]
_Test = Callable[[Row], bool]


def struct_accessor(struct_type: StructType, field_id: int) -> Callable[[Row], Any]:
    """A function reading field ``field_id`` from a row of ``struct_type`` given as a tuple (nested
    structs as nested tuples; a null struct makes its fields null)."""
    path = _position_path(struct_type, field_id)
    if path is None:
        raise ExpressionError(f"field id {field_id} is not in the struct {struct_type}")
    if len(path) == 1:
        (pos,) = path

        def top(row: Row) -> Any:
            return row[pos]

        return top

    def nested(row: Row) -> Any:
        value: Any = row
        for p in path:
            if value is None:
                return None
            value = value[p]
        return value

    return nested


def _position_path(t: IcebergType, field_id: int) -> list[int] | None:
    if not isinstance(t, StructType):
        return None
    for pos, f in enumerate(t.fields):
        if f.field_id == field_id:
            return [pos]
        sub = _position_path(f.field_type, field_id)
        if sub is not None:
            return [pos, *sub]
    return None


class _Compiler(BoundExpressionVisitor[_Test]):
    def __init__(self, struct_type: StructType) -> None:
        self._struct = struct_type
        self._accessors: dict[int, Callable[[Row], Any]] = {}

    def _get(self, ref: BoundReference) -> Callable[[Row], Any]:
        # A large filter tests few columns many times; find each one's position once.
        get = self._accessors.get(ref.field_id)
        if get is None:
            get = self._accessors[ref.field_id] = struct_accessor(self._struct, ref.field_id)
        return get

    def visit_true(self) -> _Test:
        return lambda row: True

    def visit_false(self) -> _Test:
        return lambda row: False

    def visit_not(self, child_result: _Test) -> _Test:
        return lambda row: not child_result(row)

    def visit_and(self, left_result: _Test, right_result: _Test) -> _Test:
        return lambda row: left_result(row) and right_result(row)

    def visit_or(self, left_result: _Test, right_result: _Test) -> _Test:
        return lambda row: left_result(row) or right_result(row)

    def visit_is_null(self, ref: BoundReference) -> _Test:
        get = self._get(ref)
        return lambda row: get(row) is None

    def visit_not_null(self, ref: BoundReference) -> _Test:
        get = self._get(ref)
        return lambda row: get(row) is not None

    def visit_is_nan(self, ref: BoundReference) -> _Test:
        get = self._get(ref)
        return lambda row: _is_nan(get(row))

    def visit_not_nan(self, ref: BoundReference) -> _Test:
        get = self._get(ref)
        return lambda row: not _is_nan(get(row))

    def visit_less_than(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v < literal

    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v <= literal

    def visit_greater_than(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v > literal

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v >= literal

    def visit_equal(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v == literal

    def visit_not_equal(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: not ((v := get(row)) is not None and v == literal)

    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v in literals

    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> _Test:
        get = self._get(ref)
        return lambda row: not ((v := get(row)) is not None and v in literals)

    def visit_starts_with(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: (v := get(row)) is not None and v.startswith(literal)

    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> _Test:
        get = self._get(ref)
        return lambda row: not ((v := get(row)) is not None and v.startswith(literal))


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def expression_evaluator(struct_type: StructType, bound_expr: BooleanExpression) -> Callable[[Row], bool]:
    """A function telling whether a row of ``struct_type`` (a tuple in field order, values in the
    internal representation) satisfies ``bound_expr``, which must be bound to ``struct_type``'s
    fields."""
    # NOT is pushed into the predicates first: that is what defines NOT on null values (see
    # icefloe.expressions._base), and it keeps row evaluation in line with pruning.
    # The closures nest one call per level: a hand-built left-deep tree is balanced first.
    return visit(rewrite_not(rebalance(bound_expr)), _Compiler(struct_type))
