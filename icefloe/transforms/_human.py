"""Text forms of partition values as Iceberg Java writes them into data file paths.

The partition directory of a data file (``ts_day=2024-01-31/id_bucket=3``) is built from these
strings, so they follow Java's formatting exactly: ``%04d``-style temporal partition values,
``java.time`` ISO forms for identity-partitioned times and timestamps (with ``+00:00`` for
timestamptz), Java's ``Double.toString`` for floating point, ``BigDecimal.toString`` for decimals and
standard base64 for binary.
"""

from __future__ import annotations

import base64
import math
import uuid
from decimal import Decimal
from typing import Any

import numpy as np

from icefloe.errors import ValidationError
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
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.transforms._calendar import (
    EPOCH_YEAR,
    MICROS_PER_DAY,
    civil_from_days,
)
from icefloe.transforms._decimal import from_unscaled, unscaled

_NANOS_PER_DAY = MICROS_PER_DAY * 1_000


def human_year(years: int) -> str:
    return f"{EPOCH_YEAR + years:04d}"


def human_month(months: int) -> str:
    return f"{EPOCH_YEAR + months // 12:04d}-{months % 12 + 1:02d}"


def human_day(days: int) -> str:
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def human_hour(hours: int) -> str:
    days, hour = divmod(hours, 24)
    return f"{human_day(days)}-{hour:02d}"


def _iso_year(year: int) -> str:
    # java.time prints years beyond 9999 with a '+' and pads negative years to four digits.
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def _iso_fraction(nanos: int) -> str:
    """ISO_LOCAL_TIME's fraction: as few digits as needed, none at all for whole seconds."""
    if nanos == 0:
        return ""
    return "." + f"{nanos:09d}".rstrip("0")


def _iso_timestamp_from_nanos(nanos: int) -> str:
    days, nanos_of_day = divmod(nanos, _NANOS_PER_DAY)
    y, m, d = civil_from_days(days)
    secs, frac = divmod(nanos_of_day, 1_000_000_000)
    hh, rest = divmod(secs, 3600)
    mm, ss = divmod(rest, 60)
    return f"{_iso_year(y)}-{m:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}{_iso_fraction(frac)}"


def human_time(micros: int) -> str:
    """``LocalTime.toString``: seconds and fraction only when non-zero, fraction in groups of 3."""
    secs, frac_micros = divmod(micros, 1_000_000)
    hh, rest = divmod(secs, 3600)
    mm, ss = divmod(rest, 60)
    out = f"{hh:02d}:{mm:02d}"
    if ss or frac_micros:
        out += f":{ss:02d}"
        if frac_micros:
            out += f".{frac_micros // 1000:03d}" if frac_micros % 1000 == 0 else f".{frac_micros:06d}"
    return out


def java_float_string(value: float, single: bool) -> str:
    """Java's ``Float.toString`` / ``Double.toString`` (shortest round-trip digits; plain notation
    for magnitudes in [1e-3, 1e7), computerized scientific notation otherwise)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = str(np.float32(value)) if single else repr(value)
    sign, digits, exponent = Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    sci_exp = len(text) - 1 + exponent
    prefix = "-" if sign else ""
    if -3 <= sci_exp < 7:
        if exponent >= 0:
            plain = text + "0" * exponent + ".0"
        elif sci_exp >= 0:
            plain = text[: sci_exp + 1] + "." + text[sci_exp + 1 :]
        else:
            plain = "0." + "0" * (-sci_exp - 1) + text
        return prefix + plain
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{sci_exp}"


def human_value(value_type: IcebergType, value: Any) -> str:
    """The text of a single value of ``value_type`` in a partition path (``null`` for None)."""
    if value is None:
        return "null"
    match value_type:
        case DateType():
            return human_day(value)
        case TimeType():
            return human_time(value)
        case TimestampType():
            return _iso_timestamp_from_nanos(value * 1000)
        case TimestamptzType():
            return _iso_timestamp_from_nanos(value * 1000) + "+00:00"
        case TimestampNsType():
            return _iso_timestamp_from_nanos(value)
        case TimestamptzNsType():
            return _iso_timestamp_from_nanos(value) + "+00:00"
        case FixedType() | BinaryType():
            return base64.b64encode(bytes(value)).decode("ascii")
        case BooleanType():
            return "true" if value else "false"
        case FloatType():
            return java_float_string(float(value), single=True)
        case DoubleType():
            return java_float_string(float(value), single=False)
        case DecimalType(scale=scale):
            return str(from_unscaled(unscaled(value, scale), scale))
        case UUIDType():
            return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=value))
        case IntegerType() | LongType() | StringType():
            return str(value)
    raise ValidationError(f"cannot format a value of type {value_type} for a partition path")
