"""The truncate transform: floor to a multiple of W for numbers, prefix of W for strings and bytes.

Integers floor towards negative infinity (``v - (((v % W) + W) % W)``), so ``truncate[10](-1)`` is
``-10``. Like Java, int and long results wrap around at the type's range (only reachable within W of
the minimum value). Decimals truncate their unscaled value and keep the type's scale; strings keep
the first W code points (not UTF-16 units, not bytes); binary keeps the first W bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from icefloe.errors import PartitionSpecError
from icefloe.spec.types import (
    BinaryType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)
from icefloe.transforms._decimal import from_unscaled, unscaled
from icefloe.transforms.base import Transform, TransformKind, require_value

__all__ = ["TruncateTransform", "wrap_signed"]

_INT32_MAX = 2**31 - 1


def wrap_signed(value: int, bits: int) -> int:
    """``value`` wrapped into a signed ``bits``-bit integer, as Java's int/long arithmetic does."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


@dataclass(frozen=True)
class TruncateTransform(Transform):
    """``truncate[W]``."""

    width: int
    kind: ClassVar[TransformKind] = TransformKind.TRUNCATE

    def __post_init__(self) -> None:
        w = self.width
        if isinstance(w, bool) or not isinstance(w, int) or not 0 < w <= _INT32_MAX:
            raise PartitionSpecError(
                f"invalid truncate width {w!r}: must be an integer in 1..{_INT32_MAX}",
                hint="write truncate(4, column) with a positive width",
            )

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, IntegerType | LongType | DecimalType | StringType | BinaryType)

    def _result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        w = self.width
        if isinstance(source_type, IntegerType):
            require_value(source_type, value, int)
            return wrap_signed(value - value % w, 32)
        if isinstance(source_type, LongType):
            require_value(source_type, value, int)
            return wrap_signed(value - value % w, 64)
        if isinstance(source_type, DecimalType):
            require_value(source_type, value, Decimal)
            n = unscaled(value, source_type.scale)
            return from_unscaled(n - n % w, source_type.scale)
        if isinstance(source_type, StringType):
            require_value(source_type, value, str)
            return value[:w]
        require_value(source_type, value, bytes, bytearray, memoryview)
        return bytes(value[:w])

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Java answers "other.width <= width", which holds for strings and binary (prefixes) but
        # not for numbers (sorted by truncate[10], the values 0..9 are in no order for
        # truncate[4]). Without the source type we only claim what holds for every type.
        return isinstance(other, TruncateTransform) and other.width == self.width

    def type_hint(self) -> str:
        return "truncate works on int, long, decimal, string and binary columns"

    def __str__(self) -> str:
        return f"truncate[{self.width}]"
