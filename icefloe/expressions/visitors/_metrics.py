"""Reading a data file's column metrics, shared by the two metrics evaluators."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from icefloe.expressions._base import BoundReference
from icefloe.spec.values import from_bytes

if TYPE_CHECKING:
    from icefloe.manifest import DataFile

__all__ = ["FileMetrics"]


class FileMetrics:
    """One file's value, null and NaN counts and decoded bounds. Missing maps or keys mean
    "unknown"; a NaN bound (written by old writers) is treated as missing."""

    def __init__(self, data_file: DataFile) -> None:
        self.record_count = data_file.record_count
        self._value_counts = data_file.value_counts or {}
        self._null_counts = data_file.null_value_counts or {}
        self._nan_counts = data_file.nan_value_counts or {}
        self._lower = data_file.lower_bounds or {}
        self._upper = data_file.upper_bounds or {}
        # Decoded bounds by field id: a large filter tests one column many times.
        self._decoded_lower: dict[int, Any] = {}
        self._decoded_upper: dict[int, Any] = {}

    def value_count(self, field_id: int) -> int | None:
        return self._value_counts.get(field_id)

    def null_count(self, field_id: int) -> int | None:
        return self._null_counts.get(field_id)

    def nan_count(self, field_id: int) -> int | None:
        return self._nan_counts.get(field_id)

    @staticmethod
    def _bound(bounds: dict[int, bytes], decoded: dict[int, Any], ref: BoundReference) -> Any:
        fid = ref.field_id
        if fid in decoded:
            return decoded[fid]
        raw = bounds.get(fid)
        value = None if raw is None else from_bytes(ref.field_type, raw)
        if isinstance(value, float) and math.isnan(value):
            value = None
        decoded[fid] = value
        return value

    def lower(self, ref: BoundReference) -> Any:
        return self._bound(self._lower, self._decoded_lower, ref)

    def upper(self, ref: BoundReference) -> Any:
        return self._bound(self._upper, self._decoded_upper, ref)

    def raw_lower(self, field_id: int) -> bytes | None:
        return self._lower.get(field_id)

    def raw_upper(self, field_id: int) -> bytes | None:
        return self._upper.get(field_id)

    def nulls_only(self, field_id: int) -> bool:
        """Every value is null (known from the counts)."""
        values, nulls = self.value_count(field_id), self.null_count(field_id)
        return values is not None and nulls is not None and values == nulls

    def nans_only(self, field_id: int) -> bool:
        values, nans = self.value_count(field_id), self.nan_count(field_id)
        return values is not None and nans is not None and values == nans

    def may_contain_null(self, field_id: int) -> bool:
        nulls = self.null_count(field_id)
        return nulls is None or nulls > 0
