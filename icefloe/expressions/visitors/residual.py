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
)
from icefloe.expressions._binding import bind, unbind
from icefloe.expressions._tree import rebuild
from icefloe.expressions.visitors._transform_projection import project_inclusive, project_strict
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
        self._source_ids = {field.source_id for field in spec.fields}
        # (strict check, inclusive check) per partition field of each predicate, built on first
        # use; keyed by identity (self.expr keeps the predicates alive), as hashing a predicate
        # hashes its schema field and a large filter has 100,000 of them.
        self._checks: dict[int, list[tuple[_Check | None, _Check | None]]] = {}
        self._compiled: dict[BooleanExpression, _Check] = {}
        self._unbound: BooleanExpression | None = None

    def _compile(self, projected: BooleanExpression | None) -> _Check | None:
        if projected is None:
            return None
        # Many predicates project to the same partition test (bucket, truncate, day): compile once.
        check = self._compiled.get(projected)
        if check is None:
            bound = bind(self._partition_schema, projected, self._case_sensitive)
            check = self._compiled[projected] = expression_evaluator(self._partition_struct, bound)
        return check

    def _checks_for(self, pred: Predicate) -> list[tuple[_Check | None, _Check | None]]:
        if pred.ref.field_id not in self._source_ids:
            return []
        checks = self._checks.get(id(pred))
        if checks is None:
            ref = pred.ref
            checks = []
            for field in self.spec.fields:
                if field.source_id == ref.field_id:
                    strict = project_strict(field.transform, ref.field_type, field.name, pred)
                    inclusive = project_inclusive(field.transform, ref.field_type, field.name, pred)
                    checks.append((self._compile(strict), self._compile(inclusive)))
            self._checks[id(pred)] = checks
        return checks

    def bound_residual_for(self, partition: Sequence[Any]) -> BooleanExpression:
        """The residual bound to the table schema: ``self.expr`` itself when the partition decides
        none of its predicates (always, for an unpartitioned table)."""

        def residual(predicate: Predicate) -> BooleanExpression:
            for strict, inclusive in self._checks_for(predicate):
                if strict is not None and strict(partition):
                    return AlwaysTrue()
                if inclusive is not None and not inclusive(partition):
                    return AlwaysFalse()
            return predicate

        if not self._source_ids:
            return self.expr  # unpartitioned: no partition decides anything
        # Rebuilding simplifies through and/or, and keeps every subtree in which nothing changed.
        return rebuild(self.expr, residual)

    def residual_for(self, partition: Sequence[Any]) -> BooleanExpression:
        """The residual for a file in ``partition`` (a tuple in partition-spec field order)."""
        bound = self.bound_residual_for(partition)
        if bound is not self.expr:
            return unbind(bound)
        if self._unbound is None:
            self._unbound = unbind(self.expr)  # the same for every partition: unbind it once
        return self._unbound
