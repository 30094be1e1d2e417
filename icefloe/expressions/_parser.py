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
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

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
    balanced,
)

__all__ = ["parse"]

_GRAMMAR = r"""
?start: or_expr

?or_expr: and_expr (OR and_expr)*

?and_expr: not_expr (AND not_expr)*

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


# The parser calls these as it reduces (no parse tree is built, nothing recurses), so filters of
# any length and nesting parse. A chain `a or b or c ...` arrives as one list of operands and
# becomes a balanced tree; the constants and the rest stay as written (`false or x` is kept).
@v_args(inline=True)
class _ToExpression(Transformer[Token, BooleanExpression]):  # type: ignore[misc]
    def or_expr(self, *operands_and_ops: BooleanExpression | Token) -> BooleanExpression:
        return balanced(Or, list(operands_and_ops[::2]))  # type: ignore[arg-type]

    def and_expr(self, *operands_and_ops: BooleanExpression | Token) -> BooleanExpression:
        return balanced(And, list(operands_and_ops[::2]))  # type: ignore[arg-type]

    def not_(self, _op: Token, child: BooleanExpression) -> BooleanExpression:
        # `not not x` is x, so a long run of NOTs stays one level deep.
        return child.child if isinstance(child, Not) else Not(child)

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


# ------------------------------------------------------------------------------ the fast path
#
# Lark parses about 150,000 tokens a second; a generated filter of 100,000 terms has 400,000.
# Most filters are plain chains of comparisons, which this loop reads about five times faster,
# building exactly the expression the grammar above would (same transformer methods, same
# balanced chains, same NOT rule). Anything it is not sure of (a syntax error, a `$` in a name,
# a keyword where a name is expected, which lark's contextual lexer may still accept) makes it
# give up, and lark parses the text from the start: the grammar stays the one definition of the
# language and of its error messages.


class _GiveUp(Exception):
    """The fast path is not sure of the text; lark decides."""


_TOKEN = re.compile(
    r"(?P<ws>[ \t\f\r\n]+)"
    r"|(?P<STRING>'(?:[^']|'')*')"
    r"|(?P<BACKQUOTED>`(?:[^`]|``)*`)"
    r"|(?P<DOUBLEQUOTED>\"(?:[^\"]|\"\")*\")"
    r"|(?P<NUMBER>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<COMP_OP>==|=|!=|<>|<=|>=|<|>)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_$])"
    r"|(?P<punct>[(),.])"
)
_KEYWORDS = frozenset({"or", "and", "not", "in", "is", "null", "nan", "like", "between", "true", "false"})
_END = ("END", "")
_T = _ToExpression()


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: a keyword's kind is its lower-case text, a bare name's is NAME."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() != pos:
            raise _GiveUp  # a character no token starts with
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        value = m.group()
        if kind == "word":
            lower = value.lower()
            kind = lower if lower in _KEYWORDS else "NAME"
        elif kind == "punct":
            kind = value
        out.append((kind, value))  # type: ignore[arg-type]
    if pos != len(text):
        raise _GiveUp
    out.extend((_END, _END, _END))  # lookahead past the end needs no bounds checks
    return out


_NAME_KINDS = {"NAME": _T.bare_name, "BACKQUOTED": _T.backquoted_name, "DOUBLEQUOTED": _T.doublequoted_name}
_LITERALS: dict[str, Any] = {
    "STRING": _T.string,
    "NUMBER": _T.number,
    "true": lambda _: True,
    "false": lambda _: False,
    "null": lambda _: _NULL,
}


class _Reader:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.i = 0
        self.references: dict[str, Reference] = {}  # one object per column name

    def take(self, kind: str) -> str:
        k, value = self.tokens[self.i]
        if k != kind:
            raise _GiveUp
        self.i += 1
        return value

    def literal(self) -> Any:
        kind, value = self.tokens[self.i]
        convert = _LITERALS.get(kind)
        if convert is None:
            raise _GiveUp
        self.i += 1
        return convert(value)

    def ref(self) -> Reference:
        parts = []
        while True:
            kind, value = self.tokens[self.i]
            name = _NAME_KINDS.get(kind)
            if name is None:
                raise _GiveUp
            parts.append(name(value))
            self.i += 1
            if self.tokens[self.i][0] != ".":
                break
            self.i += 1
        joined = ".".join(parts)
        ref = self.references.get(joined)
        if ref is None:
            ref = self.references[joined] = _T.ref(joined)
        return ref

    def atom(self) -> BooleanExpression:
        kind, value = self.tokens[self.i]
        if kind in ("true", "false"):
            self.i += 1
            return AlwaysTrue() if kind == "true" else AlwaysFalse()
        if kind in ("STRING", "NUMBER"):
            literal = self.literal()
            op = self.take("COMP_OP")
            return _T.compare_reversed(literal, op, self.ref())  # type: ignore[no-any-return]
        ref = self.ref()
        kind, value = self.tokens[self.i]
        self.i += 1
        negated = kind == "not"
        if negated:
            kind, value = self.tokens[self.i]
            self.i += 1
        if kind == "COMP_OP" and not negated:
            return _T.compare(ref, value, self.literal())  # type: ignore[no-any-return]
        if kind == "in":
            self.take("(")
            values = [self.literal()]
            while self.tokens[self.i][0] == ",":
                self.i += 1
                values.append(self.literal())
            self.take(")")
            return _T.not_in(ref, None, None, values) if negated else _T.in_(ref, None, values)  # type: ignore[no-any-return]
        if kind == "like":
            pattern = self.take("STRING")
            return _T.not_like(ref, None, None, pattern) if negated else _T.like(ref, None, pattern)  # type: ignore[no-any-return]
        if kind == "between":
            low = self.literal()
            self.take("and")
            high = self.literal()
            between = _T.between(ref, None, low, None, high)
            return Not(between) if negated else between  # type: ignore[no-any-return]
        if kind == "is" and not negated:
            kind = self.tokens[self.i][0]
            self.i += 1
            if kind == "not":
                kind = self.tokens[self.i][0]
                self.i += 1
                negated = True
            if kind == "null":
                return NotNull(ref) if negated else IsNull(ref)
            if kind == "nan":
                return NotNaN(ref) if negated else IsNaN(ref)
        raise _GiveUp


def _fast_parse(text: str) -> BooleanExpression:
    """The expression the grammar gives for ``text``, or :class:`_GiveUp`. Parentheses and NOTs
    keep their own stack, so no depth of nesting recurses."""
    reader = _Reader(_tokens(text))
    tokens = reader.tokens
    # Per open parenthesis: the enclosing level's OR operands, current AND chain and the NOTs
    # waiting for the parenthesised operand.
    outer: list[tuple[list[BooleanExpression], list[BooleanExpression], int]] = []
    ors: list[BooleanExpression] = []
    ands: list[BooleanExpression] = []
    while True:
        nots = 0
        while tokens[reader.i][0] == "not":
            nots += 1
            reader.i += 1
        if tokens[reader.i][0] == "(":
            reader.i += 1
            outer.append((ors, ands, nots))
            ors, ands = [], []
            continue
        operand = reader.atom()
        while True:
            for _ in range(nots):
                operand = _T.not_(None, operand)
            ands.append(operand)
            kind = tokens[reader.i][0]
            reader.i += 1
            if kind == "and":
                break
            if kind == "or":
                ors.append(balanced(And, ands))
                ands = []
                break
            if kind == ")" and outer:
                ors.append(balanced(And, ands))
                operand = balanced(Or, ors)
                ors, ands, nots = outer.pop()
                continue
            if kind == "END" and not outer:
                ors.append(balanced(And, ands))
                return balanced(Or, ors)
            raise _GiveUp


@cache
def _parser() -> Lark:
    return Lark(
        _GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=False, transformer=_ToExpression()
    )


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
    if len(text) > _CACHED_TEXT_LIMIT:
        return _parse_text(text)
    return _parse(text)


# Expressions are immutable, so a filter text repeated by a dashboard or a loop is parsed once;
# but a cache of 256 generated filters of 100,000 terms would hold gigabytes, so those are not kept.
_CACHED_TEXT_LIMIT = 64 * 1024


@lru_cache(maxsize=256)
def _parse(text: str) -> BooleanExpression:
    return _parse_text(text)


def _parse_text(text: str) -> BooleanExpression:
    try:
        return _fast_parse(text)
    except (_GiveUp, ExpressionError):
        pass  # lark parses it, or says exactly what is wrong
    try:
        result = _parser().parse(text)
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
    if not isinstance(result, BooleanExpression):
        raise ExpressionError(f"cannot parse filter {text!r}: it is not a condition")
    return result
