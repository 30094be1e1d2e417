"""The harness's own filter machinery on filters deeper than Python's recursion limit (the wide
filters are left-deep chains; describing one in a failure message raised RecursionError), and
its NOT push-down agreeing with evaluating NOT directly."""

from __future__ import annotations

import random

import diff_sql as S
import pytest

from icefloe.expressions import bind
from icefloe.expressions.visitors import expression_evaluator
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType
from icefloe.testing.tables import (
    And,
    Between,
    Filter,
    Not,
    Or,
    Pred,
    describe_filter,
    eval_iceberg,
    filter_columns,
    filter_literals,
    push_not,
    random_filter,
    to_icefloe_expression,
    to_icefloe_text,
)

SCHEMA = Schema(
    NestedField(1, "rid", LongType(), True),
    NestedField(2, "x", IntegerType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "s", StringType()),
)
ROWS = [
    {1: 0, 2: None, 3: None, 4: None},
    {1: 1, 2: 5, 3: float("nan"), 4: "ab"},
    {1: 2, 2: -3, 3: -0.0, 4: ""},
    {1: 3, 2: 2**31 - 1, 3: 2.5, 4: "b"},
]


def _deep(depth: int) -> Filter:
    f: Filter = Pred("eq", "x", 1)
    for i in range(depth):
        if i % 3 == 0:
            f = Not(And(f, Pred("ne", "x", i)))
        elif i % 3 == 1:
            f = Or(f, Between("x", -i, i))
        else:
            f = And(Pred("lt", "d", float(i)), f)
    return f


def test_filters_deeper_than_the_recursion_limit() -> None:
    f = _deep(5000)
    assert describe_filter(f).count("not (") == 1667
    assert to_icefloe_text(f) is not None
    assert filter_columns(f) == {"x", "d"}
    assert len(filter_literals(f)) == 1 + 1667 + 2 * 1667 + 1666
    assert "NOT (" in S.to_sql(f, SCHEMA, S.SPARK)
    to_icefloe_expression(f)
    for row in ROWS:
        eval_iceberg(f, SCHEMA, row)
        S.eval_sql(f, SCHEMA, row, S.SPARK)
    assert not any(isinstance(x, Not) for x in _nodes(push_not(f)))


def _nodes(f: Filter) -> list[Filter]:
    out, stack = [], [f]
    while stack:
        item = stack.pop()
        out.append(item)
        if isinstance(item, And | Or):
            stack += [item.left, item.right]
        elif isinstance(item, Not):
            stack.append(item.child)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_the_model_agrees_with_icefloes_row_evaluator(seed: int) -> None:
    """The model's NOT push-down and leaf semantics match icefloe's documented semantics, which
    its row evaluator implements: the harness compares every read path against the model."""
    rng = random.Random(seed)
    pools = {2: [5, -3, 0, 2**31 - 1], 3: [2.5, -0.0, 0.0, float("inf")], 4: ["ab", "", "b"]}
    for _ in range(30):
        f = random_filter(rng, SCHEMA, pools, depth=3)
        keep = expression_evaluator(SCHEMA.as_struct(), bind(SCHEMA, to_icefloe_expression(f)))
        for row in ROWS:
            want = keep(tuple(row[i] for i in (1, 2, 3, 4)))
            assert eval_iceberg(f, SCHEMA, row) == want, (describe_filter(f), row)
