"""Sort terms as text (``"day(ts) desc nulls last"``) and SortFields, bound to a schema: every
transform spelling, Java's null-order defaults, and every refusal naming its term."""

from __future__ import annotations

import pytest

from icefloe.errors import SortOrderError
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField
from icefloe.spec.sort_order_builder import (
    bind_sort_term,
    build_sort_order,
    describe_sort_field,
    parse_sort_term,
)
from icefloe.spec.types import (
    DecimalType,
    DoubleType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "ts", TimestamptzType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "price", DoubleType()),
    NestedField(5, "amount", DecimalType(9, 2)),
    NestedField(6, "address", StructType(NestedField(7, "city", StringType()))),
    NestedField(8, "tags", ListType(9, StringType())),
    NestedField(10, "attrs", MapType(11, StringType(), 12, StringType())),
    NestedField(13, "pts", ListType(14, StructType(NestedField(15, "x", LongType())))),
    NestedField(16, "my col", LongType()),
)

ASC, DESC = SortDirection.ASC, SortDirection.DESC
FIRST, LAST = NullOrder.NULLS_FIRST, NullOrder.NULLS_LAST


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("id", SortField(1, IdentityTransform(), ASC, FIRST)),
        ("id asc", SortField(1, IdentityTransform(), ASC, FIRST)),
        ("id desc", SortField(1, IdentityTransform(), DESC, LAST)),  # Java: desc -> nulls last
        ("id DESC NULLS FIRST", SortField(1, IdentityTransform(), DESC, FIRST)),
        ("id nulls last", SortField(1, IdentityTransform(), ASC, LAST)),
        ("identity(id) asc nulls last", SortField(1, IdentityTransform(), ASC, LAST)),
        ("day(ts) desc nulls last", SortField(2, DayTransform(), DESC, LAST)),
        ("days(ts)", SortField(2, DayTransform(), ASC, FIRST)),
        ("hour(ts) desc", SortField(2, HourTransform(), DESC, LAST)),
        ("month(ts)", SortField(2, MonthTransform(), ASC, FIRST)),
        ("years(ts)", SortField(2, YearTransform(), ASC, FIRST)),
        ("bucket(16, id)", SortField(1, BucketTransform(16), ASC, FIRST)),
        ("bucket(id, 16) desc", SortField(1, BucketTransform(16), DESC, LAST)),
        ("truncate(4, name) asc nulls last", SortField(3, TruncateTransform(4), ASC, LAST)),
        ("truncate(10, amount)", SortField(5, TruncateTransform(10), ASC, FIRST)),
        ("  price   desc   nulls   first ", SortField(4, IdentityTransform(), DESC, FIRST)),
        ("address.city desc", SortField(7, IdentityTransform(), DESC, LAST)),
        ("`my col` desc", SortField(16, IdentityTransform(), DESC, LAST)),
        ("void(id)", SortField(1, VoidTransform(), ASC, FIRST)),  # Java accepts it too
    ],
)
def test_terms(term: str, expected: SortField) -> None:
    assert bind_sort_term(SCHEMA, term) == expected


def test_parse_keeps_what_was_given() -> None:
    t = parse_sort_term("day(ts) desc")
    assert (t.column, t.transform, t.direction, t.null_order) == ("ts", DayTransform(), DESC, None)
    t = parse_sort_term("desc")  # a column named like a keyword
    assert (t.column, t.direction) == ("desc", None)


def test_case_insensitive_columns() -> None:
    assert bind_sort_term(SCHEMA, "ID desc", case_sensitive=False).source_id == 1
    with pytest.raises(SortOrderError, match="no column named 'ID'"):
        bind_sort_term(SCHEMA, "ID desc")


@pytest.mark.parametrize(
    ("term", "match", "column"),
    [
        ("nope", "no column named 'nope'", "nope"),
        ("day(nope) desc", "no column named 'nope'", "nope"),
        ("address", "is a struct", "address"),
        ("tags", "is a list", "tags"),
        ("attrs", "is a map", "attrs"),
        ("tags.element", "inside a list or map", "tags.element"),
        ("pts.element.x", "inside a list or map", "pts.element.x"),
        ("attrs.key", "inside a list or map", "attrs.key"),
        ("bucket(16, price)", "bucket\\[16\\] does not apply to double", "price"),
        ("day(id)", "day does not apply to long", "id"),
        ("truncate(4, ts)", "truncate\\[4\\] does not apply to timestamptz", "ts"),
        ("id descending", "no column named 'id descending'", "id descending"),
        ("id nulls", "no column named 'id nulls'", "id nulls"),
    ],
)
def test_refusals_name_the_term(term: str, match: str, column: str) -> None:
    with pytest.raises(SortOrderError, match=match) as ei:
        bind_sort_term(SCHEMA, term)
    assert ei.value.context["term"] == term
    assert ei.value.context["column"] == column
    assert term in str(ei.value)
    assert ei.value.hint


@pytest.mark.parametrize("term", ["", "   ", "frobnicate(id)", "bucket(x, id)", "bucket(16)", "`id"])
def test_unparsable_terms(term: str) -> None:
    with pytest.raises(SortOrderError) as ei:
        bind_sort_term(SCHEMA, term)
    assert ei.value.context["term"] == term
    assert ei.value.hint


def test_non_string_terms_are_refused() -> None:
    with pytest.raises(SortOrderError, match="string or a SortField"):
        build_sort_order(SCHEMA, [42])  # type: ignore[list-item]


def test_a_direction_method_takes_no_modifiers() -> None:
    with pytest.raises(SortOrderError, match="has its own direction"):
        bind_sort_term(SCHEMA, "id desc", direction=ASC)
    with pytest.raises(SortOrderError, match="has its own direction"):
        bind_sort_term(SCHEMA, "id nulls last", direction=DESC)
    assert bind_sort_term(SCHEMA, "id", direction=DESC, null_order=FIRST) == SortField(
        1, IdentityTransform(), DESC, FIRST
    )


def test_sort_fields_are_checked() -> None:
    order = build_sort_order(SCHEMA, [SortField(2, DayTransform(), DESC), "id"])
    assert order.order_id == 1 and [f.source_id for f in order.fields] == [2, 1]
    with pytest.raises(SortOrderError, match="column id 99 is not in the table's schema"):
        build_sort_order(SCHEMA, [SortField(99, IdentityTransform())])
    with pytest.raises(SortOrderError, match="bucket\\[4\\] does not apply to double"):
        build_sort_order(SCHEMA, [SortField(4, BucketTransform(4))])
    with pytest.raises(SortOrderError, match="is a map"):
        build_sort_order(SCHEMA, [SortField(10, IdentityTransform())])


def test_no_terms_is_the_unsorted_order() -> None:
    assert build_sort_order(SCHEMA, []) == UNSORTED_SORT_ORDER


@pytest.mark.parametrize(
    "term",
    [
        "id asc nulls first",
        "bucket(16, id) desc nulls last",
        "day(ts) asc nulls last",
        "truncate(4, name) desc nulls first",
    ],
)
def test_describe_round_trips(term: str) -> None:
    field = bind_sort_term(SCHEMA, term)
    assert describe_sort_field(SCHEMA, field) == term
    assert bind_sort_term(SCHEMA, describe_sort_field(SCHEMA, field)) == field
