"""Column metrics for data files, following Iceberg Java's rules for Parquet.

What is collected, per field (the rules of Java's ``ParquetMetrics`` and ``MetricsConfig``):

* ``column_sizes``: compressed bytes of every Parquet column chunk with a field id whose metrics
  mode is not ``none`` (fields inside lists and maps included).
* ``value_counts`` / ``null_value_counts``: every primitive field that is not inside a list or
  map, mode ``counts`` or above. Values under a null parent struct count as nulls, as in Parquet.
* ``nan_value_counts``: float and double fields, mode ``counts`` or above.
* ``lower_bounds`` / ``upper_bounds``: primitive fields outside lists and maps in mode
  ``truncate(N)`` or ``full``. NaN is never a bound; -0.0 sorts below 0.0 (Java's
  ``Float.compare``), so zeros of both signs give the bounds [-0.0, 0.0]. Strings and binary are
  truncated to N code points / bytes with the upper bound rounded up (dropped when it cannot be).

Counts are computed with pyarrow.compute on the data actually written; sizes and split offsets
come from the Parquet footer. Bounds come from the footer's row-group statistics where those are
exact (booleans, integers, dates, times, timestamps, decimals, strings, binary, fixed, uuid: a
second ``min_max`` pass over every column cost ~12% of an append). Floats and doubles are still
bounded with compute: Parquet's float statistics say nothing about signed zeros in Java's order
and NaN handling differs between writers. pyarrow omits a row group's min/max when either value is
longer than 4096 bytes; the data handed to :meth:`MetricsCollector.update` that holds such a value
is bounded with compute instead, and a row group left with neither drops the field's bounds
(missing bounds are always safe; a wrong bound is not).

Modes come from ``write.metadata.metrics.default`` (default ``truncate(16)``) and
``write.metadata.metrics.column.<dotted name>``. As in Java, without an explicit default only the
first ``write.metadata.metrics.max-inferred-column-defaults`` (100) primitive columns get the
default (here: in schema order, depth first) and sort-order columns are raised to at least
``truncate(16)``.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.errors import ConfigError, SchemaError
from icefloe.spec.properties import int_property
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.spec.values import to_bytes, truncate_lower_bound, truncate_upper_bound

__all__ = [
    "DEFAULT_METRICS_MODE",
    "FileMetrics",
    "MetricsCollector",
    "MetricsConfig",
    "MetricsMode",
    "parquet_leaf_field_ids",
    "parse_metrics_mode",
]

METRICS_DEFAULT_PROP = "write.metadata.metrics.default"
METRICS_COLUMN_PREFIX = "write.metadata.metrics.column."
MAX_INFERRED_PROP = "write.metadata.metrics.max-inferred-column-defaults"


@dataclass(frozen=True)
class MetricsMode:
    """``none``, ``counts``, ``truncate(length)`` or ``full``."""

    kind: str
    length: int = 0

    @property
    def collects_counts(self) -> bool:
        return self.kind != "none"

    @property
    def collects_bounds(self) -> bool:
        return self.kind in ("truncate", "full")

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


NONE = MetricsMode("none")
COUNTS = MetricsMode("counts")
FULL = MetricsMode("full")
DEFAULT_METRICS_MODE = MetricsMode("truncate", 16)
_TRUNCATE = re.compile(r"truncate\(\s*(\d+)\s*\)")


def parse_metrics_mode(text: str) -> MetricsMode:
    t = text.strip().lower()
    if t == "none":
        return NONE
    if t == "counts":
        return COUNTS
    if t == "full":
        return FULL
    if m := _TRUNCATE.fullmatch(t):
        length = int(m.group(1))
        if length <= 0:
            raise ConfigError(f"metrics mode {text!r}: truncate length must be positive")
        return MetricsMode("truncate", length)
    raise ConfigError(f"invalid metrics mode {text!r}", hint="use none, counts, truncate(<length>) or full")


class MetricsConfig:
    """The metrics mode of every field of a schema, from table properties."""

    def __init__(self, default: MetricsMode, column_modes: Mapping[int, MetricsMode]) -> None:
        self.default = default
        self._modes = dict(column_modes)

    def mode(self, field_id: int) -> MetricsMode:
        return self._modes.get(field_id, self.default)

    @classmethod
    def from_properties(
        cls,
        properties: Mapping[str, str],
        schema: Schema,
        sort_source_ids: tuple[int, ...] = (),
    ) -> MetricsConfig:
        modes: dict[int, MetricsMode] = {}
        default_text = properties.get(METRICS_DEFAULT_PROP)
        if default_text is not None:
            default = parse_metrics_mode(default_text)
        else:
            default = DEFAULT_METRICS_MODE
            limit = int_property(properties, MAX_INFERRED_PROP, 100)
            leaves = parquet_leaf_field_ids(schema)
            if len(leaves) > limit:
                for fid in leaves[limit:]:
                    modes[fid] = NONE
        for fid in sort_source_ids:
            current = modes.get(fid, default)
            if not current.collects_bounds:
                modes[fid] = DEFAULT_METRICS_MODE
        for key, value in properties.items():
            if not key.startswith(METRICS_COLUMN_PREFIX):
                continue
            name = key[len(METRICS_COLUMN_PREFIX) :]
            mode = parse_metrics_mode(value)
            # Properties naming dropped or unknown columns are ignored, as in Java.
            with contextlib.suppress(SchemaError):
                modes[schema.find_field(name).field_id] = mode
        return cls(default, modes)


def parquet_leaf_field_ids(schema: Schema) -> list[int]:
    """Ids of the primitive fields in Parquet column order (depth first; map key before value)."""
    out: list[int] = []

    def walk(f: NestedField) -> None:
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            for child in t.fields:
                walk(child)
        else:
            out.append(f.field_id)

    for f in schema.fields:
        walk(f)
    return out


@dataclass
class FileMetrics:
    """Metrics of one data file, in the shape of the ``DataFile`` fields."""

    record_count: int
    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]
    split_offsets: list[int]


#: Types whose Parquet footer min/max are the exact bounds in Iceberg's order.
_FOOTER_BOUNDED = (
    BooleanType,
    IntegerType,
    LongType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNsType,
    TimestamptzNsType,
    DecimalType,
    StringType,
    BinaryType,
    FixedType,
    UUIDType,
)
#: pyarrow (Parquet C++) leaves out a column chunk's min/max when either is longer than this.
MAX_FOOTER_STAT_BYTES = 4096


@dataclass
class _FieldStats:
    field: NestedField
    mode: MetricsMode
    leaf_index: int = -1
    footer: bool = False
    value_count: int = 0
    null_count: int = 0
    nan_count: int = 0
    lower: Any = None
    upper: Any = None
    seen: bool = False
    # Row ranges [start, end) bounded with compute although the field is footer-bounded
    # (they hold values too long for the footer), merged when adjacent.
    computed: list[list[int]] | None = None

    def merge(self, lo: Any, hi: Any, is_float: bool) -> None:
        if not self.seen:
            self.lower, self.upper, self.seen = lo, hi, True
            return
        if _lt(lo, self.lower, is_float):
            self.lower = lo
        if _lt(self.upper, hi, is_float):
            self.upper = hi

    def mark_computed(self, start: int, end: int) -> None:
        if self.computed is None:
            self.computed = []
        if self.computed and self.computed[-1][1] == start:
            self.computed[-1][1] = end
        else:
            self.computed.append([start, end])

    def is_computed(self, start: int, end: int) -> bool:
        if not self.computed:
            return False
        i = bisect.bisect_right([r[0] for r in self.computed], start) - 1
        return i >= 0 and self.computed[i][0] <= start and end <= self.computed[i][1]


def _is_float(t: IcebergType) -> bool:
    return isinstance(t, FloatType | DoubleType)


def _negative_zero(v: float) -> bool:
    return v == 0.0 and math.copysign(1.0, v) < 0


def _lt(a: Any, b: Any, is_float: bool) -> bool:
    if is_float and a == b == 0.0:
        return _negative_zero(a) and not _negative_zero(b)
    return bool(a < b)


class MetricsCollector:
    """Accumulates the metrics of one file from the data written to it.

    Call :meth:`update` with exactly the rows of each ``ParquetWriter.write_table`` /
    ``write_batch`` call, in order: those calls start new row groups, so every row group lies
    inside one update, which is what lets a row group without footer bounds be covered by the
    bounds computed for its update.
    """

    def __init__(self, schema: Schema, config: MetricsConfig, footer_bounds: bool = True) -> None:
        self.schema = schema
        self.config = config
        self.record_count = 0
        self._stats: dict[int, _FieldStats] = {}
        for index, fid in enumerate(parquet_leaf_field_ids(schema)):
            mode = config.mode(fid)
            if mode.collects_counts and not schema.is_in_repeated(fid):
                field = schema.find_field(fid)
                footer = (
                    footer_bounds
                    and mode.collects_bounds
                    and isinstance(field.field_type, _FOOTER_BOUNDED)
                    and not (
                        isinstance(field.field_type, FixedType)
                        and field.field_type.length > MAX_FOOTER_STAT_BYTES
                    )
                )
                self._stats[fid] = _FieldStats(field, mode, index, footer)

    def update(self, data: pa.RecordBatch | pa.Table) -> None:
        """Add the rows of one write, laid out as ``schema_to_arrow(schema)``."""
        start = self.record_count
        self.record_count += data.num_rows
        for f, column in zip(self.schema.fields, data.columns, strict=True):
            self._visit(f, column, start)

    def _visit(self, f: NestedField, arr: pa.Array | pa.ChunkedArray, start: int) -> None:
        t = f.field_type
        if isinstance(t, StructType):
            # flatten() merges the struct's nulls into its children, as Parquet counts them.
            for child, child_arr in zip(t.fields, arr.flatten(), strict=True):
                self._visit(child, child_arr, start)
        elif isinstance(t, PrimitiveType):
            stats = self._stats.get(f.field_id)
            if stats is not None:
                self._update_primitive(stats, t, arr, start)

    def _update_primitive(
        self, stats: _FieldStats, t: PrimitiveType, arr: pa.Array | pa.ChunkedArray, start: int
    ) -> None:
        stats.value_count += len(arr)
        stats.null_count += arr.null_count
        if stats.footer:
            if not isinstance(t, StringType | BinaryType) or not _has_long_value(arr):
                return
            stats.mark_computed(start, start + len(arr))
        values = arr.drop_null() if arr.null_count else arr
        is_float = _is_float(t)
        if is_float and len(values):
            nan = pc.is_nan(values)
            n_nan = pc.sum(nan).as_py() or 0
            stats.nan_count += n_nan
            if n_nan:
                values = values.filter(pc.invert(nan))
        if not stats.mode.collects_bounds or len(values) == 0:
            return
        lo, hi = _min_max(t, values)
        stats.merge(lo, hi, is_float)

    def finish(self, parquet_metadata: pq.FileMetaData) -> FileMetrics:
        leaf_ids = parquet_leaf_field_ids(self.schema)
        column_sizes: dict[int, int] = {}
        split_offsets: list[int] = []
        footer_stats = [s for s in self._stats.values() if s.footer]
        unbounded: set[int] = set()
        rg_start = 0
        for rg_index in range(parquet_metadata.num_row_groups):
            rg = parquet_metadata.row_group(rg_index)
            if rg.num_columns != len(leaf_ids):
                raise AssertionError("Parquet column count does not match the schema's leaves")
            split_offsets.append(row_group_start(rg))
            for i, fid in enumerate(leaf_ids):
                if self.config.mode(fid).collects_counts:
                    column_sizes[fid] = column_sizes.get(fid, 0) + rg.column(i).total_compressed_size
            rg_end = rg_start + rg.num_rows
            for s in footer_stats:
                if not _merge_footer_bounds(s, rg.column(s.leaf_index).statistics) and not s.is_computed(
                    rg_start, rg_end
                ):
                    unbounded.add(s.field.field_id)
            rg_start = rg_end
        value_counts: dict[int, int] = {}
        null_counts: dict[int, int] = {}
        nan_counts: dict[int, int] = {}
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for fid, s in self._stats.items():
            value_counts[fid] = s.value_count
            null_counts[fid] = s.null_count
            t = s.field.field_type
            assert isinstance(t, PrimitiveType)
            if _is_float(t):
                nan_counts[fid] = s.nan_count
            if not s.seen or fid in unbounded:
                continue
            lo, hi = s.lower, s.upper
            if s.mode.kind == "truncate" and isinstance(t, StringType | BinaryType):
                lo = truncate_lower_bound(t, lo, s.mode.length)
                hi = truncate_upper_bound(t, hi, s.mode.length)
            if lo is not None:
                lower[fid] = to_bytes(t, lo)
            if hi is not None:
                upper[fid] = to_bytes(t, hi)
        return FileMetrics(
            record_count=self.record_count,
            column_sizes=column_sizes,
            value_counts=value_counts,
            null_value_counts=null_counts,
            nan_value_counts=nan_counts,
            lower_bounds=lower,
            upper_bounds=upper,
            split_offsets=split_offsets,
        )


def row_group_start(rg: pq.RowGroupMetaData) -> int:
    """Byte offset where a row group starts: its first column chunk's first page."""
    col = rg.column(0)
    start = int(col.data_page_offset)
    if col.has_dictionary_page and col.dictionary_page_offset is not None:
        start = min(start, int(col.dictionary_page_offset))
    return start


def _merge_footer_bounds(s: _FieldStats, stats: pq.Statistics | None) -> bool:
    """Merge a row group's footer min/max into ``s``; False when the row group holds values but
    the footer gives no bounds for them."""
    if stats is None:
        return False
    if not stats.has_min_max:
        # All null (or an empty row group): nothing to bound.
        return bool(stats.has_null_count and stats.num_values == 0)
    t = s.field.field_type
    if isinstance(t, StringType | DecimalType):
        lo, hi = stats.min, stats.max  # str decoded from UTF-8; Decimal at the column's scale
    else:
        lo, hi = stats.min_raw, stats.max_raw  # ints in the storage unit, bool, bytes
        if isinstance(t, UUIDType):
            lo, hi = uuid.UUID(bytes=lo), uuid.UUID(bytes=hi)
    s.merge(lo, hi, False)
    return True


def _has_long_value(arr: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a string/binary column holds a value too long for pyarrow to keep as a footer
    min/max (then the footer may have no bounds for its row group)."""
    lengths = pc.binary_length(arr)
    longest = pc.max(lengths).as_py()
    return longest is not None and longest > MAX_FOOTER_STAT_BYTES


def _storage(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if not isinstance(values.type, pa.BaseExtensionType):
        return values
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([c.storage for c in values.chunks], values.type.storage_type)
    return values.storage


def _min_max(t: PrimitiveType, values: pa.Array | pa.ChunkedArray) -> tuple[Any, Any]:
    """Min and max of non-null (non-NaN) values as internal Python values."""
    values = _storage(values)
    typ = values.type
    if pa.types.is_date32(typ):
        values = values.cast(pa.int32())
    elif pa.types.is_temporal(typ):
        values = values.cast(pa.int64())
    mm = pc.min_max(values)
    lo: Any = mm["min"].as_py()
    hi: Any = mm["max"].as_py()
    if _is_float(t) and (lo == 0.0 or hi == 0.0):
        lo, hi = _signed_zero_bounds(values, lo, hi)
    if isinstance(t, UUIDType):
        lo, hi = uuid.UUID(bytes=lo), uuid.UUID(bytes=hi)
    return lo, hi


def _signed_zero_bounds(values: pa.Array | pa.ChunkedArray, lo: float, hi: float) -> tuple[float, float]:
    """Make -0.0 the lower bound when present and 0.0 the upper bound when present."""
    arr = values.to_numpy() if isinstance(values, pa.ChunkedArray) else values.to_numpy(zero_copy_only=False)
    zeros = arr[arr == 0.0]
    neg = np.signbit(zeros)
    if lo == 0.0:
        lo = -0.0 if bool(neg.any()) else 0.0
    if hi == 0.0:
        hi = 0.0 if bool((~neg).any()) else -0.0
    return lo, hi
