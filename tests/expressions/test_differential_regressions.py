"""Regressions found by the differential read harness (tests/differential) in binding and in
partition projection, one section per finding.

C. The truncate projection of a decimal bound could produce a literal with one digit more than the
   column's precision (``truncate[10]`` of decimal(2, 1)'s ``-9.9`` is ``-10.0``), so pruning raised
   ExpressionError when binding it to the partition type.
E. ``truncate[W]`` of an int or long within W of the minimum wraps around in Iceberg Java's
   arithmetic (``truncate[10]`` of -2147483648 is 2147483646), and icefloe writes those partition
   values too; the projections pruned those partitions (inclusive) or claimed them (strict).
H. ``not (i < 2**40)`` on an int column kept the null rows: ``i < 2**40`` bound to ``i is not null``
   and NOT of that is ``i is null``, while NOT means the negation (``i >= 2**40``: no row). Float
   literals beyond float32's range (``f < 1e39``) bound as if the column held no infinities.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.arrow.expression import arrow_mask
from icefloe.arrow.schema import schema_to_arrow
from icefloe.expressions import (
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    Or,
    bind,
    parse,
)
from icefloe.expressions.visitors import expression_evaluator, inclusive_projection, strict_projection
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import DecimalType, FloatType, IcebergType, IntegerType, LongType, NestedField
from icefloe.transforms import parse_transform

D = decimal.Decimal
_OPS: list[Any] = [LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual, EqualTo, NotEqualTo]


def _check_projections(
    source: IcebergType,
    transform: str,
    values: list[Any],
    literals: Iterable[Any],
    written_as: IcebergType | None = None,
) -> None:
    """For every predicate on ``literals``: both projections bind to the partition type, the
    inclusive one holds for the partition of every matching value, and the strict one holds only
    for partitions whose every listed value matches. ``written_as``: the partition values come from
    files written while the column had this type (an int column widened to long since)."""
    schema = Schema(NestedField(1, "x", source))
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform(transform), "p"))
    struct = spec.partition_type(schema)
    partition_schema = Schema(*struct.fields)
    apply = parse_transform(transform).apply
    literals = list(literals)
    predicates: list[BooleanExpression] = [op("x", lit) for op in _OPS for lit in literals]
    predicates += [In("x", literals[i : i + 3]) for i in range(0, len(literals), 3)]
    predicates += [NotIn("x", literals[i : i + 3]) for i in range(0, len(literals), 3)]
    for pred in predicates:
        matches = expression_evaluator(schema.as_struct(), bind(schema, pred))
        inclusive = inclusive_projection(schema, spec)(pred)
        strict = strict_projection(schema, spec)(pred)
        inc = expression_evaluator(struct, bind(partition_schema, inclusive))
        stc = expression_evaluator(struct, bind(partition_schema, strict))
        for v in values:
            partition = (apply(written_as or source, v),)
            if matches((v,)):
                assert inc(partition), f"{pred} holds for {v} but {inclusive} prunes {partition}"
            if stc(partition):
                assert matches((v,)), f"strict {strict} holds for {partition} but {pred} fails for {v}"


# ------------------------------------------------------------------ C: decimal beyond precision


def test_truncate_projection_of_a_decimal_bound_beyond_the_precision() -> None:
    t = DecimalType(2, 1)
    values = [D(n).scaleb(-1) for n in range(-99, 100)]
    _check_projections(t, "truncate[10]", values, values)
    _check_projections(t, "truncate[3]", values, values)


_DECIMAL_FILTERS = [
    "d <= -9.9",
    "d < -9.8",
    "d = -9.5",
    "d >= -9.9",
    "d > 9.8",
    "d in (-9.5, 0.0)",
    "d != -9.5",
]


def test_truncate_projection_of_a_decimal_minimum_has_no_error() -> None:
    schema = Schema(NestedField(1, "x", DecimalType(2, 1)))
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("truncate[10]"), "p"))
    partition_schema = Schema(*spec.partition_type(schema).fields)
    for text in _DECIMAL_FILTERS:
        text = text.replace("d", "x")
        for project in (inclusive_projection, strict_projection):
            bind(partition_schema, project(schema, spec)(parse(text)))  # raised ExpressionError


def test_scan_of_a_truncated_decimal_partition_below_the_minimum(tmp_path: Path) -> None:
    catalog = icefloe.load_catalog(
        "c", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    catalog.create_namespace("ns")
    arrow_schema = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.decimal128(2, 1))])
    table = catalog.create_table("ns.t", schema=arrow_schema, partition_by=["truncate(10, d)"])
    values = [D("-9.9"), D("-9.5"), D("-0.1"), D("0.0"), D("9.9"), None]
    table.append(pa.table({"id": list(range(len(values))), "d": values}, arrow_schema))
    for text in _DECIMAL_FILTERS:
        expected = expression_evaluator(table.schema().as_struct(), bind(table.schema(), parse(text)))
        want = sorted(i for i, v in enumerate(values) if expected((i, v)))
        got = sorted(table.scan(row_filter=text).to_arrow().column("id").to_pylist())
        assert got == want, text
    catalog.close()


# ------------------------------------------------------------------ E: wrapped int/long partitions

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _edges(lo: int, hi: int) -> list[int]:
    return sorted({*range(lo, lo + 25), *range(hi - 12, hi + 1), *range(-12, 13)})


@pytest.mark.parametrize("width", [3, 10])
@pytest.mark.parametrize(
    ("source", "lo", "hi"),
    [(IntegerType(), _INT_MIN, _INT_MAX), (LongType(), _LONG_MIN, _LONG_MAX)],
    ids=["int", "long"],
)
def test_truncate_projection_keeps_wrapped_partitions_near_the_minimum(
    source: IcebergType, lo: int, hi: int, width: int
) -> None:
    assert parse_transform("truncate[10]").apply(IntegerType(), _INT_MIN) == 2147483646  # Java's value
    values = _edges(lo, hi)
    _check_projections(source, f"truncate[{width}]", values, [*values, lo - 1, hi + 1])


@pytest.mark.parametrize("width", [3, 10])
def test_truncate_projection_of_a_widened_column_keeps_partitions_wrapped_as_int(width: int) -> None:
    # Files written while the column was an int hold 32-bit wrapped partition values.
    values = _edges(_INT_MIN, _INT_MAX)
    _check_projections(LongType(), f"truncate[{width}]", values, values, written_as=IntegerType())


def test_scan_finds_the_rows_of_a_wrapped_truncate_partition(tmp_path: Path) -> None:
    catalog = icefloe.load_catalog(
        "c", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    catalog.create_namespace("ns")
    arrow_schema = pa.schema([pa.field("id", pa.int64()), pa.field("i", pa.int32())])
    table = catalog.create_table("ns.t", schema=arrow_schema, partition_by=["truncate(10, i)"])
    values = [_INT_MIN, _INT_MIN + 9, _INT_MIN + 10, -1, 0, 5, _INT_MAX]
    for n, v in enumerate(values):  # one file per value: partition pruning decides each
        table.append(pa.table({"id": [n], "i": [v]}, arrow_schema))
    for text in [
        "i < 0",
        "i <= -2147483639",
        "i < -2147483647",
        "i = -2147483648",
        "i in (-2147483648, 5)",
        "i > 2147483640",
        "i >= -2147483648",
        "i != -2147483648",
        "not (i > -2147483640)",
    ]:
        keep = expression_evaluator(table.schema().as_struct(), bind(table.schema(), parse(text)))
        want = sorted(n for n, v in enumerate(values) if keep((n, v)))
        got = sorted(table.scan(row_filter=text).to_arrow().column("id").to_pylist())
        assert got == want, text
    catalog.close()


# ------------------------------------------------------------------ H: NOT and out-of-range literals

_SCHEMA = Schema(NestedField(1, "i", IntegerType()), NestedField(2, "f", FloatType()))
_ROWS: list[tuple[Any, Any]] = [
    (None, None),
    (3, math.inf),
    (-3, -math.inf),
    (5, 1.0),
    (_INT_MIN, math.nan),
    (_INT_MAX, 3.4028234663852886e38),
]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("not (i < 1099511627776)", []),
        ("not (i <= 1099511627776)", []),
        ("not (i > -1099511627776)", []),
        ("not (i != 1099511627776)", []),
        ("not (i = 1099511627776)", [0, 1, 2, 3, 4, 5]),
        ("not (i > 1099511627776)", [1, 2, 3, 4, 5]),
        ("not (not (i < 1099511627776))", [1, 2, 3, 4, 5]),
        ("not (i < 1099511627776 or i = 3)", []),
        ("not (i < 1099511627776 and i = 3)", [0, 2, 3, 4, 5]),
        ("f < 1e39", [2, 3, 5]),
        ("f > 1e39", [1]),
        ("f > -1e39", [1, 3, 5]),
        ("f < -1e39", [2]),
        ("not (f < 1e39)", [1]),
        ("not (f > -1e39)", [2]),
        ("f != 1e39", [0, 1, 2, 3, 4, 5]),
        ("not (f = 1e39)", [0, 1, 2, 3, 4, 5]),
    ],
)
def test_negated_comparisons_with_literals_beyond_the_type(text: str, kept: list[int]) -> None:
    """Iceberg's two-valued semantics: NOT is the negated predicate, so ``not (i < 2**40)`` is
    ``i >= 2**40`` (no row, null included), and a float column keeps its infinities in range."""
    bound = bind(_SCHEMA, parse(text))
    keep = expression_evaluator(_SCHEMA.as_struct(), bound)
    assert [n for n, row in enumerate(_ROWS) if keep(row)] == kept
    table = pa.Table.from_pylist([{"i": i, "f": f} for i, f in _ROWS], schema=schema_to_arrow(_SCHEMA))
    assert [n for n, k in enumerate(arrow_mask(parse(text), _SCHEMA)(table).to_pylist()) if k] == kept


def test_not_of_an_out_of_range_comparison_binds_to_its_negation() -> None:
    assert bind(_SCHEMA, parse("not (i < 1099511627776)")) == bind(_SCHEMA, parse("false"))
    negated = bind(_SCHEMA, Not(Or(LessThan("i", 2**40), EqualTo("i", 3))))
    assert str(negated) == "false"
    assert bind(_SCHEMA, LessThan("f", 1e39)) == bind(_SCHEMA, LessThanOrEqual("f", 3.4028234663852886e38))
    assert bind(_SCHEMA, GreaterThan("f", 1e39)) == bind(_SCHEMA, GreaterThan("f", 3.4028234663852886e38))
    assert bind(_SCHEMA, GreaterThanOrEqual("f", -1e39)) == bind(
        _SCHEMA, GreaterThanOrEqual("f", -3.4028234663852886e38)
    )
