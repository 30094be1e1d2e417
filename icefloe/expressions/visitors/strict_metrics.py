"""``StrictMetricsEvaluator``: does every row of a data file match a row filter?

``eval`` is True only when the file's metrics prove that all rows match (so a delete by filter can
drop the whole file, or a residual can be skipped). Anything unknown means "might not". Like
Iceberg Java it does not trust metrics of fields nested in structs (a null parent struct makes
the child null without the child's counts always saying so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import BooleanExpression, BoundReference
from icefloe.expressions._binding import bind
from icefloe.expressions.visitors._metrics import FileMetrics
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, evaluate
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, FloatType

if TYPE_CHECKING:
    from icefloe.manifest import DataFile

__all__ = ["StrictMetricsEvaluator"]


class StrictMetricsEvaluator:
    def __init__(self, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True) -> None:
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self._top_level = {f.field_id for f in schema.fields}

    def eval(self, data_file: DataFile) -> bool:
        """True when every row of ``data_file`` matches the filter."""
        if data_file.record_count <= 0:
            return True  # vacuously: there are no rows (Java treats unknown -1 the same way)
        return evaluate(self.expr, _Strict(FileMetrics(data_file), self._top_level))


class _Strict(BoundExpressionVisitor[bool]):
    def __init__(self, metrics: FileMetrics, top_level: set[int]) -> None:
        self.m = metrics
        self._top_level = top_level

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

    def _nested(self, ref: BoundReference) -> bool:
        return ref.field_id not in self._top_level

    def _may_have_null_or_nan(self, ref: BoundReference) -> bool:
        fid = ref.field_id
        if self.m.may_contain_null(fid):
            return True
        if isinstance(ref.field_type, FloatType | DoubleType):
            nans = self.m.nan_count(fid)
            return nans is None or nans > 0
        return False

    def visit_is_null(self, ref: BoundReference) -> bool:
        return not self._nested(ref) and self.m.nulls_only(ref.field_id)

    def visit_not_null(self, ref: BoundReference) -> bool:
        return not self._nested(ref) and self.m.null_count(ref.field_id) == 0

    def visit_is_nan(self, ref: BoundReference) -> bool:
        return not self._nested(ref) and self.m.nans_only(ref.field_id)

    def visit_not_nan(self, ref: BoundReference) -> bool:
        if self._nested(ref):
            return False
        return self.m.nan_count(ref.field_id) == 0 or self.m.nulls_only(ref.field_id)

    def _ordered(self, ref: BoundReference) -> bool:
        """Whether bounds can prove a comparison: a top-level column without nulls or NaNs."""
        return not self._nested(ref) and not self._may_have_null_or_nan(ref)

    def visit_less_than(self, ref: BoundReference, literal: Any) -> bool:
        upper = self.m.upper(ref) if self._ordered(ref) else None
        return upper is not None and upper < literal

    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> bool:
        upper = self.m.upper(ref) if self._ordered(ref) else None
        return upper is not None and upper <= literal

    def visit_greater_than(self, ref: BoundReference, literal: Any) -> bool:
        lower = self.m.lower(ref) if self._ordered(ref) else None
        return lower is not None and lower > literal

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> bool:
        lower = self.m.lower(ref) if self._ordered(ref) else None
        return lower is not None and lower >= literal

    def visit_equal(self, ref: BoundReference, literal: Any) -> bool:
        if not self._ordered(ref):
            return False
        lower, upper = self.m.lower(ref), self.m.upper(ref)
        return lower is not None and upper is not None and lower == literal == upper

    def visit_not_equal(self, ref: BoundReference, literal: Any) -> bool:
        if self._nested(ref):
            return False
        fid = ref.field_id
        if self.m.nulls_only(fid) or self.m.nans_only(fid):
            return True  # null != x and NaN != x both hold
        lower, upper = self.m.lower(ref), self.m.upper(ref)
        return (lower is not None and lower > literal) or (upper is not None and upper < literal)

    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        if not self._ordered(ref):
            return False
        lower, upper = self.m.lower(ref), self.m.upper(ref)
        return lower is not None and lower == upper and lower in literals

    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        if self._nested(ref):
            return False
        fid = ref.field_id
        if self.m.nulls_only(fid) or self.m.nans_only(fid):
            return True
        lower, upper = self.m.lower(ref), self.m.upper(ref)
        if lower is None or upper is None:
            return False
        return not any(lower <= v <= upper for v in literals)

    def visit_starts_with(self, ref: BoundReference, literal: Any) -> bool:
        if self._nested(ref) or self.m.may_contain_null(ref.field_id):
            return False
        prefix = literal.encode("utf-8")
        lower, upper = self.m.raw_lower(ref.field_id), self.m.raw_upper(ref.field_id)
        # Every value between two bounds with the prefix has it too.
        return (
            lower is not None and upper is not None and lower.startswith(prefix) and upper.startswith(prefix)
        )

    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> bool:
        if self._nested(ref):
            return False
        if self.m.nulls_only(ref.field_id):
            return True
        prefix: bytes = literal.encode("utf-8")
        n = len(prefix)
        lower, upper = self.m.raw_lower(ref.field_id), self.m.raw_upper(ref.field_id)
        if lower is None or upper is None:
            return False
        # All values lie in [lower, upper]; if that range sits entirely on one side of the strings
        # that start with the prefix, none of them does.
        return upper[:n] < prefix or lower[:n] > prefix
