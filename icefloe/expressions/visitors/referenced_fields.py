"""``referenced_field_ids``: which columns a bound filter reads (for projection pruning)."""

from __future__ import annotations

from icefloe.expressions._base import BooleanExpression, BoundReference, Predicate
from icefloe.expressions.visitors._visitor import BooleanExpressionVisitor, visit

__all__ = ["referenced_field_ids"]


class _FieldIds(BooleanExpressionVisitor[set[int]]):
    def visit_true(self) -> set[int]:
        return set()

    def visit_false(self) -> set[int]:
        return set()

    def visit_not(self, child_result: set[int]) -> set[int]:
        return child_result

    # Each set is made for one node and read only by its parent, so it can grow in place (a new
    # set per and/or would copy a large filter's columns once per level).
    def visit_and(self, left_result: set[int], right_result: set[int]) -> set[int]:
        left_result |= right_result
        return left_result

    def visit_or(self, left_result: set[int], right_result: set[int]) -> set[int]:
        left_result |= right_result
        return left_result

    def visit_predicate(self, predicate: Predicate) -> set[int]:
        term = predicate.ref
        assert isinstance(term, BoundReference)
        return {term.field_id}


def referenced_field_ids(bound_expr: BooleanExpression) -> set[int]:
    """The field ids of every column ``bound_expr`` refers to."""
    return visit(bound_expr, _FieldIds())
