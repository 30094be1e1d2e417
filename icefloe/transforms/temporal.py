"""The year, month, day and hour transforms.

Results count whole units since 1970-01-01T00:00 UTC, floored, so values before 1970 are negative
(``day`` of 1969-12-31T23:59 is -1). year, month and day accept dates and timestamps; hour only
timestamps. ``_ns`` timestamps are floored to microseconds first. Results: year, month and hour are
ints, day is a date (same integer, days since the epoch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from icefloe.spec.types import (
    DateType,
    IcebergType,
    IntegerType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
)
from icefloe.transforms._calendar import (
    days_to_months,
    days_to_years,
    micros_to_days,
    micros_to_hours,
    nanos_to_micros,
)
from icefloe.transforms._human import human_day, human_hour, human_month, human_year
from icefloe.transforms.base import Transform, TransformKind, require_value

__all__ = [
    "DayTransform",
    "HourTransform",
    "MonthTransform",
    "TemporalTransform",
    "YearTransform",
]

_TIMESTAMP_TYPES = (TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)


def source_micros(source_type: IcebergType, value: int) -> int:
    require_value(source_type, value, int)
    if isinstance(source_type, TimestampNsType | TimestamptzNsType):
        return int(nanos_to_micros(value))
    return value


def source_days(source_type: IcebergType, value: int) -> int:
    if isinstance(source_type, DateType):
        require_value(source_type, value, int)
        return value
    return int(micros_to_days(source_micros(source_type, value)))


class TemporalTransform(Transform):
    """Base of year, month, day and hour; ``granularity`` orders them finest first."""

    granularity: ClassVar[int]

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, (DateType, *_TIMESTAMP_TYPES))

    def _result_type(self, source_type: IcebergType) -> IcebergType:
        return IntegerType()

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Sorted by hour means sorted by day, month and year too; not the other way round.
        return isinstance(other, TemporalTransform) and self.granularity <= other.granularity

    @property
    def dedup_name(self) -> str:
        return "time"

    def type_hint(self) -> str:
        return f"{self} works on date and timestamp columns" + (
            " (hour needs a timestamp)" if self.kind is TransformKind.HOUR else ""
        )


@dataclass(frozen=True)
class YearTransform(TemporalTransform):
    kind: ClassVar[TransformKind] = TransformKind.YEAR
    granularity: ClassVar[int] = 4

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return int(days_to_years(source_days(source_type, value)))

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        self.check_source_type(source_type)
        return "null" if value is None else human_year(value)

    def __str__(self) -> str:
        return "year"


@dataclass(frozen=True)
class MonthTransform(TemporalTransform):
    kind: ClassVar[TransformKind] = TransformKind.MONTH
    granularity: ClassVar[int] = 3

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return int(days_to_months(source_days(source_type, value)))

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        self.check_source_type(source_type)
        return "null" if value is None else human_month(value)

    def __str__(self) -> str:
        return "month"


@dataclass(frozen=True)
class DayTransform(TemporalTransform):
    kind: ClassVar[TransformKind] = TransformKind.DAY
    granularity: ClassVar[int] = 2

    def _result_type(self, source_type: IcebergType) -> IcebergType:
        return DateType()

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return source_days(source_type, value)

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        self.check_source_type(source_type)
        return "null" if value is None else human_day(value)

    def __str__(self) -> str:
        return "day"


@dataclass(frozen=True)
class HourTransform(TemporalTransform):
    kind: ClassVar[TransformKind] = TransformKind.HOUR
    granularity: ClassVar[int] = 1

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, _TIMESTAMP_TYPES)

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return int(micros_to_hours(source_micros(source_type, value)))

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        self.check_source_type(source_type)
        return "null" if value is None else human_hour(value)

    def __str__(self) -> str:
        return "hour"
