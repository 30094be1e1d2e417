"""Column metrics, checked against hand-computed values (Java's rules, see icefloe.arrow.metrics)."""

from __future__ import annotations

import io
import math
import struct
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow.metrics import (
    FileMetrics,
    MetricsCollector,
    MetricsConfig,
    MetricsMode,
    parquet_leaf_field_ids,
    parse_metrics_mode,
)
from icefloe.arrow.schema import schema_to_arrow
from icefloe.errors import ConfigError
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzNsType,
    TimeType,
    UUIDType,
)
from icefloe.spec.values import from_bytes


def collect(
    schema: Schema, rows: dict[str, list[object]] | list[pa.RecordBatch], props: dict[str, str] | None = None
) -> FileMetrics:
    arrow = schema_to_arrow(schema)
    batches = rows if isinstance(rows, list) else [pa.RecordBatch.from_pydict(rows, schema=arrow)]
    collector = MetricsCollector(schema, MetricsConfig.from_properties(props or {}, schema))
    sink = io.BytesIO()
    writer = pq.ParquetWriter(sink, arrow, store_schema=False)
    for b in batches:
        writer.write_batch(b)
        collector.update(b)
    writer.close()
    return collector.finish(writer.writer.metadata)


def bounds(schema: Schema, m: FileMetrics, fid: int) -> tuple[object, object]:
    t = schema.find_type(fid)
    lo = m.lower_bounds.get(fid)
    hi = m.upper_bounds.get(fid)
    return (None if lo is None else from_bytes(t, lo), None if hi is None else from_bytes(t, hi))


def test_counts_and_bounds_for_primitives() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "s", StringType()),
        NestedField(3, "d", DecimalType(9, 2)),
        NestedField(4, "u", UUIDType()),
    )
    u1, u2 = uuid.UUID(int=5), uuid.UUID(int=2**127)
    m = collect(
        schema,
        {
            "id": [3, 1, 2],
            "s": ["b", None, "a"],
            "d": [Decimal("1.50"), Decimal("-2.25"), None],
            "u": [u1.bytes, None, u2.bytes],
        },
    )
    assert m.record_count == 3
    assert m.value_counts == {1: 3, 2: 3, 3: 3, 4: 3}
    assert m.null_value_counts == {1: 0, 2: 1, 3: 1, 4: 1}
    assert m.nan_value_counts == {}
    assert m.lower_bounds[1] == struct.pack("<q", 1) and m.upper_bounds[1] == struct.pack("<q", 3)
    assert bounds(schema, m, 2) == ("a", "b")
    assert bounds(schema, m, 3) == (Decimal("-2.25"), Decimal("1.50"))
    assert bounds(schema, m, 4) == (u1, u2)
    assert set(m.column_sizes) == {1, 2, 3, 4} and all(v > 0 for v in m.column_sizes.values())
    assert m.split_offsets == [4]


def test_nan_is_counted_and_never_a_bound() -> None:
    schema = Schema(NestedField(1, "f", FloatType()), NestedField(2, "d", DoubleType()))
    m = collect(schema, {"f": [math.nan, 1.5, None, -3.0], "d": [math.nan, math.nan, None, None]})
    assert m.nan_value_counts == {1: 1, 2: 2}
    assert m.null_value_counts == {1: 1, 2: 2}
    assert bounds(schema, m, 1) == (-3.0, 1.5)
    assert 2 not in m.lower_bounds and 2 not in m.upper_bounds


def test_signed_zeros_follow_javas_total_order() -> None:
    schema = Schema(
        NestedField(1, "a", DoubleType()),
        NestedField(2, "b", DoubleType()),
        NestedField(3, "c", DoubleType()),
    )
    m = collect(schema, {"a": [0.0, -0.0], "b": [-0.0, -0.0], "c": [0.0, 1.0]})
    lo, hi = bounds(schema, m, 1)
    assert math.copysign(1, lo) == -1 and math.copysign(1, hi) == 1  # type: ignore[arg-type]
    lo, hi = bounds(schema, m, 2)
    assert math.copysign(1, lo) == -1 and math.copysign(1, hi) == -1  # type: ignore[arg-type]
    lo, hi = bounds(schema, m, 3)
    assert math.copysign(1, lo) == 1 and hi == 1.0  # type: ignore[arg-type]


def test_signed_zeros_merge_across_batches() -> None:
    schema = Schema(NestedField(1, "a", DoubleType()))
    arrow = schema_to_arrow(schema)
    batches = [
        pa.RecordBatch.from_pydict({"a": [0.0]}, schema=arrow),
        pa.RecordBatch.from_pydict({"a": [-0.0]}, schema=arrow),
    ]
    lo, hi = bounds(schema, collect(schema, batches), 1)
    assert math.copysign(1, lo) == -1 and math.copysign(1, hi) == 1  # type: ignore[arg-type]


def test_strings_are_truncated_to_16_code_points_with_the_upper_bound_rounded_up() -> None:
    schema = Schema(NestedField(1, "s", StringType()))
    long_a = "a" * 20
    long_z = "é" * 10 + "z" * 10
    m = collect(schema, {"s": [long_a, long_z]})
    assert bounds(schema, m, 1) == ("a" * 16, "é" * 10 + "z" * 5 + "{")
    full = collect(schema, {"s": [long_a, long_z]}, {"write.metadata.metrics.default": "full"})
    assert bounds(schema, full, 1) == (long_a, long_z)


def test_upper_bound_is_dropped_when_it_cannot_be_rounded_up() -> None:
    schema = Schema(NestedField(1, "s", StringType()))
    top = chr(0x10FFFF) * 3
    m = collect(schema, {"s": ["a", top]}, {"write.metadata.metrics.default": "truncate(2)"})
    assert bounds(schema, m, 1) == ("a", None)


def test_nested_structs_get_metrics_but_lists_and_maps_only_sizes() -> None:
    schema = Schema(
        NestedField(1, "st", StructType(NestedField(2, "x", IntegerType()))),
        NestedField(3, "li", ListType(4, IntegerType(), element_required=False)),
        NestedField(5, "m", MapType(6, StringType(), 7, IntegerType(), value_required=False)),
    )
    m = collect(
        schema,
        {"st": [{"x": 5}, None, {"x": None}], "li": [[1, 2], None, []], "m": [[("k", 1)], None, None]},
    )
    # A null struct counts as a null in its children, as in Parquet.
    assert m.value_counts == {2: 3}
    assert m.null_value_counts == {2: 2}
    assert bounds(schema, m, 2) == (5, 5)
    assert set(m.column_sizes) == {2, 4, 6, 7}
    assert parquet_leaf_field_ids(schema) == [2, 4, 6, 7]


def test_modes_none_counts_and_per_column_overrides() -> None:
    schema = Schema(
        NestedField(1, "a", IntegerType()),
        NestedField(2, "b", IntegerType()),
        NestedField(3, "c", StringType()),
    )
    rows = {"a": [1, 2], "b": [3, None], "c": ["xyz", "abc"]}
    props = {
        "write.metadata.metrics.default": "counts",
        "write.metadata.metrics.column.a": "none",
        "write.metadata.metrics.column.c": "truncate(1)",
    }
    m = collect(schema, rows, props)
    assert 1 not in m.value_counts and 1 not in m.column_sizes
    assert m.value_counts[2] == 2 and m.null_value_counts[2] == 1 and 2 not in m.lower_bounds
    assert bounds(schema, m, 3) == ("a", "y")


def test_max_inferred_columns_limits_default_metrics() -> None:
    schema = Schema(*(NestedField(i, f"c{i}", IntegerType()) for i in range(1, 4)))
    m = collect(
        schema,
        {"c1": [1], "c2": [2], "c3": [3]},
        {"write.metadata.metrics.max-inferred-column-defaults": "2"},
    )
    assert set(m.value_counts) == {1, 2}
    cfg = MetricsConfig.from_properties(
        {"write.metadata.metrics.max-inferred-column-defaults": "2"}, schema, (3,)
    )
    assert cfg.mode(3) == MetricsMode("truncate", 16)


@pytest.mark.parametrize("text", ["bogus", "truncate(0)", "truncate(x)"])
def test_invalid_modes(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_metrics_mode(text)


def test_split_offsets_are_row_group_starts() -> None:
    schema = Schema(NestedField(1, "a", LongType()))
    arrow = schema_to_arrow(schema)
    batches = [
        pa.RecordBatch.from_pydict({"a": list(range(i * 100, i * 100 + 100))}, schema=arrow) for i in range(3)
    ]
    m = collect(schema, batches)
    assert len(m.split_offsets) == 3 and m.split_offsets[0] == 4
    assert m.split_offsets == sorted(m.split_offsets)
    assert bounds(schema, m, 1) == (0, 299)


@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=True, width=64)), min_size=1, max_size=50))
def test_double_metrics_match_a_python_model(values: list[float | None]) -> None:
    schema = Schema(NestedField(1, "d", DoubleType()))
    m = collect(schema, {"d": values})
    present = [v for v in values if v is not None]
    finite = [v for v in present if not math.isnan(v)]
    assert m.value_counts[1] == len(values)
    assert m.null_value_counts[1] == len(values) - len(present)
    assert m.nan_value_counts[1] == len(present) - len(finite)
    if not finite:
        assert 1 not in m.lower_bounds
        return
    key = lambda v: (v, math.copysign(1, v))  # noqa: E731 - Java's total order on doubles
    lo, hi = bounds(schema, m, 1)
    assert key(lo) == key(min(finite, key=key))  # type: ignore[arg-type]
    assert key(hi) == key(max(finite, key=key))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- footer vs compute
# Bounds of most types come from the Parquet footer; the compute path (footer_bounds=False) is the
# reference they must match byte for byte, including values too long for footer statistics.

_MIXED = Schema(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType(), required=True),
    NestedField(3, "l", LongType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "dec", DecimalType(10, 2)),
    NestedField(6, "date", DateType()),
    NestedField(7, "time", TimeType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tsns", TimestamptzNsType()),
    NestedField(10, "s", StringType()),
    NestedField(11, "u", UUIDType()),
    NestedField(12, "fx", FixedType(3)),
    NestedField(13, "bin", BinaryType()),
    NestedField(
        14,
        "st",
        StructType(NestedField(15, "x", IntegerType(), required=True), NestedField(16, "y", StringType())),
    ),
    NestedField(17, "li", ListType(18, LongType(), element_required=False)),
)

_LONG = 4096  # pyarrow drops footer min/max longer than this
_long_text = st.builds(
    lambda c, n: c * n, st.sampled_from(["a", "é", "z", "\U0010ffff"]), st.integers(_LONG - 4, _LONG + 8)
)
_long_bytes = st.builds(
    lambda c, n: c * n, st.sampled_from([b"\x00", b"\x7f", b"\xff"]), st.integers(_LONG - 4, _LONG + 8)
)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)


def _maybe(s: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), s)


_ROW = st.fixed_dictionaries(
    {
        "b": _maybe(st.booleans()),
        "i": _int32,
        "l": _maybe(_int64),
        "f": _maybe(st.floats(width=32)),
        "dec": _maybe(st.decimals(min_value=-(10**8) + 1, max_value=10**8 - 1, places=2)),
        "date": _maybe(st.integers(-(10**6), 10**6)),
        "time": _maybe(st.integers(0, 86_400_000_000 - 1)),
        "ts": _maybe(_int64),
        "tsns": _maybe(_int64),
        "s": _maybe(st.one_of(st.text(max_size=20), _long_text)),
        "u": _maybe(st.binary(min_size=16, max_size=16)),
        "fx": _maybe(st.binary(min_size=3, max_size=3)),
        "bin": _maybe(st.one_of(st.binary(max_size=20), _long_bytes)),
        "st": _maybe(st.fixed_dictionaries({"x": _int32, "y": _maybe(st.text(max_size=5))})),
        "li": _maybe(st.lists(_maybe(_int64), max_size=3)),
    }
)


def _write_both(
    schema: Schema, batches: list[pa.RecordBatch], cuts: list[int], props: dict[str, str]
) -> tuple[FileMetrics, FileMetrics]:
    """Metrics from the footer path and the compute path over the same file. Each batch is one
    write_table call cut into row groups of ``cuts[i]`` rows, as the writer does."""
    config = MetricsConfig.from_properties(props, schema)
    footer = MetricsCollector(schema, config)
    computed = MetricsCollector(schema, config, footer_bounds=False)
    writer = pq.ParquetWriter(io.BytesIO(), schema_to_arrow(schema), store_schema=False)
    for batch, cut in zip(batches, cuts, strict=True):
        table = pa.Table.from_batches([batch])
        writer.write_table(table, row_group_size=cut)
        footer.update(table)
        computed.update(batch)
    writer.close()
    return footer.finish(writer.writer.metadata), computed.finish(writer.writer.metadata)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(_ROW, min_size=1, max_size=30),
    data=st.data(),
    mode=st.sampled_from(["truncate(16)", "full", "truncate(2)"]),
)
def test_footer_bounds_match_the_compute_path(
    rows: list[dict[str, object]], data: st.DataObject, mode: str
) -> None:
    arrow = schema_to_arrow(_MIXED)
    table = pa.Table.from_pylist(rows, schema=arrow)
    sizes = data.draw(st.lists(st.integers(1, 10), min_size=1, max_size=5))
    batches, offset = [], 0
    for size in [*sizes, len(rows)]:
        if offset >= len(rows):
            break
        batch = table.slice(offset, size).combine_chunks().to_batches()[0]
        batches.append(batch)
        offset += batch.num_rows
    cuts = [data.draw(st.integers(1, b.num_rows)) for b in batches]
    footer, computed = _write_both(_MIXED, batches, cuts, {"write.metadata.metrics.default": mode})
    assert footer == computed


def test_long_string_in_one_row_group_falls_back_to_compute_for_that_write() -> None:
    schema = Schema(NestedField(1, "s", StringType()), NestedField(2, "bin", BinaryType()))
    arrow = schema_to_arrow(schema)
    long_s, long_b = "m" * (_LONG + 1), b"\xfe" * (_LONG + 1)
    batches = [
        pa.RecordBatch.from_pydict({"s": ["k", "q"], "bin": [b"\x01", b"\x02"]}, schema=arrow),
        pa.RecordBatch.from_pydict(
            {"s": ["b", long_s, "c"], "bin": [b"\x00", long_b, b"\x03"]}, schema=arrow
        ),
        pa.RecordBatch.from_pydict({"s": ["x", None], "bin": [None, b"\x05"]}, schema=arrow),
    ]
    props = {"write.metadata.metrics.default": "full"}
    footer, computed = _write_both(schema, batches, [2, 3, 2], props)
    assert footer == computed
    assert bounds(schema, footer, 1) == ("b", "x")
    assert bounds(schema, footer, 2) == (b"\x00", long_b)


def test_a_row_group_without_footer_bounds_and_no_computed_bounds_drops_the_bounds() -> None:
    # A caller breaking the one-update-per-write contract cannot get a wrong bound, only none.
    schema = Schema(NestedField(1, "s", StringType()))
    arrow = schema_to_arrow(schema)
    long_s = "z" * (_LONG + 1)
    collector = MetricsCollector(schema, MetricsConfig.from_properties({}, schema))
    writer = pq.ParquetWriter(io.BytesIO(), arrow, store_schema=False)
    writer.write_table(pa.table({"s": ["a", long_s]}, schema=arrow))
    collector.update(pa.RecordBatch.from_pydict({"s": ["a"]}, schema=arrow))  # only part of the write
    collector.update(pa.RecordBatch.from_pydict({"s": [long_s]}, schema=arrow))
    writer.close()
    m = collector.finish(writer.writer.metadata)
    assert m.value_counts == {1: 2} and 1 not in m.lower_bounds and 1 not in m.upper_bounds
