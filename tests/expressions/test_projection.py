"""Partition projections: Java's rules on examples, and soundness on random values.

Soundness: for every row value ``v`` and predicate ``p``, ``p(v)`` implies the inclusive
projection holds for ``transform(v)``, and the strict projection holding for ``transform(v)``
implies ``p(v)``.
"""

from __future__ import annotations

import decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    parse,
)
from icefloe.expressions.visitors import expression_evaluator, inclusive_projection, strict_projection
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)
from icefloe.transforms import parse_transform

D = decimal.Decimal


def _setup(source_type: IcebergType, transform: str) -> tuple[Schema, PartitionSpec]:
    schema = Schema(NestedField(1, "x", source_type))
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform(transform), "p"))
    return schema, spec


def _inclusive(source_type: IcebergType, transform: str, expr: BooleanExpression) -> BooleanExpression:
    schema, spec = _setup(source_type, transform)
    return inclusive_projection(schema, spec)(expr)


def _strict(source_type: IcebergType, transform: str, expr: BooleanExpression) -> BooleanExpression:
    schema, spec = _setup(source_type, transform)
    return strict_projection(schema, spec)(expr)


@pytest.mark.parametrize(
    ("source", "transform", "expr", "inclusive", "strict"),
    [
        (IntegerType(), "identity", LessThan("x", 5), LessThan("p", 5), LessThan("p", 5)),
        (IntegerType(), "void", EqualTo("x", 5), AlwaysTrue(), AlwaysFalse()),
        (IntegerType(), "bucket[16]", EqualTo("x", 34), EqualTo("p", 3), AlwaysFalse()),
        (IntegerType(), "bucket[16]", NotEqualTo("x", 34), AlwaysTrue(), NotEqualTo("p", 3)),
        (IntegerType(), "bucket[16]", LessThan("x", 34), AlwaysTrue(), AlwaysFalse()),
        (IntegerType(), "bucket[16]", IsNull("x"), IsNull("p"), IsNull("p")),
        # Java's rules, plus the partition 2147483646 that Java's int arithmetic gives the values
        # within 10 of the minimum (truncate[10] of -2147483648 wraps around): kept where `x < 10`
        # may hold for its rows, and never claimed by a strict projection of `x > 9`.
        (
            IntegerType(),
            "truncate[10]",
            LessThan("x", 10),
            Or(LessThanOrEqual("p", 0), EqualTo("p", 2147483646)),
            LessThan("p", 10),
        ),
        (
            IntegerType(),
            "truncate[10]",
            LessThanOrEqual("x", 10),
            Or(LessThanOrEqual("p", 10), EqualTo("p", 2147483646)),
            LessThan("p", 10),
        ),
        (
            IntegerType(),
            "truncate[10]",
            GreaterThan("x", 9),
            GreaterThanOrEqual("p", 10),
            And(GreaterThan("p", 0), NotEqualTo("p", 2147483646)),
        ),
        (
            IntegerType(),
            "truncate[10]",
            GreaterThanOrEqual("x", 10),
            GreaterThanOrEqual("p", 10),
            And(GreaterThan("p", 0), NotEqualTo("p", 2147483646)),
        ),
        (IntegerType(), "truncate[10]", EqualTo("x", 15), EqualTo("p", 10), AlwaysFalse()),
        (IntegerType(), "truncate[10]", NotEqualTo("x", 15), AlwaysTrue(), NotEqualTo("p", 10)),
        (IntegerType(), "truncate[10]", In("x", [1, 15]), In("p", [0, 10]), AlwaysFalse()),
        (IntegerType(), "truncate[10]", NotIn("x", [1, 15]), AlwaysTrue(), NotIn("p", [0, 10])),
        (
            DecimalType(9, 2),
            "truncate[10]",
            LessThan("x", D("1.00")),
            LessThanOrEqual("p", D("0.90")),
            LessThan("p", D("1.00")),
        ),
        (StringType(), "truncate[2]", LessThan("x", "abc"), LessThanOrEqual("p", "ab"), LessThan("p", "ab")),
        (StringType(), "truncate[2]", EqualTo("x", "abc"), EqualTo("p", "ab"), AlwaysFalse()),
        (StringType(), "truncate[3]", StartsWith("x", "ab"), StartsWith("p", "ab"), StartsWith("p", "ab")),
        (StringType(), "truncate[2]", StartsWith("x", "ab"), StartsWith("p", "ab"), EqualTo("p", "ab")),
        (StringType(), "truncate[2]", StartsWith("x", "abc"), StartsWith("p", "ab"), AlwaysFalse()),
        (
            StringType(),
            "truncate[3]",
            NotStartsWith("x", "ab"),
            NotStartsWith("p", "ab"),
            NotStartsWith("p", "ab"),
        ),
        (StringType(), "truncate[2]", NotStartsWith("x", "ab"), NotEqualTo("p", "ab"), NotEqualTo("p", "ab")),
        (StringType(), "truncate[2]", NotStartsWith("x", "abc"), AlwaysTrue(), NotStartsWith("p", "ab")),
        # 1970-02-01 is month 1; pre-epoch values also match (or exclude) the month after.
        (DateType(), "month", EqualTo("x", "1970-02-15"), EqualTo("p", 1), AlwaysFalse()),
        (DateType(), "month", EqualTo("x", "1969-12-15"), In("p", [-1, 0]), AlwaysFalse()),
        (DateType(), "month", LessThan("x", "1969-12-01"), LessThanOrEqual("p", -1), LessThan("p", -1)),
        (
            DateType(),
            "month",
            GreaterThan("x", "1969-11-30"),
            GreaterThanOrEqual("p", -1),
            GreaterThan("p", -1),
        ),
        (DateType(), "month", NotEqualTo("x", "1969-12-15"), AlwaysTrue(), NotIn("p", [-1, 0])),
        (
            TimestampType(),
            "day",
            GreaterThanOrEqual("x", "2024-01-01"),
            GreaterThanOrEqual("p", 19723),
            GreaterThan("p", 19722),
        ),
        (
            TimestampType(),
            "hour",
            LessThan("x", "1970-01-01T01:00:00"),
            LessThanOrEqual("p", 0),
            LessThan("p", 1),
        ),
    ],
)
def test_java_rules(
    source: IcebergType,
    transform: str,
    expr: BooleanExpression,
    inclusive: BooleanExpression,
    strict: BooleanExpression,
) -> None:
    assert _inclusive(source, transform, expr) == inclusive
    assert _strict(source, transform, expr) == strict


def test_and_or_and_not_combine() -> None:
    schema = Schema(NestedField(1, "x", IntegerType()), NestedField(2, "y", StringType()))
    spec = PartitionSpec(
        PartitionField(1, 1000, parse_transform("truncate[10]"), "x_trunc"),
        PartitionField(1, 1001, parse_transform("bucket[4]"), "x_bucket"),
    )
    inc = inclusive_projection(schema, spec)
    # Both partition fields project x = 15; y is not partitioned.
    assert str(inc(parse("x = 15 and y = 'a'"))) == f"(x_trunc = 10 and x_bucket = {_bucket(15)})"
    assert inc(parse("x = 15 or y = 'a'")) == AlwaysTrue()
    # NOT is pushed into the predicate before projecting.
    assert inc(parse("not x != 15")) == inc(parse("x = 15"))
    strict = strict_projection(schema, spec)
    assert strict(parse("x = 15 and y = 'a'")) == AlwaysFalse()
    assert str(strict(parse("x != 15"))) == f"(x_trunc != 10 or x_bucket != {_bucket(15)})"


def _bucket(v: int) -> int:
    result: int = parse_transform("bucket[4]").apply(IntegerType(), v)
    return result


# ------------------------------------------------------------------ soundness on random values

_CASES: list[tuple[IcebergType, list[str], st.SearchStrategy[Any]]] = [
    (IntegerType(), ["identity", "bucket[4]", "truncate[10]", "truncate[1]", "void"], st.integers(-60, 60)),
    (LongType(), ["truncate[7]", "bucket[3]"], st.integers(-30, 30)),
    (
        DecimalType(6, 2),
        ["truncate[50]", "identity", "bucket[5]"],
        st.integers(-500, 500).map(lambda n: D(n).scaleb(-2)),
    ),
    (
        StringType(),
        ["truncate[2]", "truncate[1]", "identity", "bucket[4]"],
        st.text(alphabet="abc", max_size=4),
    ),
    (BinaryType(), ["truncate[2]", "identity"], st.binary(max_size=3)),
    (
        DateType(),
        ["year", "month", "day", "identity", "bucket[4]"],
        st.integers(-800, 800) | st.sampled_from([-366, -365, -32, -31, -30, -1, 0, 1, 30, 31]),
    ),
    (
        TimestampType(),
        ["year", "month", "day", "hour"],
        st.integers(-3 * 86_400_000_000, 3 * 86_400_000_000)
        | st.sampled_from([-3_600_000_001, -3_600_000_000, -1, 0, 1, 3_599_999_999, 3_600_000_000])
        | st.integers(-40, 40).map(lambda d: d * 86_400_000_000 + 3),
    ),
]


def _predicate(
    data: st.DataObject, source_type: IcebergType, values: st.SearchStrategy[Any]
) -> BooleanExpression:
    ops: list[Any] = [
        EqualTo,
        NotEqualTo,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        NotIn,
        IsNull,
        NotNull,
    ]
    if isinstance(source_type, StringType):
        ops += [StartsWith, NotStartsWith]
    op = data.draw(st.sampled_from(ops))
    if op in (IsNull, NotNull):
        return op("x")  # type: ignore[no-any-return]
    if op in (In, NotIn):
        return op("x", data.draw(st.lists(values, min_size=1, max_size=3)))  # type: ignore[no-any-return]
    return op("x", data.draw(values))  # type: ignore[no-any-return]


@pytest.mark.parametrize(("source_type", "transforms", "values"), _CASES, ids=[str(c[0]) for c in _CASES])
@given(data=st.data())
def test_projections_are_sound(
    source_type: IcebergType, transforms: list[str], values: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    transform_text = data.draw(st.sampled_from(transforms))
    schema, spec = _setup(source_type, transform_text)
    transform = parse_transform(transform_text)
    partition_struct = spec.partition_type(schema)
    partition_schema = Schema(*partition_struct.fields)
    pred = _predicate(data, source_type, values)
    row_value = data.draw(st.none() | values)

    matches = expression_evaluator(schema.as_struct(), bind(schema, pred))((row_value,))
    partition = (transform.apply(source_type, row_value),)

    inclusive = inclusive_projection(schema, spec)(pred)
    inc_holds = expression_evaluator(partition_struct, bind(partition_schema, inclusive))(partition)
    strict = strict_projection(schema, spec)(pred)
    strict_holds = expression_evaluator(partition_struct, bind(partition_schema, strict))(partition)
    if matches:
        assert inc_holds, f"{pred} holds for {row_value!r} but inclusive {inclusive} fails for {partition}"
    if strict_holds:
        assert matches, f"strict {strict} holds for {partition} but {pred} fails for {row_value!r}"
