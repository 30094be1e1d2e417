"""rewrite_not, referenced_field_ids and the Python row evaluator."""

from __future__ import annotations

import math
from typing import Any

import pytest

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
    NotStartsWith,
    Or,
    StartsWith,
    bind,
    parse,
)
from icefloe.expressions.visitors import expression_evaluator, referenced_field_ids, rewrite_not
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, IntegerType, NestedField, StringType, StructType


def test_rewrite_not() -> None:
    e = Not(And(EqualTo("a", 1), Or(Not(IsNull("b")), LessThan("c", 3))))
    assert rewrite_not(e) == Or(NotEqualTo("a", 1), And(IsNull("b"), GreaterThanOrEqual("c", 3)))
    assert rewrite_not(Not(AlwaysTrue())) == AlwaysFalse()
    assert rewrite_not(Not(Not(In("a", [1])))) == In("a", [1])
    assert rewrite_not(Not(StartsWith("s", "x"))) == NotStartsWith("s", "x")
    assert rewrite_not(And(AlwaysTrue(), Not(In("a", [1, 2])))) == NotIn("a", [1, 2])


def test_referenced_field_ids(schema: Schema) -> None:
    bound = bind(schema, parse("id = 1 and (st.a > 2 or not s like 'x%') and i is null"))
    assert referenced_field_ids(bound) == {1, 16, 10, 2}
    assert referenced_field_ids(AlwaysTrue()) == set()


ROW_SCHEMA = Schema(
    NestedField(1, "x", IntegerType()),
    NestedField(2, "d", DoubleType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "st", StructType(NestedField(5, "a", IntegerType()))),
)


@pytest.mark.parametrize(
    ("text", "row", "expected"),
    [
        ("x = 1", (1, None, None, None), True),
        ("x = 1", (None, None, None, None), False),
        ("x != 1", (None, None, None, None), True),  # Iceberg: notEq of null is true
        ("x not in (1, 2)", (None, None, None, None), True),
        ("x in (1, 2)", (None, None, None, None), False),
        ("x < 5", (None, None, None, None), False),
        ("not x < 5", (None, None, None, None), False),  # NOT pushes in: x >= 5
        ("not x = 5", (None, None, None, None), True),  # x != 5
        ("not (x = 5 and x < 3)", (None, None, None, None), True),
        ("d > 1", (None, math.nan, None, None), False),
        ("d < 1", (None, math.nan, None, None), False),
        ("d != 1", (None, math.nan, None, None), True),
        ("d is nan", (None, math.nan, None, None), True),
        ("d is nan", (None, None, None, None), False),
        ("d is not nan", (None, None, None, None), True),
        ("s like 'ab%'", (None, None, "abc", None), True),
        ("s like 'ab%'", (None, None, None, None), False),
        ("s not like 'ab%'", (None, None, None, None), True),
        ("st.a = 3", (None, None, None, (3,)), True),
        ("st.a = 3", (None, None, None, None), False),
        ("st.a is null", (None, None, None, None), True),
        ("x >= 1 and x <= 3 or s = 'z'", (4, None, "z", None), True),
    ],
)
def test_row_evaluator(text: str, row: tuple[Any, ...], expected: bool) -> None:
    evaluate = expression_evaluator(ROW_SCHEMA.as_struct(), bind(ROW_SCHEMA, parse(text)))
    assert evaluate(row) is expected


def test_evaluator_constants() -> None:
    assert expression_evaluator(ROW_SCHEMA.as_struct(), AlwaysTrue())(()) is True
    assert expression_evaluator(ROW_SCHEMA.as_struct(), AlwaysFalse())(()) is False


def test_evaluator_needs_bound_expression() -> None:
    from icefloe.errors import ExpressionError

    with pytest.raises(ExpressionError, match="not bound"):
        expression_evaluator(ROW_SCHEMA.as_struct(), NotNull("x"))


def test_visitor_exports_are_complete() -> None:
    import inspect

    import icefloe.expressions.visitors as visitors

    public = {
        n for n in dir(visitors) if not n.startswith("_") and not inspect.ismodule(getattr(visitors, n))
    }
    assert public == set(visitors.__all__)
