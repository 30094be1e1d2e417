"""Spark SQL conditions (text or Columns) as icefloe filters, for pruning and conflict detection.

A row-level change evaluates its condition in Spark, with Spark's semantics; icefloe only uses a
translation of it to choose the files to read (partition and metrics pruning), to remove whole
files by metadata, and as the conflict filter its commit validates against::

    condition (text, or a Column's SQL) --sqlglot (Spark dialect)--> conjuncts
      -> per conjunct: a predicate on target columns with literals -> icefloe predicate
         (comparisons, IN, BETWEEN, IS [NOT] NULL, LIKE 'prefix%', NOT / AND / OR)
      -> t.k = s.k (a target column equal to a source column): a join key, whose range in the
         source (min, max, or the values when few) becomes a target predicate

A translation ``implies`` the condition's TRUE rows (every row the condition selects passes it);
``exact`` also means it selects no other row, so a file it must match by metadata can go whole.
SQL's three-valued logic is kept: ``a != 1`` is TRUE only for a non-null ``a`` (icefloe's ``!=``
also keeps nulls), ``NOT p`` is TRUE when ``p`` is FALSE, not NULL. Columns of float and double
type are never translated (NaN orders differently in Spark and Iceberg), nor are timestamp
literals (their text depends on the session time zone).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.errors import IcefloeError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    bind,
)
from icefloe.spec.types import BooleanType, DateType, DecimalType, IntegerType, LongType, StringType

if TYPE_CHECKING:
    from pyspark.sql import Column

    from icefloe.spec.schema import Schema

__all__ = ["ConditionInfo", "JoinKey", "analyze_condition", "condition_sql", "parse_condition"]

_TRANSLATABLE = (IntegerType, LongType, StringType, DateType, DecimalType, BooleanType)


def condition_sql(condition: str | Column | None) -> str | None:
    """The SQL text of a condition: text as it is, a Column's expression as Spark prints it
    (None when Spark cannot say, e.g. over Spark Connect)."""
    if condition is None or isinstance(condition, str):
        return condition
    try:
        jc: Any = condition._jc  # type: ignore[attr-defined]
        return str(jc.expr().sql())
    except Exception:
        return None


def parse_condition(text: str | None) -> Any:
    """The sqlglot tree of ``text`` (Spark dialect), or None when it does not parse."""
    if not text:
        return None
    import sqlglot

    try:
        return sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        return None


@dataclass(frozen=True)
class JoinKey:
    """``target_column = <source expression>`` in a merge condition."""

    target_column: str
    source_sql: str


@dataclass(frozen=True)
class ConditionInfo:
    """What a condition tells about the target rows it selects."""

    implied: BooleanExpression  # every selected row passes it
    exact: bool  # it passes no other row
    join_keys: tuple[JoinKey, ...] = ()


Resolver = Callable[[Any], str | None]


def resolver(schema: Schema, target_names: Sequence[str], source_columns: Sequence[str] = ()) -> Resolver:
    """A function from a sqlglot Column to the target column it names, or None. A qualified
    name belongs to the target when its qualifier is one of ``target_names`` (the alias, the
    table name); an unqualified one when the target has it and the source does not."""
    by_lower = {f.name.lower(): f.name for f in schema.fields}
    targets = {n.lower() for n in target_names if n}
    source = {c.lower() for c in source_columns}

    def resolve(node: Any) -> str | None:
        from sqlglot import exp

        if not isinstance(node, exp.Column) or node.args.get("db") is not None:
            return None
        name = str(node.name).lower()
        qualifier = node.table
        if qualifier:
            return by_lower.get(name) if qualifier.lower() in targets else None
        if name in source:
            return None
        return by_lower.get(name)

    return resolve


def _source_column(node: Any, target_names: Sequence[str], source_columns: Sequence[str]) -> bool:
    from sqlglot import exp

    if not isinstance(node, exp.Column) or node.args.get("db") is not None:
        return False
    targets = {n.lower() for n in target_names if n}
    qualifier = node.table
    if qualifier:
        return qualifier.lower() not in targets
    return str(node.name).lower() in {c.lower() for c in source_columns}


def analyze_condition(
    condition: str | Column | None,
    schema: Schema,
    target_names: Sequence[str],
    source_columns: Sequence[str] = (),
) -> ConditionInfo:
    """The icefloe filter a condition implies on the target, and its join keys (see module)."""
    tree = parse_condition(condition_sql(condition)) if condition is not None else None
    if condition is None:
        return ConditionInfo(AlwaysTrue(), True)
    if tree is None:
        return ConditionInfo(AlwaysTrue(), False)
    resolve = resolver(schema, target_names, source_columns)
    translator = _Translator(schema, resolve)
    parts: list[BooleanExpression] = []
    exact = True
    keys: list[JoinKey] = []
    for conjunct in _conjuncts(tree):
        key = _join_key(conjunct, resolve, target_names, source_columns)
        if key is not None:
            keys.append(key)
            exact = False
            continue
        expr, ok = translator.translate(conjunct, False)
        if expr is None:
            exact = False
            continue
        parts.append(expr)
        exact = exact and ok
    implied: BooleanExpression = AlwaysTrue()
    for p in parts:
        implied = p if isinstance(implied, AlwaysTrue) else And(implied, p)
    return ConditionInfo(implied, exact, tuple(keys))


def _conjuncts(node: Any) -> list[Any]:
    from sqlglot import exp

    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [*_conjuncts(node.this), *_conjuncts(node.expression)]
    return [node]


def _join_key(
    node: Any, resolve: Resolver, target_names: Sequence[str], source_columns: Sequence[str]
) -> JoinKey | None:
    from sqlglot import exp

    if not isinstance(node, exp.EQ):
        return None
    left, right = node.this, node.expression
    for a, b in ((left, right), (right, left)):
        target = resolve(a)
        if target is not None and _source_column(b, target_names, source_columns):
            return JoinKey(target, b.sql(dialect="spark"))
    return None


class _Translator:
    def __init__(self, schema: Schema, resolve: Resolver) -> None:
        self.schema = schema
        self.resolve = resolve

    def _column(self, node: Any) -> str | None:
        name = self.resolve(node)
        if name is None:
            return None
        t = self.schema.find_field(name).field_type
        return name if isinstance(t, _TRANSLATABLE) else None

    def _literal(self, node: Any, column: str) -> tuple[bool, Any]:
        """(ok, value) of a literal compared with ``column``."""
        from sqlglot import exp

        t = self.schema.find_field(column).field_type
        negative = False
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Neg):
            negative, node = True, node.this
        if isinstance(node, exp.Null):
            return True, None
        if isinstance(node, exp.Boolean) and isinstance(t, BooleanType):
            return True, bool(node.this)
        if isinstance(node, exp.Cast | exp.TryCast) and isinstance(node.this, exp.Literal):
            to = node.to.this if node.to is not None else None
            if isinstance(t, DateType) and to == exp.DataType.Type.DATE and node.this.is_string:
                return True, str(node.this.this)
            return False, None
        if not isinstance(node, exp.Literal):
            return False, None
        text = str(node.this)
        if node.is_string:
            if negative or not isinstance(t, StringType | DateType):
                return False, None
            return True, text
        if isinstance(t, IntegerType | LongType):
            try:
                value = int(text)
            except ValueError:
                return False, None
            return True, -value if negative else value
        if isinstance(t, DecimalType):
            try:
                d = decimal.Decimal(text)
            except decimal.InvalidOperation:
                return False, None
            return True, -d if negative else d
        return False, None

    def _comparison(self, node: Any, negate: bool) -> tuple[BooleanExpression | None, bool]:
        from sqlglot import exp

        ops: Mapping[type, tuple[type, type]] = {
            exp.EQ: (EqualTo, NotEqualTo),
            exp.NEQ: (NotEqualTo, EqualTo),
            exp.GT: (GreaterThan, LessThanOrEqual),
            exp.GTE: (GreaterThanOrEqual, LessThan),
            exp.LT: (LessThan, GreaterThanOrEqual),
            exp.LTE: (LessThanOrEqual, GreaterThan),
        }
        flipped: Mapping[type, type] = {
            EqualTo: EqualTo,
            NotEqualTo: NotEqualTo,
            GreaterThan: LessThan,
            GreaterThanOrEqual: LessThanOrEqual,
            LessThan: GreaterThan,
            LessThanOrEqual: GreaterThanOrEqual,
        }
        pair = ops.get(type(node))
        if pair is None:
            return None, False
        op = pair[1] if negate else pair[0]
        left, right = node.this, node.expression
        column = self._column(left)
        other = right
        if column is None:
            column, other = self._column(right), left
            op = flipped[op]
        if column is None:
            return None, False
        ok, value = self._literal(other, column)
        if not ok:
            return None, False
        if value is None:
            return AlwaysFalse(), True  # a comparison with NULL is never TRUE (nor FALSE)
        expr: BooleanExpression = op(column, value)
        if op is NotEqualTo:
            expr = And(expr, NotNull(column))  # SQL: TRUE only for a non-null value
        return expr, True

    def translate(self, node: Any, negate: bool) -> tuple[BooleanExpression | None, bool]:
        """An icefloe filter passing every row for which ``node`` is TRUE (FALSE when
        ``negate``), and whether it passes only those."""

        expr, exact = self._translate(node, negate)
        if expr is None:
            return None, False
        try:
            bind(self.schema, expr)
        except IcefloeError:
            return None, False
        return expr, exact

    def _translate(self, node: Any, negate: bool) -> tuple[BooleanExpression | None, bool]:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Not):
            return self._translate(node.this, not negate)
        if isinstance(node, exp.And | exp.Or):
            left, lok = self._translate(node.this, negate)
            right, rok = self._translate(node.expression, negate)
            conjunction = isinstance(node, exp.And) != negate  # NOT (a OR b) = NOT a AND NOT b
            if conjunction:
                if left is None and right is None:
                    return None, False
                if left is None or right is None:
                    return (left if left is not None else right), False
                return And(left, right), lok and rok
            if left is None or right is None:
                return None, False
            return Or(left, right), lok and rok
        if isinstance(node, exp.Boolean):
            return (AlwaysTrue() if bool(node.this) != negate else AlwaysFalse()), True
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            column = self.resolve(node.this)
            if column is None:
                return None, False
            return (NotNull(column) if negate else IsNull(column)), True
        if isinstance(node, exp.In) and not node.args.get("query"):
            return self._in(node, negate)
        if isinstance(node, exp.Between):
            column = self._column(node.this)
            if column is None:
                return None, False
            ok_low, low = self._literal(node.args["low"], column)
            ok_high, high = self._literal(node.args["high"], column)
            if not (ok_low and ok_high) or low is None or high is None:
                return None, False
            if negate:
                return Or(LessThan(column, low), GreaterThan(column, high)), True
            return And(GreaterThanOrEqual(column, low), LessThanOrEqual(column, high)), True
        if isinstance(node, exp.Like) and not node.args.get("escape"):
            return self._like(node, negate)
        return self._comparison(node, negate)

    def _in(self, node: Any, negate: bool) -> tuple[BooleanExpression | None, bool]:
        column = self._column(node.this)
        if column is None:
            return None, False
        values = []
        has_null = False
        for item in node.expressions:
            ok, value = self._literal(item, column)
            if not ok:
                return None, False
            if value is None:
                has_null = True
            else:
                values.append(value)
        if negate:
            if has_null:
                return AlwaysFalse(), True  # x NOT IN (.., NULL) is never TRUE
            return (And(NotIn(column, values), NotNull(column)) if values else NotNull(column)), True
        return (In(column, values) if values else AlwaysFalse()), True

    def _like(self, node: Any, negate: bool) -> tuple[BooleanExpression | None, bool]:
        from sqlglot import exp

        column = self.resolve(node.this)
        pattern = node.expression
        if column is None or not isinstance(self.schema.find_field(column).field_type, StringType):
            return None, False
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            return None, False
        text = str(pattern.this)
        prefix = text[:-1]
        if not text.endswith("%") or any(c in prefix for c in "%_\\"):
            return None, False
        if negate:
            return And(NotStartsWith(column, prefix), NotNull(column)), True
        return StartsWith(column, prefix), True
