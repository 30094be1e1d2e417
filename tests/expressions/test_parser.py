from __future__ import annotations

import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import ExpressionError
from icefloe.expressions import (
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
    StartsWith,
    parse,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ts >= '2024-01-01' and id in (1, 2)",
            And(GreaterThanOrEqual("ts", "2024-01-01"), In("id", [1, 2])),
        ),
        ("a = 1 or b == 2", Or(EqualTo("a", 1), EqualTo("b", 2))),
        ("a != 1", NotEqualTo("a", 1)),
        ("a <> 1", NotEqualTo("a", 1)),
        ("a < -1", LessThan("a", -1)),
        ("a <= 1.50", LessThanOrEqual("a", decimal.Decimal("1.50"))),
        ("a > 1e3", GreaterThan("a", 1000.0)),
        ("a >= -2.5E-1", GreaterThanOrEqual("a", -0.25)),
        ("5 < a", GreaterThan("a", 5)),
        ("'x' = a", EqualTo("a", "x")),
        ("a not in (1, 2)", NotIn("a", [1, 2])),
        ("a IS NULL", IsNull("a")),
        ("a is not null", NotNull("a")),
        ("a is nan", IsNaN("a")),
        ("a Is Not NaN", NotNaN("a")),
        ("s like 'ab%'", StartsWith("s", "ab")),
        ("s not like 'ab%'", NotStartsWith("s", "ab")),
        ("s like '50\\%%'", StartsWith("s", "50%")),
        ("s = 'it''s'", EqualTo("s", "it's")),
        ("a between 1 and 5", And(GreaterThanOrEqual("a", 1), LessThanOrEqual("a", 5))),
        ("a not between 1 and 5", Not(And(GreaterThanOrEqual("a", 1), LessThanOrEqual("a", 5)))),
        ("b = true and c = FALSE", And(EqualTo("b", True), EqualTo("c", False))),
        ("not a = 1", Not(EqualTo("a", 1))),
        ("NOT (a = 1 OR b = 2)", Not(Or(EqualTo("a", 1), EqualTo("b", 2)))),
        ("a = 1 or b = 2 and c = 3", Or(EqualTo("a", 1), And(EqualTo("b", 2), EqualTo("c", 3)))),
        ("(a = 1 or b = 2) and c = 3", And(Or(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3))),
        ("`my col` = 1", EqualTo("my col", 1)),
        ('"select" = 1', EqualTo("select", 1)),
        ("`a``b` = 1", EqualTo("a`b", 1)),
        ("s.a.b = 1", EqualTo("s.a.b", 1)),
        ('`s`."a" = 1', EqualTo("s.a", 1)),
        (
            "android = 1 and notes = 2 and island = 3",
            And(And(EqualTo("android", 1), EqualTo("notes", 2)), EqualTo("island", 3)),
        ),
        ("true", AlwaysTrue()),
        ("false or a = 1", Or(AlwaysFalse(), EqualTo("a", 1))),
        (
            "x between 1 and 2 and y = 3",
            And(And(GreaterThanOrEqual("x", 1), LessThanOrEqual("x", 2)), EqualTo("y", 3)),
        ),
    ],
)
def test_parse(text: str, expected: BooleanExpression) -> None:
    assert parse(text) == expected


def test_literal_types_stay_untyped() -> None:
    e = parse("a in (3, 1.5, 2e0, 'x')")
    assert isinstance(e, In)
    assert {type(v) for v in e.literals} == {int, decimal.Decimal, float, str}
    b = parse("a = true")
    assert isinstance(b, EqualTo) and b.literal is True


@pytest.mark.parametrize(
    ("text", "position"),
    [("a = ", 3), ("a == = 3", 5), ("a in ()", 6), ("(a = 1", 6), ("a = 1 and", 9), ("a ~ 1", 2)],
)
def test_syntax_errors_carry_position(text: str, position: int) -> None:
    with pytest.raises(ExpressionError, match="cannot parse filter") as info:
        parse(text)
    # Lark reports either the offending token or the end of input; both sit near the problem.
    assert abs(info.value.context["position"] - position) <= 2
    assert info.value.context["line"] == 1


def test_error_on_second_line() -> None:
    with pytest.raises(ExpressionError) as info:
        parse("a = 1\nand b ~ 2")
    assert info.value.context["line"] == 2


@pytest.mark.parametrize("text", ["s like '%a'", "s like 'a_c%'", "s like 'abc'", "s like 'a%b%'"])
def test_non_prefix_like_is_rejected(text: str) -> None:
    with pytest.raises(ExpressionError, match="prefix"):
        parse(text)


@pytest.mark.parametrize("text", ["a = null", "a in (1, null)", "null = a", "a between null and 1"])
def test_null_literals_are_rejected(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse(text)


@pytest.mark.parametrize("text", ["", "   ", "a", "1 = 1", "a = b"])
def test_not_a_condition(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse(text)


# ------------------------------------------------------------------ round trip str() -> parse()

_names = st.sampled_from(["a", "b_1", "my col", "select", "s.x", "Na`me"])
_literals = st.one_of(
    st.integers(-(10**20), 10**20),
    st.text(max_size=8),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(
        lambda d: d if d.is_finite() else decimal.Decimal(0)
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f if "e" in repr(f) else f * 1.0),
)


def _predicates() -> st.SearchStrategy[BooleanExpression]:
    lit_ops = st.sampled_from(
        [EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual]
    )
    unary = st.sampled_from([IsNull, NotNull, IsNaN, NotNaN])
    return st.one_of(
        st.builds(lambda op, n, v: op(n, v), lit_ops, _names, _literals),
        st.builds(lambda op, n: op(n), unary, _names),
        st.builds(
            lambda op, n, vs: op(n, vs),
            st.sampled_from([In, NotIn]),
            _names,
            st.lists(st.integers(-5, 5) | st.text(max_size=3), min_size=1, max_size=4),
        ),
        st.builds(
            lambda op, n, v: op(n, v),
            st.sampled_from([StartsWith, NotStartsWith]),
            _names,
            st.text(max_size=5),
        ),
    )


_expressions = st.recursive(
    _predicates() | st.just(AlwaysTrue()) | st.just(AlwaysFalse()),
    lambda children: st.one_of(
        st.builds(And, children, children),
        st.builds(Or, children, children),
        st.builds(Not, children),
    ),
    max_leaves=8,
)


@given(_expressions)
def test_str_round_trips(expr: BooleanExpression) -> None:
    assert parse(str(expr)) == expr
