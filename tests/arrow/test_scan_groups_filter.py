"""Filtering a group's table (icefloe.arrow._scan_groups._filter / _combine): columns are
concatenated into one chunk before Arrow's filter (which pays per chunk); the result must be
``Table.filter``'s, whatever the chunk layout, the column types, nulls in the mask or columns
that cannot be concatenated."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow import _scan_groups as groups

_SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("s", pa.string()),
        ("d", pa.float64()),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("l", pa.list_(pa.int16())),
    ]
)


def _row(k: int) -> dict[str, Any]:
    return {
        "i": None if k % 5 == 0 else k,
        "s": None if k % 7 == 0 else f"v{k}" * (k % 3),
        "d": None if k % 4 == 0 else k / 3,
        "st": None if k % 6 == 0 else {"a": k, "b": None if k % 2 else str(k)},
        "l": None if k % 9 == 0 else list(range(k % 4)),
    }


@st.composite
def _tables(draw: Any) -> tuple[pa.Table, list[bool | None]]:
    sizes = draw(st.lists(st.integers(0, 12), min_size=0, max_size=8))
    batches, k = [], 0
    for n in sizes:
        batches.append(pa.RecordBatch.from_pylist([_row(k + j) for j in range(n)], schema=_SCHEMA))
        k += n
    table = pa.Table.from_batches(batches, schema=_SCHEMA)
    mask = draw(st.lists(st.sampled_from([True, False, None]), min_size=k, max_size=k))
    return table, mask


@settings(max_examples=60, deadline=None)
@given(_tables(), st.booleans(), st.booleans())
def test_filter_matches_table_filter(
    case: tuple[pa.Table, list[bool | None]], chunked: bool, combine: bool
) -> None:
    table, mask = case
    selection: Any = pa.array(mask, pa.bool_())
    if chunked and len(mask) > 1:  # a mask chunked differently from the columns
        half = len(mask) // 2
        selection = pa.chunked_array([selection.slice(0, half), selection.slice(half)])
    if combine:
        table = groups._combine(table)
        assert all(c.num_chunks <= 1 for c in table.columns)
    out = groups._filter(table, selection)
    expected = table.filter(selection)  # drops the rows whose mask is null, as _filter does
    assert out.schema == table.schema
    assert out.to_pylist() == expected.to_pylist()


def test_filter_keeps_the_row_count_of_a_table_without_columns() -> None:
    table = pa.table({"x": [1, 2, 3, 4]}).select([])
    out = groups._filter(table, pa.array([True, False, True, None]))
    assert out.num_rows == 2 and out.num_columns == 0


def test_columns_that_do_not_concatenate_are_filtered_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """More than 2 GiB of strings cannot be one chunk (32-bit offsets): Arrow raises ArrowInvalid,
    and the column is filtered as it is (simulated: building such a column takes 2 GiB)."""

    def overflow(column: pa.ChunkedArray) -> pa.Array:
        raise pa.ArrowInvalid("offset overflow while concatenating arrays")

    monkeypatch.setattr(groups, "_concatenate", overflow)
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_pylist([_row(k + 10 * b) for k in range(10)], schema=_SCHEMA) for b in range(3)]
    )
    mask = pa.array([k % 3 != 1 for k in range(30)])
    combined = groups._combine(table)
    assert [c.num_chunks for c in combined.columns] == [3] * len(_SCHEMA)
    assert groups._filter(table, mask).to_pylist() == table.filter(mask).to_pylist()
