"""The ``Transform`` base class: what every partition transform knows about itself.

Transforms are immutable values compared by kind and parameter; ``str()`` is the spec's name
(``bucket[16]``) and :func:`icefloe.transforms.parse_transform` reads it back.

Facts the expression projections rely on (see ``preserves_order``):

- identity, truncate, year, month, day and hour are monotone non-decreasing:
  ``a <= b`` implies ``apply(a) <= apply(b)``. They all floor: truncate gives ``apply(v) <= v``,
  and a temporal result is the unit that contains ``v`` (pre-1970 values included).
- bucket is not monotone; equal inputs give equal buckets and nothing more.
- void maps everything to null.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from icefloe.errors import PartitionSpecError, ValidationError
from icefloe.spec.types import IcebergType
from icefloe.transforms._human import human_value

__all__ = ["Transform", "TransformKind"]


class TransformKind(enum.Enum):
    """Which transform a ``Transform`` is, for code that dispatches on it (projections, Arrow)."""

    IDENTITY = "identity"
    BUCKET = "bucket"
    TRUNCATE = "truncate"
    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    HOUR = "hour"
    VOID = "void"


def require_value(source_type: IcebergType, value: Any, *kinds: type) -> None:
    """Raise a clear error when ``value`` is not in icefloe's internal representation for
    ``source_type`` (a ``datetime`` where microseconds are expected, say)."""
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ValidationError(
            f"expected a {' or '.join(k.__name__ for k in kinds)} value for a {source_type} column, "
            f"got {type(value).__name__} {value!r}",
            hint="convert user values with icefloe.spec.values.from_python first",
        )


class Transform(ABC):
    """A partition transform: maps a source column value to a partition value."""

    kind: ClassVar[TransformKind]

    @abstractmethod
    def can_transform(self, source_type: IcebergType) -> bool:
        """Whether the transform accepts a column of ``source_type``."""

    @abstractmethod
    def _result_type(self, source_type: IcebergType) -> IcebergType: ...

    @abstractmethod
    def _apply(self, source_type: IcebergType, value: Any) -> Any: ...

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """The type of the partition values produced from a column of ``source_type``."""
        self.check_source_type(source_type)
        return self._result_type(source_type)

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        """The partition value of one source value (internal representation in and out;
        None stays None)."""
        self.check_source_type(source_type)
        if value is None:
            return None
        return self._apply(source_type, value)

    def check_source_type(self, source_type: IcebergType) -> None:
        if not self.can_transform(source_type):
            raise PartitionSpecError(
                f"transform {self} cannot be applied to a column of type {source_type}",
                hint=self.type_hint(),
                transform=str(self),
                source_type=str(source_type),
            )

    def type_hint(self) -> str | None:
        """Which column types the transform accepts, for error hints."""
        return None

    @property
    def preserves_order(self) -> bool:
        """Whether ``a <= b`` implies ``apply(a) <= apply(b)``."""
        return False

    def satisfies_order_of(self, other: Transform) -> bool:
        """Whether data sorted by this transform is also sorted by ``other``."""
        return self == other

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        """The text Iceberg Java writes for partition value ``value`` (a transform *result*) in a
        data file path; ``"null"`` for None."""
        return human_value(self.result_type(source_type), value)

    @property
    def dedup_name(self) -> str:
        """Two partition fields on one source column with the same dedup name are redundant
        (Java's rule: every temporal transform is ``time``)."""
        return str(self)

    @property
    def is_identity(self) -> bool:
        return self.kind is TransformKind.IDENTITY

    @property
    def is_void(self) -> bool:
        return self.kind is TransformKind.VOID

    @property
    def is_temporal(self) -> bool:
        return self.kind in (TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY, TransformKind.HOUR)

    def __str__(self) -> str:
        return self.kind.value
