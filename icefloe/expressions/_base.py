"""Boolean expressions: the constants, the logical operators, and the predicates.

One class per predicate serves both states of an expression. Before binding its term is a
:class:`Reference` (a column name) and its literals are plain user values; after
:func:`~icefloe.expressions.bind` the term is a :class:`BoundReference` (the schema field) and the
literals are in icefloe's internal representation for the field's type (see
docs/architecture.md). Keeping one class per operation lets every visitor dispatch on the
operation alone.

Expressions are immutable, hashable and compare structurally, so they can key caches and travel
in pickled scan tasks. ``str()`` gives text that :func:`~icefloe.expressions.parse` reads back
for unbound expressions with plain literals.

Row-level semantics (shared by the Python evaluator and the Arrow translation): a predicate is
never unknown. Comparisons, ``=``, ``in`` and ``starts with`` are false for null (and, following
IEEE 754, ``<``, ``<=``, ``>``, ``>=``, ``=`` are false for NaN); ``!=``, ``not in`` and ``not starts
with`` are true for null, as in Iceberg Java's ``Evaluator`` where ``notEq`` is ``!eq``. ``is nan`` is
false and ``is not nan`` true for null. NOT is defined by pushing it into the predicates
(:func:`~icefloe.expressions.visitors.rewrite_not`): ``not (x < 5)`` means ``x >= 5`` and so drops
nulls, like SQL, while ``not (x = 5)`` means ``x != 5`` and keeps them, like Java. Every
evaluator and every pruning step (projections, metrics, residuals) works on that NOT-free form,
which is what keeps pruning sound. (Java's row ``Evaluator`` instead orders null before every value,
so there ``x < 5`` holds for null; we follow its metrics evaluators, which treat it as false.)
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icefloe.errors import ExpressionError
from icefloe.spec.types import IcebergType, NestedField

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BoundReference",
    "EqualTo",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNaN",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotNaN",
    "NotNull",
    "NotStartsWith",
    "Or",
    "Predicate",
    "Reference",
    "SetPredicate",
    "StartsWith",
    "Term",
    "UnaryPredicate",
    "and_",
    "not_",
    "or_",
]

# User-facing literal types accepted before binding; binding converts them to the column's type.
_LITERAL_TYPES = (
    bool,
    int,
    float,
    decimal.Decimal,
    str,
    bytes,
    uuid.UUID,
    _dt.date,
    _dt.time,
)


class BooleanExpression(ABC):
    """Base of every filter expression. ``&``, ``|`` and ``~`` build simplified combinations."""

    @abstractmethod
    def negate(self) -> BooleanExpression:
        """The logical complement, with the negation pushed into predicates where possible."""

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        if not isinstance(other, BooleanExpression):
            return NotImplemented
        return and_(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        if not isinstance(other, BooleanExpression):
            return NotImplemented
        return or_(self, other)

    def __invert__(self) -> BooleanExpression:
        return not_(self)

    def __bool__(self) -> bool:
        # `a < b < c` or `x and y` on expressions is almost always a mistake in user code.
        raise ExpressionError(
            f"the truth value of the expression {self} is undefined",
            hint="combine expressions with &, | and ~ (or and_/or_/not_), not with and/or/not",
        )


@dataclass(frozen=True)
class AlwaysTrue(BooleanExpression):
    def negate(self) -> BooleanExpression:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True)
class AlwaysFalse(BooleanExpression):
    def negate(self) -> BooleanExpression:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "false"


def _check_expression(value: object, role: str) -> None:
    if not isinstance(value, BooleanExpression):
        raise ExpressionError(f"{role} must be a boolean expression, got {value!r}")


@dataclass(frozen=True)
class And(BooleanExpression):
    left: BooleanExpression
    right: BooleanExpression

    def __post_init__(self) -> None:
        _check_expression(self.left, "the left side of and")
        _check_expression(self.right, "the right side of and")

    def negate(self) -> BooleanExpression:
        return Or(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} and {self.right})"


@dataclass(frozen=True)
class Or(BooleanExpression):
    left: BooleanExpression
    right: BooleanExpression

    def __post_init__(self) -> None:
        _check_expression(self.left, "the left side of or")
        _check_expression(self.right, "the right side of or")

    def negate(self) -> BooleanExpression:
        return And(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} or {self.right})"


@dataclass(frozen=True)
class Not(BooleanExpression):
    child: BooleanExpression

    def __post_init__(self) -> None:
        _check_expression(self.child, "the operand of not")

    def negate(self) -> BooleanExpression:
        return self.child

    def __str__(self) -> str:
        return f"(not {self.child})"


def and_(*expressions: BooleanExpression) -> BooleanExpression:
    """The conjunction of ``expressions``, dropping ``AlwaysTrue`` and collapsing to
    ``AlwaysFalse`` as soon as one operand is false. No operands gives ``AlwaysTrue``."""
    result: BooleanExpression = AlwaysTrue()
    for e in expressions:
        _check_expression(e, "an operand of and_")
        if isinstance(e, AlwaysFalse):
            return e
        if isinstance(e, AlwaysTrue):
            continue
        result = e if isinstance(result, AlwaysTrue) else And(result, e)
    return result


def or_(*expressions: BooleanExpression) -> BooleanExpression:
    """The disjunction of ``expressions``, dropping ``AlwaysFalse`` and collapsing to
    ``AlwaysTrue`` as soon as one operand is true. No operands gives ``AlwaysFalse``."""
    result: BooleanExpression = AlwaysFalse()
    for e in expressions:
        _check_expression(e, "an operand of or_")
        if isinstance(e, AlwaysTrue):
            return e
        if isinstance(e, AlwaysFalse):
            continue
        result = e if isinstance(result, AlwaysFalse) else Or(result, e)
    return result


def not_(expression: BooleanExpression) -> BooleanExpression:
    """The negation of ``expression``; constants and double negations simplify."""
    _check_expression(expression, "the operand of not_")
    if isinstance(expression, AlwaysTrue | AlwaysFalse | Not):
        return expression.negate()
    return Not(expression)


# ---------------------------------------------------------------------------------- terms

_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "null", "nan", "like", "between", "true", "false"})


def _quote_name(name: str) -> str:
    """A column name as the parser reads it back: dotted parts stay bare when they can."""
    parts = name.split(".")
    if all(_SIMPLE_NAME.fullmatch(p) and p.lower() not in _KEYWORDS for p in parts):
        return name
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Reference:
    """A column named by the user: a top-level name or a dotted path into structs."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ExpressionError(f"a column reference needs a non-empty name, got {self.name!r}")

    def __str__(self) -> str:
        return _quote_name(self.name)


@dataclass(frozen=True)
class BoundReference:
    """A column resolved against a schema. ``name`` is the field's full dotted name in that
    schema, kept so that a bound expression prints, and unbinds, by the name the user knows."""

    field: NestedField
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.field.name)

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def field_type(self) -> IcebergType:
        return self.field.field_type

    def __str__(self) -> str:
        return _quote_name(self.name)


Term = Reference | BoundReference


def _check_term(term: object) -> None:
    if not isinstance(term, Reference | BoundReference):
        raise ExpressionError(
            f"a predicate's term must be a column reference, got {term!r}",
            hint="use Reference('name') or a plain column name string",
        )


def _as_term(term: Term | str) -> Term:
    return Reference(term) if isinstance(term, str) else term


def _check_literal(value: Any, term: Term) -> Any:
    """The literal to store: bytearray/memoryview become bytes so predicates stay hashable."""
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if value is None:
        raise ExpressionError(
            f"cannot compare column {term} with null",
            hint="use is_null / is not null to test for nulls",
            column=str(term),
        )
    if not isinstance(value, _LITERAL_TYPES):
        raise ExpressionError(
            f"unsupported literal {value!r} ({type(value).__name__}) for column {term}",
            hint="literals must be bool, int, float, Decimal, str, bytes, UUID, date, datetime or time",
            column=str(term),
        )
    return value


def format_literal(value: Any) -> str:
    """A literal as filter text: strings quoted with '' escaping, numbers bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, decimal.Decimal):
        # Always with a point, never an exponent: the parser reads that form back as a Decimal.
        text = format(value, "f")
        return text if "." in text or not value.is_finite() else text + "."
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"'{value}'"
        # Always with an exponent: the parser reads that form back as a float.
        text = repr(value)
        return text if "e" in text else text + "e0"
    if isinstance(value, _dt.date | _dt.time | uuid.UUID):
        return "'" + (value.isoformat() if not isinstance(value, uuid.UUID) else str(value)) + "'"
    return repr(value)


# ---------------------------------------------------------------------------------- predicates


class Predicate(BooleanExpression):
    """A test of one column. ``term`` is a :class:`Reference` until bound."""

    term: Term

    @property
    def is_bound(self) -> bool:
        return isinstance(self.term, BoundReference)

    @property
    def ref(self) -> BoundReference:
        """The bound term; :class:`ExpressionError` on an unbound predicate."""
        if not isinstance(self.term, BoundReference):
            raise ExpressionError(f"predicate {self} is not bound", hint="bind it to a schema first")
        return self.term


@dataclass(frozen=True, init=False)
class UnaryPredicate(Predicate):
    term: Term
    _symbol: ClassVar[str] = ""
    _negation: ClassVar[type[UnaryPredicate]]

    def __init__(self, term: Term | str) -> None:
        term = _as_term(term)
        _check_term(term)
        object.__setattr__(self, "term", term)

    def negate(self) -> BooleanExpression:
        return self._negation(self.term)

    def __str__(self) -> str:
        return f"{self.term} {self._symbol}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r})"


@dataclass(frozen=True, init=False)
class LiteralPredicate(Predicate):
    term: Term
    literal: Any
    _symbol: ClassVar[str] = ""
    _negation: ClassVar[type[LiteralPredicate]]

    def __init__(self, term: Term | str, literal: Any) -> None:
        term = _as_term(term)
        _check_term(term)
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "literal", _check_literal(literal, term))

    def negate(self) -> BooleanExpression:
        return self._negation(self.term, self.literal)

    def __str__(self) -> str:
        return f"{self.term} {self._symbol} {format_literal(self.literal)}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {self.literal!r})"


@dataclass(frozen=True, init=False)
class SetPredicate(Predicate):
    term: Term
    literals: frozenset[Any] = field(default_factory=frozenset)
    _symbol: ClassVar[str] = ""
    _negation: ClassVar[type[SetPredicate]]

    def __init__(self, term: Term | str, literals: Iterable[Any]) -> None:
        term = _as_term(term)
        _check_term(term)
        if isinstance(literals, str | bytes):
            raise ExpressionError(
                f"{type(self).__name__} on column {term} needs a collection of values, got {literals!r}",
                hint="wrap a single value in a list: [value]",
                column=str(term),
            )
        values = frozenset(_check_literal(v, term) for v in literals)
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "literals", values)

    def negate(self) -> BooleanExpression:
        return self._negation(self.term, self.literals)

    def _sorted_literals(self) -> list[Any]:
        try:
            return sorted(self.literals)
        except TypeError:
            return sorted(self.literals, key=repr)

    def __str__(self) -> str:
        return (
            f"{self.term} {self._symbol} ("
            + ", ".join(format_literal(v) for v in self._sorted_literals())
            + ")"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {self._sorted_literals()!r})"


@dataclass(frozen=True, init=False, repr=False)
class IsNull(UnaryPredicate):
    _symbol: ClassVar[str] = "is null"


@dataclass(frozen=True, init=False, repr=False)
class NotNull(UnaryPredicate):
    _symbol: ClassVar[str] = "is not null"


@dataclass(frozen=True, init=False, repr=False)
class IsNaN(UnaryPredicate):
    _symbol: ClassVar[str] = "is nan"


@dataclass(frozen=True, init=False, repr=False)
class NotNaN(UnaryPredicate):
    _symbol: ClassVar[str] = "is not nan"


@dataclass(frozen=True, init=False, repr=False)
class EqualTo(LiteralPredicate):
    _symbol: ClassVar[str] = "="


@dataclass(frozen=True, init=False, repr=False)
class NotEqualTo(LiteralPredicate):
    _symbol: ClassVar[str] = "!="


@dataclass(frozen=True, init=False, repr=False)
class LessThan(LiteralPredicate):
    _symbol: ClassVar[str] = "<"


@dataclass(frozen=True, init=False, repr=False)
class LessThanOrEqual(LiteralPredicate):
    _symbol: ClassVar[str] = "<="


@dataclass(frozen=True, init=False, repr=False)
class GreaterThan(LiteralPredicate):
    _symbol: ClassVar[str] = ">"


@dataclass(frozen=True, init=False, repr=False)
class GreaterThanOrEqual(LiteralPredicate):
    _symbol: ClassVar[str] = ">="


def _like_prefix(prefix: str) -> str:
    return "'" + re.sub(r"([%_\\])", r"\\\1", prefix).replace("'", "''") + "%'"


@dataclass(frozen=True, init=False, repr=False)
class StartsWith(LiteralPredicate):
    _symbol: ClassVar[str] = "like"

    def __str__(self) -> str:
        if isinstance(self.literal, str):
            return f"{self.term} like {_like_prefix(self.literal)}"
        return f"{self.term} starts with {format_literal(self.literal)}"


@dataclass(frozen=True, init=False, repr=False)
class NotStartsWith(LiteralPredicate):
    _symbol: ClassVar[str] = "not like"

    def __str__(self) -> str:
        if isinstance(self.literal, str):
            return f"{self.term} not like {_like_prefix(self.literal)}"
        return f"{self.term} not starts with {format_literal(self.literal)}"


@dataclass(frozen=True, init=False, repr=False)
class In(SetPredicate):
    _symbol: ClassVar[str] = "in"


@dataclass(frozen=True, init=False, repr=False)
class NotIn(SetPredicate):
    _symbol: ClassVar[str] = "not in"


IsNull._negation = NotNull
NotNull._negation = IsNull
IsNaN._negation = NotNaN
NotNaN._negation = IsNaN
EqualTo._negation = NotEqualTo
NotEqualTo._negation = EqualTo
LessThan._negation = GreaterThanOrEqual
GreaterThanOrEqual._negation = LessThan
LessThanOrEqual._negation = GreaterThan
GreaterThan._negation = LessThanOrEqual
StartsWith._negation = NotStartsWith
NotStartsWith._negation = StartsWith
In._negation = NotIn
NotIn._negation = In
