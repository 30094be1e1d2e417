"""The visitor protocol every expression visitor implements.

:func:`visit` walks an expression bottom-up (without recursion) and hands each node's children
results to the visitor. :class:`BoundExpressionVisitor` further splits predicates into one method
per operation, so an evaluator is a class of small methods rather than an ``isinstance`` chain.
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

__all__ = ["BooleanExpressionVisitor", "BoundExpressionVisitor", "evaluate", "visit"]

T = TypeVar("T")

# Markers on visit()'s stack: combine the results of the last two (one) visited operands.
_AND, _OR, _NOT = object(), object(), object()


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
    """Walk ``expr`` bottom-up with ``visitor``, left before right.

    Beyond a few dozen levels the walk keeps its own stack rather than recursing, so an
    expression of any depth can be visited (``functools.reduce(operator.or_, ...)`` builds one
    level per operand)."""
    if getattr(expr, "_depth", 0) <= _SHALLOW:
        return _visit_shallow(expr, visitor)
    results: list[T] = []
    # Entries are nodes to visit; _AND, _OR or _NOT combine the results of the node's children.
    # Types are tested by identity (And, Or and Not are final): isinstance on these ABCs is slower.
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        if item is _AND or item is _OR:
            right = results.pop()
            if item is _AND:
                results[-1] = visitor.visit_and(results[-1], right)
            else:
                results[-1] = visitor.visit_or(results[-1], right)
            continue
        kind = type(item)
        if kind is And or kind is Or:
            stack.append(_AND if kind is And else _OR)
            stack.append(item.right)
            stack.append(item.left)
        elif item is _NOT:
            results[-1] = visitor.visit_not(results[-1])
        elif kind is Not:
            stack.append(_NOT)
            stack.append(item.child)
        elif kind is AlwaysTrue:
            results.append(visitor.visit_true())
        elif kind is AlwaysFalse:
            results.append(visitor.visit_false())
        elif isinstance(item, Predicate):
            results.append(visitor.visit_predicate(item))
        else:
            raise ExpressionError(f"cannot visit {item!r}: not a boolean expression")
    return results[0]


# Up to this depth visit() recurses (one frame per level, well within Python's limit): for the
# usual small filter that is faster than keeping a stack.
_SHALLOW = 48


def _visit_shallow(expr: BooleanExpression, visitor: BooleanExpressionVisitor[T]) -> T:
    node: Any = expr
    kind = type(node)
    if kind is And:
        return visitor.visit_and(_visit_shallow(node.left, visitor), _visit_shallow(node.right, visitor))
    if kind is Or:
        return visitor.visit_or(_visit_shallow(node.left, visitor), _visit_shallow(node.right, visitor))
    if kind is Not:
        return visitor.visit_not(_visit_shallow(node.child, visitor))
    if kind is AlwaysTrue:
        return visitor.visit_true()
    if kind is AlwaysFalse:
        return visitor.visit_false()
    if isinstance(node, Predicate):
        return visitor.visit_predicate(node)
    raise ExpressionError(f"cannot visit {node!r}: not a boolean expression")


def evaluate(expr: BooleanExpression, visitor: BooleanExpressionVisitor[bool]) -> bool:
    """:func:`visit` for a visitor whose ``visit_and``/``visit_or`` are plain ``and``/``or``: the
    right operand is skipped when the left one decides (a file's metrics are checked against a
    100,000-term OR once per file, and the first matching term settles it)."""
    # Each entry is an and/or whose left operand is being evaluated, (node,) once its right one
    # is, or (not_node, None) for a NOT whose operand is.
    stack: list[Any] = []
    node: Any = expr
    while True:
        kind = type(node)
        while kind is And or kind is Or or kind is Not:
            stack.append(node if kind is not Not else (node, None))
            node = node.child if kind is Not else node.left
            kind = type(node)
        if kind is AlwaysTrue:
            value = visitor.visit_true()
        elif kind is AlwaysFalse:
            value = visitor.visit_false()
        elif isinstance(node, Predicate):
            value = visitor.visit_predicate(node)
        else:
            raise ExpressionError(f"cannot visit {node!r}: not a boolean expression")
        while stack:
            top = stack.pop()
            if type(top) is tuple:
                if len(top) == 2:
                    value = visitor.visit_not(value)
                continue  # the right operand's value is the and/or's value
            if (type(top) is And) is not bool(value):
                continue  # false left of an and, true left of an or
            stack.append((top,))
            node = top.right
            break
        else:
            return value


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
