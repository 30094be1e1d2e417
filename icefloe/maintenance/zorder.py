"""Z-order: which columns a z-order rewrite may use, and the byte rules of its z-values.

A z-value interleaves the bits of an *order-preserving* byte encoding of each column, so that
sorting by it clusters rows that are close in every column at once (files then have narrow
bounds on each of them). The encodings are Iceberg Java's ``ZOrderByteUtils`` and
``SparkZOrderUDF``, compared as unsigned bytes, big-endian:

=====================================  =============================================================
column type                            bytes (8 per column unless said otherwise)
=====================================  =============================================================
int, long, date (days)                 the value as a signed 64-bit integer with the sign bit flipped
timestamptz, timestamptz_ns            its epoch *seconds* (Spark's ``cast(ts as long)``), as a long
timestamp, timestamp_ns (no zone)      its epoch microseconds (Spark's ``TimestampNTZ``), as a long
float, double                          the IEEE-754 bits of the double, sign bit flipped for
                                       positives, every bit flipped for negatives
boolean                                first byte 0x81 for true, 0x00 for false; 7 zero bytes
string                                 UTF-8, cut to ``var-length-contribution`` bytes (default 8)
                                       at a character boundary, zero-padded
binary, fixed                          the bytes cut to ``var-length-contribution``, zero-padded
null                                   all zeros (sorts first)
=====================================  =============================================================

The column encodings are then interleaved bit by bit, most significant first: bit 7 of byte 0
of every column in turn, then bit 6, ... a column with no bits left at a position is skipped.
The result is cut to ``max-output-size`` bytes. Other types (decimal, uuid, time, nested) are
refused, as in Java.

This module holds the rules as plain Python over single values (the reference the vectorized
Arrow version, :func:`icefloe.arrow.rewrite.zorder_values`, is tested against) and the column
checks; it never touches engine APIs.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.errors import SchemaError, ValidationError
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
)
from icefloe.transforms import TransformKind

__all__ = [
    "MAX_OUTPUT_SIZE",
    "PRIMITIVE_BUFFER_SIZE",
    "VAR_LENGTH_CONTRIBUTION",
    "Z_COLUMN",
    "ZOrderSpec",
    "interleave_bits",
    "ordered_bytes",
    "zorder_spec",
    "zorder_value",
]

PRIMITIVE_BUFFER_SIZE = 8
Z_COLUMN = "ICEZVALUE"
MAX_OUTPUT_SIZE = "max-output-size"
VAR_LENGTH_CONTRIBUTION = "var-length-contribution"
MAX_OUTPUT_SIZE_DEFAULT = 2**31 - 1

_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class ZOrderSpec:
    """The columns (field ids, in the caller's order) and the byte budget of a z-order."""

    field_ids: tuple[int, ...]
    names: tuple[str, ...]
    var_length_contribution: int = PRIMITIVE_BUFFER_SIZE
    max_output_size: int = MAX_OUTPUT_SIZE_DEFAULT

    def column_sizes(self, schema: Schema) -> list[int]:
        return [
            self.var_length_contribution if _is_var_length(schema.find_type(fid)) else PRIMITIVE_BUFFER_SIZE
            for fid in self.field_ids
        ]

    def output_size(self, schema: Schema) -> int:
        return min(sum(self.column_sizes(schema)), self.max_output_size)


def _has_column(schema: Schema, name: str, case_sensitive: bool) -> bool:
    try:
        schema.find_field(name, case_sensitive)
    except SchemaError:
        return False
    return True


def _is_var_length(t: IcebergType) -> bool:
    return isinstance(t, StringType | BinaryType | FixedType)


_SUPPORTED = (
    IntegerType,
    LongType,
    DateType,
    TimestampType,
    TimestampNsType,
    TimestamptzType,
    TimestamptzNsType,
    FloatType,
    DoubleType,
    BooleanType,
    StringType,
    BinaryType,
    FixedType,
)


def zorder_spec(
    schema: Schema,
    spec: PartitionSpec,
    columns: Sequence[str],
    *,
    case_sensitive: bool = True,
    var_length_contribution: int = PRIMITIVE_BUFFER_SIZE,
    max_output_size: int = MAX_OUTPUT_SIZE_DEFAULT,
) -> ZOrderSpec:
    """Check the z-order columns against the table and resolve them to field ids.

    Refused, each with a typed error naming the column: no column at all; an unknown column
    (``SchemaError``); a column of a type z-order cannot encode, a column the current spec
    partitions by identity (its value is the same for every row of a partition, so it cannot
    order anything: Java ignores it with a warning, icefloe refuses it), a column named twice, and a
    table that has a column named ``ICEZVALUE`` (the z-value's working name, as in Java)."""
    if isinstance(columns, str):
        columns = [columns]
    if not columns:
        raise ValidationError("cannot z-order without columns", hint='pass zorder_columns=["a", "b"]')
    if _has_column(schema, Z_COLUMN, case_sensitive):
        raise ValidationError(
            f"cannot z-order: the table has a column named {Z_COLUMN!r}, the name z-order uses for "
            "its working column (as Iceberg Java does)",
            hint="rename that column first",
            column=Z_COLUMN,
        )
    identity = {f.source_id for f in spec.fields if f.transform.kind is TransformKind.IDENTITY}
    ids: list[int] = []
    names: list[str] = []
    for name in columns:
        if not isinstance(name, str):
            raise ValidationError(f"z-order columns are names, got {name!r}")
        try:
            field = schema.find_field(name, case_sensitive)
        except SchemaError as e:
            raise SchemaError(
                f"cannot z-order by {name!r}: the table has no such column",
                hint=e.hint or "name a top-level or nested (a.b) primitive column",
                column=name,
            ) from None
        t = field.field_type
        if not isinstance(t, _SUPPORTED):
            raise ValidationError(
                f"cannot z-order by {name!r}: its type {t} has no order-preserving byte encoding",
                hint="z-order by int, long, float, double, date, timestamp, boolean, string or "
                "binary columns (as Iceberg Java)",
                column=name,
            )
        if field.field_id in identity:
            raise ValidationError(
                f"cannot z-order by {name!r}: the table is partitioned by it (identity), so its value "
                "is the same for every row of a partition",
                hint="leave partition columns out of zorder_columns",
                column=name,
            )
        if field.field_id in ids:
            raise ValidationError(f"z-order column {name!r} is named twice", column=name)
        ids.append(field.field_id)
        names.append(schema.column_name(field.field_id))
    if var_length_contribution < 1:
        raise ValidationError(f"{VAR_LENGTH_CONTRIBUTION} must be >= 1, got {var_length_contribution}")
    if max_output_size < 1:
        raise ValidationError(f"{MAX_OUTPUT_SIZE} must be >= 1, got {max_output_size}")
    return ZOrderSpec(tuple(ids), tuple(names), var_length_contribution, max_output_size)


# --------------------------------------------------------------------------- single values


def _long_bytes(v: int) -> bytes:
    return ((v ^ _SIGN) & _MASK64).to_bytes(8, "big")


def _double_bytes(v: float) -> bytes:
    if math.isnan(v):
        v = math.nan  # Java's doubleToLongBits: every NaN is the canonical 0x7ff8000000000000
    bits: int = struct.unpack(">q", struct.pack(">d", v))[0]
    bits ^= (bits >> 63) | _SIGN  # arithmetic shift: all ones for negatives
    return (bits & _MASK64).to_bytes(8, "big")


def _cut_utf8(text: str, length: int) -> bytes:
    out = bytearray()
    for ch in text:
        b = ch.encode("utf-8")
        if len(out) + len(b) > length:
            break
        out += b
    return bytes(out) + b"\x00" * (length - len(out))


def _micros(value: Any) -> int:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta: dt.timedelta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return int(value)


def ordered_bytes(value: Any, t: IcebergType, var_length: int = PRIMITIVE_BUFFER_SIZE) -> bytes:
    """The order-preserving bytes of one value (icefloe's internal representation: dates as days
    or ``datetime.date``, timestamps as micros (nanos for ``_ns``) or ``datetime``)."""
    if isinstance(t, StringType | BinaryType | FixedType):
        if value is None:
            return b"\x00" * var_length
        if isinstance(t, StringType):
            return _cut_utf8(str(value), var_length)
        raw = bytes(value)[:var_length]
        return raw + b"\x00" * (var_length - len(raw))
    if value is None:
        return b"\x00" * PRIMITIVE_BUFFER_SIZE
    if isinstance(t, BooleanType):
        return (b"\x81" if value else b"\x00") + b"\x00" * 7
    if isinstance(t, FloatType | DoubleType):
        return _double_bytes(float(value))
    if isinstance(t, DateType):
        days = (value - dt.date(1970, 1, 1)).days if isinstance(value, dt.date) else int(value)
        return _long_bytes(days)
    if isinstance(t, TimestamptzType):
        return _long_bytes(_micros(value) // 1_000_000)
    if isinstance(t, TimestamptzNsType):
        return _long_bytes(int(value) // 1_000_000_000)
    if isinstance(t, TimestampType):
        return _long_bytes(_micros(value))
    if isinstance(t, TimestampNsType):
        return _long_bytes(int(value) // 1_000)
    if isinstance(t, IntegerType | LongType):
        return _long_bytes(int(value))
    raise ValidationError(f"type {t} cannot be z-ordered")


def interleave_bits(columns: Sequence[bytes], output_size: int) -> bytes:
    """Java's ``ZOrderByteUtils.interleaveBits``: bit by bit, most significant first, skipping
    columns that have run out of bytes, cut to ``output_size`` bytes."""
    out = bytearray(output_size)
    if not columns or output_size == 0:
        return bytes(out)
    longest = max(len(c) for c in columns)
    position = 0
    for byte_index in range(longest):
        for bit in range(7, -1, -1):
            for c in columns:
                if byte_index >= len(c):
                    continue
                if position >= output_size * 8:
                    return bytes(out)
                if c[byte_index] >> bit & 1:
                    out[position // 8] |= 1 << (7 - position % 8)
                position += 1
    return bytes(out)


def zorder_value(values: Sequence[Any], types: Sequence[IcebergType], spec: ZOrderSpec) -> bytes:
    """The z-value of one row (``values`` in the order of ``spec.field_ids``)."""
    encoded = [ordered_bytes(v, t, spec.var_length_contribution) for v, t in zip(values, types, strict=True)]
    return interleave_bits(encoded, min(sum(len(e) for e in encoded), spec.max_output_size))
