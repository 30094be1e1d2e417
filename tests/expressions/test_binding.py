from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

import pytest

from icefloe.errors import ExpressionError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundReference,
    EqualTo,
    GreaterThan,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotNull,
    StartsWith,
    bind,
    parse,
    unbind,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, NestedField, StructType

D = decimal.Decimal


def _literal(schema: Schema, text: str) -> Any:
    bound = bind(schema, parse(text))
    assert isinstance(bound, LiteralPredicate)
    return bound.literal


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("id = 5", 5),
        ("i = -7", -7),
        ("f = 0.1", 0.10000000149011612),  # rounded to float32 like Java
        ("d = 0.1", 0.1),
        ("d = 3", 3.0),
        ("d = 1e3", 1000.0),
        ("dec = 1.5", D("1.50")),
        ("dec = '12.34'", D("12.34")),
        ("dec = 7", D("7.00")),
        ("dec = 2.5e0", D("2.50")),
        ("dt = '2024-01-31'", 19753),
        ("dt = '1969-12-31'", -1),
        ("dt = 10", 10),
        ("t = '00:00:01.5'", 1_500_000),
        ("ts = '1970-01-01T00:00:01'", 1_000_000),
        ("ts = '1970-01-01 00:00:00.000001'", 1),
        ("ts >= '2024-01-01'", 1704067200000000),
        ("ts = '1969-12-31T23:59:59.999999'", -1),
        ("tstz = '1970-01-01T01:00:00+01:00'", 0),
        ("tstz = '1970-01-01T00:00:00Z'", 0),
        ("tstz = '1970-01-01T00:00:00-0130'", 5_400_000_000),
        ("tstz = '1970-01-02'", 86_400_000_000),
        ("tsns = '1970-01-01T00:00:00.000000001'", 1),
        ("s = 'x'", "x"),
        ("u = 'f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb'", uuid.UUID("f79c3e09-677c-4d4c-b5e9-ec2cc3d1a2cb")),
        ("b = true", True),
        ("st.a = 3", 3),
    ],
)
def test_literal_conversion(schema: Schema, text: str, value: Any) -> None:
    got = _literal(schema, text)
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize(
    ("column", "value", "internal"),
    [
        ("dt", dt.date(1970, 1, 2), 1),
        ("ts", dt.datetime(1970, 1, 1, 0, 0, 1), 1_000_000),
        ("tstz", dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), 0),
        ("t", dt.time(0, 1), 60_000_000),
        ("fx", b"abc", b"abc"),
        ("bin", bytearray(b"\x00"), b"\x00"),
        ("u", uuid.UUID(int=5), uuid.UUID(int=5)),
        ("u", uuid.UUID(int=5).bytes, uuid.UUID(int=5)),
        ("dec", D("1.1"), D("1.10")),
        ("tsns", dt.datetime(1970, 1, 1, 0, 0, 0, 1), 1000),
    ],
)
def test_python_objects(schema: Schema, column: str, value: Any, internal: Any) -> None:
    bound = bind(schema, EqualTo(column, value))
    assert isinstance(bound, EqualTo)
    assert bound.literal == internal


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope = 1", "no column named 'nope'"),
        ("id = 'x'", "id"),
        ("s = 1", "'s'"),
        ("id = 1.5", "not an integer"),
        ("b = 1", "'b'"),
        ("dec = 1.005", "more than 2 digits after the point"),
        ("dec = 12345678.9", "more than 9 digits"),
        ("dec = 'abc'", "not a number"),
        ("dt = '2024-13-01'", "not an ISO date"),
        ("ts = '2024-01-01T00:00:00Z'", "cannot carry an offset"),
        ("tstz = '2024-01-01T00:00:00'", "needs an offset"),
        ("ts = '2024-01-01T00:00:00.0000001'", "precision"),
        ("ts = 'yesterday'", "not an ISO-8601 timestamp"),
        ("t = '25:00'", "not an ISO time"),
        ("u = 'xyz'", "not a UUID"),
        ("fx = 'abc'", "'fx'"),
        ("i is nan", "float or double"),
        ("s is not nan", "float or double"),
        ("id like 'a%'", "string column"),
        ("st = 1", "primitive"),
        ("st is null", "primitive"),
        ("tags.element = 'a'", "inside a list or map"),
        ("props.key = 'a'", "inside a list or map"),
        ("tags is null", "primitive"),
        ("d = 'nan'", "'d'"),
    ],
)
def test_bind_errors(schema: Schema, text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        bind(schema, parse(text))


def test_error_names_the_column(schema: Schema) -> None:
    with pytest.raises(ExpressionError) as info:
        bind(schema, parse("dec = 1.005"))
    assert info.value.context["column"] == "dec"


def test_nan_literals_are_rejected(schema: Schema) -> None:
    with pytest.raises(ExpressionError, match="is_nan"):
        bind(schema, EqualTo("d", float("nan")))
    with pytest.raises(ExpressionError, match="is_nan"):
        bind(schema, In("d", [1.0, float("nan")]))


def test_datetime_kinds(schema: Schema) -> None:
    with pytest.raises(ExpressionError, match="timezone-aware"):
        bind(schema, EqualTo("tstz", dt.datetime(2024, 1, 1)))
    with pytest.raises(ExpressionError, match="naive"):
        bind(schema, EqualTo("ts", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)))
    with pytest.raises(ExpressionError, match="date"):
        bind(schema, EqualTo("dt", dt.datetime(2024, 1, 1)))


def test_bound_terms(schema: Schema) -> None:
    bound = bind(schema, parse("st.Name = 'x'"))
    assert isinstance(bound, EqualTo)
    assert isinstance(bound.term, BoundReference)
    assert bound.term.field_id == 17
    assert bound.term.name == "st.Name"
    assert str(bound) == "st.Name = 'x'"


def test_case_insensitive(schema: Schema) -> None:
    with pytest.raises(ExpressionError):
        bind(schema, parse("ST.NAME = 'x'"))
    bound = bind(schema, parse("ST.NAME = 'x'"), case_sensitive=False)
    assert isinstance(bound, EqualTo) and bound.ref.field_id == 17


def test_required_columns_decide_null_checks(schema: Schema) -> None:
    assert bind(schema, IsNull("id")) == AlwaysFalse()
    assert bind(schema, NotNull("id")) == AlwaysTrue()
    # st.a is required but st is optional: st.a is null when st is.
    assert isinstance(bind(schema, IsNull("st.a")), IsNull)
    required_struct = Schema(
        NestedField(1, "st", StructType(NestedField(2, "a", IntegerType(), required=True)), required=True)
    )
    assert bind(required_struct, IsNull("st.a")) == AlwaysFalse()


def test_int_out_of_range(schema: Schema) -> None:
    big = 2**31
    ref = bind(schema, NotNull("i"))
    assert bind(schema, LessThan("i", big)) == ref
    assert bind(schema, LessThanOrEqual("i", big)) == ref
    assert bind(schema, GreaterThan("i", big)) == AlwaysFalse()
    assert bind(schema, EqualTo("i", big)) == AlwaysFalse()
    assert bind(schema, NotEqualTo("i", big)) == AlwaysTrue()
    assert bind(schema, GreaterThan("i", -big - 1)) == ref
    assert bind(schema, LessThan("i", -big - 1)) == AlwaysFalse()
    assert bind(schema, EqualTo("id", 2**63)) == AlwaysFalse()
    # 2**31 fits a long column.
    assert isinstance(bind(schema, EqualTo("id", big)), EqualTo)


def test_set_simplification(schema: Schema) -> None:
    assert bind(schema, In("i", [])) == AlwaysFalse()
    assert bind(schema, NotIn("i", [])) == AlwaysTrue()
    one = bind(schema, In("i", [1, 2**40]))
    assert isinstance(one, EqualTo) and one.literal == 1
    assert isinstance(bind(schema, NotIn("i", [3])), NotEqualTo)
    both = bind(schema, In("dt", ["2024-01-01", 19723]))
    assert isinstance(both, EqualTo) and both.literal == 19723


def test_bind_is_idempotent_and_unbind_round_trips(schema: Schema) -> None:
    expr = parse("ts >= '2024-01-01' and (s like 'a%' or dec in (1.5, 2)) and not f is nan")
    bound = bind(schema, expr)
    assert bind(schema, bound) == bound
    unbound = unbind(bound)
    assert bind(schema, unbound) == bound


def test_bound_to_another_schema(schema: Schema) -> None:
    other = Schema(NestedField(1, "id", IntegerType()))
    bound = bind(other, EqualTo("id", 1))
    with pytest.raises(ExpressionError, match="different schema"):
        bind(schema, bound)


def test_starts_with_binds(schema: Schema) -> None:
    assert bind(schema, StartsWith("s", "ab")) == StartsWith(bind(schema, EqualTo("s", "x")).ref, "ab")  # type: ignore[attr-defined]


def test_and_keeps_structure(schema: Schema) -> None:
    bound = bind(schema, parse("id = 1 and i = 2"))
    assert isinstance(bound, And)
    assert bind(schema, parse("id = 1 and id is null")) == AlwaysFalse()


def test_is_nan_on_float(schema: Schema) -> None:
    assert isinstance(bind(schema, IsNaN("f")), IsNaN)
