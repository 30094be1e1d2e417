"""Calendar arithmetic shared by the per-value and the vectorized (Arrow) transforms.

Every function here works on Python ``int`` and on numpy integer arrays alike: it uses only
``+ - * // %`` and comparisons, whose floor semantics are the same in both. Sharing one
implementation is what keeps ``Transform.apply`` and ``transform_arrow`` in agreement, including
for values before 1970 (negative) and outside the range of :mod:`datetime`.
"""

from __future__ import annotations

from typing import Any

MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
NANOS_PER_MICRO = 1_000
EPOCH_YEAR = 1970

# Days from 0000-03-01 (proleptic Gregorian) to 1970-01-01; a 400-year era has 146097 days.
_DAYS_0000_03_01_TO_EPOCH = 719_468
_DAYS_PER_ERA = 146_097


def civil_from_days(days: Any) -> tuple[Any, Any, Any]:
    """(year, month 1..12, day 1..31) of a day count since 1970-01-01, proleptic Gregorian.

    Counts from March so that the leap day falls at the end of the counted year; floor division
    makes negative day counts land on the right date.
    """
    z = days + _DAYS_0000_03_01_TO_EPOCH
    era = z // _DAYS_PER_ERA
    doe = z - era * _DAYS_PER_ERA  # day of era, 0..146096
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365  # year of era, 0..399
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)  # day of the March-based year, 0..365
    mp = (5 * doy + 2) // 153  # March-based month, 0..11
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 - 12 * (mp >= 10)
    year = yoe + era * 400 + (month <= 2)
    return year, month, day


def days_to_years(days: Any) -> Any:
    """Whole years since 1970 of a day count (floor)."""
    year, _, _ = civil_from_days(days)
    return year - EPOCH_YEAR


def days_to_months(days: Any) -> Any:
    """Whole months since 1970-01 of a day count (floor)."""
    year, month, _ = civil_from_days(days)
    return (year - EPOCH_YEAR) * 12 + (month - 1)


def micros_to_days(micros: Any) -> Any:
    return micros // MICROS_PER_DAY


def micros_to_hours(micros: Any) -> Any:
    return micros // MICROS_PER_HOUR


def nanos_to_micros(nanos: Any) -> Any:
    return nanos // NANOS_PER_MICRO
