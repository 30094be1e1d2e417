"""Iceberg data types: primitives, and the nested struct, list and map types with their field ids.

Types are immutable and compare by value. Their string form is the spec's JSON form for
primitives (``"int"``, ``"decimal(10, 2)"``, ``"fixed[16]"``); nested types serialize to JSON objects
through :func:`type_to_json` / :func:`type_from_json`.

Python values of each type, as used everywhere inside icefloe (partition tuples, bounds,
literals): boolean ``bool``; int/long ``int``; float/double ``float``; decimal ``decimal.Decimal``;
date ``int`` days since 1970-01-01; time ``int`` microseconds since midnight; timestamp,
timestamptz ``int`` microseconds since the epoch (timestamp_ns/timestamptz_ns nanoseconds);
string ``str``; uuid ``uuid.UUID``; fixed/binary ``bytes``; unknown (v3) only ``None``.

Field defaults (``NestedField.initial_default`` / ``write_default``, format v3) hold that same
internal representation; :func:`type_to_json` / :func:`type_from_json` convert them to and from
the spec's JSON single-value serialization (a struct default is ``()``, the JSON ``{}``: each
field then takes its own default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icefloe.errors import SchemaError

__all__ = [
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "NestedType",
    "PrimitiveType",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNsType",
    "TimestampType",
    "TimestamptzNsType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "is_promotion_allowed",
    "parse_primitive",
    "type_from_json",
    "type_to_json",
]


class IcebergType:
    """Base of all Iceberg types."""

    @property
    def is_primitive(self) -> bool:
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        return isinstance(self, NestedType)


class PrimitiveType(IcebergType):
    """A type without children. Subclasses are frozen dataclasses; ``str()`` is the JSON form."""

    name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@dataclass(frozen=True, repr=False)
class BooleanType(PrimitiveType):
    name: ClassVar[str] = "boolean"


@dataclass(frozen=True, repr=False)
class IntegerType(PrimitiveType):
    name: ClassVar[str] = "int"
    min: ClassVar[int] = -(2**31)
    max: ClassVar[int] = 2**31 - 1


@dataclass(frozen=True, repr=False)
class LongType(PrimitiveType):
    name: ClassVar[str] = "long"
    min: ClassVar[int] = -(2**63)
    max: ClassVar[int] = 2**63 - 1


@dataclass(frozen=True, repr=False)
class FloatType(PrimitiveType):
    name: ClassVar[str] = "float"


@dataclass(frozen=True, repr=False)
class DoubleType(PrimitiveType):
    name: ClassVar[str] = "double"


@dataclass(frozen=True, repr=False)
class DecimalType(PrimitiveType):
    precision: int
    scale: int

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= 38:
            raise SchemaError(f"decimal precision must be in 1..38, got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            # Iceberg allows scale > precision? No: Java requires scale <= precision is not checked,
            # but negative scales are not allowed and Parquet needs scale <= precision.
            raise SchemaError(f"decimal scale must be in 0..precision ({self.precision}), got {self.scale}")

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale})"


@dataclass(frozen=True, repr=False)
class DateType(PrimitiveType):
    name: ClassVar[str] = "date"


@dataclass(frozen=True, repr=False)
class TimeType(PrimitiveType):
    name: ClassVar[str] = "time"


@dataclass(frozen=True, repr=False)
class TimestampType(PrimitiveType):
    """Timestamp without time zone, microseconds."""

    name: ClassVar[str] = "timestamp"


@dataclass(frozen=True, repr=False)
class TimestamptzType(PrimitiveType):
    """Timestamp with time zone (stored as UTC), microseconds."""

    name: ClassVar[str] = "timestamptz"


@dataclass(frozen=True, repr=False)
class TimestampNsType(PrimitiveType):
    """v3 only: timestamp without time zone, nanoseconds."""

    name: ClassVar[str] = "timestamp_ns"


@dataclass(frozen=True, repr=False)
class TimestamptzNsType(PrimitiveType):
    """v3 only: timestamp with time zone, nanoseconds."""

    name: ClassVar[str] = "timestamptz_ns"


@dataclass(frozen=True, repr=False)
class UnknownType(PrimitiveType):
    """v3 only: a column whose type is not known yet. Always optional and null, never stored in
    data files; it may later be promoted to any type."""

    name: ClassVar[str] = "unknown"


@dataclass(frozen=True, repr=False)
class StringType(PrimitiveType):
    name: ClassVar[str] = "string"


@dataclass(frozen=True, repr=False)
class UUIDType(PrimitiveType):
    name: ClassVar[str] = "uuid"


@dataclass(frozen=True, repr=False)
class FixedType(PrimitiveType):
    length: int

    def __post_init__(self) -> None:
        if self.length < 1:
            raise SchemaError(f"fixed length must be positive, got {self.length}")

    def __str__(self) -> str:
        return f"fixed[{self.length}]"

    def __repr__(self) -> str:
        return f"FixedType({self.length})"


@dataclass(frozen=True, repr=False)
class BinaryType(PrimitiveType):
    name: ClassVar[str] = "binary"


class NestedType(IcebergType):
    """struct, list or map."""

    @property
    def fields(self) -> tuple[NestedField, ...]:
        raise NotImplementedError


@dataclass(frozen=True)
class NestedField:
    """A named, id-carrying field of a struct (also the implicit element/key/value fields)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        return not self.required

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        doc = f" ({self.doc})" if self.doc else ""
        return f"{self.field_id}: {self.name}: {req} {self.field_type}{doc}"


@dataclass(frozen=True)
class StructType(NestedType):
    struct_fields: tuple[NestedField, ...] = ()
    _by_id: dict[int, NestedField] = field(init=False, repr=False, compare=False, hash=False)
    _by_name: dict[str, NestedField] = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "struct_fields", tuple(fields))
        object.__setattr__(self, "_by_id", {f.field_id: f for f in fields})
        object.__setattr__(self, "_by_name", {f.name: f for f in fields})
        if len(self._by_id) != len(fields):
            raise SchemaError(f"duplicate field ids in struct: {[f.field_id for f in fields]}")
        if len(self._by_name) != len(fields):
            raise SchemaError(f"duplicate field names in struct: {[f.name for f in fields]}")

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return self.struct_fields

    def field(self, field_id: int) -> NestedField | None:
        return self._by_id.get(field_id)

    def field_by_name(self, name: str) -> NestedField | None:
        return self._by_name.get(name)

    def __len__(self) -> int:
        return len(self.struct_fields)

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.struct_fields) + ">"

    def __repr__(self) -> str:
        return "StructType(" + ", ".join(repr(f) for f in self.struct_fields) + ")"

    def __hash__(self) -> int:
        return hash(self.struct_fields)


@dataclass(frozen=True)
class ListType(NestedType):
    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(NestedType):
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


_SIMPLE: dict[str, PrimitiveType] = {
    t.name: t
    for t in (
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        TimestampNsType(),
        TimestamptzNsType(),
        StringType(),
        UUIDType(),
        BinaryType(),
        UnknownType(),
    )
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]")


def parse_primitive(text: str) -> PrimitiveType:
    """Parse a primitive type's JSON string form: ``"long"``, ``"decimal(9, 2)"``, ``"fixed[16]"``."""
    t = text.strip().lower()
    if t in _SIMPLE:
        return _SIMPLE[t]
    if m := _DECIMAL.fullmatch(t):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.fullmatch(t):
        return FixedType(int(m.group(1)))
    raise SchemaError(f"unknown Iceberg type {text!r}")


def _default_to_json(t: IcebergType, value: Any, what: str) -> Any:
    """A field default (internal representation) in the spec's JSON single-value form."""
    from icefloe.errors import ValidationError
    from icefloe.spec.values import to_json_value

    if isinstance(t, StructType):
        return {}  # field values live in the fields' own defaults
    if isinstance(t, MapType):
        value = dict(value)
    try:
        return to_json_value(t, value)
    except (ValidationError, TypeError, ValueError, OverflowError) as e:
        raise SchemaError(f"the {what} of field {t} cannot be serialized: {value!r} ({e})") from None


def _default_from_json(t: IcebergType, obj: Any, what: str, name: str) -> Any:
    """A field default from its JSON single-value form, in the internal representation."""
    from icefloe.errors import ValidationError
    from icefloe.spec.values import from_json_value

    if obj is None:
        return None
    if isinstance(t, UnknownType):
        raise SchemaError(f"field {name!r} of type unknown must have a null {what}, got {obj!r}", column=name)
    if isinstance(t, StructType):
        if not isinstance(obj, dict):
            raise SchemaError(
                f"the {what} of struct field {name!r} must be an object, got {obj!r}", column=name
            )
        return ()
    try:
        value = from_json_value(t, obj)
    except ValidationError as e:
        raise SchemaError(f"invalid {what} for field {name!r} of type {t}: {e}", column=name) from None
    if isinstance(t, ListType):
        return tuple(value)
    if isinstance(t, MapType):
        return tuple(value.items())
    return value


def _field_to_json(f: NestedField) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.field_type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = _default_to_json(f.field_type, f.initial_default, "initial-default")
    if f.write_default is not None:
        out["write-default"] = _default_to_json(f.field_type, f.write_default, "write-default")
    return out


def type_to_json(t: IcebergType) -> Any:
    """The spec's JSON form of a type (a string for primitives, an object for nested types).

    Field defaults are written in the spec's JSON single-value serialization.
    """
    if isinstance(t, PrimitiveType):
        return str(t)
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [_field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    raise SchemaError(f"cannot serialize type {t!r}")


def _json_id(obj: Mapping[str, Any], key: str) -> int:
    """A field id from type JSON: a JSON integer, not negative (ids name columns in data files)."""
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise SchemaError(f"{key!r} must be a non-negative integer, got {v!r}: {obj}")
    return v


def _json_flag(obj: Mapping[str, Any], key: str) -> bool:
    v = obj[key]
    if not isinstance(v, bool):
        raise SchemaError(f"{key!r} must be true or false, got {v!r}: {obj}")
    return v


def _field_from_json(obj: Any) -> NestedField:
    if not isinstance(obj, dict):
        raise SchemaError(f"a struct field must be a JSON object, got {obj!r}")
    try:
        name = obj["name"]
        if not isinstance(name, str) or not name:
            raise SchemaError(f"a field name must be a non-empty string, got {name!r}: {obj}")
        doc = obj.get("doc")
        if doc is not None and not isinstance(doc, str):
            raise SchemaError(f"a field's 'doc' must be a string, got {doc!r}: {obj}")
        field_type = type_from_json(obj["type"])
        return NestedField(
            field_id=_json_id(obj, "id"),
            name=name,
            field_type=field_type,
            required=_json_flag(obj, "required"),
            doc=doc,
            initial_default=_default_from_json(
                field_type, obj.get("initial-default"), "initial-default", name
            ),
            write_default=_default_from_json(field_type, obj.get("write-default"), "write-default", name),
        )
    except KeyError as e:
        raise SchemaError(f"struct field is missing {e.args[0]!r}: {obj}") from None


def type_from_json(obj: Any) -> IcebergType:
    """Parse the spec's JSON form of a type."""
    if isinstance(obj, str):
        return parse_primitive(obj)
    if not isinstance(obj, dict):
        raise SchemaError(f"invalid type JSON: {obj!r}")
    kind = obj.get("type")
    try:
        if kind == "struct":
            fields = obj["fields"]
            if not isinstance(fields, list):
                raise SchemaError(f"a struct's 'fields' must be a list, got {fields!r}")
            return StructType(*(_field_from_json(f) for f in fields))
        if kind == "list":
            return ListType(
                _json_id(obj, "element-id"),
                type_from_json(obj["element"]),
                _json_flag(obj, "element-required"),
            )
        if kind == "map":
            return MapType(
                _json_id(obj, "key-id"),
                type_from_json(obj["key"]),
                _json_id(obj, "value-id"),
                type_from_json(obj["value"]),
                _json_flag(obj, "value-required"),
            )
    except KeyError as e:
        raise SchemaError(f"{kind} type is missing {e.args[0]!r}: {obj}") from None
    raise SchemaError(f"unknown nested type {kind!r}")


def is_promotion_allowed(source: IcebergType, target: IcebergType) -> bool:
    """Whether a column of type ``source`` may be read (or evolved) as ``target`` per the spec:
    int -> long, float -> double, decimal(P, S) -> decimal(P', S) with P' >= P; same type."""
    if source == target:
        return True
    if isinstance(source, IntegerType):
        return isinstance(target, LongType)
    if isinstance(source, FloatType):
        return isinstance(target, DoubleType)
    if isinstance(source, DecimalType) and isinstance(target, DecimalType):
        return target.scale == source.scale and target.precision >= source.precision
    return False
