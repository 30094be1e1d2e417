"""``ManifestEvaluator``: can a manifest hold files matching a row filter?

The row filter is projected inclusively onto the manifest's partition spec and tested against the
manifest list's per-partition-field summaries (contains null / contains NaN / lower and upper
bound). ``eval`` is True when the manifest *might* hold matching files; False means it can be
skipped without reading it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import BooleanExpression, BoundReference
from icefloe.expressions._binding import bind
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, visit
from icefloe.expressions.visitors.projection import inclusive_projection
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, FloatType
from icefloe.spec.values import from_bytes

if TYPE_CHECKING:
    from icefloe.manifest import ManifestFile, PartitionFieldSummary
    from icefloe.spec.partition import PartitionSpec

__all__ = ["ManifestEvaluator"]

# Beyond this many values, checking each against the bounds costs more than it saves (Java: 200).
IN_PREDICATE_LIMIT = 200

_MIGHT_MATCH = True
_CANNOT_MATCH = False


class ManifestEvaluator:
    """Evaluates a row filter against manifest partition summaries (thread-unsafe; cheap to
    build one per thread)."""

    def __init__(
        self, spec: PartitionSpec, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        struct = spec.partition_type(schema)
        projected = inclusive_projection(schema, spec, case_sensitive)(row_filter)
        self.partition_filter = rewrite_not(bind(Schema(*struct.fields), projected, case_sensitive))
        self._positions = {f.field_id: pos for pos, f in enumerate(struct.fields)}

    def eval(self, manifest_file: ManifestFile) -> bool:
        """False when no file in the manifest can contain a row matching the filter."""
        summaries = manifest_file.partitions
        if summaries is None:
            return _MIGHT_MATCH
        return visit(self.partition_filter, _SummaryVisitor(summaries, self._positions))


class _SummaryVisitor(BoundExpressionVisitor[bool]):
    def __init__(
        self,
        summaries: tuple[PartitionFieldSummary, ...] | list[PartitionFieldSummary],
        positions: dict[int, int],
    ) -> None:
        self._summaries = summaries
        self._positions = positions

    def _summary(self, ref: BoundReference) -> PartitionFieldSummary | None:
        pos = self._positions[ref.field_id]
        return self._summaries[pos] if pos < len(self._summaries) else None

    def _bounds(self, ref: BoundReference) -> tuple[Any, Any] | None:
        """(lower, upper) decoded, or None when the summary has no bounds (all null or NaN)."""
        s = self._summary(ref)
        if s is None or s.lower_bound is None or s.upper_bound is None:
            return None
        return from_bytes(ref.field_type, s.lower_bound), from_bytes(ref.field_type, s.upper_bound)

    def _all_null(self, ref: BoundReference) -> bool:
        s = self._summary(ref)
        if s is None or not s.contains_null or s.lower_bound is not None:
            return False
        if isinstance(ref.field_type, FloatType | DoubleType):
            # No bounds can also mean all NaN; only a recorded "no NaN" proves all null.
            return s.contains_nan is not None and not s.contains_nan
        return True

    def visit_true(self) -> bool:
        return _MIGHT_MATCH

    def visit_false(self) -> bool:
        return _CANNOT_MATCH

    def visit_not(self, child_result: bool) -> bool:
        raise AssertionError("manifest evaluation runs on expressions without NOT")

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_is_null(self, ref: BoundReference) -> bool:
        s = self._summary(ref)
        return s is None or s.contains_null

    def visit_not_null(self, ref: BoundReference) -> bool:
        return not self._all_null(ref)

    def visit_is_nan(self, ref: BoundReference) -> bool:
        s = self._summary(ref)
        if s is not None and s.contains_nan is not None and not s.contains_nan:
            return _CANNOT_MATCH
        return not self._all_null(ref)

    def visit_not_nan(self, ref: BoundReference) -> bool:
        s = self._summary(ref)
        all_nan = s is not None and s.contains_nan is True and not s.contains_null and s.lower_bound is None
        return not all_nan

    def _range(self, ref: BoundReference) -> tuple[Any, Any] | bool | None:
        """The bounds, or False when the summary proves there are no non-null, non-NaN values,
        or None when nothing is known."""
        s = self._summary(ref)
        if s is None:
            return None
        if s.lower_bound is None or s.upper_bound is None:
            # Bounds are absent exactly when every value is null or NaN.
            return _CANNOT_MATCH if s.lower_bound is None and s.upper_bound is None else None
        return self._bounds(ref)

    def visit_less_than(self, ref: BoundReference, literal: Any) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            return bool(r[0] < literal)
        return r is None

    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            return bool(r[0] <= literal)
        return r is None

    def visit_greater_than(self, ref: BoundReference, literal: Any) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            return bool(r[1] > literal)
        return r is None

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            return bool(r[1] >= literal)
        return r is None

    def visit_equal(self, ref: BoundReference, literal: Any) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            return bool(r[0] <= literal <= r[1])
        return r is None

    def visit_not_equal(self, ref: BoundReference, literal: Any) -> bool:
        return _MIGHT_MATCH

    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            if len(literals) > IN_PREDICATE_LIMIT:
                return _MIGHT_MATCH
            return any(r[0] <= v <= r[1] for v in literals)
        return r is None

    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> bool:
        return _MIGHT_MATCH

    def visit_starts_with(self, ref: BoundReference, literal: Any) -> bool:
        r = self._range(ref)
        if isinstance(r, tuple):
            return _prefix_in_range(r[0], r[1], literal)
        return r is None

    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> bool:
        s = self._summary(ref)
        if s is None or s.contains_null:
            return _MIGHT_MATCH  # nulls do not start with anything
        bounds = self._bounds(ref)
        if bounds is not None and bounds[0].startswith(literal) and bounds[1].startswith(literal):
            return _CANNOT_MATCH  # every value between two prefixed bounds has the prefix too
        return _MIGHT_MATCH


def _prefix_in_range(lower: str, upper: str, prefix: str) -> bool:
    """Whether some string in [lower, upper] may start with ``prefix`` (bounds may be truncated:
    comparing only the first len(prefix) characters keeps that sound)."""
    n = len(prefix)
    return lower[:n] <= prefix and prefix <= upper[:n]
