"""``ResidualEvaluator``: the part of a row filter that a file's partition does not decide.

Per predicate on a partitioned column (Java's rule): if its strict projection holds for the
partition, every row matches and the predicate becomes true; if its inclusive projection fails,
no row matches and it becomes false; otherwise it stays. The result simplifies through and/or.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    Predicate,
    and_,
    or_,
)
from icefloe.expressions._binding import bind, unbind
from icefloe.expressions.visitors._transform_projection import project_inclusive, project_strict
from icefloe.expressions.visitors._visitor import BooleanExpressionVisitor, visit
from icefloe.expressions.visitors.evaluator import expression_evaluator
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    from icefloe.spec.partition import PartitionSpec

__all__ = ["ResidualEvaluator"]

_Check = Callable[[Sequence[Any]], bool]


class ResidualEvaluator:
    """Residuals of ``row_filter`` for the partitions of ``spec``.

    :meth:`residual_for` returns an *unbound* expression (column names, literals in the internal
    representation) so scan tasks stay small and picklable; bind it to the table schema to
    evaluate it. :meth:`bound_residual_for` gives the bound form.
    """

    def __init__(
        self, spec: PartitionSpec, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        self.spec = spec
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self._case_sensitive = case_sensitive
        struct = spec.partition_type(schema)
        self._partition_struct = struct
        self._partition_schema = Schema(*struct.fields)
        # (strict check, inclusive check) per partition field of each predicate, built on first use.
        self._checks: dict[Predicate, list[tuple[_Check | None, _Check | None]]] = {}

    def _compile(self, projected: BooleanExpression | None) -> _Check | None:
        if projected is None:
            return None
        bound = bind(self._partition_schema, projected, self._case_sensitive)
        return expression_evaluator(self._partition_struct, bound)

    def _checks_for(self, pred: Predicate) -> list[tuple[_Check | None, _Check | None]]:
        checks = self._checks.get(pred)
        if checks is None:
            ref = pred.ref
            checks = []
            for field in self.spec.fields:
                if field.source_id == ref.field_id:
                    strict = project_strict(field.transform, ref.field_type, field.name, pred)
                    inclusive = project_inclusive(field.transform, ref.field_type, field.name, pred)
                    checks.append((self._compile(strict), self._compile(inclusive)))
            self._checks[pred] = checks
        return checks

    def bound_residual_for(self, partition: Sequence[Any]) -> BooleanExpression:
        """The residual bound to the table schema."""
        return visit(self.expr, _Residual(self, partition))

    def residual_for(self, partition: Sequence[Any]) -> BooleanExpression:
        """The residual for a file in ``partition`` (a tuple in partition-spec field order)."""
        return unbind(self.bound_residual_for(partition))


class _Residual(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, owner: ResidualEvaluator, partition: Sequence[Any]) -> None:
        self._owner = owner
        self._partition = partition

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        raise AssertionError("residuals run on expressions without NOT (rewrite_not first)")

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        for strict, inclusive in self._owner._checks_for(predicate):
            if strict is not None and strict(self._partition):
                return AlwaysTrue()
            if inclusive is not None and not inclusive(self._partition):
                return AlwaysFalse()
        return predicate
