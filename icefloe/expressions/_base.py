"""Boolean expressions: the constants, the logical operators, and the predicates.

One class per predicate serves both states of an expression. Before binding its term is a
:class:`Reference` (a column name) and its literals are plain user values; after
:func:`~icefloe.expressions.bind` the term is a :class:`BoundReference` (the schema field) and the
literals are in icefloe's internal representation for the field's type (see
docs/architecture.md). Keeping one class per operation lets every visitor dispatch on the
operation alone.

Expressions are immutable, hashable and compare structurally (up to how an and/or chain is
nested, and double negation), so they can key caches and travel in pickled scan tasks. ``str()``
gives text that :func:`~icefloe.expressions.parse` reads back for unbound expressions with plain
literals. Filters of any size and depth work: see the notes on and, or and not below.

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
from typing import Any, ClassVar, final

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

    # Levels of and/or/not nodes down to the deepest leaf (0 for a predicate or a constant).
    _depth: int = 0

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


@final
@dataclass(frozen=True)
class AlwaysTrue(BooleanExpression):
    def negate(self) -> BooleanExpression:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "true"


@final
@dataclass(frozen=True)
class AlwaysFalse(BooleanExpression):
    def negate(self) -> BooleanExpression:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "false"


# Concrete classes already seen to be expressions: isinstance against an ABC costs a Python-level
# call, and large filters check hundreds of thousands of operands.
_EXPRESSION_TYPES: set[type] = set()


def _check_expression(value: object, role: str) -> None:
    kind = type(value)
    if kind in _EXPRESSION_TYPES:
        return
    if not isinstance(value, BooleanExpression):
        raise ExpressionError(f"{role} must be a boolean expression, got {value!r}")
    _EXPRESSION_TYPES.add(kind)


# ------------------------------------------------------------------ and, or, not
#
# Filters can be huge: generated filters with 100,000 terms exist, and ``functools.reduce`` over
# ``|`` builds a left-deep tree 100,000 levels deep. So nothing below recurses over an expression:
# equality, hashing, str(), repr(), pickling and negation walk it with an explicit stack, chains
# of one operator are built balanced (:func:`and_`, :func:`or_`, ``And(a, b, c, ...)``), and
# binding rebuilds every chain balanced (see :mod:`icefloe.expressions._tree`).
#
# Equality is structural up to associativity and double negation: an and/or chain compares by its
# operands in order however it is nested, and ``Not(Not(x)) == x``. That keeps the shape of a
# tree, which balancing changes, out of equality: ``parse(str(e)) == e`` whatever built ``e``.

_AND, _OR, _NOT = "&", "|", "~"


class _Compound(BooleanExpression):
    """What And, Or and Not share: the iterative structural methods."""

    # Results of pure functions of this immutable node, kept on first use: its hash, its form
    # without NOT (rewrite_not), its last binding and, for a bound node, the columns it resolved
    # (bind). Class defaults, so that reading one does not materialise the instance's __dict__.
    _hash: int | None = None
    _without_not: BooleanExpression | bool | None = None
    _last_binding: tuple[Any, bool, BooleanExpression] | None = None
    _bound_columns: tuple[BoundReference, ...] | None = None

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, BooleanExpression):
            return NotImplemented
        if isinstance(other, _Compound):
            mine, theirs = self._hash, other._hash
            if mine is not None and theirs is not None and mine != theirs:
                return False
        return _same_tree(self, other) or _canonical(self) == _canonical(other)

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            canonical = _canonical(self)
            # A double negation of a predicate equals the predicate, so it hashes like it.
            cached = hash(canonical[0]) if len(canonical) == 1 else hash(tuple(canonical))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __str__(self) -> str:
        if self._depth <= _SHALLOW:
            return _short_text(self)
        return _text(self)

    def __repr__(self) -> str:
        return _repr(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle's own walk recurses once per level; a flat postfix list of the leaves does not.
        return (_from_postfix, (tuple(_postfix(self)),))


@final
@dataclass(frozen=True, eq=False, repr=False, init=False)
class And(_Compound):
    """``left and right``. ``And(a, b, c, ...)`` builds a balanced chain of all its operands."""

    left: BooleanExpression
    right: BooleanExpression

    def __init__(self, left: BooleanExpression, right: BooleanExpression, *more: BooleanExpression) -> None:
        _init_binary(self, "and", left, right, more)

    def negate(self) -> BooleanExpression:
        return _negation(self)


@final
@dataclass(frozen=True, eq=False, repr=False, init=False)
class Or(_Compound):
    """``left or right``. ``Or(a, b, c, ...)`` builds a balanced chain of all its operands."""

    left: BooleanExpression
    right: BooleanExpression

    def __init__(self, left: BooleanExpression, right: BooleanExpression, *more: BooleanExpression) -> None:
        _init_binary(self, "or", left, right, more)

    def negate(self) -> BooleanExpression:
        return _negation(self)


@final
@dataclass(frozen=True, eq=False, repr=False)
class Not(_Compound):
    child: BooleanExpression

    def __post_init__(self) -> None:
        _check_expression(self.child, "the operand of not")
        object.__setattr__(self, "_depth", self.child._depth + 1)

    def negate(self) -> BooleanExpression:
        return self.child


# The walks below test node types with `type(x) is And` rather than isinstance: And, Or and Not are
# final, and an isinstance check against these ABCs costs a Python call per node.


def _init_binary(
    node: And | Or,
    word: str,
    left: BooleanExpression,
    right: BooleanExpression,
    more: tuple[BooleanExpression, ...],
) -> None:
    _check_expression(left, f"the left side of {word}")
    _check_expression(right, f"the right side of {word}")
    if more:
        for e in more:
            _check_expression(e, f"an operand of {word}")
        top = balanced(type(node), [left, right, *more])
        assert isinstance(top, And | Or)
        left, right = top.left, top.right
    object.__setattr__(node, "left", left)
    object.__setattr__(node, "right", right)
    object.__setattr__(node, "_depth", 1 + max(left._depth, right._depth))


def make_binary(cls: type[And | Or], left: BooleanExpression, right: BooleanExpression) -> And | Or:
    """``cls(left, right)`` without checking operands that are known to be expressions."""
    node = object.__new__(cls)
    object.__setattr__(node, "left", left)
    object.__setattr__(node, "right", right)
    object.__setattr__(node, "_depth", 1 + (left._depth if left._depth > right._depth else right._depth))
    return node


def balanced(cls: type[And | Or], operands: list[BooleanExpression]) -> BooleanExpression:
    """A chain of ``cls`` over ``operands`` (at least one expression), in order, ``ceil(log2(n))``
    levels deep. Pairing neighbours level by level gives ``And(And(a, b), c)`` for three."""
    items = operands
    while len(items) > 1:
        paired: list[BooleanExpression] = [
            make_binary(cls, items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)
        ]
        if len(items) % 2:
            paired.append(items[-1])
        items = paired
    return items[0]


def skip_double_not(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` without its leading pairs of NOT."""
    while type(expr) is Not and type(expr.child) is Not:
        expr = expr.child.child  # type: ignore[attr-defined]
    return expr


def chain_operands(expr: And | Or, cancel_double_not: bool = True) -> list[BooleanExpression]:
    """The operands of the chain of ``type(expr)`` rooted at ``expr``, in order, however it is
    nested; with ``cancel_double_not`` a doubly negated operand of the same type joins too."""
    cls = type(expr)
    operands: list[BooleanExpression] = []
    stack: list[Any] = [expr]
    while stack:
        e = stack.pop()
        if cancel_double_not and type(e) is Not:
            e = skip_double_not(e)
        if type(e) is cls:
            stack.append(e.right)
            stack.append(e.left)
        else:
            operands.append(e)
    return operands


def _same_tree(a: BooleanExpression, b: BooleanExpression) -> bool:
    """Whether ``a`` and ``b`` are the same tree: the quick test before :func:`_canonical`."""
    stack: list[Any] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is And or kind is Or:
            stack.append((x.right, y.right))
            stack.append((x.left, y.left))
        elif kind is Not:
            stack.append((x.child, y.child))
        elif x != y:
            return False
    return True


def _canonical(expr: BooleanExpression) -> list[Any]:
    """The postfix form equality compares: leaves, ``(op, n)`` for a flattened chain of n
    operands and ``~`` for a NOT, with double negations cancelled."""
    out: list[Any] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is Not:
            item = skip_double_not(item)
            kind = type(item)
        if kind is And or kind is Or:
            operands = chain_operands(item)
            stack.append((_AND if kind is And else _OR, len(operands)))
            stack.extend(reversed(operands))
        elif kind is Not:
            stack.append(_NOT)
            stack.append(item.child)
        else:
            out.append(item)  # a leaf, or a marker whose operands are out already
    return out


def _postfix(expr: BooleanExpression) -> list[Any]:
    """The exact tree as a postfix list: leaves and the markers ``&``, ``|`` and ``~``."""
    out: list[Any] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is And or kind is Or:
            stack.append(_AND if kind is And else _OR)
            stack.append(item.right)
            stack.append(item.left)
        elif kind is Not:
            stack.append(_NOT)
            stack.append(item.child)
        else:
            out.append(item)
    return out


def _from_postfix(tokens: tuple[Any, ...]) -> BooleanExpression:
    stack: list[BooleanExpression] = []
    for t in tokens:
        if type(t) is not str:
            _check_expression(t, "a pickled operand")
            stack.append(t)
        elif t == _NOT:
            stack[-1] = Not(stack[-1])
        else:
            right = stack.pop()
            stack[-1] = make_binary(And if t == _AND else Or, stack[-1], right)
    (result,) = stack
    return result


# Up to this depth str() may recurse (once per level, well within Python's limit); it is faster.
_SHALLOW = 64


def _short_text(expr: BooleanExpression) -> str:
    kind = type(expr)
    if kind is And or kind is Or:
        operands = chain_operands(expr, cancel_double_not=False)  # type: ignore[arg-type]
        return "(" + (" and " if kind is And else " or ").join([_short_text(o) for o in operands]) + ")"
    if kind is Not:
        return f"(not {_short_text(expr.child)})"  # type: ignore[attr-defined]
    return str(expr)


def _text(expr: BooleanExpression) -> str:
    """Filter text; a chain prints flat, ``(a and b and c)``, which parses back to an equal one."""
    parts: list[str] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            parts.append(item)
        elif kind is And or kind is Or:
            separator = " and " if kind is And else " or "
            operands = chain_operands(item, cancel_double_not=False)
            stack.append(")")
            for i in range(len(operands) - 1, 0, -1):
                stack.append(operands[i])
                stack.append(separator)
            stack.append(operands[0])
            stack.append("(")
        elif kind is Not:
            stack.append(")")
            stack.append(item.child)
            stack.append("(not ")
        else:
            parts.append(str(item))
    return "".join(parts)


def _repr(expr: BooleanExpression) -> str:
    parts: list[str] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            parts.append(item)
        elif kind is And or kind is Or:
            stack.extend((")", item.right, ", right=", item.left, f"{kind.__name__}(left="))
        elif kind is Not:
            stack.extend((")", item.child, "Not(child="))
        else:
            parts.append(repr(item))
    return "".join(parts)


def _negation(expr: And | Or) -> BooleanExpression:
    """De Morgan, down to the NOTs and predicates, without recursion."""
    out: list[BooleanExpression] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            right = out.pop()
            out[-1] = make_binary(Or if item == _AND else And, out[-1], right)
        elif kind is And or kind is Or:
            stack.append(_AND if kind is And else _OR)
            stack.append(item.right)
            stack.append(item.left)
        else:
            out.append(item.negate())
    return out[0]


def _simplified(
    cls: type[And | Or],
    absorbing: type[AlwaysTrue | AlwaysFalse],
    neutral: type[AlwaysTrue | AlwaysFalse],
    role: str,
    expressions: tuple[BooleanExpression, ...],
) -> BooleanExpression:
    operands: list[BooleanExpression] = []
    for e in expressions:
        _check_expression(e, role)
        kind = type(e)
        if kind is absorbing:
            return e
        if kind is not neutral:
            operands.append(e)
    if len(operands) == 2:
        return make_binary(cls, operands[0], operands[1])
    return balanced(cls, operands) if operands else neutral()


def and_(*expressions: BooleanExpression) -> BooleanExpression:
    """The conjunction of ``expressions`` as a balanced chain, dropping ``AlwaysTrue`` and
    collapsing to ``AlwaysFalse`` as soon as one operand is false. No operands gives
    ``AlwaysTrue``."""
    return _simplified(And, AlwaysFalse, AlwaysTrue, "an operand of and_", expressions)


def or_(*expressions: BooleanExpression) -> BooleanExpression:
    """The disjunction of ``expressions`` as a balanced chain, dropping ``AlwaysFalse`` and
    collapsing to ``AlwaysTrue`` as soon as one operand is true. No operands gives
    ``AlwaysFalse``."""
    return _simplified(Or, AlwaysTrue, AlwaysFalse, "an operand of or_", expressions)


def not_(expression: BooleanExpression) -> BooleanExpression:
    """The negation of ``expression``; constants and double negations simplify."""
    _check_expression(expression, "the operand of not_")
    if type(expression) in (AlwaysTrue, AlwaysFalse, Not):
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

    def with_term(self, term: Term) -> Predicate:
        """This predicate on ``term`` with its literals as they are (already checked): binding
        and unbinding a 100,000-term filter need not check them all again."""
        _check_term(term)
        return self._as(type(self), term)

    def _as(self, cls: type[Predicate], term: Term | None = None) -> Predicate:
        """A ``cls`` predicate with this one's (checked) term and literals."""
        copy = object.__new__(cls)
        object.__setattr__(copy, "term", self.term if term is None else term)
        for name in self._literal_fields:
            object.__setattr__(copy, name, getattr(self, name))
        return copy

    _literal_fields: ClassVar[tuple[str, ...]] = ()


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
        return self._as(self._negation)

    def __str__(self) -> str:
        return f"{self.term} {self._symbol}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r})"


@dataclass(frozen=True, init=False)
class LiteralPredicate(Predicate):
    term: Term
    literal: Any
    _symbol: ClassVar[str] = ""
    _literal_fields: ClassVar[tuple[str, ...]] = ("literal",)
    _negation: ClassVar[type[LiteralPredicate]]

    def __init__(self, term: Term | str, literal: Any) -> None:
        term = _as_term(term)
        _check_term(term)
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "literal", _check_literal(literal, term))

    def negate(self) -> BooleanExpression:
        return self._as(self._negation)

    def __str__(self) -> str:
        return f"{self.term} {self._symbol} {format_literal(self.literal)}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {self.literal!r})"


@dataclass(frozen=True, init=False)
class SetPredicate(Predicate):
    term: Term
    literals: frozenset[Any] = field(default_factory=frozenset)
    _symbol: ClassVar[str] = ""
    _literal_fields: ClassVar[tuple[str, ...]] = ("literals",)
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
        return self._as(self._negation)

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
