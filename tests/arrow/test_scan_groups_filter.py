"""Filtering a group's table (icefloe.arrow._scan_groups._filter): the mask is cut to each
column's chunks and Arrow filters chunk by chunk; the result must be ``Table.filter``'s, whatever
the chunk layout of the columns (alike or not) and of the mask, the column types and nulls in
the mask."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
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


@settings(max_examples=80, deadline=None)
@given(_tables(), st.sampled_from(["flat", "halves", "aligned"]), st.booleans())
def test_filter_matches_table_filter(
    case: tuple[pa.Table, list[bool | None]], mask_layout: str, one_chunk_column: bool
) -> None:
    table, mask = case
    selection: Any = pa.array(mask, pa.bool_())
    if mask_layout == "halves" and len(mask) > 1:  # a mask chunked differently from the columns
        half = len(mask) // 2
        selection = pa.chunked_array([selection.slice(0, half), selection.slice(half)])
    elif mask_layout == "aligned":  # chunked as the columns (a mask computed from them)
        lengths = [len(c) for c in table.column(0).chunks]
        offsets = [sum(lengths[:i]) for i in range(len(lengths))]
        selection = pa.chunked_array(
            [selection.slice(o, n) for o, n in zip(offsets, lengths, strict=True)], pa.bool_()
        )
    if one_chunk_column:  # e.g. a column missing from the files, made as one chunk of nulls
        table = table.set_column(0, table.field(0), pa.chunked_array([table.column(0).combine_chunks()]))
    out = groups._filter(table, selection)
    expected = table.filter(selection)  # drops the rows whose mask is null, as _filter does
    assert out.schema == table.schema
    assert out.to_pylist() == expected.to_pylist()
    # Nothing concatenated: each chunk that keeps rows stays a chunk of its own.
    for before, after in zip(table.columns, out.columns, strict=True):
        keeping, offset = 0, 0
        for chunk in before.chunks:
            keeping += any(m is True for m in mask[offset : offset + len(chunk)])
            offset += len(chunk)
        assert after.num_chunks == keeping or (keeping == 0 and after.num_chunks <= 1)


def test_filter_keeps_the_row_count_of_a_table_without_columns() -> None:
    table = pa.table({"x": [1, 2, 3, 4]}).select([])
    out = groups._filter(table, pa.array([True, False, True, None]))
    assert out.num_rows == 2 and out.num_columns == 0
