"""Partition specs: how a table's rows map to partition tuples, and the specs' JSON form.

A :class:`PartitionSpec` is an ordered list of :class:`PartitionField`\\ s, each a transform of one
source column (by field id). Partition tuples hold the transform *results* in spec field order; the
Java-compatible directory text of a tuple is :meth:`PartitionSpec.partition_path`.

:func:`build_partition_spec` turns the human forms users write (``"day(ts)"``, ``"bucket(16, id)"``,
``"truncate(4, s)"``, ``"cat"``) into a spec, naming fields the way Iceberg Java does (``ts_day``,
``id_bucket``, ``s_trunc``, ``cat``) and rejecting specs Java would reject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.errors import InvalidMetadataError, PartitionSpecError, SchemaError
from icefloe.spec.schema import Schema
from icefloe.spec.types import IcebergType, IntegerType, NestedField, PrimitiveType, StructType
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TransformKind,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)

__all__ = [
    "PARTITION_DATA_ID_START",
    "UNPARTITIONED_SPEC",
    "PartitionField",
    "PartitionSpec",
    "build_partition_spec",
    "url_encode",
]

# Transforms whose partition values are ints whatever the source column's type.
_INT_RESULTS = frozenset(
    {TransformKind.BUCKET, TransformKind.YEAR, TransformKind.MONTH, TransformKind.DAY, TransformKind.HOUR}
)

PARTITION_DATA_ID_START = 1000
"""The first partition field id; an unpartitioned table has last-partition-id 999."""


@dataclass(frozen=True)
class PartitionField:
    """One field of a partition spec: ``transform`` applied to the column with id ``source_id``."""

    source_id: int
    field_id: int
    transform: Transform
    name: str

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transform": str(self.transform),
            "source-id": self.source_id,
            "field-id": self.field_id,
        }


class PartitionSpec:
    """An immutable partition spec.

    Equality and hashing compare the fields (source ids, field ids, transforms, names) and ignore
    ``spec_id``, like :class:`Schema` ignores its schema id: two specs are the same layout whatever
    id a table gave them. :meth:`compatible_with` also ignores partition field ids.
    """

    def __init__(self, *fields: PartitionField, spec_id: int = 0) -> None:
        self.fields: tuple[PartitionField, ...] = tuple(fields)
        self.spec_id = spec_id
        # Types of source columns that the table's current schema no longer has (an older spec
        # whose source column was dropped since): see with_dropped_source_types.
        self._dropped_source_types: dict[int, PrimitiveType] = {}
        seen_ids: set[int] = set()
        seen_names: set[str] = set()
        for f in self.fields:
            if not isinstance(f, PartitionField):
                raise PartitionSpecError(f"expected a PartitionField, got {f!r}")
            if f.field_id in seen_ids:
                raise PartitionSpecError(
                    f"partition field id {f.field_id} is used more than once in spec {spec_id}"
                )
            if f.name in seen_names:
                raise PartitionSpecError(
                    f"partition field name {f.name!r} is used more than once in spec {spec_id}"
                )
            seen_ids.add(f.field_id)
            seen_names.add(f.name)

    # ------------------------------------------------------------------ basic views
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionSpec):
            return NotImplemented
        return self.fields == other.fields

    def __hash__(self) -> int:
        return hash(self.fields)

    def __repr__(self) -> str:
        return f"PartitionSpec({', '.join(repr(f) for f in self.fields)}, spec_id={self.spec_id})"

    def __str__(self) -> str:
        if not self.fields:
            return "[]"
        return "[\n" + "\n".join(f"  {f}" for f in self.fields) + "\n]"

    def __len__(self) -> int:
        return len(self.fields)

    def is_unpartitioned(self) -> bool:
        """No fields, or only void ones: every row lands in the same (empty or all-null) partition."""
        return all(f.transform.is_void for f in self.fields)

    @property
    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=PARTITION_DATA_ID_START - 1)

    def field_by_id(self, field_id: int) -> PartitionField | None:
        return next((f for f in self.fields if f.field_id == field_id), None)

    def fields_by_source_id(self, source_id: int) -> list[PartitionField]:
        return [f for f in self.fields if f.source_id == source_id]

    def identity_source_ids(self) -> set[int]:
        return {f.source_id for f in self.fields if f.transform.is_identity}

    def with_dropped_source_types(self, schema: Schema, history: Iterable[Schema]) -> PartitionSpec:
        """This spec, knowing the types its source columns missing from ``schema`` (the table's
        current schema) had in the table's ``history`` of schemas, newest first.

        Iceberg lets a column be dropped when only an older spec uses it (Iceberg Java then sees
        the source as of unknown type). The files written under that spec keep their partition
        values, so reading and planning them needs the partition type: field ids are never
        reused, so the newest earlier schema holding the id gives the type the values were
        written with. Returns ``self`` when every source column is in ``schema``."""
        missing = {f.source_id for f in self.fields if schema.find_field_or_none(f.source_id) is None}
        if not missing:
            return self
        found: dict[int, PrimitiveType] = {}
        for old in history:
            for source_id in missing - found.keys():
                field = old.find_field_or_none(source_id)
                if field is not None and isinstance(field.field_type, PrimitiveType):
                    found[source_id] = field.field_type
        if not found:
            return self
        spec = PartitionSpec(*self.fields, spec_id=self.spec_id)
        spec._dropped_source_types = found
        return spec

    def with_spec_id(self, spec_id: int) -> PartitionSpec:
        spec = PartitionSpec(*self.fields, spec_id=spec_id)
        spec._dropped_source_types = self._dropped_source_types
        return spec

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same source columns, transforms and names in the same order; field ids and spec ids
        may differ (Java's ``compatibleWith``)."""
        if len(self.fields) != len(other.fields):
            return False
        return all(
            a.source_id == b.source_id and a.transform == b.transform and a.name == b.name
            for a, b in zip(self.fields, other.fields, strict=True)
        )

    # ------------------------------------------------------------------ schema-dependent
    def check_compatibility(self, schema: Schema) -> None:
        """Raise :class:`PartitionSpecError` unless every field's source column exists in
        ``schema``, is a primitive outside lists and maps, and accepts the field's transform."""
        for f in self.fields:
            _check_source(schema, f.source_id, f.transform, f.name)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct of partition values: partition field ids and names, transform result types,
        every field optional."""
        out = []
        for f in self.fields:
            result: IcebergType
            if f.transform.kind in _INT_RESULTS and schema.find_field_or_none(f.source_id) is None:
                result = IntegerType()  # whatever the dropped source column's type was
            else:
                result = f.transform.result_type(_source_type(schema, f, self._dropped_source_types))
            out.append(NestedField(f.field_id, f.name, result, False))
        return StructType(*out)

    def partition_path(self, values: Sequence[Any], schema: Schema) -> str:
        """The data directory of a partition tuple as Iceberg Java writes it:
        ``ts_day=2024-01-31/id_bucket=3``, names and values URL-encoded like ``URLEncoder``."""
        if len(values) != len(self.fields):
            raise PartitionSpecError(
                f"partition tuple has {len(values)} values but spec {self.spec_id} has "
                f"{len(self.fields)} fields"
            )
        parts = []
        for f, value in zip(self.fields, values, strict=True):
            text = f.transform.to_human_string(_source_type(schema, f, self._dropped_source_types), value)
            parts.append(f"{url_encode(f.name)}={url_encode(text)}")
        return "/".join(parts)

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id, "fields": [f.to_json() for f in self.fields]}

    @classmethod
    def from_json(cls, obj: Any) -> PartitionSpec:
        """Read a spec's JSON; also accepts v1's bare field list. v1 fields may lack ``field-id``:
        they get 1000, 1001, ... in order, as Java assigns them."""
        if isinstance(obj, list):
            obj = {"spec-id": 0, "fields": obj}
        if not isinstance(obj, dict) or not isinstance(obj.get("fields", []), list):
            raise InvalidMetadataError(f"invalid partition spec JSON: {obj!r}")
        fields = []
        for pos, fobj in enumerate(obj.get("fields", [])):
            try:
                fields.append(
                    PartitionField(
                        source_id=int(fobj["source-id"]),
                        field_id=int(fobj.get("field-id", PARTITION_DATA_ID_START + pos)),
                        transform=parse_transform(fobj["transform"]),
                        name=str(fobj["name"]),
                    )
                )
            except (KeyError, TypeError, ValueError) as e:
                if isinstance(e, PartitionSpecError):
                    raise
                raise InvalidMetadataError(f"invalid partition field JSON {fobj!r}: {e}") from None
        try:
            spec_id = int(obj.get("spec-id", 0))
        except (TypeError, ValueError):
            raise InvalidMetadataError(f"invalid partition spec id {obj.get('spec-id')!r}") from None
        return cls(*fields, spec_id=spec_id)


UNPARTITIONED_SPEC = PartitionSpec(spec_id=0)

# --------------------------------------------------------------------------- path escaping

_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def url_encode(text: str) -> str:
    """``java.net.URLEncoder.encode(text, UTF_8)``: letters, digits and ``.-*_`` stay, space
    becomes ``+``, every other UTF-8 byte becomes ``%XX`` (upper-case hex)."""
    out = []
    for b in text.encode("utf-8", errors="replace"):
        if b in _URL_SAFE:
            out.append(chr(b))
        elif b == 0x20:
            out.append("+")
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


# --------------------------------------------------------------------------- checks


def _source_type(
    schema: Schema, f: PartitionField, dropped: dict[int, PrimitiveType] | None = None
) -> PrimitiveType:
    try:
        t = schema.find_type(f.source_id)
    except SchemaError:
        if dropped and f.source_id in dropped:
            return dropped[f.source_id]
        raise PartitionSpecError(
            f"partition field {f.name!r} refers to source column id {f.source_id}, which is not in "
            "the schema",
            hint="the source column was dropped or the spec belongs to another table",
            partition_field=f.name,
            source_id=f.source_id,
        ) from None
    if not isinstance(t, PrimitiveType):
        raise PartitionSpecError(
            f"partition field {f.name!r} has a non-primitive source column "
            f"{schema.column_name(f.source_id)!r} ({t})"
        )
    return t


def _check_source(schema: Schema, source_id: int, transform: Transform, name: str) -> None:
    try:
        field = schema.find_field(source_id)
    except SchemaError:
        raise PartitionSpecError(
            f"partition field {name!r} refers to source column id {source_id}, which is not in the schema",
            partition_field=name,
            source_id=source_id,
        ) from None
    column = schema.column_name(source_id)
    if schema.is_in_repeated(source_id):
        raise PartitionSpecError(
            f"cannot partition by {column!r}: it is inside a list or map",
            hint="partition columns must be top-level or inside structs only",
            column=column,
        )
    if not isinstance(field.field_type, PrimitiveType):
        raise PartitionSpecError(
            f"cannot partition by {column!r}: it is a {field.field_type}, not a primitive column",
            hint="partition by one of the struct's fields, e.g. 'identity(" + column + ".<field>)'",
            column=column,
        )
    if not transform.can_transform(field.field_type):
        raise PartitionSpecError(
            f"cannot partition by {transform}({column}): {transform} does not apply to "
            f"{field.field_type} columns",
            hint=transform.type_hint(),
            column=column,
            transform=str(transform),
        )


# --------------------------------------------------------------------------- builder

_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*", re.DOTALL)
_INT = re.compile(r"[+-]?\d+")

# transform names as users write them (Spark and Iceberg SQL spellings)
_ONE_ARG: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "years": YearTransform(),
    "month": MonthTransform(),
    "months": MonthTransform(),
    "day": DayTransform(),
    "days": DayTransform(),
    "date": DayTransform(),
    "hour": HourTransform(),
    "hours": HourTransform(),
    "date_hour": HourTransform(),
    "void": VoidTransform(),
    "alwaysnull": VoidTransform(),
}
_TWO_ARG = ("bucket", "truncate", "trunc")
_SUFFIX = {
    TransformKind.IDENTITY: "",
    TransformKind.BUCKET: "_bucket",
    TransformKind.TRUNCATE: "_trunc",
    TransformKind.YEAR: "_year",
    TransformKind.MONTH: "_month",
    TransformKind.DAY: "_day",
    TransformKind.HOUR: "_hour",
    TransformKind.VOID: "_null",
}


def _split_args(text: str, whole: str) -> list[str]:
    """Split on commas outside back-quoted or double-quoted names."""
    args: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in '`"':
            quote = ch
            current.append(ch)
        elif ch == ",":
            args.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if quote:
        raise PartitionSpecError(f"unbalanced quote in partition field {whole!r}")
    args.append("".join(current).strip())
    return args


def _unquote(name: str, whole: str) -> str:
    name = name.strip()
    if name[:1] in ("`", '"') and (len(name) < 2 or name[-1] != name[0]):
        raise PartitionSpecError(f"unbalanced quote in partition field {whole!r}")
    if len(name) >= 2 and name[0] == name[-1] and name[0] in '`"':
        q = name[0]
        name = name[1:-1].replace(q + q, q)
    if not name:
        raise PartitionSpecError(f"missing column name in partition field {whole!r}")
    return name


def _parse_human(text: str) -> tuple[Transform, str]:
    """``"bucket(16, id)"`` -> (bucket[16], "id")."""
    m = _CALL.fullmatch(text)
    if m is None:
        return IdentityTransform(), _unquote(text, text)
    func = m.group(1).lower()
    args = _split_args(m.group(2), text)
    if func in _ONE_ARG:
        if len(args) != 1:
            raise PartitionSpecError(
                f"{func}() takes one column, got {len(args)} arguments in {text!r}",
                hint=f"write {func}(column)",
            )
        return _ONE_ARG[func], _unquote(args[0], text)
    if func in _TWO_ARG:
        kind = "bucket" if func == "bucket" else "truncate"
        example = "bucket(16, id)" if kind == "bucket" else "truncate(4, name)"
        if len(args) != 2:
            raise PartitionSpecError(
                f"{kind}() takes a number and a column, got {len(args)} arguments in {text!r}",
                hint=f"write {example}",
            )
        # Spark writes the number first (bucket(16, id)); also accept the column first.
        if _INT.fullmatch(args[0]):
            number, column = int(args[0]), args[1]
        elif _INT.fullmatch(args[1]):
            column, number = args[0], int(args[1])
        else:
            what = "bucket count" if kind == "bucket" else "width"
            raise PartitionSpecError(f"{kind}() needs an integer {what} in {text!r}", hint=f"write {example}")
        transform: Transform = BucketTransform(number) if kind == "bucket" else TruncateTransform(number)
        return transform, _unquote(column, text)
    raise PartitionSpecError(
        f"unknown partition transform {m.group(1)!r} in {text!r}",
        hint="use identity, bucket(N, col), truncate(W, col), year, month, day, hour or void",
        transform=m.group(1),
    )


def build_partition_spec(
    schema: Schema,
    partition_by: Sequence[str | PartitionField] | Iterable[str | PartitionField],
    spec_id: int = 0,
    last_partition_id: int = PARTITION_DATA_ID_START - 1,
    case_sensitive: bool = True,
) -> PartitionSpec:
    """Build a spec from human forms (``"day(ts)"``, ``"days(ts)"``, ``"bucket(16, id)"``,
    ``"truncate(4, s)"``, ``"x"``, ``"identity(x)"``, ``"year(ts)"``, ``"void(x)"``; nested struct
    fields as ``"s.a"``) and/or ready :class:`PartitionField`\\ s.

    New fields get ids after ``last_partition_id`` and Java's default names. Raises
    :class:`PartitionSpecError` for unknown columns, columns inside lists or maps, transforms that
    do not apply to the column's type, bad widths or bucket counts, redundant fields (two
    temporal transforms of one column, or the same transform twice) and clashing names.
    """
    if isinstance(partition_by, str):
        raise PartitionSpecError(
            f"partition_by must be a list, got the string {partition_by!r}",
            hint=f"write [{partition_by!r}]",
        )
    fields: list[PartitionField] = []
    names: set[str] = set()
    dedup: dict[tuple[int, str], str] = {}
    next_id = last_partition_id
    for item in partition_by:
        if isinstance(item, PartitionField):
            _check_source(schema, item.source_id, item.transform, item.name)
            pf = item
            next_id = max(next_id, item.field_id)
        elif isinstance(item, str):
            transform, column = _parse_human(item)
            try:
                source = schema.find_field(column, case_sensitive)
            except SchemaError as e:
                raise PartitionSpecError(
                    f"cannot partition by {item!r}: no column named {column!r}",
                    hint=e.hint,
                    column=column,
                ) from None
            canonical = schema.column_name(source.field_id)
            _check_source(schema, source.field_id, transform, canonical)
            next_id += 1
            pf = PartitionField(source.field_id, next_id, transform, canonical + _SUFFIX[transform.kind])
        else:
            raise PartitionSpecError(
                f"partition_by entries must be strings like 'day(ts)' or PartitionFields, got {item!r}"
            )
        key = (pf.source_id, pf.transform.dedup_name)
        if key in dedup:
            raise PartitionSpecError(
                f"partition field {pf.name!r} ({pf.transform}) is redundant with {dedup[key]!r} on "
                f"the same column {schema.column_name(pf.source_id)!r}",
                hint="a column can have at most one temporal transform and each other transform once",
            )
        _check_name(schema, pf, names, case_sensitive)
        dedup[key] = pf.name
        names.add(pf.name)
        fields.append(pf)
    return PartitionSpec(*fields, spec_id=spec_id)


def _check_name(schema: Schema, pf: PartitionField, names: set[str], case_sensitive: bool) -> None:
    if not pf.name:
        raise PartitionSpecError("partition field names must not be empty")
    if pf.name in names:
        raise PartitionSpecError(
            f"partition field name {pf.name!r} is used more than once",
            hint="each partition field needs its own name",
        )
    try:
        clash = schema.find_field(pf.name, case_sensitive)
    except SchemaError:
        return
    # Java allows a partition field to share a column's name only for identity of that column.
    if not (pf.transform.is_identity and clash.field_id == pf.source_id):
        raise PartitionSpecError(
            f"partition field name {pf.name!r} clashes with a column of the same name",
            hint="rename the partition field or the column",
        )
