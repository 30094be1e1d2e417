"""Partition transforms over whole Arrow arrays, vectorized with pyarrow.compute and numpy.

``transform_arrow(t, source_type, array)`` equals ``t.apply(source_type, v)`` for every element
(nulls stay null); the property tests hold the two to that. The calendar arithmetic is shared
with the per-value transforms (:mod:`icefloe.transforms._calendar`). Murmur3 is implemented here
in numpy over byte matrices: int, long, date, time, timestamp, uuid and fixed buckets need no
Python loop, and strings and binary are hashed one matrix per distinct value length. Decimals,
and string lengths too rare to be worth a matrix, are hashed once per *distinct* value with
``mmh3`` after dictionary encoding.

Arrow types: int32/int64 (narrower ints are widened), date32, time64, timestamp (any unit and
time zone; stored values are UTC), decimal32/64/128, string/large_string/string_view,
binary/large_binary/binary_view, fixed_size_binary and the ``arrow.uuid`` extension. Results:
bucket, year, month and hour give int32, day gives date32, identity and truncate keep the input
type, void gives nulls of the input type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import PartitionSpecError
from icefloe.spec.types import (
    BinaryType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)
from icefloe.transforms import BucketTransform, Transform, TransformKind, TruncateTransform, bucket_hash
from icefloe.transforms._calendar import (
    EPOCH_YEAR,
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    days_to_months,
    days_to_years,
)

__all__ = ["murmur3_32_rows", "transform_arrow"]

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M5 = np.uint32(5)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_INT32_MASK = np.uint32(0x7FFFFFFF)
_BINARY = BinaryType()
# Block rounds of Murmur3 spent on rare value lengths before hashing them one distinct value at a
# time; lengths shared by at least _MIN_GROUP_ROWS rows are always vectorized.
_BLOCK_BUDGET = 4096
_MIN_GROUP_ROWS = 64
# Days since 1970 of 0000-01-01 and 9999-12-31.
_ARROW_CALENDAR_DAYS = (-719_528, 2_932_896)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))  # type: ignore[no-any-return]


def _mix_k(k: np.ndarray) -> np.ndarray:
    k = k * _C1
    k = _rotl(k, 15)
    return k * _C2  # type: ignore[no-any-return]


def murmur3_32_rows(rows: np.ndarray) -> np.ndarray:
    """Murmur3 x86 32-bit (seed 0) of every row of an ``(n, L)`` uint8 matrix, as uint32.

    The loop runs over the L // 4 blocks of a row, never over rows.
    """
    n, length = rows.shape
    h: np.ndarray = np.zeros(n, dtype=np.uint32)
    nblocks = length // 4
    if nblocks:
        blocks = np.ascontiguousarray(rows[:, : nblocks * 4]).view("<u4").reshape(n, nblocks)
        for i in range(nblocks):
            h ^= _mix_k(blocks[:, i].astype(np.uint32))
            h = _rotl(h, 13)
            h = h * _M5 + _N1
    tail: np.ndarray = rows[:, nblocks * 4 :].astype(np.uint32)
    rem = length & 3
    if rem:
        k = np.zeros(n, dtype=np.uint32)
        for i in range(rem - 1, -1, -1):
            k ^= tail[:, i] << np.uint32(8 * i)
        h ^= _mix_k(k)
    h ^= np.uint32(length & 0xFFFFFFFF)
    h ^= h >> np.uint32(16)
    h = h * _F1
    h ^= h >> np.uint32(13)
    h = h * _F2
    h ^= h >> np.uint32(16)
    return h


# --------------------------------------------------------------------------- array helpers


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    """Boolean numpy mask of valid rows, or None when there are no nulls."""
    if arr.null_count == 0:
        return None
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _finish(values: np.ndarray, arrow_type: pa.DataType, valid: np.ndarray | None) -> pa.Array:
    mask = None if valid is None else ~valid
    return pa.array(values, type=arrow_type, mask=mask)


def _storage(arr: pa.Array) -> pa.Array:
    return arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr


def _int64_values(arr: pa.Array) -> np.ndarray:
    """The raw integer values of an integer, date, time or timestamp array as int64 (nulls: 0)."""
    t = arr.type
    if pa.types.is_date32(t):
        raw = arr.view(pa.int32())
    elif pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        raw = arr.view(pa.int64())
    elif pa.types.is_time32(t):
        raw = arr.view(pa.int32())
    elif pa.types.is_integer(t):
        raw = arr
    else:
        raise PartitionSpecError(f"expected an integer or temporal Arrow array, got {t}")
    if raw.null_count:
        raw = pc.fill_null(raw, 0)
    return raw.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)  # type: ignore[no-any-return]


def _floor_div(values: np.ndarray, divisor: int) -> np.ndarray:
    return values // np.int64(divisor)  # type: ignore[no-any-return]


def _micros(arr: pa.Array) -> np.ndarray:
    """Microseconds since the epoch (or since midnight for times), floored, of a temporal array."""
    t = arr.type
    values = _int64_values(arr)
    unit = getattr(t, "unit", "us")
    if unit == "ns":
        return _floor_div(values, 1000)
    if unit == "ms":
        return values * np.int64(1000)  # type: ignore[no-any-return]
    if unit == "s":
        return values * np.int64(1_000_000)  # type: ignore[no-any-return]
    return values


def _days(arr: pa.Array) -> np.ndarray:
    if pa.types.is_date32(arr.type):
        return _int64_values(arr)
    if pa.types.is_date64(arr.type):
        return _floor_div(_int64_values(arr), 86_400_000)
    if pa.types.is_timestamp(arr.type):
        return _floor_div(_micros(arr), MICROS_PER_DAY)
    raise PartitionSpecError(f"cannot take days of an Arrow array of type {arr.type}")


# --------------------------------------------------------------------------- transforms


def _temporal(kind: TransformKind, arr: pa.Array) -> pa.Array:
    valid = _valid_mask(arr)
    if kind is TransformKind.HOUR:
        if not pa.types.is_timestamp(arr.type):
            raise PartitionSpecError(f"hour needs a timestamp array, got {arr.type}")
        return _finish(_floor_div(_micros(arr), MICROS_PER_HOUR).astype(np.int32), pa.int32(), valid)
    days = _days(arr)
    if kind is TransformKind.DAY:
        return _finish(days.astype(np.int32), pa.date32(), valid)
    if len(days) and _ARROW_CALENDAR_DAYS[0] <= days.min() and days.max() <= _ARROW_CALENDAR_DAYS[1]:
        # Arrow's calendar kernels are several times faster than the numpy arithmetic but
        # overflow far from the present, so they are used only for years 0000..9999.
        as_dates = pa.array(days.astype(np.int32), pa.int32()).view(pa.date32())
        years = pc.year(as_dates).to_numpy().astype(np.int64) - EPOCH_YEAR
        if kind is TransformKind.YEAR:
            return _finish(years.astype(np.int32), pa.int32(), valid)
        months = pc.month(as_dates).to_numpy().astype(np.int64)
        return _finish((years * 12 + months - 1).astype(np.int32), pa.int32(), valid)
    if kind is TransformKind.MONTH:
        return _finish(np.asarray(days_to_months(days)).astype(np.int32), pa.int32(), valid)
    return _finish(np.asarray(days_to_years(days)).astype(np.int32), pa.int32(), valid)


def _fixed_width_rows(arr: pa.Array) -> np.ndarray:
    """The ``(n, width)`` byte matrix of a fixed_size_binary array (null rows as whatever bytes)."""
    width = arr.type.byte_width
    data = arr.buffers()[1]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    start = arr.offset * width
    return raw[start : start + len(arr) * width].reshape(len(arr), width)


def _bucket(transform: BucketTransform, source_type: IcebergType, arr: pa.Array) -> pa.Array:
    valid = _valid_mask(arr)
    storage = _storage(arr)
    t = storage.type
    if pa.types.is_fixed_size_binary(t):
        hashes = murmur3_32_rows(_fixed_width_rows(storage))
    elif pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_integer(t) or pa.types.is_date(t):
        if pa.types.is_date(t):
            values = _days(storage)
        elif pa.types.is_timestamp(t) or pa.types.is_time64(t):
            values = _micros(storage)
        else:
            values = _int64_values(storage)
        rows = np.ascontiguousarray(values.astype("<i8")).view(np.uint8).reshape(len(values), 8)
        hashes = murmur3_32_rows(rows)
    elif pa.types.is_decimal(t):
        hashes = _distinct_hashes(source_type, storage)
    else:
        hashes = _variable_width_hashes(_as_binary(storage))
    buckets = (hashes & _INT32_MASK) % np.uint32(transform.num_buckets)
    return _finish(buckets.astype(np.int32), pa.int32(), valid)


def _as_binary(arr: pa.Array) -> pa.Array:
    """The UTF-8 bytes of a string array (or a binary array) as binary or large_binary."""
    t = arr.type
    if pa.types.is_string(t):
        return arr.view(pa.binary())
    if pa.types.is_large_string(t):
        return arr.view(pa.large_binary())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return arr
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return arr.cast(pa.large_binary())
    raise PartitionSpecError(f"cannot bucket an Arrow array of type {t}")


def _distinct_hashes(source_type: IcebergType, arr: pa.Array) -> np.ndarray:
    """Per-row uint32 hashes computed once per *distinct* value with ``mmh3`` (nulls: 0)."""
    encoded = pc.dictionary_encode(arr)
    dictionary = encoded.dictionary
    distinct = np.fromiter(
        (bucket_hash(source_type, v) for v in dictionary.to_pylist()),
        dtype=np.int64,
        count=len(dictionary),
    )
    distinct_u32 = (distinct & 0xFFFFFFFF).astype(np.uint32)
    indices = encoded.indices
    if indices.null_count:
        indices = pc.fill_null(indices, 0)
    idx = indices.to_numpy(zero_copy_only=False)
    if not len(distinct_u32):
        return np.zeros(len(arr), dtype=np.uint32)
    return distinct_u32[idx]  # type: ignore[no-any-return]


def _variable_width_hashes(arr: pa.Array) -> np.ndarray:
    """Per-row uint32 hashes of a binary/large_binary array, vectorized per value length.

    Rows of equal length form a byte matrix that :func:`murmur3_32_rows` hashes at once. Each
    distinct length costs a few numpy calls per 4-byte block, so lengths are taken most common
    first within a budget; rows of rarer lengths fall back to hashing their distinct values.
    """
    n = len(arr)
    offset_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets_buf = arr.buffers()[1]
    if n == 0 or offsets_buf is None:
        return np.zeros(n, dtype=np.uint32)
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if arr.null_count:
        lengths = np.where(pc.is_valid(arr).to_numpy(zero_copy_only=False), lengths, 0)
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    starts = np.flatnonzero(np.r_[True, sorted_lengths[1:] != sorted_lengths[:-1]])
    ends = np.r_[starts[1:], n]
    groups = sorted(zip(starts.tolist(), ends.tolist(), strict=True), key=lambda g: g[0] - g[1])
    out: np.ndarray = np.zeros(n, dtype=np.uint32)
    budget = _BLOCK_BUDGET
    leftover: list[np.ndarray] = []
    for start, end in groups:
        length = int(sorted_lengths[start])
        cost = length // 4 + 1
        rows = order[start:end]
        if cost > budget and end - start < _MIN_GROUP_ROWS:
            leftover.append(rows)
            continue
        budget -= cost
        matrix = data[offsets[rows][:, None] + np.arange(length, dtype=np.int64)]
        out[rows] = murmur3_32_rows(matrix.reshape(len(rows), length))
    if leftover:
        rest = np.concatenate(leftover)
        out[rest] = _distinct_hashes(_BINARY, arr.take(pa.array(rest)))
    return out


def _truncate_decimal(width: int, arr: pa.Array) -> pa.Array:
    """Floor the unscaled 128-bit values to multiples of ``width`` using two 64-bit limbs.

    v mod W is computed from the limbs as ((hi mod W) * (2**64 mod W) + lo mod W) mod W; every
    partial product stays below 2**62 because W < 2**31.
    """
    original_type = arr.type
    if not pa.types.is_decimal128(original_type):
        arr = arr.cast(pa.decimal128(original_type.precision, original_type.scale))
    n = len(arr)
    data = arr.buffers()[1]
    limbs = np.frombuffer(data, dtype="<i8")[2 * arr.offset : 2 * (arr.offset + n)].reshape(n, 2)
    lo = limbs[:, 0].view(np.uint64)
    hi = limbs[:, 1]
    w = np.uint64(width)
    r = (np.mod(hi, np.int64(width)).astype(np.uint64) * np.uint64(pow(2, 64, width)) + lo % w) % w
    new_lo = lo - r
    new_hi = hi - (lo < r).astype(np.int64)
    out: np.ndarray = np.empty((n, 2), dtype="<i8")
    out[:, 0] = new_lo.view(np.int64)
    out[:, 1] = new_hi
    result = pa.Array.from_buffers(arr.type, n, [None, pa.py_buffer(out.tobytes())])
    if arr.null_count:
        result = pc.if_else(pc.is_valid(arr), result, pa.scalar(None, arr.type))
    if result.type != original_type:
        result = result.cast(original_type, safe=False)
    return result


def _truncate(transform: TruncateTransform, source_type: IcebergType, arr: pa.Array) -> pa.Array:
    width = transform.width
    t = arr.type
    if isinstance(source_type, IntegerType | LongType):
        if not pa.types.is_integer(t):
            raise PartitionSpecError(f"truncate of {source_type} needs an integer array, got {t}")
        bits = 32 if isinstance(source_type, IntegerType) else 64
        values = _int64_values(arr)
        # Floor modulo of the exact value, then wrap like Java's int/long arithmetic.
        result = values - np.mod(values, np.int64(width))
        np_type = np.int32 if bits == 32 else np.int64
        return _finish(result.astype(np_type), pa.int32() if bits == 32 else pa.int64(), _valid_mask(arr))
    if isinstance(source_type, DecimalType):
        return _truncate_decimal(width, arr)
    if isinstance(source_type, StringType):
        return pc.utf8_slice_codeunits(arr, 0, width)  # code points, despite the name
    return pc.binary_slice(arr, 0, width)


def _transform_array(transform: Transform, source_type: IcebergType, arr: pa.Array) -> pa.Array:
    kind = transform.kind
    if kind is TransformKind.IDENTITY:
        return arr
    if kind is TransformKind.VOID:
        return pa.nulls(len(arr), type=arr.type)
    if transform.is_temporal:
        return _temporal(kind, arr)
    if isinstance(transform, BucketTransform):
        return _bucket(transform, source_type, arr)
    if isinstance(transform, TruncateTransform):
        return _truncate(transform, source_type, arr)
    raise PartitionSpecError(f"no Arrow implementation of transform {transform}")


def transform_arrow(transform: Transform, source_type: IcebergType, array: Any) -> Any:
    """Apply ``transform`` to every value of ``array`` (a ``pa.Array`` or ``pa.ChunkedArray``,
    returning the same kind) holding values of the Iceberg type ``source_type``."""
    transform.check_source_type(source_type)
    if isinstance(array, pa.ChunkedArray):
        chunks = [_transform_array(transform, source_type, c) for c in array.chunks]
        if chunks:
            return pa.chunked_array(chunks, type=chunks[0].type)
        empty = _transform_array(transform, source_type, pa.array([], type=array.type))
        return pa.chunked_array([], type=empty.type)
    if not isinstance(array, pa.Array):
        raise PartitionSpecError(f"expected a pyarrow Array, got {type(array).__name__}")
    return _transform_array(transform, source_type, array)
