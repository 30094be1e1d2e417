"""The parser's fast path builds exactly what the lark grammar builds, or gives the text to lark.

Differential tests: every text the fast path accepts must give the same tree (same repr, so the
same nesting) as the grammar, and a text the grammar rejects must never be accepted.
"""

from __future__ import annotations

import decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.errors import ExpressionError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    In,
    IsNaN,
    IsNull,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    parse,
)
from icefloe.expressions._parser import _fast_parse, _GiveUp, _parser


def _lark(text: str) -> str:
    try:
        return repr(_parser().parse(text))
    except Exception as e:  # the grammar's own errors, whatever their kind
        return f"error {type(e).__name__}"


def _fast(text: str) -> str | None:
    try:
        return repr(_fast_parse(text))
    except (_GiveUp, ExpressionError):
        return None


def _agree(text: str) -> bool:
    """Whether the fast path handled ``text`` (and then agreed with the grammar)."""
    fast = _fast(text)
    if fast is None:
        return False
    assert fast == _lark(text), text
    return True


_names = st.sampled_from(["a", "b_1", "my col", "select", "s.x", "Na`me", 'q"t', "OR", "Or_x"])
_literals = st.one_of(
    st.integers(-(10**20), 10**20),
    st.text(max_size=6),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(
        lambda d: d if d.is_finite() else decimal.Decimal(0)
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f if "e" in repr(f) else f * 1.0),
)
_predicates = st.one_of(
    st.builds(
        lambda op, n, v: op(n, v),
        st.sampled_from([EqualTo, NotEqualTo, GreaterThan, LessThanOrEqual]),
        _names,
        _literals,
    ),
    st.builds(lambda op, n: op(n), st.sampled_from([IsNull, NotNull, IsNaN]), _names),
    st.builds(
        lambda op, n, vs: op(n, vs),
        st.sampled_from([In, NotIn]),
        _names,
        st.lists(st.integers(-5, 5), min_size=1, max_size=4),
    ),
    st.builds(
        lambda op, n, v: op(n, v), st.sampled_from([StartsWith, NotStartsWith]), _names, st.text(max_size=4)
    ),
)
_expressions = st.recursive(
    _predicates | st.just(AlwaysTrue()) | st.just(AlwaysFalse()),
    lambda children: st.one_of(
        st.builds(And, children, children),
        st.builds(Or, children, children),
        st.builds(Not, children),
        st.lists(children, min_size=3, max_size=5).map(lambda xs: And(*xs)),
    ),
    max_leaves=10,
)


@settings(max_examples=300)
@given(_expressions)
def test_printed_expressions_take_the_fast_path_and_agree(expr: BooleanExpression) -> None:
    assert _agree(str(expr))


_WORDS = [
    "a", "s.x", "`or`", '"x"', "or", "and", "not", "in", "is", "null", "nan", "like", "between",
    "true", "false", "TRUE", "Not", "(", ")", ",", ".", "=", "==", "!=", "<>", "<", "<=", ">", ">=",
    "1", "-2", "1.5", "1e3", ".5", "'x'", "'a%'", "'%a'", "$x", "a$b", "is$", "or_x",
]  # fmt: skip


@settings(max_examples=2000)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=9), st.sampled_from([" ", "", "\n "]))
def test_token_soup_never_parses_differently(words: list[str], separator: str) -> None:
    # Mostly invalid text: the fast path must give up on it (lark then reports the error), and
    # whatever it does accept must match the grammar.
    _agree(separator.join(words))


def test_texts_the_fast_path_leaves_to_lark() -> None:
    # Lark's contextual lexer reads a keyword as a column name where only a name can stand,
    # and `$` may end a name; the fast path leaves such text to it.
    for text in ["or = 1", "s.in = 1", "a$ = 1", "'x' = and", "a = null", "s like '%a'"]:
        assert _fast(text) is None
    assert parse("or = 1") == EqualTo("or", 1)
    assert parse("a$ = 1") == EqualTo("a$", 1)


def test_examples_agree() -> None:
    for text in [
        "a = 1 or b = 2 and c = 3",
        "not not a = 1",
        "not (not a = 1)",
        "(a = 1 or b = 2) and c = 3",
        "a between 1 and 5 and b = 2",
        "a not between 1 and 5",
        "x in (1, 2, 'a') or x not in (3)",
        "5 < a and 'x' = b",
        "s like 'ab%' or s not like 'a\\%%'",
        "a is not nan or a IS NULL or a is nan or a is not null",
        '`my col` = 1 and "select" = 2 and s.a.b = 3 and `s`."a" = 4',
        "true or false",
        "a=-1 and a<-1 and a=1and b=2",
        "((a = 1)) and not(b = 2)",
        "(((a = 1 or b = 2) or c = 3) or d = 4)",
    ]:
        assert _agree(text), text
