"""Single values of Iceberg types: binary and JSON serialization, bound truncation, and conversion
between user-facing Python objects and icefloe's internal representation.

The internal representation (see ``docs/architecture.md``) is what partition tuples, column
bounds, literals and defaults hold: dates are ``int`` days, times and timestamps ``int`` micro- (or
nano-) seconds, decimals ``Decimal``, uuids ``uuid.UUID``, fixed/binary ``bytes``. Everything
user-facing (``datetime``, ISO strings, numpy scalars) is converted once, at the boundary, by
:func:`from_python`; :func:`to_python` goes back.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from collections.abc import Callable
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation
from typing import Any

from icefloe.errors import SchemaError, ValidationError
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
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = [
    "bound_decoder",
    "decimal_to_unscaled",
    "default_from_python",
    "from_bytes",
    "from_json_value",
    "from_python",
    "to_bytes",
    "to_json_value",
    "to_python",
    "truncate_lower_bound",
    "truncate_upper_bound",
    "unscaled_to_decimal",
]

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_MICROS_PER_DAY = 86_400_000_000
_NANOS_PER_DAY = 86_400_000_000_000
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)

_INT32 = struct.Struct("<i")
_INT64 = struct.Struct("<q")
_FLOAT32 = struct.Struct("<f")
_FLOAT64 = struct.Struct("<d")

_TIMESTAMP_TYPES = (TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)


def _is_nanos(t: IcebergType) -> bool:
    return isinstance(t, TimestampNsType | TimestamptzNsType)


def _has_zone(t: IcebergType) -> bool:
    return isinstance(t, TimestamptzType | TimestamptzNsType)


# ---------------------------------------------------------------------------------------------
# decimals


# Wide enough that no decimal(38, s) arithmetic rounds (the default context keeps 28 digits).
_EXACT = Context(prec=200, Emax=MAX_EMAX, Emin=MIN_EMIN)


def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``; raises if that would drop digits."""
    scaled = value.scaleb(scale, _EXACT)
    if scaled != scaled.to_integral_value(context=_EXACT):
        raise ValidationError(f"decimal {value} has more than {scale} digits after the point")
    return int(scaled)


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    return Decimal(unscaled).scaleb(-scale, _EXACT)


def _min_twos_complement(n: int) -> bytes:
    length = max(1, (n + (n < 0)).bit_length() // 8 + 1)
    return n.to_bytes(length, "big", signed=True)


# ---------------------------------------------------------------------------------------------
# binary single-value serialization


def to_bytes(t: IcebergType, value: Any) -> bytes:
    """The spec's single-value binary serialization (used for bounds and partition summaries)."""
    try:
        if isinstance(t, BooleanType):
            return b"\x01" if value else b"\x00"
        if isinstance(t, IntegerType | DateType):
            return _INT32.pack(value)
        if isinstance(t, (LongType, TimeType, *_TIMESTAMP_TYPES)):
            return _INT64.pack(value)
        if isinstance(t, FloatType):
            return _FLOAT32.pack(value)
        if isinstance(t, DoubleType):
            return _FLOAT64.pack(value)
        if isinstance(t, StringType):
            return str(value).encode("utf-8")
        if isinstance(t, UUIDType):
            return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes
        if isinstance(t, FixedType | BinaryType):
            return bytes(value)
        if isinstance(t, DecimalType):
            return _min_twos_complement(decimal_to_unscaled(value, t.scale))
    except (struct.error, TypeError, AttributeError, UnicodeEncodeError) as e:
        raise ValidationError(f"cannot serialize {value!r} as {t}: {e}") from None
    raise SchemaError(f"type {t} has no single-value binary serialization")


def from_bytes(t: IcebergType, data: bytes) -> Any:
    """Inverse of :func:`to_bytes`. Also accepts 4-byte int bounds for long columns (written before
    an int -> long promotion) and 4-byte float bounds for double columns, as the spec allows."""
    data = bytes(data)
    try:
        if isinstance(t, BooleanType):
            if len(data) != 1:
                raise ValidationError(f"boolean needs 1 byte, got {len(data)}")
            return data != b"\x00"
        if isinstance(t, IntegerType | DateType):
            return _INT32.unpack(data)[0]
        if isinstance(t, (LongType, TimeType, *_TIMESTAMP_TYPES)):
            if len(data) == 4 and isinstance(t, LongType):
                return _INT32.unpack(data)[0]
            return _INT64.unpack(data)[0]
        if isinstance(t, FloatType):
            return _FLOAT32.unpack(data)[0]
        if isinstance(t, DoubleType):
            if len(data) == 4:
                return _FLOAT32.unpack(data)[0]
            return _FLOAT64.unpack(data)[0]
        if isinstance(t, StringType):
            return data.decode("utf-8")
        if isinstance(t, UUIDType):
            return uuid.UUID(bytes=data)
        if isinstance(t, FixedType | BinaryType):
            return data
        if isinstance(t, DecimalType):
            if not data:
                raise ValidationError("decimal needs at least 1 byte")
            return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)
    except (struct.error, ValueError) as e:
        if isinstance(e, ValidationError):
            raise
        raise ValidationError(f"cannot read {t} from {len(data)} bytes ({data.hex()}): {e}") from None
    raise SchemaError(f"type {t} has no single-value binary serialization")


def bound_decoder(t: IcebergType) -> Callable[[IcebergType, bytes], Any]:
    """:func:`from_bytes` specialised for ``t``, for decoding many bounds of one type: fixed-width
    integers skip the type dispatch; anything unusual (other widths, other types) goes through
    :func:`from_bytes` and its typed errors."""
    if isinstance(t, IntegerType | DateType):
        unpack, width = _INT32.unpack, 4
    elif isinstance(t, (LongType, TimeType, *_TIMESTAMP_TYPES)):
        unpack, width = _INT64.unpack, 8
    else:
        return from_bytes

    def decode(_t: IcebergType, data: bytes) -> Any:
        if len(data) == width:
            return unpack(data)[0]
        return from_bytes(t, data)

    return decode


# ---------------------------------------------------------------------------------------------
# bound truncation


def truncate_lower_bound(t: IcebergType, value: Any, width: int) -> Any:
    """A lower bound of at most ``width`` code points (strings) or bytes (binary)."""
    if width <= 0:
        raise ValidationError(f"truncation width must be positive, got {width}")
    if isinstance(t, StringType):
        return value[:width]
    if isinstance(t, BinaryType | FixedType):
        return bytes(value[:width])
    return value


def truncate_upper_bound(t: IcebergType, value: Any, width: int) -> Any:
    """An upper bound of at most ``width`` code points / bytes that is >= ``value``; ``None`` when no
    such bound exists (every kept character is already the largest one)."""
    if width <= 0:
        raise ValidationError(f"truncation width must be positive, got {width}")
    if isinstance(t, StringType):
        if len(value) <= width:
            return value
        chars = list(value[:width])
        for i in range(len(chars) - 1, -1, -1):
            cp = ord(chars[i]) + 1
            if cp in _SURROGATES:
                cp = _SURROGATES.stop
            if cp <= _MAX_CODE_POINT:
                return "".join(chars[:i]) + chr(cp)
        return None
    if isinstance(t, BinaryType | FixedType):
        data = bytes(value)
        if len(data) <= width:
            return data
        head = bytearray(data[:width])
        for i in range(len(head) - 1, -1, -1):
            if head[i] < 0xFF:
                head[i] += 1
                return bytes(head[: i + 1])
        return None
    return value


# ---------------------------------------------------------------------------------------------
# dates and times


def _days_to_date(days: int) -> dt.date:
    try:
        return dt.date.fromordinal(days + _EPOCH_ORDINAL)
    except (ValueError, OverflowError):
        raise ValidationError(f"date {days} days from 1970-01-01 is outside years 1..9999") from None


def _date_to_days(d: dt.date) -> int:
    return d.toordinal() - _EPOCH_ORDINAL


def _time_text(micros: int) -> str:
    if not 0 <= micros < _MICROS_PER_DAY:
        raise ValidationError(f"time {micros} us is not within a day")
    s, us = divmod(micros, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"{h:02d}:{m:02d}:{s:02d}.{us:06d}"


def _timestamp_text(t: IcebergType, value: int) -> str:
    per_day = _NANOS_PER_DAY if _is_nanos(t) else _MICROS_PER_DAY
    days, within = divmod(value, per_day)
    date = _days_to_date(days).isoformat()
    if _is_nanos(t):
        secs, frac = divmod(within, 1_000_000_000)
        frac_text = f"{frac:09d}"
    else:
        secs, frac = divmod(within, 1_000_000)
        frac_text = f"{frac:06d}"
    m, s = divmod(secs, 60)
    h, m = divmod(m, 60)
    zone = "+00:00" if _has_zone(t) else ""
    return f"{date}T{h:02d}:{m:02d}:{s:02d}.{frac_text}{zone}"


_DATE_RE = re.compile(r"([+-]?\d{4,})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?")
_ZONE_RE = re.compile(r"Z|[+-]\d{2}(?::?\d{2})?")
_TIMESTAMP_RE = re.compile(
    rf"(?P<date>{_DATE_RE.pattern})[T ](?P<time>{_TIME_RE.pattern})(?P<zone>{_ZONE_RE.pattern})?"
)


def _parse_date(text: str) -> int:
    m = _DATE_RE.fullmatch(text.strip())
    if not m:
        raise ValidationError(f"invalid date {text!r}", hint="use ISO format YYYY-MM-DD")
    try:
        return _date_to_days(dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    except ValueError as e:
        raise ValidationError(f"invalid date {text!r}: {e}") from None


def _parse_time_units(text: str, nanos: bool) -> int:
    m = _TIME_RE.fullmatch(text)
    if not m:
        raise ValidationError(f"invalid time {text!r}", hint="use ISO format HH:MM:SS[.ffffff]")
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValidationError(f"invalid time {text!r}")
    digits = 9 if nanos else 6
    frac = m.group(4) or ""
    if len(frac) > digits and frac[digits:].strip("0"):
        unit = "nanosecond" if nanos else "microsecond"
        raise ValidationError(f"time {text!r} has more than {unit} precision")
    frac_units = int((frac + "0" * digits)[:digits])
    scale: int = 10**digits
    return ((h * 60 + mi) * 60 + s) * scale + frac_units


def _zone_offset_seconds(zone: str) -> int:
    if zone == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    body = zone[1:].replace(":", "")
    hours, minutes = int(body[:2]), int(body[2:4] or 0)
    return sign * (hours * 3600 + minutes * 60)


def _parse_timestamp(t: IcebergType, text: str) -> int:
    m = _TIMESTAMP_RE.fullmatch(text.strip())
    if not m:
        raise ValidationError(
            f"invalid timestamp {text!r}", hint="use ISO format YYYY-MM-DDTHH:MM:SS[.ffffff][+00:00]"
        )
    zone = m.group("zone")
    if _has_zone(t) and zone is None:
        raise ValidationError(
            f"timestamp {text!r} for a {t} value has no zone offset", hint="append +00:00 (UTC)"
        )
    if not _has_zone(t) and zone is not None:
        raise ValidationError(
            f"timestamp {text!r} for a {t} value (without time zone) has a zone offset",
            hint="drop the offset, or use a timestamptz column",
        )
    nanos = _is_nanos(t)
    days = _parse_date(m.group("date"))
    units = _parse_time_units(m.group("time"), nanos)
    per_second = 1_000_000_000 if nanos else 1_000_000
    offset = _zone_offset_seconds(zone) if zone else 0
    return days * (_NANOS_PER_DAY if nanos else _MICROS_PER_DAY) + units - offset * per_second


# ---------------------------------------------------------------------------------------------
# JSON single-value serialization


def to_json_value(t: IcebergType, value: Any) -> Any:
    """The spec's JSON single-value serialization (appendix "JSON single-value serialization")."""
    if value is None:
        return None
    if isinstance(t, BooleanType):
        return bool(value)
    if isinstance(t, IntegerType | LongType):
        return int(value)
    if isinstance(t, FloatType | DoubleType):
        return float(value)
    if isinstance(t, DecimalType):
        # Plain notation with exactly ``scale`` digits after the point ("14.20"; never "1E-10").
        return format(unscaled_to_decimal(decimal_to_unscaled(value, t.scale), t.scale), "f")
    if isinstance(t, DateType):
        return _days_to_date(value).isoformat()
    if isinstance(t, TimeType):
        return _time_text(value)
    if isinstance(t, _TIMESTAMP_TYPES):
        return _timestamp_text(t, value)
    if isinstance(t, StringType):
        return str(value)
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(t, FixedType | BinaryType):
        return bytes(value).hex().upper()
    if isinstance(t, StructType):
        return {
            str(f.field_id): to_json_value(f.field_type, v)
            for f, v in zip(t.fields, value, strict=True)
            if v is not None
        }
    if isinstance(t, ListType):
        return [to_json_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        return {
            "keys": [to_json_value(t.key_type, k) for k in value],
            "values": [to_json_value(t.value_type, v) for v in value.values()],
        }
    raise SchemaError(f"type {t} has no JSON single-value serialization")


def _expect(obj: Any, kinds: type | tuple[type, ...], t: IcebergType) -> None:
    if not isinstance(obj, kinds) or (isinstance(obj, bool) and kinds in (int, (int, float))):
        raise ValidationError(f"invalid JSON value for {t}: {obj!r}")


def from_json_value(t: IcebergType, obj: Any) -> Any:
    """Inverse of :func:`to_json_value`; raises :class:`ValidationError` for malformed values."""
    if obj is None:
        return None
    if isinstance(t, BooleanType):
        _expect(obj, bool, t)
        return obj
    if isinstance(t, IntegerType | LongType):
        _expect(obj, int, t)
        return _check_int_range(t, obj)
    if isinstance(t, FloatType | DoubleType):
        _expect(obj, (int, float), t)
        return float(obj)
    if isinstance(t, DecimalType):
        _expect(obj, str, t)
        return _to_decimal(t, obj)
    if isinstance(t, DateType):
        _expect(obj, str, t)
        return _parse_date(obj)
    if isinstance(t, TimeType):
        _expect(obj, str, t)
        return _parse_time_units(obj.strip(), nanos=False)
    if isinstance(t, _TIMESTAMP_TYPES):
        _expect(obj, str, t)
        return _parse_timestamp(t, obj)
    if isinstance(t, StringType):
        _expect(obj, str, t)
        return obj
    if isinstance(t, UUIDType):
        _expect(obj, str, t)
        return _to_uuid(t, obj)
    if isinstance(t, FixedType | BinaryType):
        _expect(obj, str, t)
        try:
            data = bytes.fromhex(obj)
        except ValueError:
            raise ValidationError(f"invalid hex string for {t}: {obj!r}") from None
        return _check_fixed(t, data)
    if isinstance(t, StructType):
        _expect(obj, dict, t)
        return tuple(from_json_value(f.field_type, obj.get(str(f.field_id))) for f in t.fields)
    if isinstance(t, ListType):
        _expect(obj, list, t)
        return [from_json_value(t.element_type, v) for v in obj]
    if isinstance(t, MapType):
        _expect(obj, dict, t)
        keys, values = obj.get("keys", []), obj.get("values", [])
        if not isinstance(keys, list) or not isinstance(values, list) or len(keys) != len(values):
            raise ValidationError(f"invalid JSON map value: {obj!r}")
        return {
            from_json_value(t.key_type, k): from_json_value(t.value_type, v)
            for k, v in zip(keys, values, strict=True)
        }
    raise SchemaError(f"type {t} has no JSON single-value serialization")


# ---------------------------------------------------------------------------------------------
# user-facing Python objects


def _check_int_range(t: IcebergType, v: int) -> int:
    lo, hi = (
        (IntegerType.min, IntegerType.max)
        if isinstance(t, IntegerType)
        else (
            LongType.min,
            LongType.max,
        )
    )
    if not lo <= v <= hi:
        raise ValidationError(f"{v} is out of range for {t} ({lo}..{hi})")
    return v


def _check_fixed(t: IcebergType, data: bytes) -> bytes:
    if isinstance(t, FixedType) and len(data) != t.length:
        raise ValidationError(f"{t} needs exactly {t.length} bytes, got {len(data)}")
    return data


def _to_uuid(t: IcebergType, obj: Any) -> uuid.UUID:
    try:
        if isinstance(obj, uuid.UUID):
            return obj
        if isinstance(obj, bytes | bytearray):
            return uuid.UUID(bytes=bytes(obj))
        if isinstance(obj, str):
            return uuid.UUID(obj)
    except ValueError:
        raise ValidationError(f"invalid uuid {obj!r}") from None
    raise ValidationError(f"cannot convert {type(obj).__name__} {obj!r} to {t}")


def _to_decimal(t: DecimalType, obj: Any) -> Decimal:
    try:
        if isinstance(obj, Decimal):
            d = obj
        elif isinstance(obj, str):
            d = Decimal(obj.strip())
        elif isinstance(obj, int) and not isinstance(obj, bool):
            d = Decimal(obj)
        elif isinstance(obj, float):
            # repr gives the shortest text that reads back as the same double, like Java's
            # BigDecimal.valueOf(double).
            d = Decimal(repr(obj))
        else:
            raise ValidationError(f"cannot convert {type(obj).__name__} {obj!r} to {t}")
    except InvalidOperation:
        raise ValidationError(f"invalid decimal {obj!r}") from None
    if not d.is_finite():
        raise ValidationError(f"decimal value must be finite, got {obj!r}")
    try:
        unscaled = decimal_to_unscaled(d, t.scale)
    except ValidationError:
        raise ValidationError(
            f"{obj!r} does not fit {t}: it has more than {t.scale} digits after the point",
            hint="round the value to the column's scale first",
        ) from None
    if len(str(abs(unscaled))) > t.precision:
        raise ValidationError(f"{obj!r} does not fit {t}: more than {t.precision} digits")
    return unscaled_to_decimal(unscaled, t.scale)


def _numpy_to_builtin(obj: Any) -> Any:
    """numpy scalars -> Python objects (datetime64 -> int units since the epoch, tagged)."""
    module = type(obj).__module__
    if module != "numpy":
        return obj
    import numpy as np

    if isinstance(obj, np.datetime64):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _datetime64_units(obj: Any, nanos: bool) -> int:
    import numpy as np

    if np.isnat(obj):
        raise ValidationError("NaT is not a valid value; use None for null")
    unit = "ns" if nanos else "us"
    converted = obj.astype(f"datetime64[{unit}]")
    if converted.astype(obj.dtype) != obj:
        raise ValidationError(f"{obj!r} has more than {'nano' if nanos else 'micro'}second precision")
    return int(converted.astype("int64"))


def _datetime_units(t: IcebergType, value: dt.datetime) -> int:
    if _has_zone(t):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValidationError(
                f"naive datetime {value!r} given for a {t} column",
                hint="attach a time zone, e.g. datetime(..., tzinfo=datetime.timezone.utc)",
            )
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    elif value.tzinfo is not None:
        raise ValidationError(
            f"time-zone-aware datetime {value!r} given for a {t} column (without time zone)",
            hint="pass a naive datetime, or use a timestamptz column",
        )
    days = _date_to_days(value.date())
    micros = (
        ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
        + value.microsecond
        + days * _MICROS_PER_DAY
    )
    if _is_nanos(t):
        return micros * 1000 + int(getattr(value, "nanosecond", 0))
    if getattr(value, "nanosecond", 0):
        raise ValidationError(f"{value!r} has more than microsecond precision for a {t} column")
    return micros


def from_python(t: IcebergType, obj: Any) -> Any:
    """Convert a user-facing Python object to icefloe's internal representation of type ``t``.

    Accepts the internal representation itself, plus: ``datetime``/``date``/``time`` objects and
    ISO strings for temporal types, ``Decimal``/``str``/``int``/``float`` for decimals (digits beyond
    the scale are an error, not rounded), ``uuid.UUID``/``str``/16 bytes for uuids, bytes-like objects
    for fixed/binary, and numpy scalars. ``None`` stays ``None``.
    """
    if obj is None:
        return None
    obj = _numpy_to_builtin(obj)
    is_dt64 = type(obj).__module__ == "numpy"
    bad = ValidationError(f"cannot convert {type(obj).__name__} {obj!r} to {t}")
    if isinstance(t, BooleanType):
        if isinstance(obj, bool):
            return obj
        raise bad
    if isinstance(t, IntegerType | LongType):
        if isinstance(obj, int) and not isinstance(obj, bool):
            return _check_int_range(t, obj)
        raise bad
    if isinstance(t, FloatType | DoubleType):
        if isinstance(obj, int | float) and not isinstance(obj, bool):
            return float(obj)
        raise bad
    if isinstance(t, DecimalType):
        return _to_decimal(t, obj)
    if isinstance(t, DateType):
        if isinstance(obj, dt.datetime):
            raise ValidationError(
                f"datetime {obj!r} given for a date column", hint="pass value.date() instead"
            )
        if isinstance(obj, dt.date):
            return _date_to_days(obj)
        if isinstance(obj, str):
            return _parse_date(obj)
        if is_dt64:
            days, rest = divmod(_datetime64_units(obj, nanos=False), _MICROS_PER_DAY)
            if rest:
                raise ValidationError(f"{obj!r} has a time of day; a date column takes whole days")
            return days
        if isinstance(obj, int) and not isinstance(obj, bool):
            return _check_int_range(IntegerType(), obj)
        raise bad
    if isinstance(t, TimeType):
        if isinstance(obj, dt.time):
            if obj.tzinfo is not None:
                raise ValidationError(f"time {obj!r} must not have a time zone")
            return ((obj.hour * 60 + obj.minute) * 60 + obj.second) * 1_000_000 + obj.microsecond
        if isinstance(obj, str):
            return _parse_time_units(obj.strip(), nanos=False)
        if isinstance(obj, int) and not isinstance(obj, bool):
            if not 0 <= obj < _MICROS_PER_DAY:
                raise ValidationError(f"time {obj} us is not within a day")
            return obj
        raise bad
    if isinstance(t, _TIMESTAMP_TYPES):
        if isinstance(obj, dt.datetime):
            return _check_int_range(LongType(), _datetime_units(t, obj))
        if isinstance(obj, dt.date):
            raise ValidationError(f"date {obj!r} given for a {t} column", hint="pass a datetime")
        if isinstance(obj, str):
            return _parse_timestamp(t, obj)
        if is_dt64:
            return _datetime64_units(obj, nanos=_is_nanos(t))
        if isinstance(obj, int) and not isinstance(obj, bool):
            return _check_int_range(LongType(), obj)
        raise bad
    if isinstance(t, StringType):
        if isinstance(obj, str):
            return str(obj)
        raise bad
    if isinstance(t, UUIDType):
        return _to_uuid(t, obj)
    if isinstance(t, FixedType | BinaryType):
        if isinstance(obj, bytes | bytearray | memoryview):
            return _check_fixed(t, bytes(obj))
        raise bad
    raise SchemaError(f"from_python handles primitive types only, not {t}")


def to_python(t: IcebergType, value: Any) -> Any:
    """Internal representation -> user-facing object: ``date``, ``time``, naive ``datetime`` for
    timestamp, UTC-aware ``datetime`` for timestamptz. Nanosecond timestamps become
    ``numpy.datetime64[ns]`` (``datetime`` cannot hold nanoseconds); other values are returned as
    they are."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return _days_to_date(value)
    if isinstance(t, TimeType):
        s, us = divmod(value, 1_000_000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return dt.time(h, m, s, us)
    if isinstance(t, TimestampType | TimestamptzType):
        days, micros = divmod(value, _MICROS_PER_DAY)
        naive = dt.datetime.combine(_days_to_date(days), dt.time()) + dt.timedelta(microseconds=micros)
        return naive.replace(tzinfo=dt.UTC) if _has_zone(t) else naive
    if isinstance(t, TimestampNsType | TimestamptzNsType):
        import numpy as np

        if value == LongType.min:
            # numpy reserves the smallest int64 for NaT, so this one instant has no datetime64.
            raise ValidationError(f"{t} value {value} cannot be represented as numpy.datetime64")
        return np.datetime64(value, "ns")
    return value


def default_from_python(t: IcebergType, obj: Any, column: str = "") -> Any:
    """A column default given by a user (anything :func:`from_python` accepts, or a value of the
    spec's JSON single-value form such as an ISO string) in the internal representation, checked
    against ``t``. ``unknown`` columns take only ``None``; a struct default may be ``None`` or an
    empty mapping (its fields then take their own defaults). Raises :class:`SchemaError`."""
    where = f" for column {column!r}" if column else ""
    if obj is None:
        return None
    if isinstance(t, UnknownType):
        raise SchemaError(
            f"a column of type unknown always defaults to null; got {obj!r}{where}", column=column
        )
    if isinstance(t, StructType):
        if isinstance(obj, dict | tuple) and not obj:
            return ()
        raise SchemaError(
            f"a struct default must be None or empty ({{}}); got {obj!r}{where}",
            hint="set the defaults of the struct's fields on the fields themselves",
            column=column,
        )
    if isinstance(t, ListType | MapType):
        from icefloe.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(f"defaults of {t} columns are not supported{where}", column=column)
    try:
        value = from_python(t, obj)
        to_bytes(t, value)  # in range for the type (e.g. a date within the years 1..9999)
    except ValidationError as e:
        raise SchemaError(f"invalid default{where} of type {t}: {e}", column=column) from None
    if isinstance(t, FloatType | DoubleType) and not math.isfinite(value):
        raise SchemaError(f"a default{where} cannot be NaN or infinite (no JSON form)", column=column)
    return value
