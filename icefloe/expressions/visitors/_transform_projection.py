"""How one bound predicate on a source column projects through one partition transform.

An *inclusive* projection holds for the partition of every row that satisfies the predicate
(so a false projection prunes the partition); a *strict* projection holds only for partitions
whose every row satisfies it. ``None`` means no projection exists: callers use ``AlwaysTrue`` for
inclusive and ``AlwaysFalse`` for strict. The rules are Iceberg Java's:

- identity keeps the predicate; void has no projection.
- bucket projects ``=``/``in`` inclusively and ``!=``/``not in`` strictly.
- truncate of ints and decimals turns open bounds into closed ones before truncating (inclusive
  ``x < 10`` becomes ``p <= truncate(9)``), with two corrections (:class:`_NumberTruncation`):
  bounds are truncated exactly, in Python ints, so that no projected literal wraps around or fails
  to bind; and the partitions that Iceberg Java's int/long arithmetic wraps around are kept where
  their rows may match. Truncate of strings/binary keeps ranges closed (inclusive) or open
  (strict), and handles ``starts with`` by comparing the prefix's length with the width.
- year/month/day/hour work like integer truncation, then widen (inclusive) or narrow (strict)
  by one around negative partition values: Java writers before 1.0 rounded pre-epoch values
  toward zero instead of down, so a row that belongs in negative partition ``v`` may sit in
  ``v + 1``.

The output is unbound (by partition field name) with literals already in the partition type's
internal representation.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    and_,
    or_,
)
from icefloe.spec.types import (
    BinaryType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)
from icefloe.transforms._decimal import from_unscaled, unscaled
from icefloe.transforms.truncate import wrap_signed

__all__ = ["project_inclusive", "project_strict"]

_TRANSFORM = re.compile(r"([a-z]+)(?:\[(\d+)\])?")
_TEMPORAL = frozenset({"year", "month", "day", "hour"})


class _Projection:
    """The pieces every rule needs: the transform, the source type and the output name."""

    def __init__(self, transform: Any, source_type: IcebergType, name: str) -> None:
        m = _TRANSFORM.fullmatch(str(transform))
        self.kind = m.group(1) if m else ""
        self.width = int(m.group(2)) if m and m.group(2) else 0
        self.transform = transform
        self.source_type = source_type
        self.ref = Reference(name)

    def apply(self, value: Any) -> Any:
        return self.transform.apply(self.source_type, value)

    def one(self) -> Any:
        """The smallest step between two source values, for turning < into <=."""
        if isinstance(self.source_type, DecimalType):
            return decimal.Decimal(1).scaleb(-self.source_type.scale)
        return 1

    def literal(self, op: type[LiteralPredicate], value: Any) -> BooleanExpression:
        return op(self.ref, self.apply(value))

    def set_of(self, op: type[SetPredicate], values: Iterable[Any]) -> BooleanExpression:
        return op(self.ref, {self.apply(v) for v in values})


# A filter with 100,000 predicates projects each through the same few partition fields.
@lru_cache(maxsize=1024)
def _projection(transform: Any, source_type: IcebergType, name: str) -> _Projection:
    return _Projection(transform, source_type, name)


def _unary(p: _Projection, pred: UnaryPredicate) -> BooleanExpression | None:
    if isinstance(pred, IsNaN | NotNaN):
        # Only identity keeps NaN (no other transform accepts floats).
        return None
    return type(pred)(p.ref)


def _renamed(p: _Projection, pred: Predicate) -> BooleanExpression:
    if isinstance(pred, UnaryPredicate):
        return type(pred)(p.ref)
    if isinstance(pred, LiteralPredicate):
        return type(pred)(p.ref, pred.literal)
    assert isinstance(pred, SetPredicate)
    return type(pred)(p.ref, pred.literals)


def _is_array_type(t: IcebergType) -> bool:
    return isinstance(t, StringType | BinaryType | FixedType)


# ---------------------------------------------------------------------------------- truncate


_LiteralOp = type[LiteralPredicate]


class _NumberTruncation:
    """``truncate[W]`` of an int, long or decimal column, as the projections need it.

    Values are handled as unscaled ints. Two things make this more than applying the transform:

    - The projected bound of a range is truncated exactly. ``x > max`` needs ``truncate(max + 1)``,
      which is beyond the column's type (an int that would wrap around, a decimal with one digit
      too many), and the truncation of a decimal's minimum has one digit too many too
      (``truncate[10]`` of decimal(1, 1)'s ``-0.9`` is ``-1.0``): a partition value that does not fit
      the partition type. :meth:`compare` decides comparisons with literals outside the partition
      values' range, and rewrites those with the one partition value below a decimal type's
      minimum into comparisons with that minimum, so every projected literal binds.
    - Iceberg Java computes the truncation of an int or long in its own int/long arithmetic,
      which wraps around for the values within W of the minimum: ``truncate[10]`` of
      ``-9223372036854775808`` is ``9223372036854775806``, the partition value of those rows in
      every table Java or icefloe wrote (icefloe writes the same values, for interoperability).
      Such a partition value is not a multiple of W, so no other row has it. Range projections
      add these partitions where their rows may match (inclusive) and leave them out (strict);
      equality uses the values the writers wrote. A long column may have been an int column when
      a file was written, so the values wrapped at 32 bits count too.
    """

    def __init__(self, width: int, source_type: IcebergType) -> None:
        self.width = width
        self.decimal_scale: int | None = None
        if isinstance(source_type, DecimalType):
            self.decimal_scale = source_type.scale
            top = 10**source_type.precision - 1
            self.min, self.max = -top, top
            bits: tuple[int, ...] = ()
        else:
            assert isinstance(source_type, IntegerType | LongType)
            self.min, self.max = source_type.min, source_type.max
            bits = (32,) if isinstance(source_type, IntegerType) else (32, 64)
        self._bits = bits
        # Partition values lie in [low, max]: the truncation of the minimum is below it for a
        # decimal (ints wrap around instead).
        self.low = self.floor(self.min) if self.decimal_scale is not None else self.min
        # (wrapped partition value, first and last source value that gets it)
        self.wraps: list[tuple[int, int, int]] = []
        for b in bits:
            smallest = -(1 << (b - 1))
            t = self.floor(smallest)
            if t < smallest:
                self.wraps.append((wrap_signed(t, b), smallest, t + width - 1))

    def floor(self, n: int) -> int:
        return n - n % self.width

    def unscaled(self, value: Any) -> int:
        return value if self.decimal_scale is None else unscaled(value, self.decimal_scale)

    def value(self, n: int) -> Any:
        return n if self.decimal_scale is None else from_unscaled(n, self.decimal_scale)

    def images(self, n: int) -> set[int]:
        """The partition values writers give source value ``n``."""
        if self.decimal_scale is not None:
            return {self.floor(n)}
        return {wrap_signed(self.floor(n), b) for b in self._bits if -(1 << (b - 1)) <= n < (1 << (b - 1))}

    def compare(self, ref: Reference, op: _LiteralOp, n: int) -> BooleanExpression:
        """``op(partition, n)`` for any unscaled ``n``, with in-range literals only."""
        if n > self.max:
            if op in (LessThan, LessThanOrEqual):
                return NotNull(ref)
            return AlwaysTrue() if op is NotEqualTo else AlwaysFalse()
        if n < self.low:
            if op in (GreaterThan, GreaterThanOrEqual):
                return NotNull(ref)
            return AlwaysTrue() if op is NotEqualTo else AlwaysFalse()
        if n < self.min:
            # Only a decimal's `low` (its minimum truncated) is a partition value below the
            # minimum, so `p <= low` is `p < minimum`, and so on.
            least = self.value(self.min)
            at_low = n == self.low
            if op is LessThan:
                return LessThan(ref, least) if not at_low else AlwaysFalse()
            if op is LessThanOrEqual:
                return LessThan(ref, least)
            if op is GreaterThan:
                return GreaterThanOrEqual(ref, least)
            if op is GreaterThanOrEqual:
                return NotNull(ref) if at_low else GreaterThanOrEqual(ref, least)
            if op is EqualTo:
                return LessThan(ref, least) if at_low else AlwaysFalse()
            return Or(IsNull(ref), GreaterThanOrEqual(ref, least)) if at_low else AlwaysTrue()
        return op(ref, self.value(n))

    def one_of(self, ref: Reference, values: Iterable[int]) -> BooleanExpression:
        normal = {self.value(n) for n in values if self.min <= n <= self.max}
        extra = [self.compare(ref, EqualTo, n) for n in values if not self.min <= n <= self.max]
        return or_(_set_test(ref, In, EqualTo, normal), *extra)

    def none_of(self, ref: Reference, values: Iterable[int]) -> BooleanExpression:
        normal = {self.value(n) for n in values if self.min <= n <= self.max}
        extra = [self.compare(ref, NotEqualTo, n) for n in values if not self.min <= n <= self.max]
        return and_(_set_test(ref, NotIn, NotEqualTo, normal), *extra)

    def at_most(self, ref: Reference, n: int) -> BooleanExpression:
        """Inclusive ``x <= n`` (n a value of the column)."""
        wrapped = [EqualTo(ref, w) for w, first, _ in self.wraps if first <= n]
        return or_(self.compare(ref, LessThanOrEqual, self.floor(n)), *wrapped)

    def at_least(self, ref: Reference, n: int) -> BooleanExpression:
        """Inclusive ``x >= n`` (n a value of the column)."""
        wrapped = [EqualTo(ref, w) for w, _, last in self.wraps if last >= n]
        return or_(self.compare(ref, GreaterThanOrEqual, self.floor(n)), *wrapped)

    def not_wrapped(self, ref: Reference) -> BooleanExpression:
        return _set_test(ref, NotIn, NotEqualTo, {w for w, _, _ in self.wraps})


def _set_test(
    ref: Reference, many: type[SetPredicate], one: _LiteralOp, values: set[Any]
) -> BooleanExpression:
    if not values:
        return AlwaysFalse() if many is In else AlwaysTrue()
    if len(values) == 1:
        return one(ref, next(iter(values)))
    return many(ref, values)


@lru_cache(maxsize=256)
def _number_truncation(width: int, source_type: IcebergType) -> _NumberTruncation:
    return _NumberTruncation(width, source_type)


def _truncate_number_inclusive(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    t = _number_truncation(p.width, p.source_type)
    ref = p.ref
    if isinstance(pred, LiteralPredicate):
        n = t.unscaled(pred.literal)
        if isinstance(pred, LessThan):
            return AlwaysFalse() if n - 1 < t.min else t.at_most(ref, n - 1)
        if isinstance(pred, LessThanOrEqual):
            return t.at_most(ref, n)
        if isinstance(pred, GreaterThan):
            return AlwaysFalse() if n + 1 > t.max else t.at_least(ref, n + 1)
        if isinstance(pred, GreaterThanOrEqual):
            return t.at_least(ref, n)
        if isinstance(pred, EqualTo):
            return t.one_of(ref, t.images(n))
        return None
    if isinstance(pred, In):
        return t.one_of(ref, {i for v in pred.literals for i in t.images(t.unscaled(v))})
    return None


def _truncate_number_strict(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    t = _number_truncation(p.width, p.source_type)
    ref = p.ref
    if isinstance(pred, LiteralPredicate):
        n = t.unscaled(pred.literal)
        # Every row of partition v lies in [v, v + W - 1], except in the wrapped partitions
        # (whose rows are the smallest values): `v < floor(n)` puts them all below n, and a
        # wrapped v is above every floor(n) it could be compared with unless n is larger still.
        if isinstance(pred, LessThan):
            return t.compare(ref, LessThan, t.floor(n))
        if isinstance(pred, LessThanOrEqual):
            return NotNull(ref) if n + 1 > t.max else t.compare(ref, LessThan, t.floor(n + 1))
        if isinstance(pred, GreaterThan):
            return and_(t.compare(ref, GreaterThan, t.floor(n)), t.not_wrapped(ref))
        if isinstance(pred, GreaterThanOrEqual):
            if n - 1 < t.min:
                return NotNull(ref)
            return and_(t.compare(ref, GreaterThan, t.floor(n - 1)), t.not_wrapped(ref))
        if isinstance(pred, NotEqualTo):
            return t.none_of(ref, t.images(n))
        return None
    if isinstance(pred, NotIn):
        return t.none_of(ref, {i for v in pred.literals for i in t.images(t.unscaled(v))})
    return None


# ---------------------------------------------------------------------------------- inclusive


def _ordered_inclusive(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    """Truncate-like projection for the temporal transforms (dates, timestamps)."""
    if isinstance(pred, LiteralPredicate):
        v = pred.literal
        if isinstance(pred, LessThan):
            return p.literal(LessThanOrEqual, v - p.one())
        if isinstance(pred, LessThanOrEqual):
            return p.literal(LessThanOrEqual, v)
        if isinstance(pred, GreaterThan):
            return p.literal(GreaterThanOrEqual, v + p.one())
        if isinstance(pred, GreaterThanOrEqual):
            return p.literal(GreaterThanOrEqual, v)
        if isinstance(pred, EqualTo):
            return p.literal(EqualTo, v)
        return None
    if isinstance(pred, In):
        return p.set_of(In, pred.literals)
    return None


def _array_inclusive(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    if isinstance(pred, LiteralPredicate):
        v = pred.literal
        if isinstance(pred, LessThan | LessThanOrEqual):
            return p.literal(LessThanOrEqual, v)
        if isinstance(pred, GreaterThan | GreaterThanOrEqual):
            return p.literal(GreaterThanOrEqual, v)
        if isinstance(pred, EqualTo):
            return p.literal(EqualTo, v)
        if isinstance(pred, StartsWith):
            return p.literal(StartsWith, v)
        if isinstance(pred, NotStartsWith):
            # A partition value shorter than the width is the whole source value; one of exactly
            # the width is a prefix of it. Only a prefix no longer than the width can exclude.
            if len(v) < p.width:
                return NotStartsWith(p.ref, v)
            if len(v) == p.width:
                return NotEqualTo(p.ref, v)
        return None
    if isinstance(pred, In):
        return p.set_of(In, pred.literals)
    return None


def _fix_inclusive_time(pred: BooleanExpression | None) -> BooleanExpression | None:
    """Also match partition value ``v + 1`` for negative ``v`` (pre-1.0 Java writers)."""
    if isinstance(pred, LessThan | LessThanOrEqual):
        v = pred.literal
        return type(pred)(pred.term, v + 1) if v < 0 else pred
    if isinstance(pred, EqualTo):
        v = pred.literal
        return In(pred.term, {v, v + 1}) if v < 0 else pred
    if isinstance(pred, In):
        fixed = set(pred.literals) | {v + 1 for v in pred.literals if v < 0}
        return In(pred.term, fixed)
    if isinstance(pred, NotEqualTo | NotIn):
        return None
    return pred


def project_inclusive(
    transform: Any, source_type: IcebergType, name: str, pred: Predicate
) -> BooleanExpression | None:
    """The inclusive projection of bound ``pred`` through ``transform`` onto partition field
    ``name``, or None if there is none."""
    p = _projection(transform, source_type, name)
    if p.kind == "identity":
        return _renamed(p, pred)
    if p.kind not in ("bucket", "truncate") and p.kind not in _TEMPORAL:
        return None  # void, or a transform this version does not know
    if isinstance(pred, UnaryPredicate):
        return _unary(p, pred)
    if p.kind == "bucket":
        if isinstance(pred, EqualTo):
            return p.literal(EqualTo, pred.literal)
        if isinstance(pred, In):
            return p.set_of(In, pred.literals)
        return None
    if p.kind == "truncate":
        if _is_array_type(source_type):
            return _array_inclusive(p, pred)
        return _truncate_number_inclusive(p, pred)
    return _fix_inclusive_time(_ordered_inclusive(p, pred))


# ---------------------------------------------------------------------------------- strict


def _ordered_strict(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    if isinstance(pred, LiteralPredicate):
        v = pred.literal
        if isinstance(pred, LessThan):
            return p.literal(LessThan, v)
        if isinstance(pred, LessThanOrEqual):
            return p.literal(LessThan, v + p.one())
        if isinstance(pred, GreaterThan):
            return p.literal(GreaterThan, v)
        if isinstance(pred, GreaterThanOrEqual):
            return p.literal(GreaterThan, v - p.one())
        if isinstance(pred, NotEqualTo):
            return p.literal(NotEqualTo, v)
        return None  # neighbouring values share a partition, so = guarantees nothing
    if isinstance(pred, NotIn):
        return p.set_of(NotIn, pred.literals)
    return None


def _array_strict(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    if isinstance(pred, LiteralPredicate):
        v = pred.literal
        if isinstance(pred, LessThan | LessThanOrEqual):
            return p.literal(LessThan, v)
        if isinstance(pred, GreaterThan | GreaterThanOrEqual):
            return p.literal(GreaterThan, v)
        if isinstance(pred, NotEqualTo):
            return p.literal(NotEqualTo, v)
        if isinstance(pred, StartsWith):
            if len(v) < p.width:
                return StartsWith(p.ref, v)
            if len(v) == p.width:
                return EqualTo(p.ref, v)
            return None
        if isinstance(pred, NotStartsWith):
            if len(v) < p.width:
                return NotStartsWith(p.ref, v)
            if len(v) == p.width:
                return NotEqualTo(p.ref, v)
            return p.literal(NotStartsWith, v)
        return None
    if isinstance(pred, NotIn):
        return p.set_of(NotIn, pred.literals)
    return None


def _fix_strict_time(pred: BooleanExpression | None) -> BooleanExpression | None:
    """Exclude partition value ``v + 1`` for negative ``v`` (pre-1.0 Java writers)."""
    if isinstance(pred, GreaterThan | GreaterThanOrEqual):
        v = pred.literal
        return type(pred)(pred.term, v + 1) if v <= 0 else pred
    if isinstance(pred, NotEqualTo):
        v = pred.literal
        return NotIn(pred.term, {v, v + 1}) if v < 0 else pred
    if isinstance(pred, NotIn):
        return NotIn(pred.term, set(pred.literals) | {v + 1 for v in pred.literals if v < 0})
    if isinstance(pred, EqualTo | In):
        return None
    return pred


def project_strict(
    transform: Any, source_type: IcebergType, name: str, pred: Predicate
) -> BooleanExpression | None:
    """The strict projection of bound ``pred`` through ``transform`` onto partition field
    ``name``, or None if there is none."""
    p = _projection(transform, source_type, name)
    if p.kind == "identity":
        return _renamed(p, pred)
    if p.kind not in ("bucket", "truncate") and p.kind not in _TEMPORAL:
        return None
    if isinstance(pred, UnaryPredicate):
        return _unary(p, pred)
    if p.kind == "bucket":
        if isinstance(pred, NotEqualTo):
            return p.literal(NotEqualTo, pred.literal)
        if isinstance(pred, NotIn):
            return p.set_of(NotIn, pred.literals)
        return None
    if p.kind == "truncate":
        if _is_array_type(source_type):
            return _array_strict(p, pred)
        return _truncate_number_strict(p, pred)
    return _fix_strict_time(_ordered_strict(p, pred))
