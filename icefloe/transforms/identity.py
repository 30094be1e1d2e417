"""The identity and void transforms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from icefloe.spec.types import IcebergType, PrimitiveType, UnknownType
from icefloe.transforms.base import Transform, TransformKind

__all__ = ["IdentityTransform", "VoidTransform"]


@dataclass(frozen=True)
class IdentityTransform(Transform):
    """The source value itself; any primitive column except ``unknown`` (always null)."""

    kind: ClassVar[TransformKind] = TransformKind.IDENTITY

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, PrimitiveType) and not isinstance(source_type, UnknownType)

    def _result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return value

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Sorting by the value itself sorts by any monotone function of it.
        return other.preserves_order

    def type_hint(self) -> str:
        return (
            "identity partitions need a primitive column of a known type; partition by a field "
            "inside the struct, or promote an unknown column to its type first"
        )

    def __str__(self) -> str:
        return "identity"


@dataclass(frozen=True)
class VoidTransform(Transform):
    """Always null; what a dropped partition field becomes in a v1 table. Accepts any column."""

    kind: ClassVar[TransformKind] = TransformKind.VOID

    def can_transform(self, source_type: IcebergType) -> bool:
        return True

    def _result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return None

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        return "null"

    def __str__(self) -> str:
        return "void"
