"""The visitor protocol every expression visitor implements.

:func:`visit` walks an expression bottom-up and hands each node's children results to the
visitor. :class:`BoundExpressionVisitor` further splits predicates into one method per operation,
so an evaluator is a class of small methods rather than an ``isinstance`` chain.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from icefloe.errors import ExpressionError
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
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    StartsWith,
)

__all__ = ["BooleanExpressionVisitor", "BoundExpressionVisitor", "visit"]

T = TypeVar("T")


class BooleanExpressionVisitor(ABC, Generic[T]):
    @abstractmethod
    def visit_true(self) -> T: ...

    @abstractmethod
    def visit_false(self) -> T: ...

    @abstractmethod
    def visit_not(self, child_result: T) -> T: ...

    @abstractmethod
    def visit_and(self, left_result: T, right_result: T) -> T: ...

    @abstractmethod
    def visit_or(self, left_result: T, right_result: T) -> T: ...

    @abstractmethod
    def visit_predicate(self, predicate: Predicate) -> T: ...


def visit(expr: BooleanExpression, visitor: BooleanExpressionVisitor[T]) -> T:
    """Walk ``expr`` bottom-up with ``visitor``."""
    if isinstance(expr, Predicate):
        return visitor.visit_predicate(expr)
    if isinstance(expr, And):
        return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Not):
        return visitor.visit_not(visit(expr.child, visitor))
    if isinstance(expr, AlwaysTrue):
        return visitor.visit_true()
    if isinstance(expr, AlwaysFalse):
        return visitor.visit_false()
    raise ExpressionError(f"cannot visit {expr!r}: not a boolean expression")


class BoundExpressionVisitor(BooleanExpressionVisitor[T]):
    """A visitor of bound expressions with one method per predicate operation."""

    def visit_predicate(self, predicate: Predicate) -> T:
        ref = predicate.ref  # raises on unbound predicates
        method = _DISPATCH.get(type(predicate))
        if method is None:
            raise ExpressionError(f"unknown predicate {predicate!r}")
        result: T = method(self, ref, predicate)
        return result

    @abstractmethod
    def visit_is_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_is_nan(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_nan(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_less_than(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_greater_than(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_equal(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_not_equal(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> T: ...

    @abstractmethod
    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> T: ...

    @abstractmethod
    def visit_starts_with(self, ref: BoundReference, literal: Any) -> T: ...

    @abstractmethod
    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> T: ...


_Method = Callable[[BoundExpressionVisitor[Any], BoundReference, Any], Any]
_DISPATCH: dict[type[Predicate], _Method] = {
    IsNull: lambda v, r, p: v.visit_is_null(r),
    NotNull: lambda v, r, p: v.visit_not_null(r),
    IsNaN: lambda v, r, p: v.visit_is_nan(r),
    NotNaN: lambda v, r, p: v.visit_not_nan(r),
    LessThan: lambda v, r, p: v.visit_less_than(r, p.literal),
    LessThanOrEqual: lambda v, r, p: v.visit_less_than_or_equal(r, p.literal),
    GreaterThan: lambda v, r, p: v.visit_greater_than(r, p.literal),
    GreaterThanOrEqual: lambda v, r, p: v.visit_greater_than_or_equal(r, p.literal),
    EqualTo: lambda v, r, p: v.visit_equal(r, p.literal),
    NotEqualTo: lambda v, r, p: v.visit_not_equal(r, p.literal),
    In: lambda v, r, p: v.visit_in(r, p.literals),
    NotIn: lambda v, r, p: v.visit_not_in(r, p.literals),
    StartsWith: lambda v, r, p: v.visit_starts_with(r, p.literal),
    NotStartsWith: lambda v, r, p: v.visit_not_starts_with(r, p.literal),
}
