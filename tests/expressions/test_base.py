from __future__ import annotations

import pickle

import pytest

import icefloe.expressions as ex
from icefloe.errors import ExpressionError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    Or,
    Reference,
    StartsWith,
    and_,
    col,
    not_,
    or_,
)


def test_exports_are_complete() -> None:
    public = {n for n in dir(ex) if not n.startswith("_")} - {"visitors"}
    assert public == set(ex.__all__)
    for name in ex.__all__:
        assert hasattr(ex, name)


def test_structural_equality_and_hash() -> None:
    a = EqualTo("x", 5)
    assert a == EqualTo(Reference("x"), 5)
    assert hash(a) == hash(EqualTo("x", 5))
    assert a != NotEqualTo("x", 5)  # type: ignore[comparison-overlap]
    assert In("x", [1, 2]) == In("x", (2, 1, 1))
    assert len({a, EqualTo("x", 5), LessThan("x", 5)}) == 2
    assert And(a, IsNull("y")) == And(EqualTo("x", 5), IsNull("y"))


def test_immutable() -> None:
    e = EqualTo("x", 1)
    with pytest.raises(AttributeError):
        e.literal = 2  # type: ignore[misc]


def test_pickles() -> None:
    e = Or(And(EqualTo("x", 1), In("s", ["a", "b"])), Not(IsNull("y")))
    assert pickle.loads(pickle.dumps(e)) == e


def test_str_and_repr() -> None:
    assert str(EqualTo("x", "it's")) == "x = 'it''s'"
    assert str(In("x", [2, 1])) == "x in (1, 2)"
    assert str(NotIn("x", [1])) == "x not in (1)"
    assert str(IsNull("x")) == "x is null"
    assert str(StartsWith("s", "a%b")) == "s like 'a\\%b%'"
    assert str(EqualTo("not", 1)) == "`not` = 1"
    assert str(EqualTo("select", 1)) == "select = 1"
    assert repr(EqualTo("x", 1)) == "EqualTo(Reference(name='x'), 1)"
    assert str(And(AlwaysTrue(), AlwaysFalse())) == "(true and false)"


def test_negate() -> None:
    assert EqualTo("x", 1).negate() == NotEqualTo("x", 1)
    assert LessThan("x", 1).negate() == GreaterThanOrEqual("x", 1)
    assert And(IsNull("a"), In("b", [1])).negate() == Or(NotNull("a"), NotIn("b", [1]))
    assert Not(IsNull("a")).negate() == IsNull("a")


def test_and_or_simplify() -> None:
    x, y = EqualTo("x", 1), EqualTo("y", 2)
    assert and_() == AlwaysTrue()
    assert or_() == AlwaysFalse()
    assert and_(AlwaysTrue(), x) == x
    assert and_(x, AlwaysFalse(), y) == AlwaysFalse()
    assert and_(x, y, x) == And(And(x, y), x)
    assert or_(AlwaysFalse(), x) == x
    assert or_(x, AlwaysTrue()) == AlwaysTrue()
    assert not_(AlwaysTrue()) == AlwaysFalse()
    assert not_(Not(x)) == x
    assert not_(x) == Not(x)


def test_operators() -> None:
    e = (col("id") >= 10) & col("s").isin(["a"]) | ~col("b").is_null()
    assert e == Or(And(GreaterThanOrEqual("id", 10), In("s", ["a"])), Not(IsNull("b")))
    assert (col("a") == 1) == EqualTo("a", 1)
    assert (col("a") != 1) == NotEqualTo("a", 1)
    assert col("a").between(1, 2) == And(GreaterThanOrEqual("a", 1), ex.LessThanOrEqual("a", 2))
    assert col("s").startswith("p") == StartsWith("s", "p")
    assert (AlwaysTrue() & EqualTo("a", 1)) == EqualTo("a", 1)


def test_truth_value_is_an_error() -> None:
    with pytest.raises(ExpressionError, match=r"&, \|"):
        bool(EqualTo("x", 1))


@pytest.mark.parametrize("bad", [None, object(), [1]])
def test_bad_literals(bad: object) -> None:
    with pytest.raises(ExpressionError):
        EqualTo("x", bad)


def test_null_literal_hint() -> None:
    with pytest.raises(ExpressionError) as info:
        EqualTo("x", None)
    assert "is_null" in str(info.value)


def test_set_needs_collection() -> None:
    with pytest.raises(ExpressionError, match="collection"):
        In("x", "abc")


def test_bad_terms() -> None:
    with pytest.raises(ExpressionError):
        Reference("")
    with pytest.raises(ExpressionError):
        EqualTo(5, 1)  # type: ignore[arg-type]
    with pytest.raises(ExpressionError):
        And(EqualTo("x", 1), "y")  # type: ignore[arg-type]
