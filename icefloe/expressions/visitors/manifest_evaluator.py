"""``ManifestEvaluator``: can a manifest hold files matching a row filter?

The row filter is projected inclusively onto the manifest's partition spec and tested against the
manifest list's per-partition-field summaries (contains null / contains NaN / lower and upper
bound). ``eval`` is True when the manifest *might* hold matching files; False means it can be
skipped without reading it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import BooleanExpression, BoundReference
from icefloe.expressions._binding import bind
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, visit
from icefloe.expressions.visitors.projection import inclusive_projection
from icefloe.expressions.visitors.rewrite_not import rewrite_not
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
)
from icefloe.spec.values import bound_decoder, from_bytes

if TYPE_CHECKING:
    from icefloe.manifest import ManifestFile, PartitionFieldSummary
    from icefloe.spec.partition import PartitionSpec

__all__ = ["ManifestEvaluator"]

# Beyond this many values, checking each against the bounds costs more than it saves (Java: 200).
IN_PREDICATE_LIMIT = 200

_MIGHT_MATCH = True
_CANNOT_MATCH = False


#: A summary as the compiled tests read it: (contains_null, contains_nan, lower_bound, upper_bound),
#: what the manifest-list selection decodes without building PartitionFieldSummary objects.
_Raw = tuple[Any, Any, Any, Any]
_Summaries = (
    tuple["PartitionFieldSummary", ...] | list["PartitionFieldSummary"] | list[_Raw] | tuple[_Raw, ...]
)
_Test = Callable[[Any], bool]
_NULL, _NAN, _LOWER, _UPPER = 0, 1, 2, 3
_INT32, _INT64 = struct.Struct("<i").unpack, struct.Struct("<q").unpack
_FIXED_WIDTH: dict[type, tuple[int, Callable[[bytes], tuple[int]]]] = {
    IntegerType: (4, _INT32),
    DateType: (4, _INT32),
    LongType: (8, _INT64),
    TimeType: (8, _INT64),
    TimestampType: (8, _INT64),
    TimestamptzType: (8, _INT64),
    TimestampNsType: (8, _INT64),
    TimestamptzNsType: (8, _INT64),
}


def _raw(s: Any) -> _Raw:
    """A summary (a PartitionFieldSummary or a raw tuple) as a raw tuple."""
    if type(s) is tuple:
        return s
    return (s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound)


class ManifestEvaluator:
    """Evaluates a row filter against manifest partition summaries (thread-safe once built).

    The projected filter is compiled once into nested closures over partition-field positions,
    so ``eval`` costs a few function calls per manifest instead of a visitor walk. The closures
    take PartitionFieldSummary objects (whose decoded bounds are kept on them, see
    ``PartitionFieldSummary.decoded_bounds``) or raw summary tuples ``(contains_null,
    contains_nan, lower_bound, upper_bound)``, which planning decodes from a manifest list
    without building objects.
    """

    def __init__(
        self, spec: PartitionSpec, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        struct = spec.partition_type(schema)
        projected = inclusive_projection(schema, spec, case_sensitive)(row_filter)
        self.partition_filter = rewrite_not(bind(Schema(*struct.fields), projected, case_sensitive))
        positions = {f.field_id: pos for pos, f in enumerate(struct.fields)}
        self._test: _Test = visit(self.partition_filter, _Compiler(positions))

    @property
    def raw_test(self) -> Callable[[Any], bool]:
        """The compiled test on a manifest's raw summary tuples (a list, not None): what planning
        calls once per manifest of a list."""
        return self._test

    def eval(self, manifest_file: ManifestFile) -> bool:
        """False when no file in the manifest can contain a row matching the filter."""
        summaries = manifest_file.partitions
        if summaries is None:
            return _MIGHT_MATCH
        return self._test(summaries)

    def eval_summaries(self, summaries: _Summaries | None) -> bool:
        """:meth:`eval` on a manifest's ``partitions`` alone (before its ManifestFile is built):
        PartitionFieldSummary objects or raw ``(contains_null, contains_nan, lower_bound,
        upper_bound)`` tuples."""
        if summaries is None:
            return _MIGHT_MATCH
        return self._test(summaries)


def _always(result: bool) -> _Test:
    def test(summaries: _Summaries) -> bool:
        return result

    return test


def _all_null(s: _Raw, floating: bool) -> bool:
    if not s[_NULL] or s[_LOWER] is not None:
        return False
    if floating:
        # No bounds can also mean all NaN; only a recorded "no NaN" proves all null.
        return s[_NAN] is not None and not s[_NAN]
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

        # Raw bounds of fixed-width integers (int, long, date, time, timestamps) are unpacked
        # here; other widths (a promoted column's older bounds) and types go through ``decode``.
        width, unpack = _FIXED_WIDTH.get(type(field_type), (-1, None))

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = summaries[pos]
            if type(s) is tuple:
                lower, upper = s[_LOWER], s[_UPPER]
                if lower is None or upper is None:
                    # Bounds are absent exactly when every value is null or NaN.
                    return lower is not None or upper is not None
                if len(lower) == width and len(upper) == width:
                    return check(unpack(lower)[0], unpack(upper)[0])  # type: ignore[misc]
                return check(decode(field_type, lower), decode(field_type, upper))
            bounds = s.decoded_bounds(field_type, decode)  # type: ignore[union-attr]
            if bounds is None:
                return s.lower_bound is not None or s.upper_bound is not None  # type: ignore[union-attr]
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
            return pos >= len(summaries) or bool(_raw(summaries[pos])[_NULL])

        return test

    def visit_not_null(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]
        floating = isinstance(ref.field_type, FloatType | DoubleType)

        def test(summaries: _Summaries) -> bool:
            return pos >= len(summaries) or not _all_null(_raw(summaries[pos]), floating)

        return test

    def visit_is_nan(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]
        floating = isinstance(ref.field_type, FloatType | DoubleType)

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = _raw(summaries[pos])
            if s[_NAN] is not None and not s[_NAN]:
                return _CANNOT_MATCH
            return not _all_null(s, floating)

        return test

    def visit_not_nan(self, ref: BoundReference) -> _Test:
        pos = self._positions[ref.field_id]

        def test(summaries: _Summaries) -> bool:
            if pos >= len(summaries):
                return _MIGHT_MATCH
            s = _raw(summaries[pos])
            all_nan = s[_NAN] is True and not s[_NULL] and s[_LOWER] is None
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
            s = _raw(summaries[pos])
            if s[_NULL]:
                return _MIGHT_MATCH  # nulls do not start with anything
            lower, upper = s[_LOWER], s[_UPPER]
            if (
                lower is not None
                and upper is not None
                and from_bytes(field_type, lower).startswith(literal)
                and from_bytes(field_type, upper).startswith(literal)
            ):
                return _CANNOT_MATCH  # every value between two prefixed bounds has the prefix too
            return _MIGHT_MATCH

        return test


def _prefix_in_range(lower: str, upper: str, prefix: str) -> bool:
    """Whether some string in [lower, upper] may start with ``prefix`` (bounds may be truncated:
    comparing only the first len(prefix) characters keeps that sound)."""
    n = len(prefix)
    return lower[:n] <= prefix and prefix <= upper[:n]
