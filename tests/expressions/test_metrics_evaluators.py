"""InclusiveMetricsEvaluator and StrictMetricsEvaluator: examples in Java's style, and
soundness on random files (inclusive False => no row matches; strict True => every row matches)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.expressions import (
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    StartsWith,
    bind,
    parse,
)
from icefloe.expressions.visitors import (
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
    expression_evaluator,
)
from icefloe.manifest import DataFile, FileFormat
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, IcebergType, IntegerType, NestedField, StringType, StructType
from icefloe.spec.values import to_bytes, truncate_lower_bound, truncate_upper_bound

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "all_nulls", IntegerType()),
    NestedField(5, "no_stats", IntegerType()),
    NestedField(6, "st", StructType(NestedField(7, "a", IntegerType()))),
)

FILE = DataFile(
    file_path="file.parquet",
    file_format=FileFormat.PARQUET,
    partition=(),
    record_count=50,
    file_size_in_bytes=1000,
    value_counts={1: 50, 2: 50, 3: 50, 4: 50, 7: 50},
    null_value_counts={1: 0, 2: 10, 3: 0, 4: 50, 7: 0},
    nan_value_counts={3: 5},
    lower_bounds={
        1: to_bytes(IntegerType(), 30),
        2: b"abc",
        3: to_bytes(DoubleType(), -1.0),
        7: to_bytes(IntegerType(), 1),
    },
    upper_bounds={
        1: to_bytes(IntegerType(), 79),
        2: b"abe",
        3: to_bytes(DoubleType(), 1.0),
        7: to_bytes(IntegerType(), 1),
    },
)


def _inc(text: str, data_file: DataFile = FILE) -> bool:
    return InclusiveMetricsEvaluator(SCHEMA, parse(text)).eval(data_file)


def _strict(text: str, data_file: DataFile = FILE) -> bool:
    return StrictMetricsEvaluator(SCHEMA, parse(text)).eval(data_file)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 30", False),
        ("id < 31", True),
        ("id <= 29", False),
        ("id <= 30", True),
        ("id > 79", False),
        ("id > 78", True),
        ("id >= 80", False),
        ("id >= 79", True),
        ("id = 29", False),
        ("id = 80", False),
        ("id = 50", True),
        ("id != 30", True),
        ("id in (1, 2, 80)", False),
        ("id in (1, 30)", True),
        ("id not in (30)", True),
        ("all_nulls is null", True),
        ("all_nulls is not null", False),
        ("all_nulls = 1", False),
        ("all_nulls < 1", False),
        ("all_nulls != 1", True),
        ("all_nulls not in (1)", True),
        ("id is null", True),  # required, so bound to false... see test below
        ("no_stats = 5", True),
        ("no_stats is null", True),
        ("s is null", True),
        ("s like 'ab%'", True),
        ("s like 'abd%'", True),
        ("s like 'abf%'", False),
        ("s like 'aa%'", False),
        ("s like 'a%'", True),
        ("s not like 'ab%'", True),
        ("d is nan", True),
        ("d is not nan", True),
        ("d > 2", False),
        ("d < -1", False),
        ("d <= -1", True),
        ("st.a = 2", False),
        ("st.a = 1", True),
    ],
)
def test_inclusive(text: str, expected: bool) -> None:
    if text == "id is null":
        expected = False
    assert _inc(text) is expected


def test_inclusive_truncated_string_bounds() -> None:
    # Bounds truncated to 2 characters from values "abcdef" .. "abzzz": lower "ab", upper "ac".
    f = DataFile(
        file_path="f",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=3,
        file_size_in_bytes=1,
        value_counts={2: 3},
        null_value_counts={2: 0},
        lower_bounds={2: b"ab"},
        upper_bounds={2: b"ac"},
    )
    assert _inc("s = 'abcdef'", f)
    assert _inc("s like 'abc%'", f)
    assert _inc("s like 'ac%'", f)
    assert not _inc("s like 'ad%'", f)
    assert not _inc("s = 'aa'", f)
    # Both bounds start with "a": no value can avoid the prefix.
    assert not _inc("s not like 'a%'", f)
    assert _inc("s not like 'ab%'", f)


def test_nan_only_and_empty_files() -> None:
    nan_only = DataFile(
        file_path="f",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=5,
        file_size_in_bytes=1,
        value_counts={3: 5},
        null_value_counts={3: 0},
        nan_value_counts={3: 5},
    )
    assert not _inc("d < 1", nan_only)
    assert not _inc("d = 1", nan_only)
    assert not _inc("d is not nan", nan_only)
    assert _inc("d is nan", nan_only)
    assert _strict("d is nan", nan_only)
    assert _strict("d != 1", nan_only)
    empty = DataFile(
        file_path="f", file_format=FileFormat.PARQUET, partition=(), record_count=0, file_size_in_bytes=1
    )
    assert not _inc("id = 1", empty)
    assert InclusiveMetricsEvaluator(SCHEMA, parse("id = 1"), include_empty_files=True).eval(empty)
    unknown = DataFile(
        file_path="f", file_format=FileFormat.PARQUET, partition=(), record_count=-1, file_size_in_bytes=1
    )
    assert _inc("id = 1", unknown)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 80", True),
        ("id < 79", False),
        ("id <= 79", True),
        ("id > 29", True),
        ("id > 30", False),
        ("id >= 30", True),
        ("id = 30", False),
        ("id != 29", True),
        ("id != 80", True),
        ("id != 50", False),
        ("id not in (1, 80)", True),
        ("id not in (1, 50)", False),
        ("id in (30, 79)", False),
        ("id is not null", True),
        ("all_nulls is null", True),
        ("all_nulls != 3", True),
        ("all_nulls not in (3)", True),
        ("all_nulls < 3", False),
        ("s is not null", False),
        ("s like 'ab%'", False),
        ("s not like 'b%'", True),
        ("d < 2", False),  # NaNs present
        ("st.a = 1", False),  # nested: Java does not trust nested metrics for strict
        ("no_stats != 5", False),
    ],
)
def test_strict(text: str, expected: bool) -> None:
    assert _strict(text) is expected


def test_strict_equal_and_starts_with() -> None:
    f = DataFile(
        file_path="f",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=3,
        file_size_in_bytes=1,
        value_counts={1: 3, 2: 3},
        null_value_counts={1: 0, 2: 0},
        lower_bounds={1: to_bytes(IntegerType(), 7), 2: b"abc"},
        upper_bounds={1: to_bytes(IntegerType(), 7), 2: b"abd"},
    )
    assert _strict("id = 7", f)
    assert _strict("id in (7, 8)", f)
    assert _strict("s like 'ab%'", f)
    assert not _strict("s like 'abc%'", f)


# ------------------------------------------------------------------ soundness on random files

_COLUMNS: dict[str, tuple[IcebergType, st.SearchStrategy[Any]]] = {
    "i": (IntegerType(), st.integers(-20, 20)),
    "s": (StringType(), st.text(alphabet="ab\u00e9\U0001f600", max_size=4)),
    "d": (DoubleType(), st.sampled_from([-1.5, 0.0, 2.0, 3.25, math.nan, -math.inf, math.inf])),
}
RANDOM_SCHEMA = Schema(*(NestedField(n + 1, name, t) for n, (name, (t, _)) in enumerate(_COLUMNS.items())))


def _random_file(data: st.DataObject, field_id: int, t: IcebergType, rows: list[Any]) -> DataFile:
    non_null = [v for v in rows if v is not None]
    ordered = [v for v in non_null if not (isinstance(v, float) and math.isnan(v))]
    lower = upper = None
    if ordered:
        lo, hi = min(ordered), max(ordered)
        if isinstance(t, StringType) and data.draw(st.booleans()):
            width = data.draw(st.integers(1, 3))
            lo, hi = truncate_lower_bound(t, lo, width), truncate_upper_bound(t, hi, width)
        lower = to_bytes(t, lo)
        upper = to_bytes(t, hi) if hi is not None else None

    def maybe(stats: dict[int, Any]) -> dict[int, Any] | None:
        keep = data.draw(st.sampled_from(["all", "all", "all", "missing", "none"]))
        if keep == "none":
            return None
        return {} if keep == "missing" else stats

    return DataFile(
        file_path="f",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=len(rows),
        file_size_in_bytes=1,
        value_counts=maybe({field_id: len(rows)}),
        null_value_counts=maybe({field_id: len(rows) - len(non_null)}),
        nan_value_counts=(
            maybe({field_id: len(non_null) - len(ordered)}) if isinstance(t, DoubleType) else None
        ),
        lower_bounds=maybe({field_id: lower} if lower is not None else {}),
        upper_bounds=maybe({field_id: upper} if upper is not None else {}),
    )


def _random_predicate(
    data: st.DataObject, name: str, t: IcebergType, values: st.SearchStrategy[Any]
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
    if isinstance(t, StringType):
        ops += [StartsWith, NotStartsWith]
    if isinstance(t, DoubleType):
        ops += [IsNaN, NotNaN]
        values = values.filter(lambda v: not math.isnan(v))
    op = data.draw(st.sampled_from(ops))
    if op in (IsNull, NotNull, IsNaN, NotNaN):
        return op(name)  # type: ignore[no-any-return]
    if op in (In, NotIn):
        return op(name, data.draw(st.lists(values, min_size=1, max_size=3)))  # type: ignore[no-any-return]
    return op(name, data.draw(values))  # type: ignore[no-any-return]


@given(data=st.data())
def test_metrics_evaluators_are_sound(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(_COLUMNS)))
    t, values = _COLUMNS[name]
    field_id = RANDOM_SCHEMA.find_field(name).field_id
    pos = field_id - 1
    rows = data.draw(st.lists(st.none() | values, min_size=1, max_size=6))
    data_file = _random_file(data, field_id, t, rows)
    pred = _random_predicate(data, name, t, values)
    if data.draw(st.booleans()):
        pred = ~pred

    row_match = expression_evaluator(RANDOM_SCHEMA.as_struct(), bind(RANDOM_SCHEMA, pred))
    full_rows = [tuple(v if i == pos else None for i in range(len(_COLUMNS))) for v in rows]
    results = [row_match(r) for r in full_rows]
    if any(results):
        assert InclusiveMetricsEvaluator(RANDOM_SCHEMA, pred).eval(data_file), (pred, rows, data_file)
    if StrictMetricsEvaluator(RANDOM_SCHEMA, pred).eval(data_file):
        assert all(results), (pred, rows, data_file)
