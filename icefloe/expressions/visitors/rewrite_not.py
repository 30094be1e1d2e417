"""``rewrite_not``: push every NOT down into the predicates.

Projections and metrics evaluators answer "might match" questions, and the negation of a
"might match" is not a "might not match"; so they need expressions without NOT nodes.
"""

from __future__ import annotations

from typing import Any

from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Or,
    Predicate,
    and_,
    or_,
)
from icefloe.expressions.visitors._visitor import BooleanExpressionVisitor, visit

__all__ = ["rewrite_not"]


class _RewriteNot(BooleanExpressionVisitor[BooleanExpression]):
    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        # The child is already free of NOT, so negating it only flips predicates and swaps and/or.
        return child_result.negate()

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        return predicate


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """An equivalent expression without NOT nodes (bound or unbound), with constants simplified
    away (see :func:`~icefloe.expressions.and_`)."""
    if not isinstance(expr, And | Or | Not):
        return expr  # a predicate or a constant
    # Every evaluator calls this on its bound filter, which bind() shares between them: an
    # and/or/not remembers its rewritten form (itself, when it has no NOT and no constant).
    known = expr._without_not
    if known is None:
        known = True if _already_rewritten(expr) else visit(expr, _RewriteNot())
        # True stands for the expression itself: a reference to itself would be a cycle, which
        # only the cyclic collector frees (with the whole tree under it).
        object.__setattr__(expr, "_without_not", known)
        if isinstance(known, And | Or):
            object.__setattr__(known, "_without_not", True)
    return expr if known is True else known  # type: ignore[return-value]


def _already_rewritten(expr: BooleanExpression) -> bool:
    """Whether ``expr`` has no NOT and no constant inside an and/or."""
    if not isinstance(expr, And | Or):
        return not isinstance(expr, Not)
    stack: list[Any] = [expr]
    while stack:
        e = stack.pop()
        kind = type(e)
        if kind is And or kind is Or:
            stack.append(e.left)
            stack.append(e.right)
        elif kind is Not or kind is AlwaysTrue or kind is AlwaysFalse:
            return False
    return True
