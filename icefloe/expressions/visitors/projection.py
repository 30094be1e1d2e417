"""``inclusive_projection`` / ``strict_projection``: a row filter as a partition filter.

An inclusive projection is true for every partition that may hold a matching row (planning
skips partitions where it is false); a strict projection is true only for partitions where
every row matches (residuals drop the filter there). Each predicate projects through every
partition field of its column (:mod:`._transform_projection`); inclusive projections of one
predicate are and-ed, strict ones or-ed, since each is individually sound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from icefloe.expressions._base import AlwaysFalse, AlwaysTrue, BooleanExpression, Predicate, and_, or_
from icefloe.expressions._binding import bind
from icefloe.expressions._tree import distinct_operands, keep, rebuild
from icefloe.expressions.visitors._transform_projection import project_inclusive, project_strict
from icefloe.expressions.visitors._visitor import BooleanExpressionVisitor, visit
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    from icefloe.spec.partition import PartitionSpec

__all__ = ["inclusive_projection", "strict_projection"]


class _Projector(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, schema: Schema, spec: PartitionSpec, strict: bool) -> None:
        self._schema = schema
        self._spec = spec
        self._strict = strict

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        raise AssertionError("projections run on expressions without NOT (rewrite_not first)")

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        ref = predicate.ref
        parts = []
        for field in self._spec.fields:
            if field.source_id != ref.field_id:
                continue
            project = project_strict if self._strict else project_inclusive
            projected = project(field.transform, ref.field_type, field.name, predicate)
            if projected is not None:
                parts.append(projected)
        return or_(*parts) if self._strict else and_(*parts)


def _projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool, strict: bool
) -> Callable[[BooleanExpression], BooleanExpression]:
    def project(row_filter: BooleanExpression) -> BooleanExpression:
        bound = rewrite_not(bind(schema, row_filter, case_sensitive))
        if not spec.fields and not isinstance(bound, AlwaysTrue | AlwaysFalse):
            # Unpartitioned: every predicate projects to the constant, and so does the filter.
            return AlwaysFalse() if strict else AlwaysTrue()
        projected = visit(bound, _Projector(schema, spec, strict))
        # Many predicates can project to one partition test (bucket, truncate, day): keep one.
        return rebuild(projected, keep, distinct_operands)

    return project


def inclusive_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Callable[[BooleanExpression], BooleanExpression]:
    """A function mapping a row filter (bound or unbound) to an unbound filter on partition field
    names that is true for every partition that may contain a matching row."""
    return _projection(schema, spec, case_sensitive, strict=False)


def strict_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Callable[[BooleanExpression], BooleanExpression]:
    """A function mapping a row filter to an unbound filter on partition field names that is true
    only for partitions in which every row matches."""
    return _projection(schema, spec, case_sensitive, strict=True)
