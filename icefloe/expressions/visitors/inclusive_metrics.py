"""``InclusiveMetricsEvaluator``: may a data file hold rows matching a row filter?

Tests a file's column metrics (value/null/NaN counts and lower/upper bounds) without reading the
file. ``eval`` is True when the file *might* hold a matching row. Unknown metrics always mean
"might". String bounds may be truncated (the lower bound is a prefix, the upper bound rounded
up), so prefix tests compare only the prefix's length of each bound, and equality only uses the
bounds as an interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import BooleanExpression, BoundReference
from icefloe.expressions._binding import bind
from icefloe.expressions.visitors._metrics import FileMetrics
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, evaluate
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    from icefloe.manifest import DataFile

__all__ = ["InclusiveMetricsEvaluator"]

IN_PREDICATE_LIMIT = 200


class InclusiveMetricsEvaluator:
    def __init__(
        self,
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool = True,
        include_empty_files: bool = False,
    ) -> None:
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self.include_empty_files = include_empty_files

    def eval(self, data_file: DataFile) -> bool:
        """False when no row of ``data_file`` can match the filter."""
        if data_file.record_count == 0 and not self.include_empty_files:
            return False
        if data_file.record_count < 0:
            # Some old writers recorded -1 when they did not know the count: no metrics to trust.
            return True
        return evaluate(self.expr, _Inclusive(FileMetrics(data_file)))


class _Inclusive(BoundExpressionVisitor[bool]):
    def __init__(self, metrics: FileMetrics) -> None:
        self.m = metrics

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child_result: bool) -> bool:
        raise AssertionError("metrics evaluation runs on expressions without NOT")

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def _no_comparable_values(self, ref: BoundReference) -> bool:
        # Comparisons are false for null and NaN, so a column holding only those cannot match.
        return self.m.nulls_only(ref.field_id) or self.m.nans_only(ref.field_id)

    def visit_is_null(self, ref: BoundReference) -> bool:
        return self.m.null_count(ref.field_id) != 0

    def visit_not_null(self, ref: BoundReference) -> bool:
        return not self.m.nulls_only(ref.field_id)

    def visit_is_nan(self, ref: BoundReference) -> bool:
        if self.m.nan_count(ref.field_id) == 0:
            return False
        return not self.m.nulls_only(ref.field_id)

    def visit_not_nan(self, ref: BoundReference) -> bool:
        return not self.m.nans_only(ref.field_id)

    def visit_less_than(self, ref: BoundReference, literal: Any) -> bool:
        if self._no_comparable_values(ref):
            return False
        lower = self.m.lower(ref)
        return lower is None or lower < literal

    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> bool:
        if self._no_comparable_values(ref):
            return False
        lower = self.m.lower(ref)
        return lower is None or lower <= literal

    def visit_greater_than(self, ref: BoundReference, literal: Any) -> bool:
        if self._no_comparable_values(ref):
            return False
        upper = self.m.upper(ref)
        return upper is None or upper > literal

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> bool:
        if self._no_comparable_values(ref):
            return False
        upper = self.m.upper(ref)
        return upper is None or upper >= literal

    def visit_equal(self, ref: BoundReference, literal: Any) -> bool:
        if self._no_comparable_values(ref):
            return False
        lower, upper = self.m.lower(ref), self.m.upper(ref)
        if lower is not None and literal < lower:
            return False
        return not (upper is not None and literal > upper)

    def visit_not_equal(self, ref: BoundReference, literal: Any) -> bool:
        # Only lower == upper == literal with no nulls or NaNs could rule a file out, and
        # truncated bounds make even that unsafe for strings; Java does not try either.
        return True

    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        if self._no_comparable_values(ref):
            return False
        if len(literals) > IN_PREDICATE_LIMIT:
            return True
        lower, upper = self.m.lower(ref), self.m.upper(ref)
        return any((lower is None or lower <= v) and (upper is None or v <= upper) for v in literals)

    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        return True

    def visit_starts_with(self, ref: BoundReference, literal: Any) -> bool:
        if self.m.nulls_only(ref.field_id):
            return False
        prefix = literal.encode("utf-8")
        n = len(prefix)
        # Compare UTF-8 bytes so a bound truncated mid-way compares like Java's unsigned bytes.
        lower, upper = self.m.raw_lower(ref.field_id), self.m.raw_upper(ref.field_id)
        if lower is not None and lower[:n] > prefix:
            return False
        return not (upper is not None and upper[:n] < prefix)

    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> bool:
        if self.m.may_contain_null(ref.field_id):
            return True  # a null does not start with the prefix, so it matches
        prefix = literal.encode("utf-8")
        lower, upper = self.m.raw_lower(ref.field_id), self.m.raw_upper(ref.field_id)
        # Every value between two bounds that both start with the prefix starts with it too.
        return not (
            lower is not None and upper is not None and lower.startswith(prefix) and upper.startswith(prefix)
        )
