"""``col("id") >= 10``: a small builder that turns Python operators into predicates.

A :class:`Column` is not itself an expression; it exists so that ``==`` and ``<`` can build
predicates while :class:`~icefloe.expressions.Reference` keeps ordinary structural equality.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.expressions._base import (
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Reference,
    StartsWith,
    and_,
)

__all__ = ["Column", "col"]


class Column:
    """Builds predicates on one column; see :func:`col`."""

    __slots__ = ("reference",)
    __hash__ = None  # type: ignore[assignment]  # == builds a predicate, so columns are unhashable

    def __init__(self, name: str) -> None:
        self.reference = Reference(name)

    def __repr__(self) -> str:
        return f"col({self.reference.name!r})"

    def __eq__(self, value: Any) -> BooleanExpression:  # type: ignore[override]
        return EqualTo(self.reference, value)

    def __ne__(self, value: Any) -> BooleanExpression:  # type: ignore[override]
        return NotEqualTo(self.reference, value)

    def __lt__(self, value: Any) -> BooleanExpression:
        return LessThan(self.reference, value)

    def __le__(self, value: Any) -> BooleanExpression:
        return LessThanOrEqual(self.reference, value)

    def __gt__(self, value: Any) -> BooleanExpression:
        return GreaterThan(self.reference, value)

    def __ge__(self, value: Any) -> BooleanExpression:
        return GreaterThanOrEqual(self.reference, value)

    def isin(self, values: Iterable[Any]) -> BooleanExpression:
        return In(self.reference, values)

    def notin(self, values: Iterable[Any]) -> BooleanExpression:
        return NotIn(self.reference, values)

    def is_null(self) -> BooleanExpression:
        return IsNull(self.reference)

    def is_not_null(self) -> BooleanExpression:
        return NotNull(self.reference)

    def is_nan(self) -> BooleanExpression:
        return IsNaN(self.reference)

    def is_not_nan(self) -> BooleanExpression:
        return NotNaN(self.reference)

    def startswith(self, prefix: str) -> BooleanExpression:
        return StartsWith(self.reference, prefix)

    def not_startswith(self, prefix: str) -> BooleanExpression:
        return NotStartsWith(self.reference, prefix)

    def between(self, low: Any, high: Any) -> BooleanExpression:
        """``low <= column <= high``."""
        return and_(GreaterThanOrEqual(self.reference, low), LessThanOrEqual(self.reference, high))


def col(name: str) -> Column:
    """A column to build predicates with: ``col("id") >= 10``, ``col("s").isin(["a", "b"])``,
    ``(col("a") == 1) & ~col("b").is_null()``. Dotted names reach into structs."""
    return Column(name)
