"""``ManifestEvaluator``: can a manifest hold files matching a row filter?

The row filter is projected inclusively onto the manifest's partition spec and tested against the
manifest list's per-partition-field summaries (contains null / contains NaN / lower and upper
bound). ``eval`` is True when the manifest *might* hold matching files; False means it can be
skipped without reading it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import BooleanExpression, BoundReference
from icefloe.expressions._binding import bind
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, visit
from icefloe.expressions.visitors.projection import inclusive_projection
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, FloatType, IcebergType
from icefloe.spec.values import bound_decoder, from_bytes

if TYPE_CHECKING:
    from icefloe.manifest import ManifestFile, PartitionFieldSummary
    from icefloe.spec.partition import PartitionSpec

__all__ = ["ManifestEvaluator"]

# Beyond this many values, checking each against the bounds costs more than it saves (Java: 200).
IN_PREDICATE_LIMIT = 200

_MIGHT_MATCH = True
_CANNOT_MATCH = False


_Summaries = tuple["PartitionFieldSummary", ...] | list["PartitionFieldSummary"]
_Test = Callable[[_Summaries], bool]


class ManifestEvaluator:
    """Evaluates a row filter against manifest partition summaries (thread-safe once built).

    The projected filter is compiled once into nested closures over partition-field positions,
    so ``eval`` costs a few function calls per manifest instead of a visitor walk; bounds are
    decoded once per summary and kept on it (see ``PartitionFieldSummary.decoded_bounds``).
    """

    def __init__(
        self, spec: PartitionSpec, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        struct = spec.partition_type(schema)
        projected = inclusive_projection(schema, spec, case_sensitive)(row_filter)
        self.partition_filter = rewrite_not(bind(Schema(*struct.fields), projected, case_sensitive))
        positions = {f.field_id: pos for pos, f in enumerate(struct.fields)}
        self._test: _Test = visit(self.partition_filter, _Compiler(positions))

    def eval(self, manifest_file: ManifestFile) -> bool:
        """False when no file in the manifest can contain a row matching the filter."""
        summaries = manifest_file.partitions
        if summaries is None:
            return _MIGHT_MATCH
        return self._test(summaries)

    def eval_summaries(self, summaries: _Summaries | None) -> bool:
        """:meth:`eval` on a manifest's ``partitions`` alone (before its ManifestFile is built)."""
        if summaries is None:
            return _MIGHT_MATCH
        return self._test(summaries)


def _always(result: bool) -> _Test:
    def test(summaries: _Summaries) -> bool:
        return result

    return test


def _all_null(s: PartitionFieldSummary, floating: bool) -> bool:
    if not s.contains_null or s.lower_bound is not None:
        return False
    if floating:
        # No bounds can also mean all NaN; only a recorded "no NaN" proves all null.
        return s.contains_nan is not None and not s.contains_nan
    return True


class _Compiler(BoundExpressionVisitor[_Test]):
    """Turns a bound, NOT-free partition filter into one test over a manifest's summaries.

    Each leaf closes over its summary's position, its type and its literal. A summary list
    shorter than the spec (written by an older spec version) yields "might match" for the
    missing fields, like a missing summary list.
    """

    def __init__(self, positions: dict[int, int]) -> None:
        self._positions = positions
        self._decoders: dict[int, Callable[[IcebergType, bytes], Any]] = {}

    def _range_test(self, ref: BoundReference, check: Callable[[Any, Any], bool]) -> _Test:
        """A test that passes the decoded (lower, upper) to ``check``; without a summary it might
        match, and without bounds (every value null or NaN) it cannot, unless only one bound is
        missing (then nothing is known)."""
        pos = self._positions[ref.field_id]
        field_type = ref.field_type
        decode = self._decoders.get(ref.field_id)
        if decode is None:
            decode = self._decoders[ref.field_id] = bound_decoder(field_type)

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = summaries[pos]
            bounds = s.decoded_bounds(field_type, decode)
            if bounds is None:
                # Bounds are absent exactly when every value is null or NaN.
                return s.lower_bound is not None or s.upper_bound is not None
            return check(bounds[0], bounds[1])

        return test

    def visit_true(self) -> _Test:
        return _always(_MIGHT_MATCH)

    def visit_false(self) -> _Test:
        return _always(_CANNOT_MATCH)

    def visit_not(self, child_result: _Test) -> _Test:
        raise AssertionError("manifest evaluation runs on expressions without NOT")

    def visit_and(self, left_result: _Test, right_result: _Test) -> _Test:
        def test(summaries: _Summaries) -> bool:
            return left_result(summaries) and right_result(summaries)

        return test

    def visit_or(self, left_result: _Test, right_result: _Test) -> _Test:
        def test(summaries: _Summaries) -> bool:
            return left_result(summaries) or right_result(summaries)

        return test

    def visit_is_null(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]

        def test(summaries: _Summaries) -> bool:
            return pos >= len(summaries) or summaries[pos].contains_null

        return test

    def visit_not_null(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]
        floating = isinstance(ref.field_type, FloatType | DoubleType)

        def test(summaries: _Summaries) -> bool:
            return pos >= len(summaries) or not _all_null(summaries[pos], floating)

        return test

    def visit_is_nan(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]
        floating = isinstance(ref.field_type, FloatType | DoubleType)

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = summaries[pos]
            if s.contains_nan is not None and not s.contains_nan:
                return _CANNOT_MATCH
            return not _all_null(s, floating)

        return test

    def visit_not_nan(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = summaries[pos]
            all_nan = s.contains_nan is True and not s.contains_null and s.lower_bound is None
            return not all_nan

        return test

    def visit_less_than(self, ref: BoundReference, literal: Any) -> _Test:
        return self._range_test(ref, lambda lo, hi: bool(lo < literal))

    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> _Test:
        return self._range_test(ref, lambda lo, hi: bool(lo <= literal))

    def visit_greater_than(self, ref: BoundReference, literal: Any) -> _Test:
        return self._range_test(ref, lambda lo, hi: bool(hi > literal))

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> _Test:
        return self._range_test(ref, lambda lo, hi: bool(hi >= literal))

    def visit_equal(self, ref: BoundReference, literal: Any) -> _Test:
        return self._range_test(ref, lambda lo, hi: bool(lo <= literal <= hi))

    def visit_not_equal(self, ref: BoundReference, literal: Any) -> _Test:
        return _always(_MIGHT_MATCH)

    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> _Test:
        if len(literals) > IN_PREDICATE_LIMIT:
            # Checking each value costs more than it saves; only "no bounds" can still prune.
            return self._range_test(ref, lambda lo, hi: _MIGHT_MATCH)
        values = tuple(literals)
        return self._range_test(ref, lambda lo, hi: any(lo <= v <= hi for v in values))

    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> _Test:
        return _always(_MIGHT_MATCH)

    def visit_starts_with(self, ref: BoundReference, literal: Any) -> _Test:
        return self._range_test(ref, lambda lo, hi: _prefix_in_range(lo, hi, literal))

    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> _Test:
        pos = self._positions[ref.field_id]
        field_type = ref.field_type

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = summaries[pos]
            if s.contains_null:
                return _MIGHT_MATCH  # nulls do not start with anything
            bounds = s.decoded_bounds(field_type, from_bytes)
            if bounds is not None and bounds[0].startswith(literal) and bounds[1].startswith(literal):
                return _CANNOT_MATCH  # every value between two prefixed bounds has the prefix too
            return _MIGHT_MATCH

        return test


def _prefix_in_range(lower: str, upper: str, prefix: str) -> bool:
    """Whether some string in [lower, upper] may start with ``prefix`` (bounds may be truncated:
    comparing only the first len(prefix) characters keeps that sound)."""
    n = len(prefix)
    return lower[:n] <= prefix and prefix <= upper[:n]
