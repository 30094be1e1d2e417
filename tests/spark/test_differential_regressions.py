"""Regressions found by the differential read harness (tests/differential) on the Spark paths,
one section per bug: G (time columns and Dataset operations), I (filter literals of every type as
Spark literals), J (Iceberg's NaN, null and signed-zero semantics in the fast path's Spark
Column), with a property test of J against ``table.scan``."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import uuid
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import icefloe.spark
from icefloe.expressions import (
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
    bind,
    col,
    parse,
)
from icefloe.expressions.visitors.evaluator import expression_evaluator
from icefloe.spark.read import _source_filter, plan_read, to_spark_column

UTC = dt.UTC
NAN, INF = float("nan"), float("inf")


def _ids(df: Any) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


def _expected(table: Any, where: str | BooleanExpression) -> list[int]:
    return sorted(table.scan(row_filter=where, selected_fields=("id",)).to_arrow().column("id").to_pylist())


# --------------------------------------------------------------------------- G: time columns

TIME_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("t", pa.time64("us"))])


def test_dataset_operations_on_a_table_with_a_time_column(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """count(), a filtered count and groupBy build Spark's row encoder, which refuses TIME unless
    spark.sql.timeType.enabled: register() turns it on (toArrow/collect worked without it)."""
    t = spark_catalog.create_table(table_name, TIME_SCHEMA)
    t.append(pa.table({"id": [1, 2, 3], "t": [dt.time(1), None, dt.time(23, 59, 59, 999999)]}, TIME_SCHEMA))
    assert spark.conf.get(icefloe.spark.TIME_TYPE_CONF) == "true"
    df = spark.read.format("icefloe").load(table_name)
    assert df.count() == 3
    assert df.filter("id > 1").count() == 2
    assert sorted((r["t"], r["count"]) for r in df.groupBy("t").count().collect() if r["t"] is not None) == [
        (dt.time(1), 1),
        (dt.time(23, 59, 59, 999999), 1),
    ]
    # the fast path hands time columns to the data source
    assert icefloe.spark.read(spark, table_name).count() == 3
    assert icefloe.spark.read(spark, table_name, where="t > '00:30:00'").count() == 2
    assert icefloe.spark.read(spark, table_name, columns=["id"], where="t < '12:00:00'").count() == 1


def test_register_keeps_an_explicit_time_type_setting(spark: Any) -> None:
    spark.conf.set(icefloe.spark.TIME_TYPE_CONF, "false")
    try:
        icefloe.spark.register(spark)
        assert spark.conf.get(icefloe.spark.TIME_TYPE_CONF) == "false"
        spark.conf.unset(icefloe.spark.TIME_TYPE_CONF)
        icefloe.spark.register(spark)
        assert spark.conf.get(icefloe.spark.TIME_TYPE_CONF) == "true"
    finally:
        spark.conf.set(icefloe.spark.TIME_TYPE_CONF, "true")
        icefloe.spark.register(spark)


# --------------------------------------------------------------------------- I: literals of every type

EVERY_TYPE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("b", pa.bool_()),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(38, 10)),
        pa.field("dt", pa.date32()),
        pa.field("t", pa.time64("us")),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("us", tz="UTC")),
        pa.field("s", pa.string()),
        pa.field("u", pa.uuid()),
        pa.field("fx", pa.binary(4)),
        pa.field("bin", pa.binary()),
    ]
)
DEC_MIN = decimal.Decimal("-9999999999999999999999999999.9999999999")  # 38 digits
DEC_WIDE = decimal.Decimal("1234567890123456789012345678.0123456789")
U_MAX = uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff")
EVERY_TYPE_ROWS: list[dict[str, Any]] = [
    {
        "id": 1,
        "b": True,
        "i": -(2**31),
        "l": -(2**63),
        "f": -0.0,
        "d": -INF,
        "dec": DEC_MIN,
        "dt": dt.date(1, 1, 1),
        "t": dt.time(0),
        "ts": dt.datetime(1, 1, 1),
        "tz": dt.datetime(1, 1, 1, tzinfo=UTC),
        "s": "",
        "u": uuid.UUID(int=0).bytes,
        "fx": b"\x00\x00\x00\x00",
        "bin": b"",
    },
    {
        "id": 2,
        "b": False,
        "i": 2**31 - 1,
        "l": 2**63 - 1,
        "f": INF,
        "d": 0.0,
        "dec": DEC_WIDE,
        "dt": dt.date(1582, 10, 4),
        "t": dt.time(23, 59, 59, 999999),
        "ts": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        "tz": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "s": "héllo",
        "u": U_MAX.bytes,
        "fx": b"\xff\xff\xff\xff",
        "bin": b"\xff\x00",
    },
    {"id": 3},
    {
        "id": 4,
        "b": True,
        "i": 0,
        "l": 0,
        "f": NAN,
        "d": NAN,
        "dec": decimal.Decimal("0.0000000001"),
        "dt": dt.date(9999, 12, 31),
        "t": dt.time(12),
        "ts": dt.datetime(1582, 10, 15),
        "tz": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "s": "a'b",
        "u": uuid.UUID(int=1).bytes,
        "fx": b"abcd",
        "bin": b"\x00",
    },
    {"id": 5, "f": 1.1, "d": -0.0, "dec": decimal.Decimal(0), "dt": dt.date(1000, 1, 1), "s": "hé"},
]

# Filters with the Python literals users pass (not text): none of them prints as filter text that
# parses back to itself, which sent them to to_spark_column and its literals.
EVERY_TYPE_FILTERS: list[BooleanExpression] = [
    EqualTo("b", True),
    NotEqualTo("b", False),
    LessThan("i", 0),
    In("i", [-(2**31), 2**31 - 1]),
    EqualTo("l", -(2**63)),
    GreaterThan("l", 2**62),
    EqualTo("f", 1.1),  # binds to float32, as the column holds it
    GreaterThan("f", -0.0),
    LessThan("f", INF),
    In("f", [1.1, INF]),
    GreaterThanOrEqual("d", -INF),
    EqualTo("d", -0.0),
    NotIn("d", [-INF]),
    EqualTo("dec", DEC_WIDE),
    LessThan("dec", decimal.Decimal("-9999999999999999999999999999.9999999998")),
    GreaterThan("dec", decimal.Decimal("0.0000000000")),
    In("dt", [dt.date(1, 1, 1), dt.date(1582, 10, 4)]),
    LessThan("dt", dt.date(1000, 1, 1)),
    GreaterThanOrEqual("dt", dt.date(9999, 12, 31)),
    EqualTo("dt", dt.date(1000, 1, 1)),
    GreaterThan("t", dt.time(23, 59, 59, 999998)),
    EqualTo("t", dt.time(0)),
    EqualTo("ts", dt.datetime(1, 1, 1)),
    GreaterThan("ts", dt.datetime(9999, 12, 31, 23, 59, 59, 999998)),
    LessThan("ts", dt.datetime(1582, 10, 15)),
    EqualTo("tz", dt.datetime(1, 1, 1, tzinfo=UTC)),
    LessThan("tz", dt.datetime(1970, 1, 1, tzinfo=UTC)),
    GreaterThan("tz", dt.datetime(9999, 12, 31, 23, 59, 59, 999998, tzinfo=UTC)),
    GreaterThanOrEqual("tz", dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
    EqualTo("s", "a'b"),
    StartsWith("s", "hé"),
    NotStartsWith("s", "hé"),
    NotEqualTo("s", ""),
    col("u") == uuid.UUID(int=1),
    GreaterThan("u", uuid.UUID("80000000-0000-0000-0000-000000000000")),  # unsigned byte order
    In("u", [uuid.UUID(int=0), U_MAX]),
    LessThan("fx", b"\xff\xff\xff\xff"),
    EqualTo("fx", b"abcd"),
    GreaterThan("bin", b"\x00"),
    EqualTo("bin", b""),
    And(GreaterThan("id", 1), LessThan("fx", b"\xff\xff\xff\xff")),
    Or(EqualTo("bin", b"\xff\x00"), col("u") == uuid.UUID(int=0)),
]


@pytest.fixture(scope="module")
def every_type_table(spark_catalog: Any) -> Any:
    name = f"spark.every_type_literals_{uuid.uuid4().hex[:8]}"
    t = spark_catalog.create_table(name, EVERY_TYPE)
    t.append(pa.Table.from_pylist(EVERY_TYPE_ROWS, schema=EVERY_TYPE))
    return t


def test_every_filter_literal_is_the_right_spark_literal(spark: Any, every_type_table: Any) -> None:
    """to_spark_column on the data source's DataFrame, one Spark job for all filters: uuids as
    text, dates and timestamps of years 1 and 9999 (PySpark's date literal fails before 1000),
    decimals at 38 digits, binary and fixed, infinities, -0.0, float32 literals."""
    t = every_type_table
    df = spark.read.format("icefloe").load(t.name)
    flags = [to_spark_column(w, t.schema()).alias(f"w{k}") for k, w in enumerate(EVERY_TYPE_FILTERS)]
    rows = df.select("id", *flags).collect()
    for k, where in enumerate(EVERY_TYPE_FILTERS):
        got = sorted(r["id"] for r in rows if r[f"w{k}"])
        assert got == _expected(t, where), where


@pytest.mark.parametrize("where", EVERY_TYPE_FILTERS, ids=str)
def test_every_filter_literal_reads_like_icefloe(
    spark: Any, every_type_table: Any, where: BooleanExpression
) -> None:
    t = every_type_table
    expected = _expected(t, where)
    assert _ids(icefloe.spark.read(spark, t, columns=["id"], where=where)) == expected
    assert _ids(icefloe.spark.read(spark, t, columns=["id"], where=where, engine="source")) == expected


def test_the_source_gets_every_literal_text_can_spell(spark: Any, every_type_table: Any) -> None:
    """Dates, times, timestamps, uuids and decimals reach the data source as filter text (it
    prunes with them); binary literals, which text cannot spell, stay with Spark."""
    t = every_type_table
    scan = plan_read(spark, t, None, In("dt", [dt.date(1, 1, 1), dt.date(1582, 10, 4)]))
    text, rest = _source_filter(scan)
    assert text == "dt in (-719162, -141438)" or text == "dt in (-141438, -719162)"
    assert str(rest) == "true"
    scan = plan_read(spark, t, None, And(col("u") == uuid.UUID(int=1), LessThan("fx", b"\xff\xff\xff\xff")))
    text, rest = _source_filter(scan)
    assert text == "(u = '00000000-0000-0000-0000-000000000001')"
    assert "fx" in repr(rest) and "u" not in str(rest)


# --------------------------------------------------------------------------- J: NaN, null and -0.0

FLOATS = pa.schema([pa.field("id", pa.int64()), pa.field("f", pa.float32()), pa.field("d", pa.float64())])


def _leaves(expr: BooleanExpression) -> list[BooleanExpression]:
    if isinstance(expr, And | Or):
        return _leaves(expr.left) + _leaves(expr.right)
    if isinstance(expr, Not):
        return _leaves(expr.child)
    return [expr]


def _float_rows(table: Any, where: str | BooleanExpression) -> list[int]:
    """The ids icefloe's semantics keep, by its row evaluator over every row of a FLOATS table,
    checked against table.scan (whose Arrow filter must agree, -0.0 = 0.0 in `in` included)."""
    schema = table.schema()
    bound = bind(schema, parse(where) if isinstance(where, str) else where)
    keep = expression_evaluator(schema.as_struct(), bound)
    rows = table.scan().to_arrow().to_pylist()
    expected = sorted(r["id"] for r in rows if keep((r["id"], r["f"], r["d"])))
    assert _expected(table, where) == expected, str(where)
    return expected


def test_fast_path_comparisons_are_false_for_nan(spark: Any, spark_catalog: Any, table_name: str) -> None:
    """Spark orders NaN above every value; Iceberg's comparisons are false for NaN."""
    t = spark_catalog.create_table(table_name, FLOATS)
    t.append(pa.table({"id": [1, 2], "f": [NAN, 1.0], "d": [NAN, 1.0]}, FLOATS))
    wheres: list[str | BooleanExpression] = [
        "d > 0",
        "d >= 0",
        "not (d < 0)",
        "f > 0",
        GreaterThanOrEqual("d", -INF),
    ]
    for where in wheres:
        assert _float_rows(t, where) == [2]
        assert _ids(icefloe.spark.read(spark, table_name, where=where, engine="parquet")) == [2], where
    assert _ids(icefloe.spark.read(spark, table_name, where="not (f <= 1)", engine="parquet")) == []
    assert _ids(icefloe.spark.read(spark, table_name, where="d != 1", engine="parquet")) == [1]


def test_parquet_statistics_and_dictionaries_drop_no_rows(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    """One file per value set, so a row group's statistics or dictionary hold only -0.0, only 0.0,
    or skip a NaN: Spark's Parquet filters (which order -0.0 below 0.0 and trust bounds that leave
    NaN out) must not see the float comparisons."""
    t = spark_catalog.create_table(table_name, FLOATS)
    for ids, values in [([1, 2], [-0.0, -0.0]), ([3, 4], [0.0, 0.0]), ([5, 6], [NAN, 5.0]), ([7], [NAN])]:
        t.append(pa.table({"id": ids, "f": values, "d": values}, FLOATS))
    for c in ("f", "d"):
        for where in [
            f"{c} = 0.0",
            f"{c} = -0.0",
            f"{c} >= 0",
            f"{c} <= -0.0",
            f"{c} in (0.0, 7.0)",
            f"{c} in (-0.0, 7.0)",
            f"{c} != 5",
            f"{c} not in (5.0, 6.0)",
            f"{c} != 0.0",
            f"{c} < 6",
        ]:
            expected = _float_rows(t, where)
            for engine in ("parquet", "source"):
                got = _ids(icefloe.spark.read(spark, table_name, where=where, engine=engine))
                assert got == expected, (engine, where)


# The property test: random comparisons on float and double columns over a table holding NaN,
# -0.0 and 0.0, infinities and nulls, in files that are homogeneous (statistics and dictionaries
# of one value) and mixed. Every Spark read must keep exactly the rows table.scan keeps (and
# icefloe's row evaluator: see _float_rows).

FLOAT_FILES: list[list[float | None]] = [
    [-0.0, -0.0],
    [0.0],
    [NAN, 5.0],
    [NAN],
    [None, None],
    [INF, -INF],
    [1.5, -2.5, NAN, None, 0.0, -0.0, INF, -INF, 3.0e38, -1.0e-45],
]
LITERALS = [-INF, INF, -0.0, 0.0, 1.5, -2.5, 5.0, 3.0e38, -1.0e-45, 1.0]


@pytest.fixture(scope="module")
def float_table(spark_catalog: Any) -> Any:
    name = f"spark.float_semantics_{uuid.uuid4().hex[:8]}"
    t = spark_catalog.create_table(name, FLOATS)
    ids = itertools.count(1)
    for values in FLOAT_FILES:
        t.append(pa.table({"id": [next(ids) for _ in values], "f": values, "d": values}, FLOATS))
    return t


_columns = hs.sampled_from(["f", "d"])
_literals = hs.one_of(hs.sampled_from(LITERALS), hs.floats(allow_nan=False, width=32))


@hs.composite
def _predicates(draw: hs.DrawFn) -> BooleanExpression:
    c = draw(_columns)
    kind = draw(hs.sampled_from(["cmp", "set", "between", "unary"]))
    if kind == "cmp":
        op = draw(
            hs.sampled_from([LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual, EqualTo, NotEqualTo])
        )
        return op(c, draw(_literals))
    if kind == "set":
        values = draw(hs.lists(_literals, min_size=1, max_size=4))
        return (In if draw(hs.booleans()) else NotIn)(c, values)
    if kind == "between":
        lo, hi = sorted(draw(hs.lists(_literals, min_size=2, max_size=2)))
        return And(GreaterThanOrEqual(c, lo), LessThanOrEqual(c, hi))
    return draw(hs.sampled_from([IsNaN, NotNaN, IsNull, NotNull]))(c)


@hs.composite
def _filters(draw: hs.DrawFn) -> BooleanExpression:
    expr = draw(_predicates())
    shape = draw(hs.sampled_from(["plain", "not", "and", "or"]))
    if shape == "not":
        return Not(expr)
    if shape == "and":
        return And(expr, draw(_predicates()))
    if shape == "or":
        return Or(expr, Not(draw(_predicates())))
    return expr


@settings(max_examples=50, deadline=None)
@given(where=_filters())
def test_float_filters_match_table_scan(spark: Any, float_table: Any, where: BooleanExpression) -> None:
    expected = _float_rows(float_table, where)
    for engine in ("parquet", "source"):
        got = _ids(icefloe.spark.read(spark, float_table, columns=["id"], where=where, engine=engine))
        assert got == expected, (engine, str(where))
