"""Sort orders: how writers should order rows within data files.

Order id 0 is reserved for the unsorted order; every other order has at least one field.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icefloe.errors import SortOrderError
from icefloe.spec.schema import Schema
from icefloe.transforms import Transform, parse_transform

__all__ = ["NullOrder", "SortDirection", "SortField", "SortOrder", "UNSORTED_SORT_ORDER"]


class SortDirection(enum.Enum):
    ASC = "asc"
    DESC = "desc"


class NullOrder(enum.Enum):
    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True)
class SortField:
    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder | None = None

    def __post_init__(self) -> None:
        # Java's default: nulls sort first when ascending, last when descending.
        if self.null_order is None:
            default = NullOrder.NULLS_FIRST if self.direction is SortDirection.ASC else NullOrder.NULLS_LAST
            object.__setattr__(self, "null_order", default)

    def to_json(self) -> dict[str, Any]:
        assert self.null_order is not None
        return {
            "transform": str(self.transform),
            "source-id": self.source_id,
            "direction": self.direction.value,
            "null-order": self.null_order.value,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SortField:
        try:
            source = obj["source-id"] if "source-id" in obj else obj["source-ids"][0]
            return cls(
                source_id=int(source),
                transform=parse_transform(str(obj["transform"])),
                direction=SortDirection(obj["direction"]),
                null_order=NullOrder(obj["null-order"]),
            )
        except KeyError as e:
            raise SortOrderError(f"sort field is missing {e.args[0]!r}: {obj}") from None
        except (ValueError, IndexError) as e:
            raise SortOrderError(f"invalid sort field {obj}: {e}") from None

    def __str__(self) -> str:
        assert self.null_order is not None
        return f"{self.transform}({self.source_id}) {self.direction.value} {self.null_order.value}"


@dataclass(frozen=True, init=False)
class SortOrder:
    order_id: int
    fields: tuple[SortField, ...]

    def __init__(self, order_id: int = 1, fields: Iterable[SortField] = ()) -> None:
        fields = tuple(fields)
        if order_id == 0 and fields:
            raise SortOrderError("sort order id 0 is reserved for the unsorted order")
        if order_id != 0 and not fields:
            raise SortOrderError(f"sort order {order_id} has no fields; only order 0 may be unsorted")
        object.__setattr__(self, "order_id", order_id)
        object.__setattr__(self, "fields", fields)

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def same_order(self, other: SortOrder) -> bool:
        """Equal but for the order id."""
        return self.fields == other.fields

    def with_order_id(self, order_id: int) -> SortOrder:
        return SortOrder(order_id, self.fields)

    def check_compatible(self, schema: Schema) -> None:
        """Raise :class:`SortOrderError` unless every field sorts an existing primitive column with a
        transform that accepts its type."""
        for f in self.fields:
            field = schema.find_field_or_none(f.source_id)
            if field is None:
                raise SortOrderError(f"sort field {f} refers to column id {f.source_id}, not in the schema")
            if not field.field_type.is_primitive:
                raise SortOrderError(
                    f"cannot sort by non-primitive column {schema.column_name(f.source_id)!r}"
                )
            if not f.transform.can_transform(field.field_type):
                raise SortOrderError(
                    f"transform {f.transform} cannot be applied to column "
                    f"{schema.column_name(f.source_id)!r} of type {field.field_type}"
                )

    def to_json(self) -> dict[str, Any]:
        return {"order-id": self.order_id, "fields": [f.to_json() for f in self.fields]}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SortOrder:
        if not isinstance(obj, dict) or "order-id" not in obj:
            raise SortOrderError(f"sort order JSON needs an 'order-id': {obj}")
        return cls(int(obj["order-id"]), [SortField.from_json(f) for f in obj.get("fields", [])])

    def __str__(self) -> str:
        return f"[{', '.join(str(f) for f in self.fields)}]"


UNSORTED_SORT_ORDER = SortOrder(0, ())
