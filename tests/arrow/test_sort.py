"""The Arrow sorting kernel against a plain-Python model of Iceberg/Spark ordering: directions,
null orders, NaN above every number, -0.0 equal to 0.0, transforms as keys, nested struct
columns, stability; and ``is_sorted``/``in_order`` against the same model."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow.schema import schema_to_arrow
from icefloe.arrow.sort import ArrowSortOrder
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.types import (
    DoubleType,
    FloatType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UUIDType,
)
from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform, Transform, TruncateTransform

SCHEMA = Schema(
    NestedField(1, "d", DoubleType()),
    NestedField(2, "i", LongType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "ts", TimestamptzType()),
    NestedField(5, "st", StructType(NestedField(6, "f", FloatType()))),
    NestedField(7, "u", UUIDType()),
)
ARROW = schema_to_arrow(SCHEMA)
NAMES = {1: "d", 2: "i", 3: "s", 4: "ts", 6: "f", 7: "u"}
KEYS: dict[int, list[Transform]] = {
    1: [IdentityTransform()],
    2: [IdentityTransform(), BucketTransform(3), TruncateTransform(10)],
    3: [IdentityTransform(), TruncateTransform(1)],
    4: [IdentityTransform(), DayTransform()],
    6: [IdentityTransform()],
    7: [IdentityTransform()],
}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

floats = st.sampled_from([None, math.nan, -0.0, 0.0, 1.5, -2.0, math.inf, -math.inf, 3.25])
rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "d": floats,
            "i": st.none() | st.integers(-30, 30),
            "s": st.none() | st.sampled_from(["", "a", "ab", "b", "é", "z"]),
            "ts": st.none() | st.integers(-3, 3).map(lambda h: EPOCH + dt.timedelta(hours=13 * h)),
            "st": st.none() | st.fixed_dictionaries({"f": floats}),
            "u": st.none() | st.sampled_from([b"\x00" * 16, b"\x7f" + b"\x00" * 15, b"\xff" * 16]),
        }
    ),
    max_size=25,
)
fields_strategy = st.lists(
    st.sampled_from(sorted(KEYS)).flatmap(
        lambda sid: st.builds(
            SortField,
            st.just(sid),
            st.sampled_from(KEYS[sid]),
            st.sampled_from(list(SortDirection)),
            st.sampled_from(list(NullOrder)),
        )
    ),
    min_size=1,
    max_size=3,
)


def _value(row: dict[str, Any], field: SortField) -> Any:
    if field.source_id == 6:
        v = None if row["st"] is None else row["st"]["f"]
    else:
        v = row[NAMES[field.source_id]]
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        v = (v - EPOCH) // dt.timedelta(microseconds=1)
    source_type = SCHEMA.find_type(field.source_id)
    t = field.transform
    if isinstance(v, float) and math.isnan(v):
        return v
    if isinstance(source_type, FloatType) and not math.isinf(v):
        v = float(pa.scalar(v, pa.float32()).as_py())
    return t.apply(source_type, v) if not isinstance(t, IdentityTransform) else v


def _compare(a: Any, b: Any, field: SortField) -> int:
    """Iceberg/Spark order of two key values for one field."""
    nulls_first = field.null_order is NullOrder.NULLS_FIRST
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (-1 if nulls_first else 1) if a is None else (1 if nulls_first else -1)

    def rank(x: Any) -> tuple[int, Any]:
        return (1, 0.0) if isinstance(x, float) and math.isnan(x) else (0, x)

    ra, rb = rank(a), rank(b)
    c = (ra > rb) - (ra < rb)
    return -c if field.direction is SortDirection.DESC else c


def _row_compare(fields: list[SortField]) -> Any:
    def cmp(a: dict[str, Any], b: dict[str, Any]) -> int:
        for f in fields:
            c = _compare(_value(a, f), _value(b, f), f)
            if c:
                return c
        return 0

    return cmp


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=ARROW)


def _canon(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


@settings(max_examples=300, deadline=None)
@given(rows_strategy, fields_strategy)
def test_sort_matches_the_model(rows: list[dict[str, Any]], fields: list[SortField]) -> None:
    order = ArrowSortOrder(SortOrder(1, fields), SCHEMA)
    data = _table(rows)
    got = data.take(order.sort_indices(data)).to_pylist() if rows else []
    want = sorted(data.to_pylist(), key=functools.cmp_to_key(_row_compare(fields)))  # stable
    assert [_canon(r) for r in got] == [_canon(r) for r in want]
    assert order.is_sorted(data.take(order.sort_indices(data)) if rows else data)
    assert [_canon(r) for r in order.sort(data).to_pylist()] == [_canon(r) for r in got]


@settings(max_examples=300, deadline=None)
@given(rows_strategy, fields_strategy)
def test_is_sorted_matches_the_model(rows: list[dict[str, Any]], fields: list[SortField]) -> None:
    order = ArrowSortOrder(SortOrder(1, fields), SCHEMA)
    data = _table(rows)
    cmp = _row_compare(fields)
    plain = data.to_pylist()
    want = all(cmp(a, b) <= 0 for a, b in itertools.pairwise(plain))
    assert order.is_sorted(data) == want
    if len(plain) >= 2:
        first, second = data.slice(0, 1), data.slice(1)
        assert order.in_order(first, second) == (cmp(plain[0], plain[1]) <= 0)


def test_nan_and_nulls_placement() -> None:
    data = _table([{"d": v} for v in [1.0, math.nan, None, -math.inf, math.inf, -0.0]])
    expected = {
        (SortDirection.ASC, NullOrder.NULLS_FIRST): [None, -math.inf, -0.0, 1.0, math.inf, math.nan],
        (SortDirection.ASC, NullOrder.NULLS_LAST): [-math.inf, -0.0, 1.0, math.inf, math.nan, None],
        (SortDirection.DESC, NullOrder.NULLS_FIRST): [None, math.nan, math.inf, 1.0, -0.0, -math.inf],
        (SortDirection.DESC, NullOrder.NULLS_LAST): [math.nan, math.inf, 1.0, -0.0, -math.inf, None],
    }
    for (direction, nulls), want in expected.items():
        order = ArrowSortOrder(SortOrder(1, [SortField(1, IdentityTransform(), direction, nulls)]), SCHEMA)
        got = order.sort(data).column("d").to_pylist()
        assert [repr(v) for v in got] == [repr(v) for v in want], (direction, nulls)


def test_sorted_data_is_returned_as_is() -> None:
    order = ArrowSortOrder(SortOrder(1, [SortField(2, IdentityTransform(), SortDirection.DESC)]), SCHEMA)
    data = _table([{"i": i} for i in [5, 3, 3, 1, None]])
    assert order.sort(data) is data


def test_unsorted_or_unresolvable_orders() -> None:
    assert ArrowSortOrder.for_schema(UNSORTED_SORT_ORDER, SCHEMA) is None
    assert ArrowSortOrder.for_schema(SortOrder(1, [SortField(99, IdentityTransform())]), SCHEMA) is None
    with pytest.raises(ValueError, match="unsorted"):
        ArrowSortOrder(UNSORTED_SORT_ORDER, SCHEMA)
