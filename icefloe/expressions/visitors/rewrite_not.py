"""``rewrite_not``: push every NOT down into the predicates.

Projections and metrics evaluators answer "might match" questions, and the negation of a
"might match" is not a "might not match"; so they need expressions without NOT nodes.
"""

from __future__ import annotations

from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
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
    """An equivalent expression without NOT nodes (bound or unbound)."""
    return visit(expr, _RewriteNot())
