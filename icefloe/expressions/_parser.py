"""Parsing SQL-like filter text into unbound expressions, with a lark LALR grammar.

Literals stay untyped until binding: ``'...'`` is a str, ``12`` an int, ``1.5`` a Decimal (so
decimal columns compare exactly), ``1e3`` a float, ``true``/``false`` a bool. Keywords are
case-insensitive; a column whose name is a keyword or holds odd characters is written in
backquotes or double quotes. ``like`` accepts a prefix pattern only (``'abc%'``); ``\\%``, ``\\_`` and
``\\\\`` escape the wildcard characters.
"""

from __future__ import annotations

import decimal
import re
from functools import cache, lru_cache
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from icefloe.errors import ExpressionError
from icefloe.expressions._base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Reference,
    StartsWith,
)

__all__ = ["parse"]

_GRAMMAR = r"""
?start: or_expr

?or_expr: and_expr
        | or_expr OR and_expr             -> or_

?and_expr: not_expr
         | and_expr AND not_expr          -> and_

?not_expr: NOT not_expr                   -> not_
         | atom

?atom: "(" or_expr ")"
     | TRUE                               -> always_true
     | FALSE                              -> always_false
     | ref COMP_OP literal                -> compare
     | plain_literal COMP_OP ref          -> compare_reversed
     | ref IN "(" literal_list ")"        -> in_
     | ref NOT IN "(" literal_list ")"    -> not_in
     | ref IS NULL                        -> is_null
     | ref IS NOT NULL                    -> not_null
     | ref IS NAN                         -> is_nan
     | ref IS NOT NAN                     -> not_nan
     | ref LIKE STRING                    -> like
     | ref NOT LIKE STRING                -> not_like
     | ref BETWEEN literal AND literal    -> between
     | ref NOT BETWEEN literal AND literal -> not_between

literal_list: literal ("," literal)*

?plain_literal: STRING                    -> string
              | NUMBER                    -> number

?literal: STRING                          -> string
        | NUMBER                          -> number
        | TRUE                            -> true
        | FALSE                           -> false
        | NULL                            -> null

ref: name ("." name)*
?name: NAME                               -> bare_name
     | BACKQUOTED                         -> backquoted_name
     | DOUBLEQUOTED                       -> doublequoted_name

COMP_OP: "==" | "=" | "!=" | "<>" | "<=" | ">=" | "<" | ">"

OR.2: /or\b/i
AND.2: /and\b/i
NOT.2: /not\b/i
IN.2: /in\b/i
IS.2: /is\b/i
NULL.2: /null\b/i
NAN.2: /nan\b/i
LIKE.2: /like\b/i
BETWEEN.2: /between\b/i
TRUE.2: /true\b/i
FALSE.2: /false\b/i

NAME: /[A-Za-z_][A-Za-z0-9_$]*/
BACKQUOTED: /`([^`]|``)*`/
DOUBLEQUOTED: /"([^"]|"")*"/
STRING: /'([^']|'')*'/
NUMBER: /[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/

%import common.WS
%ignore WS
"""

_COMPARISONS: dict[
    str, type[EqualTo | NotEqualTo | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual]
] = {
    "=": EqualTo,
    "==": EqualTo,
    "!=": NotEqualTo,
    "<>": NotEqualTo,
    "<": LessThan,
    "<=": LessThanOrEqual,
    ">": GreaterThan,
    ">=": GreaterThanOrEqual,
}
# `5 < x` is `x > 5`.
_MIRRORED = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _Null:
    """The ``null`` literal: accepted by the grammar so that the error can explain itself."""


_NULL = _Null()


def _check_not_null(value: Any, ref: Reference) -> Any:
    if value is _NULL:
        raise ExpressionError(
            f"cannot compare column {ref} with null",
            hint=f"write '{ref} is null' or '{ref} is not null'",
            column=ref.name,
        )
    return value


_LIKE_TOKEN = re.compile(r"\\[\\%_]|[%_]|[^\\%_]+|\\")


def _like_prefix(pattern: str, ref: Reference) -> str:
    """The prefix of a ``'prefix%'`` pattern; any other pattern is refused."""
    prefix: list[str] = []
    tokens = _LIKE_TOKEN.findall(pattern)
    for i, tok in enumerate(tokens):
        if tok == "%" and i == len(tokens) - 1:
            return "".join(prefix)
        if tok in ("%", "_"):
            break
        prefix.append(tok[1] if tok.startswith("\\") and len(tok) == 2 else tok)
    raise ExpressionError(
        f"unsupported like pattern {pattern!r} for column {ref}: only prefix patterns such as "
        "'abc%' are supported",
        hint="escape literal % and _ with a backslash; use = for exact matches",
        column=ref.name,
    )


@v_args(inline=True)
class _ToExpression(Transformer[Token, BooleanExpression]):  # type: ignore[misc]
    def or_(self, left: BooleanExpression, _op: Token, right: BooleanExpression) -> BooleanExpression:
        return Or(left, right)

    def and_(self, left: BooleanExpression, _op: Token, right: BooleanExpression) -> BooleanExpression:
        return And(left, right)

    def not_(self, _op: Token, child: BooleanExpression) -> BooleanExpression:
        return Not(child)

    def always_true(self, _tok: Token) -> BooleanExpression:
        return AlwaysTrue()

    def always_false(self, _tok: Token) -> BooleanExpression:
        return AlwaysFalse()

    def compare(self, ref: Reference, op: Token, value: Any) -> BooleanExpression:
        return _COMPARISONS[str(op)](ref, _check_not_null(value, ref))

    def compare_reversed(self, value: Any, op: Token, ref: Reference) -> BooleanExpression:
        return _COMPARISONS[_MIRRORED[str(op)]](ref, _check_not_null(value, ref))

    def in_(self, ref: Reference, _in: Token, values: list[Any]) -> BooleanExpression:
        return In(ref, [_check_not_null(v, ref) for v in values])

    def not_in(self, ref: Reference, _not: Token, _in: Token, values: list[Any]) -> BooleanExpression:
        return NotIn(ref, [_check_not_null(v, ref) for v in values])

    def is_null(self, ref: Reference, *_kw: Token) -> BooleanExpression:
        return IsNull(ref)

    def not_null(self, ref: Reference, *_kw: Token) -> BooleanExpression:
        return NotNull(ref)

    def is_nan(self, ref: Reference, *_kw: Token) -> BooleanExpression:
        return IsNaN(ref)

    def not_nan(self, ref: Reference, *_kw: Token) -> BooleanExpression:
        return NotNaN(ref)

    def like(self, ref: Reference, _like: Token, pattern: Token) -> BooleanExpression:
        return StartsWith(ref, _like_prefix(self.string(pattern), ref))

    def not_like(self, ref: Reference, _not: Token, _like: Token, pattern: Token) -> BooleanExpression:
        return NotStartsWith(ref, _like_prefix(self.string(pattern), ref))

    def between(self, ref: Reference, _b: Token, low: Any, _and: Token, high: Any) -> BooleanExpression:
        return And(
            GreaterThanOrEqual(ref, _check_not_null(low, ref)),
            LessThanOrEqual(ref, _check_not_null(high, ref)),
        )

    def not_between(
        self, ref: Reference, _n: Token, _b: Token, low: Any, _and: Token, high: Any
    ) -> BooleanExpression:
        return Not(self.between(ref, _b, low, _and, high))

    def literal_list(self, *values: Any) -> list[Any]:
        return list(values)

    def string(self, tok: Token) -> str:
        return str(tok)[1:-1].replace("''", "'")

    def number(self, tok: Token) -> int | float | decimal.Decimal:
        text = str(tok)
        if "e" in text or "E" in text:
            return float(text)
        if "." in text:
            return decimal.Decimal(text)
        return int(text)

    def true(self, _tok: Token) -> bool:
        return True

    def false(self, _tok: Token) -> bool:
        return False

    def null(self, _tok: Token) -> _Null:
        return _NULL

    def ref(self, *parts: str) -> Reference:
        return Reference(".".join(parts))

    def bare_name(self, tok: Token) -> str:
        return str(tok)

    def backquoted_name(self, tok: Token) -> str:
        return str(tok)[1:-1].replace("``", "`")

    def doublequoted_name(self, tok: Token) -> str:
        return str(tok)[1:-1].replace('""', '"')


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=False)


def _describe(e: UnexpectedInput, text: str) -> str:
    if isinstance(e, UnexpectedEOF):
        return "the filter ends too early"
    if isinstance(e, UnexpectedCharacters):
        return f"unexpected character {text[e.pos_in_stream]!r}"
    if isinstance(e, UnexpectedToken):
        if e.token.type == "$END":
            return "the filter ends too early"
        return f"unexpected {str(e.token)!r}"
    return "syntax error"


def parse(text: str) -> BooleanExpression:
    """Parse a filter such as ``"ts >= '2024-01-01' and id in (1, 2)"`` into an unbound
    expression. :class:`ExpressionError` (with ``position``, ``line`` and ``column`` fields) on bad
    syntax."""
    if not isinstance(text, str):
        raise ExpressionError(f"a filter must be text, got {type(text).__name__}")
    if not text.strip():
        raise ExpressionError("the filter is empty", hint="use 'true' to select every row")
    return _parse(text)


# Expressions are immutable, so a filter text repeated by a dashboard or a loop is parsed once.
@lru_cache(maxsize=256)
def _parse(text: str) -> BooleanExpression:
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        at_end = isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END")
        pos = len(text.rstrip()) if at_end or e.pos_in_stream is None else e.pos_in_stream
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        pointer = text.splitlines()[line - 1] if text.splitlines() else text
        raise ExpressionError(
            f"cannot parse filter: {_describe(e, text)} at line {line}, column {column}\n"
            f"  {pointer}\n  {' ' * (int(column or 1) - 1)}^",
            hint="quote string literals with single quotes and odd column names with backquotes",
            position=pos,
            line=line,
            column_number=column,
            text=text,
        ) from None
    try:
        result = _ToExpression().transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, ExpressionError):
            raise e.orig_exc from None
        raise
    if not isinstance(result, BooleanExpression):
        raise ExpressionError(f"cannot parse filter {text!r}: it is not a condition")
    return result
