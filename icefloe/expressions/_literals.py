"""Converting a user's literal to the internal value of a column's type, as binding needs it.

The rules follow Iceberg Java's ``Literals`` conversions, made a little friendlier where that
cannot change a result:

- int/long take ints (not bools); a value outside the column's range converts to
  :data:`ABOVE_MAX` / :data:`BELOW_MIN` so that binding can decide the predicate outright.
- float/double take ints, floats and Decimals; float columns round to float32 like Java does
  (finite values beyond float32's range become ABOVE_MAX / BELOW_MIN, which binding turns into
  comparisons with the largest finite float32: the column also holds infinities).
- decimal(P, S) takes Decimal, int, str and float only when the value is exact at scale S
  (1.5 binds to decimal(9, 2) as 1.50; 1.005 does not) and fits P digits.
- date takes ``date`` objects, ISO ``YYYY-MM-DD`` strings and ints (days since the epoch);
  time takes ``time`` objects, ISO strings and ints (microseconds since midnight).
- timestamp takes naive ``datetime``, ISO strings without an offset, ``date``/date-only strings
  (midnight) and ints (the internal unit); timestamptz takes aware ``datetime``, ISO strings with an
  offset (``Z`` or ``+01:00``), date-only strings/dates (midnight UTC) and ints. Fractions finer than
  the column's unit are rejected rather than silently truncated.
- string takes str; uuid takes UUID, its string form or 16 bytes; fixed[L] takes exactly L bytes;
  binary takes bytes; boolean takes bool.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
import struct
import uuid
from typing import Any, Final

from icefloe.errors import ExpressionError
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

__all__ = ["ABOVE_MAX", "BELOW_MIN", "FLOAT32_MAX", "OutOfRange", "to_internal"]


class OutOfRange:
    """A literal beyond the column type's range; binding turns the predicate into a constant."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


ABOVE_MAX: Final = OutOfRange("ABOVE_MAX")
BELOW_MIN: Final = OutOfRange("BELOW_MIN")

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_US_PER_DAY = 86_400_000_000
FLOAT32_MAX: Final[float] = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
"""The largest finite float32 value."""
_DECIMAL_CONTEXT = decimal.Context(prec=100)
_TIMESTAMP = re.compile(
    r"(?P<y>[+-]?\d{4,6})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[Tt ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?)?"
    r"(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?"
)


def _fail(
    column: str, field_type: IcebergType, value: Any, why: str = "", hint: str | None = None
) -> ExpressionError:
    reason = f": {why}" if why else ""
    return ExpressionError(
        f"cannot use {value!r} ({type(value).__name__}) as a {field_type} value for column "
        f"{column!r}{reason}",
        hint=hint,
        column=column,
        type=str(field_type),
    )


def _int_in_range(value: int, lo: int, hi: int) -> int | OutOfRange:
    if value > hi:
        return ABOVE_MAX
    if value < lo:
        return BELOW_MIN
    return value


def _to_float32(value: float) -> float | OutOfRange:
    if value != value:  # NaN survives the round trip unchanged
        return value
    if value > FLOAT32_MAX and value != float("inf"):
        return ABOVE_MAX
    if value < -FLOAT32_MAX and value != float("-inf"):
        return BELOW_MIN
    rounded: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return rounded


def _to_decimal(t: DecimalType, value: Any, column: str) -> decimal.Decimal:
    try:
        if isinstance(value, decimal.Decimal):
            d = value
        elif isinstance(value, int) and not isinstance(value, bool):
            d = decimal.Decimal(value)
        elif isinstance(value, float):
            d = decimal.Decimal(repr(value))
        elif isinstance(value, str):
            d = decimal.Decimal(value.strip())
        else:
            raise _fail(column, t, value, "expected a Decimal, int, float or numeric string")
    except decimal.InvalidOperation:
        raise _fail(column, t, value, "not a number") from None
    if not d.is_finite():
        raise _fail(column, t, value, "decimals are finite")
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    try:
        q = d.quantize(quantum, context=_DECIMAL_CONTEXT)
    except decimal.InvalidOperation:
        raise _fail(column, t, value, "out of range") from None
    if q != d:
        raise _fail(
            column,
            t,
            value,
            f"it has more than {t.scale} digits after the point",
            hint="round the literal to the column's scale",
        )
    if len(q.as_tuple().digits) > t.precision and q != 0:
        raise _fail(column, t, value, f"it has more than {t.precision} digits")
    return q


def _parse_timestamp(text: str) -> tuple[int, int, str | None] | None:
    """(days since epoch, nanoseconds into the day, offset text or None); None if not ISO."""
    m = _TIMESTAMP.fullmatch(text.strip())
    if m is None:
        return None
    try:
        day = _dt.date(int(m["y"]), int(m["mo"]), int(m["d"]))
        clock = _dt.time(int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0))
    except ValueError:
        return None
    frac = (m["f"] or "").ljust(9, "0")
    nanos = ((clock.hour * 60 + clock.minute) * 60 + clock.second) * 1_000_000_000 + int(frac)
    tz = m["tz"]
    if tz is not None and m["h"] is None:
        return None
    return day.toordinal() - _EPOCH_ORDINAL, nanos, tz


def _offset_seconds(tz: str) -> int:
    if tz in ("Z", "z"):
        return 0
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    return sign * (hours * 3600 + minutes * 60)


def _timestamp(t: IcebergType, value: Any, column: str, with_zone: bool, per_second: int) -> int:
    unit = "nanosecond" if per_second == 1_000_000_000 else "microsecond"
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, _dt.datetime):
        if (value.tzinfo is not None and value.utcoffset() is not None) != with_zone:
            hint = (
                "give a timezone-aware datetime"
                if with_zone
                else "give a naive datetime (local time without zone)"
            )
            raise _fail(column, t, value, "wrong kind of datetime", hint=hint)
        moment: _dt.datetime = value.astimezone(_dt.UTC).replace(tzinfo=None) if with_zone else value
        days = moment.toordinal() - _EPOCH_ORDINAL
        secs = (moment.hour * 60 + moment.minute) * 60 + moment.second
        return (days * 86_400 + secs) * per_second + moment.microsecond * (per_second // 1_000_000)
    if isinstance(value, _dt.date):
        return (value.toordinal() - _EPOCH_ORDINAL) * 86_400 * per_second
    if isinstance(value, str):
        parsed = _parse_timestamp(value)
        if parsed is None:
            raise _fail(
                column,
                t,
                value,
                "not an ISO-8601 timestamp",
                hint="write it like '2024-01-31T12:30:00'" + ("+00:00" if with_zone else ""),
            )
        days, nanos, tz = parsed
        has_time = _TIMESTAMP.fullmatch(value.strip())["h"] is not None  # type: ignore[index]
        if with_zone and tz is None and has_time:
            raise _fail(
                column,
                t,
                value,
                "a timestamptz literal needs an offset",
                hint="add 'Z' or an offset like '+01:00'",
            )
        if not with_zone and tz is not None:
            raise _fail(
                column,
                t,
                value,
                "a timestamp (without zone) literal cannot carry an offset",
                hint="drop the offset or filter a timestamptz column",
            )
        offset = _offset_seconds(tz) if tz is not None else 0
        if per_second == 1_000_000 and nanos % 1000:
            raise _fail(column, t, value, f"finer than the column's {unit} precision")
        total_nanos = (days * 86_400 - offset) * 1_000_000_000 + nanos
        return total_nanos // (1_000_000_000 // per_second)
    raise _fail(column, t, value, "expected a datetime, an ISO string or an int")


def _date(t: DateType, value: Any, column: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, _dt.datetime):
        raise _fail(column, t, value, "a datetime is not a date", hint="pass value.date()")
    if isinstance(value, _dt.date):
        return value.toordinal() - _EPOCH_ORDINAL
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            raise _fail(column, t, value, "not an ISO date", hint="write it like '2024-01-31'") from None
    raise _fail(column, t, value, "expected a date, an ISO date string or an int (days)")


def _time(t: TimeType, value: Any, column: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        micros = value
    elif isinstance(value, _dt.time | str):
        if isinstance(value, str):
            try:
                value = _dt.time.fromisoformat(value.strip())
            except ValueError:
                raise _fail(column, t, value, "not an ISO time", hint="write it like '12:30:00'") from None
        if value.tzinfo is not None:
            raise _fail(column, t, value, "time values have no zone")
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    else:
        raise _fail(column, t, value, "expected a time, an ISO time string or an int (microseconds)")
    if not 0 <= micros < _US_PER_DAY:
        raise _fail(column, t, value, "outside one day")
    return micros


def to_internal(field_type: IcebergType, value: Any, column: str) -> Any:
    """``value`` as the internal representation of ``field_type``, or ABOVE_MAX / BELOW_MIN for
    an int or float that the type cannot hold. :class:`ExpressionError` when it does not fit."""
    t = field_type
    if isinstance(t, BooleanType):
        if isinstance(value, bool):
            return value
    elif isinstance(t, IntegerType | LongType):
        if isinstance(value, int) and not isinstance(value, bool):
            return _int_in_range(value, t.min, t.max)
        if isinstance(value, float | decimal.Decimal):
            raise _fail(
                column, t, value, "not an integer", hint="integer columns compare with integer literals"
            )
    elif isinstance(t, FloatType | DoubleType):
        if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
            f = float(value)
            return _to_float32(f) if isinstance(t, FloatType) else f
    elif isinstance(t, DecimalType):
        if not isinstance(value, bool):
            return _to_decimal(t, value, column)
    elif isinstance(t, DateType):
        return _date(t, value, column)
    elif isinstance(t, TimeType):
        return _time(t, value, column)
    elif isinstance(t, TimestampType):
        return _timestamp(t, value, column, with_zone=False, per_second=1_000_000)
    elif isinstance(t, TimestamptzType):
        return _timestamp(t, value, column, with_zone=True, per_second=1_000_000)
    elif isinstance(t, TimestampNsType):
        return _timestamp(t, value, column, with_zone=False, per_second=1_000_000_000)
    elif isinstance(t, TimestamptzNsType):
        return _timestamp(t, value, column, with_zone=True, per_second=1_000_000_000)
    elif isinstance(t, StringType):
        if isinstance(value, str):
            return value
    elif isinstance(t, UUIDType):
        if isinstance(value, uuid.UUID):
            return value
        if isinstance(value, str):
            try:
                return uuid.UUID(value.strip())
            except ValueError:
                raise _fail(column, t, value, "not a UUID") from None
        if isinstance(value, bytes) and len(value) == 16:
            return uuid.UUID(bytes=value)
    elif isinstance(t, FixedType):
        if isinstance(value, bytes | bytearray):
            if len(value) != t.length:
                raise _fail(column, t, value, f"it has {len(value)} bytes, not {t.length}")
            return bytes(value)
    elif isinstance(t, BinaryType):
        if isinstance(value, bytes | bytearray):
            return bytes(value)
    else:
        raise ExpressionError(
            f"column {column!r} has type {t}; filters apply to primitive columns only",
            hint="filter on a field inside the struct (dotted name), not on the struct itself",
            column=column,
        )
    raise _fail(column, t, value)
