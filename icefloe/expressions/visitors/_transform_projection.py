"""How one bound predicate on a source column projects through one partition transform.

An *inclusive* projection holds for the partition of every row that satisfies the predicate
(so a false projection prunes the partition); a *strict* projection holds only for partitions
whose every row satisfies it. ``None`` means no projection exists: callers use ``AlwaysTrue`` for
inclusive and ``AlwaysFalse`` for strict. The rules are Iceberg Java's:

- identity keeps the predicate; void has no projection.
- bucket projects ``=``/``in`` inclusively and ``!=``/``not in`` strictly.
- truncate of ints and decimals turns open bounds into closed ones before truncating (inclusive
  ``x < 10`` becomes ``p <= truncate(9)``); truncate of strings/binary keeps ranges closed
  (inclusive) or open (strict), and handles ``starts with`` by comparing the prefix's length with
  the width.
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
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotStartsWith,
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from icefloe.spec.types import BinaryType, DecimalType, FixedType, IcebergType, StringType

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


# ---------------------------------------------------------------------------------- inclusive


def _ordered_inclusive(p: _Projection, pred: Predicate) -> BooleanExpression | None:
    """Truncate-like projection for ordered numbers (ints, decimals, dates, timestamps)."""
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
        return _ordered_inclusive(p, pred)
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
        return _ordered_strict(p, pred)
    return _fix_strict_time(_ordered_strict(p, pred))
