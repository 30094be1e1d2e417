"""Seeded random Iceberg tables with a Python model of their rows, for differential read tests.

One seed gives one table: a random schema (every Iceberg v2 primitive, structs, lists, maps, with
edge values: nulls, NaN, +-0.0, +-inf, extreme integers and decimals, dates and timestamps before
1970 and before 1582, unicode and empty strings, strings longer than the 16 characters metrics
keep), a random partition spec (identity, bucket, truncate, year, month, day, hour, void), random
table properties (copy-on-write or merge-on-read deletes, tiny row groups and files, metrics modes)
and a random sequence of operations::

    generate + apply, one operation at a time, on the table and on the model alike:
      append | delete(filter) | overwrite(rows, filter) | upsert(rows, rid) | equality delete
      | tag | branch (later writes may go to it) | delete-mode switch
      | schema evolution (add, rename, widen, drop a column) | partition evolution

The model (`BuiltTable`) is the ground truth, independent of every reader: it keeps the rows of
every snapshot and every ref keyed by field id, decides deletes with its own evaluator of Iceberg's
row semantics (:func:`eval_iceberg`), and knows which schema each read must use (a snapshot or tag
reads with the schema of its snapshot, ``main`` and branch heads with the current one).

Filters are a small tree (:class:`Pred`, :class:`And`, :class:`Or`, :class:`Not`, :class:`Between`)
rendered as icefloe filter text (:func:`to_icefloe_text`) or expression objects
(:func:`to_icefloe_expression`); renderers for other dialects (Spark SQL, DuckDB) live with the
tests that use them. Rows compare as multisets of canonical texts (:func:`row_text`), the
definition of the oracle's ``canon.py``: floats by ``repr`` (so NaN, -0.0 and 0.0 all differ),
timestamps as epoch microseconds, binary as hex, maps as pairs sorted by key.

Iceberg row semantics as modelled here (icefloe's documented semantics, ``expressions/_base.py``):
``<``, ``<=``, ``>``, ``>=``, ``=``, ``in`` and ``starts with`` are false for null and for NaN;
``!=``, ``not in`` and ``not starts with`` are true for null and NaN; ``is nan`` is false and ``is not
nan`` true for null; ``-0.0 = 0.0`` (IEEE). NOT is pushed into the predicates first (so ``not (x <
5)`` is ``x >= 5``, false for null and NaN). A literal beyond an int column's range (2**40)
makes ``<``/``<=`` (below-min: ``>``/``>=``) true for every non-null value, ``=`` false, and ``!=``
true even for null. Float literals on float columns round to float32 first, except finite ones
beyond float32's range (1e39), which compare as they are: above every finite value, below +inf.

Schema and partition evolution go through ``table.update_schema()`` and ``table.update_spec()``
(:func:`evolve_spec`), as users evolve tables (docs/evolution.md).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import random
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.spec.schema import Schema
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
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.catalog import Catalog
    from icefloe.expressions import BooleanExpression
    from icefloe.table import Table

__all__ = [
    "And",
    "Between",
    "BuiltTable",
    "Filter",
    "Not",
    "Or",
    "Pred",
    "ReadTarget",
    "TableOptions",
    "Truth",
    "build_table",
    "canon_value",
    "eval_iceberg",
    "evolve_spec",
    "filterable_columns",
    "fold_filter",
    "project",
    "random_filter",
    "row_text",
    "to_icefloe_expression",
    "to_icefloe_text",
]

Row = dict[int, Any]
"""A model row: top-level field id -> Python value (structs are dicts by field name, lists are
lists, maps are lists of (key, value) pairs)."""

F32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
F32_TINY = struct.unpack("<f", b"\x01\x00\x00\x00")[0]
_UTC = dt.UTC


def f32(x: float) -> float:
    """``x`` rounded to float32 (infinities and NaN unchanged)."""
    if math.isnan(x) or math.isinf(x):
        return x
    result: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return result


# ---------------------------------------------------------------------------------- values

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_EDGE_STRINGS = (
    "",
    "a",
    "ab",
    "abc",
    "B",
    "é",
    "日本語",
    "😀",
    "\ufffd",
    "\ue000",
    "a%b_c\\d",
    "it's",
    "nul\x00x",
    "z" * 20,
    "a" * 16 + "é",
    "a" * 15 + "😀x",
    "\U0010ffff",
)
_EDGE_DATES = (
    dt.date(1, 1, 1),
    dt.date(1582, 10, 4),
    dt.date(1582, 10, 15),
    dt.date(1899, 12, 31),
    dt.date(1969, 12, 31),
    dt.date(1970, 1, 1),
    dt.date(2000, 2, 29),
    dt.date(9999, 12, 31),
)
_EDGE_TIMESTAMPS = (
    dt.datetime(1, 1, 1),
    dt.datetime(1582, 10, 14, 12, 0, 0, 123456),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1970, 1, 1),
    dt.datetime(1970, 1, 1, 0, 0, 0, 1),
    dt.datetime(2024, 2, 29, 23, 0),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
)


_EXACT = decimal.Context(prec=100)


def _decimal_max(t: DecimalType) -> decimal.Decimal:
    return decimal.Decimal(10**t.precision - 1).scaleb(-t.scale, _EXACT)


def _random_decimal(rng: random.Random, t: DecimalType, digits: int | None = None) -> decimal.Decimal:
    n = min(t.precision, digits if digits is not None else rng.randint(1, t.precision))
    unscaled = rng.randint(-(10**n - 1), 10**n - 1)
    return decimal.Decimal(unscaled).scaleb(-t.scale, _EXACT)


def _random_datetime(rng: random.Random) -> dt.datetime:
    base = dt.datetime(1900, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 200 * 365 * 86_400_000_000))
    return base if rng.random() < 0.5 else base.replace(microsecond=0)


def edge_values(t: PrimitiveType) -> list[Any]:
    """The edge values of a type, in the model's Python representation."""
    if isinstance(t, BooleanType):
        return [True, False]
    if isinstance(t, IntegerType):
        return [_INT_MIN, _INT_MAX, 0, -1, 1]
    if isinstance(t, LongType):
        return [_LONG_MIN, _LONG_MAX, 0, -1, _INT_MAX + 1, _INT_MIN - 1]
    if isinstance(t, FloatType):
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, F32_MAX, -F32_MAX, F32_TINY, 1.0, -2.5]
    if isinstance(t, DoubleType):
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.7976931348623157e308, -5e-324, 5e-324, 0.1, -1.5]
    if isinstance(t, DecimalType):
        top = _decimal_max(t)
        tiny = decimal.Decimal(1).scaleb(-t.scale, _EXACT)
        return [top, top.copy_negate(), decimal.Decimal(0).scaleb(-t.scale, _EXACT), tiny, tiny.copy_negate()]
    if isinstance(t, DateType):
        return list(_EDGE_DATES)
    if isinstance(t, TimeType):
        return [dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 0, 0, 1)]
    if isinstance(t, TimestampType):
        return list(_EDGE_TIMESTAMPS)
    if isinstance(t, TimestamptzType):
        return [v.replace(tzinfo=_UTC) for v in _EDGE_TIMESTAMPS]
    if isinstance(t, StringType):
        return list(_EDGE_STRINGS)
    if isinstance(t, UUIDType):
        return [
            uuid.UUID(int=0),
            uuid.UUID(int=2**128 - 1),
            uuid.UUID("80000000-0000-0000-0000-000000000000"),
            uuid.UUID("7fffffff-ffff-ffff-ffff-ffffffffffff"),
        ]
    if isinstance(t, FixedType):
        n = t.length
        return [b"\x00" * n, b"\xff" * n, b"\x7f" + b"\x80" * (n - 1)]
    if isinstance(t, BinaryType):
        return [b"", b"\x00", b"\xff" * 20, b"\x00\x01", b"\x80"]
    raise TypeError(f"no edge values for {t}")


def random_value(rng: random.Random, t: PrimitiveType) -> Any:
    """A random ordinary value of a type (edge values come from :func:`edge_values`)."""
    if isinstance(t, BooleanType):
        return rng.random() < 0.5
    if isinstance(t, IntegerType):
        return rng.choice([rng.randint(-50, 50), rng.randint(_INT_MIN, _INT_MAX)])
    if isinstance(t, LongType):
        return rng.choice([rng.randint(-50, 50), rng.randint(_LONG_MIN, _LONG_MAX)])
    if isinstance(t, FloatType):
        return f32(
            rng.choice([rng.uniform(-100, 100), float(rng.randint(-20, 20)), rng.uniform(-1e30, 1e30)])
        )
    if isinstance(t, DoubleType):
        return rng.choice([rng.uniform(-100, 100), float(rng.randint(-20, 20)), rng.uniform(-1e300, 1e300)])
    if isinstance(t, DecimalType):
        return _random_decimal(rng, t)
    if isinstance(t, DateType):
        return dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 200 * 365))
    if isinstance(t, TimeType):
        return (
            dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 86_400_000_000 - 1))
        ).time()
    if isinstance(t, TimestampType):
        return _random_datetime(rng)
    if isinstance(t, TimestamptzType):
        return _random_datetime(rng).replace(tzinfo=_UTC)
    if isinstance(t, StringType):
        alphabet = "abcAB_%é日😀 "
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 3, 5, 17, 24])))
    if isinstance(t, UUIDType):
        return uuid.UUID(int=rng.getrandbits(128))
    if isinstance(t, FixedType):
        return bytes(rng.getrandbits(8) for _ in range(t.length))
    if isinstance(t, BinaryType):
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 3, 8, 17, 24])))
    raise TypeError(f"no random values for {t}")


def make_pool(rng: random.Random, t: PrimitiveType) -> list[Any]:
    """Values a column draws from: some edges and some random values, few enough that equality
    filters and equality deletes hit rows."""
    edges = edge_values(t)
    pool = rng.sample(edges, k=min(len(edges), rng.randint(2, 6)))
    pool += [random_value(rng, t) for _ in range(rng.randint(1, 4))]
    return pool


# ---------------------------------------------------------------------------------- schemas

PRIMITIVE_KINDS = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "decimal",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "string",
    "uuid",
    "fixed",
    "binary",
)


def random_primitive(rng: random.Random, kinds: Sequence[str]) -> PrimitiveType:
    k = rng.choice(list(kinds))
    simple: dict[str, PrimitiveType] = {
        "boolean": BooleanType(),
        "int": IntegerType(),
        "long": LongType(),
        "float": FloatType(),
        "double": DoubleType(),
        "date": DateType(),
        "time": TimeType(),
        "timestamp": TimestampType(),
        "timestamptz": TimestamptzType(),
        "string": StringType(),
        "uuid": UUIDType(),
        "binary": BinaryType(),
    }
    if k == "decimal":
        p = rng.choice([1, 9, 18, 38])
        return DecimalType(p, rng.randint(0, min(p, 6)))
    if k == "fixed":
        return FixedType(rng.choice([1, 4, 16]))
    return simple[k]


@dataclass(frozen=True)
class TableOptions:
    """What a generated table may contain (each read path declares what it can read)."""

    kinds: tuple[str, ...] = PRIMITIVE_KINDS
    nested: bool = True
    max_columns: int = 7
    max_ops: int = 7
    max_rows: int = 40
    equality_deletes: bool = True
    branches: bool = True
    schema_evolution: bool = True
    partition_evolution: bool = True


class _Ids:
    def __init__(self, start: int = 1) -> None:
        self.next = start

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


def _random_type(rng: random.Random, kinds: Sequence[str], nested: bool, ids: _Ids) -> IcebergType:
    if not nested or rng.random() < 0.78:
        return random_primitive(rng, kinds)
    shape = rng.choice(["struct", "list", "map", "list<struct>"])
    if shape == "struct":
        n = rng.randint(1, 3)
        return StructType(
            *(
                NestedField(ids(), f"f{i}", random_primitive(rng, kinds), required=rng.random() < 0.2)
                for i in range(n)
            )
        )
    if shape == "list":
        return ListType(ids(), random_primitive(rng, kinds), element_required=rng.random() < 0.3)
    if shape == "map":
        key = random_primitive(rng, [k for k in ("int", "string", "date") if k in kinds] or ["string"])
        return MapType(ids(), key, ids(), random_primitive(rng, kinds), value_required=rng.random() < 0.3)
    inner = StructType(*(NestedField(ids(), f"g{i}", random_primitive(rng, kinds)) for i in range(2)))
    return ListType(ids(), inner, element_required=False)


def random_schema(rng: random.Random, options: TableOptions) -> Schema:
    """``rid`` (required unique long, the key of upserts and self-joins) plus random columns; at
    least one float or double and one string column when the options allow them."""
    ids = _Ids(2)
    fields = [NestedField(1, "rid", LongType(), required=True)]
    n = rng.randint(2, options.max_columns)
    forced = [k for k in ("double" if rng.random() < 0.5 else "float", "string") if k in options.kinds]
    for i in range(n):
        fid = ids()
        if i < len(forced):
            ftype: IcebergType = random_primitive(rng, [forced[i]])
        else:
            ftype = _random_type(rng, options.kinds, options.nested, ids)
        kind = str(ftype).split("<")[0].split("(")[0].split("[")[0]
        name = f"c{i}_{kind}"
        if rng.random() < 0.08:
            name = f"C{i}Mixed"
        elif rng.random() < 0.05:
            name = f"c{i} sp"
        fields.append(NestedField(fid, name, ftype, required=rng.random() < 0.12))
    return Schema(*fields)


def _leaf_pools(rng: random.Random, t: IcebergType, fid: int, pools: dict[int, list[Any]]) -> None:
    if isinstance(t, PrimitiveType):
        pools[fid] = make_pool(rng, t)
        return
    for f in t.fields:  # type: ignore[attr-defined]
        _leaf_pools(rng, f.field_type, f.field_id, pools)


def _value(rng: random.Random, f: NestedField, pools: Mapping[int, list[Any]]) -> Any:
    """A value of field ``f`` (null with some probability when optional)."""
    if not f.required and rng.random() < 0.15:
        return None
    return _nonnull_value(rng, f.field_type, f.field_id, pools)


def _nonnull_value(rng: random.Random, t: IcebergType, fid: int, pools: Mapping[int, list[Any]]) -> Any:
    if isinstance(t, PrimitiveType):
        return rng.choice(pools[fid])
    if isinstance(t, StructType):
        return {f.name: _value(rng, f, pools) for f in t.fields}
    if isinstance(t, ListType):
        return [_value(rng, t.element_field, pools) for _ in range(rng.choice([0, 1, 2, 3]))]
    if isinstance(t, MapType):
        out: dict[Any, Any] = {}
        for _ in range(rng.choice([0, 1, 2, 3])):
            k = rng.choice(pools[t.key_id])
            out[k] = _value(rng, t.value_field, pools)
        return list(out.items())
    raise TypeError(f"unexpected type {t}")


# ---------------------------------------------------------------------------------- filters


@dataclass(frozen=True)
class Pred:
    """``op`` is one of lt, le, gt, ge, eq, ne, in, not_in, is_null, not_null, is_nan, not_nan,
    starts_with, not_starts_with. ``column`` is a dotted path; ``value`` a Python value of the
    column's type (a tuple for in/not_in), which may lie beyond the type's range."""

    op: str
    column: str
    value: Any = None


@dataclass(frozen=True)
class Between:
    column: str
    low: Any
    high: Any


@dataclass(frozen=True)
class And:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Or:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Not:
    child: Filter


@dataclass(frozen=True)
class Truth:
    value: bool


Filter = Pred | Between | And | Or | Not | Truth

_NEGATED = {
    "lt": "ge",
    "le": "gt",
    "gt": "le",
    "ge": "lt",
    "eq": "ne",
    "ne": "eq",
    "in": "not_in",
    "not_in": "in",
    "is_null": "not_null",
    "not_null": "is_null",
    "is_nan": "not_nan",
    "not_nan": "is_nan",
    "starts_with": "not_starts_with",
    "not_starts_with": "starts_with",
}
COMPARISONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=", "ne": "!="}


def fold_filter(
    f: Filter,
    leaf: Callable[[Pred | Between | Truth], Any],
    node: Callable[[And | Or | Not, list[Any]], Any],
) -> Any:
    """Fold ``f`` bottom-up without recursion: ``leaf`` of each predicate, ``node`` of each
    and/or/not with its children's results (left before right). Wide filters are left-deep chains
    hundreds or thousands of levels deep, deeper than Python's recursion limit allows."""
    out: list[Any] = []
    stack: list[tuple[Filter, bool]] = [(f, False)]
    while stack:
        item, children_done = stack.pop()
        if isinstance(item, And | Or):
            if children_done:
                right = out.pop()
                out.append(node(item, [out.pop(), right]))
            else:
                stack += [(item, True), (item.right, False), (item.left, False)]
        elif isinstance(item, Not):
            if children_done:
                out.append(node(item, [out.pop()]))
            else:
                stack += [(item, True), (item.child, False)]
        else:
            out.append(leaf(item))
    return out[0]


def push_not(f: Filter, negate: bool = False) -> Filter:
    """The NOT-free form: negations pushed into the predicates (Iceberg's ``rewriteNot``)."""

    def leaf(p: Pred | Between | Truth) -> tuple[Filter, Filter]:
        if isinstance(p, Truth):
            return Truth(p.value), Truth(not p.value)
        if isinstance(p, Between):
            low, high = Pred("ge", p.column, p.low), Pred("le", p.column, p.high)
            return And(low, high), Or(Pred("lt", p.column, p.low), Pred("gt", p.column, p.high))
        return p, Pred(_NEGATED[p.op], p.column, p.value)

    def node(n: And | Or | Not, children: list[tuple[Filter, Filter]]) -> tuple[Filter, Filter]:
        # Each result is (the NOT-free form, the NOT-free form of its negation).
        if isinstance(n, Not):
            positive, negative = children[0]
            return negative, positive
        (lp, ln), (rp, rn) = children
        if isinstance(n, And):
            return And(lp, rp), Or(ln, rn)
        return Or(lp, rp), And(ln, rn)

    positive, negative = fold_filter(f, leaf, node)
    result: Filter = negative if negate else positive
    return result


def filterable_columns(schema: Schema) -> list[tuple[str, PrimitiveType]]:
    """Dotted paths of primitive columns a filter may reference (top level or inside structs)."""
    out: list[tuple[str, PrimitiveType]] = []

    def walk(fields: Iterable[NestedField], prefix: str) -> None:
        for f in fields:
            if isinstance(f.field_type, PrimitiveType):
                out.append((prefix + f.name, f.field_type))
            elif isinstance(f.field_type, StructType):
                walk(f.field_type.fields, prefix + f.name + ".")

    walk(schema.fields, "")
    return out


def column_value(schema: Schema, row: Mapping[int, Any], path: str) -> Any:
    """The value at dotted ``path`` of a model row read with ``schema`` (None through a null
    struct, or for a column the row predates)."""
    parts = path.split(".")
    top = next(f for f in schema.fields if f.name == parts[0])
    value = row.get(top.field_id)
    for p in parts[1:]:
        if value is None:
            return None
        value = value[p]
    return value


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _beyond(t: PrimitiveType, lit: Any) -> int:
    """+1 when ``lit`` is above every value of int/long ``t``, -1 when below, 0 otherwise."""
    if isinstance(t, IntegerType | LongType):
        lo, hi = (_INT_MIN, _INT_MAX) if isinstance(t, IntegerType) else (_LONG_MIN, _LONG_MAX)
        return 1 if lit > hi else -1 if lit < lo else 0
    return 0


def iceberg_literal(t: PrimitiveType, lit: Any) -> Any:
    """A literal as a float column compares it: rounded to float32, except a finite literal
    beyond float32's range, which compares as it is (above every finite value, below +inf)."""
    if not isinstance(t, FloatType):
        return lit
    x = float(lit)
    return x if math.isfinite(x) and abs(x) > F32_MAX else f32(x)


def eval_iceberg(f: Filter, schema: Schema, row: Mapping[int, Any]) -> bool:
    """Iceberg's row semantics (see the module docstring)."""
    types = dict(filterable_columns(schema))
    return _eval_iceberg(push_not(f), schema, types, row)


def _eval_iceberg(
    f: Filter, schema: Schema, types: Mapping[str, PrimitiveType], row: Mapping[int, Any]
) -> bool:
    def node(n: And | Or | Not, children: list[bool]) -> bool:
        assert not isinstance(n, Not), n  # NOT was pushed into the predicates
        return all(children) if isinstance(n, And) else any(children)

    result: bool = fold_filter(f, lambda p: _eval_leaf(p, schema, types, row), node)
    return result


def _eval_leaf(
    f: Pred | Between | Truth, schema: Schema, types: Mapping[str, PrimitiveType], row: Mapping[int, Any]
) -> bool:
    if isinstance(f, Truth):
        return f.value
    assert isinstance(f, Pred), f
    t = types[f.column]
    v = column_value(schema, row, f.column)
    op = f.op
    if op in ("is_null", "not_null"):
        return (v is None) == (op == "is_null")
    if op in ("is_nan", "not_nan"):
        return _is_nan(v) == (op == "is_nan")
    if op in ("in", "not_in"):
        lits = [iceberg_literal(t, x) for x in f.value if _beyond(t, x) == 0]
        hit = v is not None and not _is_nan(v) and any(v == x for x in lits)
        return hit == (op == "in")
    if op in ("starts_with", "not_starts_with"):
        hit = v is not None and v.startswith(f.value)
        return hit == (op == "starts_with")
    side = _beyond(t, f.value)
    if side:
        if op == "ne":
            return True
        below_all = side > 0 and op in ("lt", "le")
        above_all = side < 0 and op in ("gt", "ge")
        return v is not None and (below_all or above_all)
    if v is None:
        return op == "ne"
    if _is_nan(v):
        return op == "ne"
    lit = iceberg_literal(t, f.value)
    return _compare(op, v, lit)


def _compare(op: str, v: Any, lit: Any) -> bool:
    if op == "eq":
        return bool(v == lit)
    if op == "ne":
        return bool(v != lit)
    if op == "lt":
        return bool(v < lit)
    if op == "le":
        return bool(v <= lit)
    if op == "gt":
        return bool(v > lit)
    return bool(v >= lit)


def _literal_beyond(rng: random.Random, t: PrimitiveType) -> Any:
    """A literal at or beyond the edge of the type's values."""
    if isinstance(t, IntegerType):
        return rng.choice([_INT_MAX + 1, _INT_MIN - 1, 2**40, _INT_MAX, _INT_MIN])
    if isinstance(t, LongType):
        return rng.choice([_LONG_MAX, _LONG_MIN, _LONG_MAX - 1])
    if isinstance(t, FloatType):
        return rng.choice([1e39, -1e39, math.inf, -math.inf, F32_MAX, 0.0, -0.0, 0.1])
    if isinstance(t, DoubleType):
        return rng.choice([math.inf, -math.inf, 1.7976931348623157e308, 0.0, -0.0, 5e-324])
    if isinstance(t, DecimalType):
        top = _decimal_max(t)
        return rng.choice([top, top.copy_negate(), decimal.Decimal(0)])
    edges = edge_values(t)
    return rng.choice(edges)


def _literal(rng: random.Random, t: PrimitiveType, pool: Sequence[Any], nan_ok: bool) -> Any:
    r = rng.random()
    if r < 0.6 and pool:
        v = rng.choice(list(pool))
    elif r < 0.8:
        v = _literal_beyond(rng, t)
    else:
        v = random_value(rng, t)
    if _is_nan(v) and not nan_ok:
        return 0.0
    return v


def _prefix(rng: random.Random, pool: Sequence[Any]) -> str:
    words = [w for w in pool if isinstance(w, str)] or ["a"]
    w = rng.choice(words)
    return w[: rng.randint(0, len(w))]


def random_predicate(
    rng: random.Random,
    schema: Schema,
    pools: Mapping[int, Sequence[Any]],
    nan_literals: bool = False,
    skip_types: tuple[type, ...] = (),
) -> Filter:
    """One leaf predicate on a random filterable column, literals drawn from the column's values
    (so that it matches some rows), the type's edges and random values. ``nan_literals``: allow NaN
    literals (only SQL dialects accept them; Iceberg refuses them when binding). Columns of
    ``skip_types`` are not filtered on (``rid`` always can be)."""
    cols = [(p, t) for p, t in filterable_columns(schema) if not isinstance(t, skip_types) or p == "rid"]
    path, t = rng.choice(cols)
    pool = pools.get(_leaf_id(schema, path), [])
    if isinstance(t, BooleanType):
        ops = ["eq", "ne", "in", "not_in", "is_null", "not_null"]
    else:
        ops = ["lt", "le", "gt", "ge", "eq", "ne", "in", "not_in", "is_null", "not_null", "between"]
        if isinstance(t, FloatType | DoubleType):
            ops += ["is_nan", "not_nan", "is_nan", "not_nan"]
        if isinstance(t, StringType):
            ops += ["starts_with", "not_starts_with", "starts_with"]
    op = rng.choice(ops)
    if op in ("is_null", "not_null", "is_nan", "not_nan"):
        return Pred(op, path)
    if op in ("starts_with", "not_starts_with"):
        return Pred(op, path, _prefix(rng, pool))
    if op in ("in", "not_in"):
        return Pred(op, path, tuple(_literal(rng, t, pool, nan_literals) for _ in range(rng.randint(1, 4))))
    if op == "between":
        a, b = _literal(rng, t, pool, False), _literal(rng, t, pool, False)
        if rng.random() < 0.8:
            a, b = min(a, b), max(a, b)
        return Between(path, a, b)
    return Pred(op, path, _literal(rng, t, pool, nan_literals))


def random_filter(
    rng: random.Random,
    schema: Schema,
    pools: Mapping[int, Sequence[Any]],
    depth: int = 2,
    nan_literals: bool = False,
    skip_types: tuple[type, ...] = (),
) -> Filter:
    """A random boolean combination (and/or/not) of leaf predicates."""
    r = rng.random()
    if depth <= 0 or r < 0.45:
        return random_predicate(rng, schema, pools, nan_literals, skip_types)
    if r < 0.9:
        left = random_filter(rng, schema, pools, depth - 1, nan_literals, skip_types)
        right = random_filter(rng, schema, pools, depth - 1, nan_literals, skip_types)
        return And(left, right) if r < 0.7 else Or(left, right)
    return Not(random_filter(rng, schema, pools, depth - 1, nan_literals, skip_types))


def _leaf_id(schema: Schema, path: str) -> int:
    return schema.find_field(path).field_id


def _leaves(f: Filter) -> list[Pred | Between | Truth]:
    leaves: list[Pred | Between | Truth] = []
    fold_filter(f, leaves.append, lambda n, children: None)
    return leaves


def filter_columns(f: Filter) -> set[str]:
    return {p.column for p in _leaves(f) if isinstance(p, Pred | Between)}


def filter_literals(f: Filter) -> list[Any]:
    out: list[Any] = []
    for p in _leaves(f):
        if isinstance(p, Pred):
            out += list(p.value) if isinstance(p.value, tuple) else [p.value]
        elif isinstance(p, Between):
            out += [p.low, p.high]
    return out


# ------------------------------------------------------------- icefloe renderings of filters


def quote_name(path: str) -> str:
    """An icefloe filter reference: plain parts bare, others in backquotes."""
    parts = []
    for p in path.split("."):
        plain = p.replace("_", "a").isalnum() and p.isascii() and not p[0].isdigit()
        parts.append(p if plain and p.lower() not in _KEYWORDS else "`" + p.replace("`", "``") + "`")
    return ".".join(parts)


_KEYWORDS = {"and", "or", "not", "in", "is", "null", "nan", "like", "between", "true", "false"}


def text_literal(v: Any) -> str | None:
    """``v`` in icefloe filter syntax, or None when the syntax cannot spell it (NaN, bytes)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "1e999" if v > 0 else "-1e999"
        text = repr(v)
        return text if ("e" in text or "." in text) else text + ".0"
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return "'" + v.isoformat() + "'"
    if isinstance(v, dt.date):
        return f"'{v.year:04d}-{v.month:02d}-{v.day:02d}'"
    if isinstance(v, dt.time | uuid.UUID):
        return "'" + str(v) + "'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return None


def _like_pattern(prefix: str) -> str:
    return "".join("\\" + c if c in "\\%_" else c for c in prefix) + "%"


def _leaf_text(f: Pred | Between | Truth, literal: Callable[[Any], str | None]) -> str | None:
    if isinstance(f, Truth):
        return "true" if f.value else "false"
    col = quote_name(f.column)
    if isinstance(f, Between):
        lo, hi = literal(f.low), literal(f.high)
        return None if lo is None or hi is None else f"{col} between {lo} and {hi}"
    op = f.op
    if op in ("is_null", "not_null", "is_nan", "not_nan"):
        word = {"is_null": "is null", "not_null": "is not null", "is_nan": "is nan", "not_nan": "is not nan"}
        return f"{col} {word[op]}"
    if op in ("starts_with", "not_starts_with"):
        pattern = _like_pattern(f.value).replace("'", "''")
        return f"{col} {'like' if op == 'starts_with' else 'not like'} '{pattern}'"
    if op in ("in", "not_in"):
        lits = [literal(x) for x in f.value]
        if any(x is None for x in lits):
            return None
        return f"{col} {'in' if op == 'in' else 'not in'} ({', '.join(str(x) for x in lits)})"
    lit = literal(f.value)
    return None if lit is None else f"{col} {COMPARISONS[op]} {lit}"


def _render(f: Filter, literal: Callable[[Any], str | None]) -> str | None:
    """Filter text with ``literal`` spelling the literals (None if it cannot spell one), built
    without recursion: wide filters are left-deep chains hundreds of levels deep."""
    out: list[str] = []
    stack: list[Filter | str] = [f]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Not):
            stack += [")", item.child, "not ("]
        elif isinstance(item, And | Or):
            word = "and" if isinstance(item, And) else "or"
            stack += [")", item.right, f") {word} (", item.left, "("]
        else:
            text = _leaf_text(item, literal)
            if text is None:
                return None
            out.append(text)
    return "".join(out)


def to_icefloe_text(f: Filter) -> str | None:
    """icefloe filter text, or None when a literal has no text form (use the expression)."""
    return _render(f, text_literal)


def to_icefloe_expression(f: Filter) -> BooleanExpression:
    """The same filter built from icefloe's expression classes."""
    from icefloe import expressions as ex

    def node(n: And | Or | Not, children: list[BooleanExpression]) -> BooleanExpression:
        if isinstance(n, Not):
            return ex.Not(children[0])
        return (ex.And if isinstance(n, And) else ex.Or)(children[0], children[1])

    result: BooleanExpression = fold_filter(f, _leaf_expression, node)
    return result


def _leaf_expression(f: Pred | Between | Truth) -> BooleanExpression:
    from icefloe import expressions as ex

    if isinstance(f, Truth):
        return ex.AlwaysTrue() if f.value else ex.AlwaysFalse()
    if isinstance(f, Between):
        c = ex.col(f.column)
        return ex.And(c >= f.low, c <= f.high)
    c = ex.col(f.column)
    unary: dict[str, Callable[[], BooleanExpression]] = {
        "is_null": c.is_null,
        "not_null": c.is_not_null,
        "is_nan": c.is_nan,
        "not_nan": c.is_not_nan,
    }
    if f.op in unary:
        return unary[f.op]()
    if f.op == "in":
        return c.isin(list(f.value))
    if f.op == "not_in":
        return c.notin(list(f.value))
    if f.op == "starts_with":
        return ex.StartsWith(f.column, f.value)
    if f.op == "not_starts_with":
        return ex.NotStartsWith(f.column, f.value)
    cls = {
        "lt": ex.LessThan,
        "le": ex.LessThanOrEqual,
        "gt": ex.GreaterThan,
        "ge": ex.GreaterThanOrEqual,
        "eq": ex.EqualTo,
        "ne": ex.NotEqualTo,
    }[f.op]
    return cls(f.column, f.value)


def describe_filter(f: Filter) -> str:
    """Readable text for failure messages: the icefloe text, with Python's repr for the literals
    that have no text form (NaN, bytes)."""
    text = _render(f, lambda v: text_literal(v) or repr(v))
    assert text is not None
    return text


# ---------------------------------------------------------------------------------- canonical rows


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def _micros(v: Any) -> int:
    if isinstance(v, int):
        return v
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_UTC).replace(tzinfo=None)
        d: dt.timedelta = v - dt.datetime(1970, 1, 1)
        return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
    raise TypeError(f"not a timestamp: {v!r}")


def _items(v: Any) -> list[tuple[Any, Any]]:
    if isinstance(v, dict):
        return list(v.items())
    return [(kv["key"], kv["value"]) if isinstance(kv, dict) else (kv[0], kv[1]) for kv in v]


def _field_of(v: Any, name: str) -> Any:
    if isinstance(v, dict):
        return v.get(name)
    if hasattr(v, "asDict"):
        return v.asDict(recursive=False).get(name)
    return getattr(v, name)


def canon_value(t: IcebergType, v: Any) -> Any:
    """The canonical JSON value of ``v`` (any engine's representation) by Iceberg type; the
    definition of the oracle's ``canon.py``."""
    if v is None:
        return None
    if isinstance(t, StructType):
        return {f.name: canon_value(f.field_type, _field_of(v, f.name)) for f in t.fields}
    if isinstance(t, ListType):
        return [canon_value(t.element_type, e) for e in v]
    if isinstance(t, MapType):
        pairs = [[canon_value(t.key_type, k), canon_value(t.value_type, x)] for k, x in _items(v)]
        pairs.sort(key=lambda kv: json.dumps(kv[0], sort_keys=True, separators=(",", ":")))
        return pairs
    if isinstance(t, BooleanType):
        return bool(v)
    if isinstance(t, IntegerType | LongType):
        return int(v)
    if isinstance(t, FloatType):
        return _float_text(f32(float(v)))
    if isinstance(t, DoubleType):
        return _float_text(float(v))
    if isinstance(t, DecimalType):
        d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
        return format(d.quantize(decimal.Decimal(1).scaleb(-t.scale), context=_EXACT), "f")
    if isinstance(t, DateType):
        if isinstance(v, dt.datetime):
            v = v.date()
        if isinstance(v, int):
            v = dt.date(1970, 1, 1) + dt.timedelta(days=v)
        return str(v.isoformat())
    if isinstance(t, TimeType):
        if isinstance(v, int):
            return v
        if isinstance(v, dt.timedelta):
            return v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if isinstance(t, TimestampType | TimestamptzType):
        return _micros(v)
    if isinstance(t, StringType):
        return v if isinstance(v, str) else str(v)
    if isinstance(t, UUIDType):
        if isinstance(v, bytes | bytearray):
            return str(uuid.UUID(bytes=bytes(v)))
        return str(uuid.UUID(str(v)))
    if isinstance(t, FixedType | BinaryType):
        if isinstance(v, uuid.UUID):
            v = v.bytes
        return bytes(v).hex()
    return str(v)


def row_text(fields: Sequence[NestedField], row: Any) -> str:
    """One row (a dict by name, a Spark Row, ...) as canonical JSON text."""
    obj = {f.name: canon_value(f.field_type, _field_of(row, f.name)) for f in fields}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _prune(t: IcebergType, v: Any) -> Any:
    """A model value shaped for (possibly pruned) type ``t``."""
    if v is None or not isinstance(t, StructType):
        return v
    return {f.name: _prune(f.field_type, v.get(f.name)) for f in t.fields}


def project(schema: Schema, columns: Sequence[str] | None) -> tuple[NestedField, ...]:
    """The fields a read of ``columns`` (dotted paths; None for all) returns, in schema order
    (structs pruned to the selected children)."""
    if columns is None:
        return schema.fields
    return schema.select(list(columns)).fields


def model_rows_by_name(
    fields: Sequence[NestedField], rows: Iterable[Mapping[int, Any]]
) -> list[dict[str, Any]]:
    return [{f.name: _prune(f.field_type, r.get(f.field_id)) for f in fields} for r in rows]


# ---------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class ReadTarget:
    """Which state a read sees: ``kind`` current | snapshot | tag | branch."""

    kind: str
    value: str | int | None = None

    def describe(self) -> str:
        return self.kind if self.value is None else f"{self.kind}={self.value}"


@dataclass
class _SnapshotModel:
    rows: list[Row]
    schema_id: int


@dataclass
class BuiltTable:
    """A generated table and its model."""

    identifier: str
    seed: int
    table: Table
    log: list[str] = field(default_factory=list)
    pools: dict[int, list[Any]] = field(default_factory=dict)
    snapshots: dict[int, _SnapshotModel] = field(default_factory=dict)
    heads: dict[str, list[Row]] = field(default_factory=dict)  # branch -> rows at its head
    tags: dict[str, int] = field(default_factory=dict)
    next_rid: int = 0
    eq_deletes_allowed: bool = True
    problems: list[str] = field(default_factory=list)  # operations that raised

    def refresh(self) -> Table:
        self.table = self.table.refresh()
        return self.table

    def schema(self) -> Schema:
        return self.table.schema()

    def targets(self) -> list[ReadTarget]:
        out = [ReadTarget("current")]
        out += [ReadTarget("snapshot", sid) for sid in self.snapshots]
        out += [ReadTarget("tag", name) for name in self.tags]
        out += [ReadTarget("branch", name) for name in self.heads if name != "main"]
        return out

    def resolve(self, target: ReadTarget) -> tuple[Schema, list[Row]]:
        """The schema a read of ``target`` uses and the rows it must return."""
        md = self.table.metadata
        if target.kind == "current":
            return md.schema(), list(self.heads.get("main", []))
        if target.kind == "branch":
            return md.schema(), list(self.heads[str(target.value)])
        sid = int(target.value) if target.kind == "snapshot" else self.tags[str(target.value)]  # type: ignore[arg-type]
        snap = self.snapshots[sid]
        return md.schema_by_id(snap.schema_id), list(snap.rows)

    def describe(self) -> str:
        return "\n".join(f"  {line}" for line in self.log)


def _arrow_value(t: IcebergType, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, UUIDType):
        return v.bytes
    if isinstance(t, StructType):
        return {f.name: _arrow_value(f.field_type, v.get(f.name)) for f in t.fields}
    if isinstance(t, ListType):
        return [_arrow_value(t.element_type, e) for e in v]
    if isinstance(t, MapType):
        return [(_arrow_value(t.key_type, k), _arrow_value(t.value_type, x)) for k, x in v]
    return v


def _storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with uuid extension types replaced by their storage (pyarrow cannot build nested
    extension arrays from Python objects; icefloe takes fixed_size_binary(16) for uuid)."""
    import pyarrow as pa

    if isinstance(t, pa.UuidType):
        return pa.binary(16)
    if pa.types.is_struct(t):
        return pa.struct([_storage_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_storage_field(t.key_field), _storage_field(t.item_field))
    if pa.types.is_list(t):
        return pa.list_(_storage_field(t.value_field))
    return t


def _storage_field(f: pa.Field) -> pa.Field:
    return f.with_type(_storage_type(f.type))


def to_arrow(schema: Schema, rows: Sequence[Mapping[int, Any]]) -> pa.Table:
    """Model rows as an Arrow table of ``schema`` (with field ids; uuids as fixed(16))."""
    import pyarrow as pa

    from icefloe.arrow.schema import schema_to_arrow

    arrow_schema = pa.schema([_storage_field(af) for af in schema_to_arrow(schema)])
    columns = []
    for f, af in zip(schema.fields, arrow_schema, strict=True):
        columns.append(pa.array([_arrow_value(f.field_type, r.get(f.field_id)) for r in rows], type=af.type))
    return pa.Table.from_arrays(columns, schema=arrow_schema)


# ---------------------------------------------------------------------------------- evolution


def evolve_spec(table: Table, partition_by: Sequence[str]) -> Table:
    """Make the table partition by exactly ``partition_by`` (human forms, as in ``create_table``)
    through ``table.update_spec()``, the way users evolve a spec: the current spec's fields that
    it does not list are removed, the terms that the current spec lacks are added (with Java's
    default names, reusing the field ids of earlier specs)."""
    from icefloe.spec.partition import build_partition_spec

    md = table.metadata
    wanted = build_partition_spec(md.schema(), partition_by)
    want = {
        (pf.source_id, str(pf.transform)): term for pf, term in zip(wanted.fields, partition_by, strict=True)
    }
    have = {(pf.source_id, str(pf.transform)): pf.name for pf in md.spec().fields}
    with table.update_spec() as update:
        for key, name in have.items():
            if key not in want:
                update.remove_field(name)
        for key, term in want.items():
            if key not in have:
                update.add_field(term)
    return table.refresh()


# ---------------------------------------------------------------------------------- generation

_TRANSFORMS: dict[str, tuple[str, ...]] = {
    "identity": ("boolean", "int", "long", "decimal", "date", "timestamp", "timestamptz", "string", "uuid"),
    "bucket": (
        "int",
        "long",
        "decimal",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "string",
        "uuid",
        "fixed",
    ),
    "truncate": ("int", "long", "decimal", "string", "binary"),
    "year": ("date", "timestamp", "timestamptz"),
    "month": ("date", "timestamp", "timestamptz"),
    "day": ("date", "timestamp", "timestamptz"),
    "hour": ("timestamp", "timestamptz"),
    "void": PRIMITIVE_KINDS,
}


def _kind(t: PrimitiveType) -> str:
    return str(t).split("(")[0].split("[")[0]


def random_partition_by(rng: random.Random, schema: Schema, n: int, void: bool = True) -> list[str]:
    """``n`` partition fields in icefloe's human form on distinct columns; ``void``: void fields
    may be among them (a table may be created with one, while partition evolution in format 2
    removes a field rather than adding a void one)."""
    out: list[str] = []
    cols = [(p, t) for p, t in filterable_columns(schema) if p != "rid" or rng.random() < 0.3]
    if not void:
        partitionable = {kind for k, kinds in _TRANSFORMS.items() if k != "void" for kind in kinds}
        cols = [(p, t) for p, t in cols if _kind(t) in partitionable]
    rng.shuffle(cols)
    for path, t in cols[:n]:
        names = [k for k, kinds in _TRANSFORMS.items() if _kind(t) in kinds and (void or k != "void")]
        name = rng.choice(names)
        ref = path if all(p.replace("_", "a").isalnum() for p in path.split(".")) else f"`{path}`"
        if name == "identity":
            out.append(ref)
        elif name == "bucket":
            out.append(f"bucket({rng.choice([1, 2, 3, 16])}, {ref})")
        elif name == "truncate":
            out.append(f"truncate({rng.choice([1, 2, 3, 10])}, {ref})")
        else:
            out.append(f"{name}({ref})")
    return out


def _random_properties(rng: random.Random) -> dict[str, str]:
    props = {
        "write.delete.mode": rng.choice(["copy-on-write", "merge-on-read"]),
        "write.update.mode": rng.choice(["copy-on-write", "merge-on-read"]),
        "write.merge.mode": rng.choice(["copy-on-write", "merge-on-read"]),
    }
    if rng.random() < 0.4:
        props["write.parquet.row-group-size-bytes"] = str(rng.choice([64, 512, 4096]))
    if rng.random() < 0.3:
        props["write.target-file-size-bytes"] = str(rng.choice([1024, 8192]))
    if rng.random() < 0.4:
        props["write.metadata.metrics.default"] = rng.choice(
            ["truncate(2)", "truncate(4)", "full", "counts", "none"]
        )
    return props


def build_table(
    catalog: Catalog, identifier: str, seed: int, options: TableOptions | None = None
) -> BuiltTable:
    """Create table ``identifier`` in ``catalog`` from ``seed`` and run its random operations,
    keeping the model in step. Deterministic for a seed (snapshot ids aside).

    An operation that raises is logged and listed in ``problems`` (the table and the model are
    both left as they were, since a failed operation commits nothing); the reads go on."""
    options = options or TableOptions()
    rng = random.Random(seed)
    schema = random_schema(rng, options)
    partition_by = random_partition_by(rng, schema, rng.choice([0, 1, 1, 2, 3]))
    props = _random_properties(rng)
    table = catalog.create_table(identifier, schema=schema, partition_by=partition_by, properties=props)
    if table.schema().find_field("rid").field_id != RID:
        raise AssertionError("rid must be the first column")
    built = BuiltTable(identifier, seed, table, eq_deletes_allowed=options.equality_deletes)
    built.log.append(f"create {identifier}: {table.schema()}")
    built.log.append(f"  partitioned by {partition_by}, properties {props}")
    for f in table.schema().fields:
        _leaf_pools(rng, f.field_type, f.field_id, built.pools)
    built.heads["main"] = []
    steps: list[Callable[[], None]] = [lambda: _apply_append(rng, built, "main", options, first=True)]
    steps += [lambda: _apply_random_op(rng, built, options)] * rng.randint(2, max(2, options.max_ops))
    for step in steps:
        try:
            step()
        except Exception as e:
            text = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            built.log[-1] += f" -> FAILED {text}"
            built.problems.append(f"{built.log[-1]}")
            built.refresh()
    built.refresh()
    return built


RID = 1
"""Field id of ``rid``, the unique row id every generated table starts with."""


def _new_rows(rng: random.Random, built: BuiltTable, n: int) -> list[Row]:
    schema = built.schema()
    rows = []
    for _ in range(n):
        row: Row = {}
        for f in schema.fields:
            row[f.field_id] = built.next_rid if f.field_id == RID else _value(rng, f, built.pools)
        built.next_rid += 1
        rows.append(row)
    return rows


def _commit(built: BuiltTable, branch: str, snapshot: Any, rows: list[Row]) -> None:
    """The model after a commit to ``branch`` that made ``snapshot`` (None: no new snapshot)."""
    built.refresh()
    built.heads[branch] = rows
    if snapshot is not None:
        schema_id = built.table.metadata.current_schema_id
        built.snapshots[snapshot.snapshot_id] = _SnapshotModel(list(rows), schema_id)
    built.log[-1] += f" -> {snapshot.snapshot_id if snapshot is not None else 'no snapshot'}"


def _apply_append(
    rng: random.Random, built: BuiltTable, branch: str, options: TableOptions, first: bool = False
) -> None:
    n = rng.choice([1, 3, 10, 25, options.max_rows]) if not first else rng.randint(5, options.max_rows)
    rows = _new_rows(rng, built, n)
    built.log.append(f"append {n} rows (rids {rows[0][RID]}..{rows[-1][RID]}) to {branch}")
    snap = built.table.append(to_arrow(built.schema(), rows), branch=branch)
    _commit(built, branch, snap, built.heads[branch] + rows)


def _apply_random_op(rng: random.Random, built: BuiltTable, options: TableOptions) -> None:
    branches = [b for b in built.heads if b != "main"]
    branch = rng.choice(branches) if branches and rng.random() < 0.3 else "main"
    ops = ["append"] * 6 + ["delete"] * 4 + ["overwrite"] * 2 + ["upsert"] * 2 + ["tag"] + ["mode"]
    if options.equality_deletes and built.eq_deletes_allowed:
        ops += ["eq_delete"] * 3
    if options.branches and len(branches) < 2:
        ops += ["branch"]
    if options.schema_evolution:
        ops += ["schema"] * 2
    if options.partition_evolution:
        ops += ["spec"]
    op = rng.choice(ops)
    schema = built.schema()
    t = built.table
    current = built.heads[branch]
    if op == "append":
        _apply_append(rng, built, branch, options)
    elif op == "delete":
        f = random_filter(rng, schema, built.pools, depth=rng.choice([0, 1, 1, 2]))
        built.log.append(f"delete where {describe_filter(f)} on {branch}")
        snap = t.delete(to_icefloe_expression(f), branch=branch)
        _commit(built, branch, snap, [r for r in current if not eval_iceberg(f, schema, r)])
    elif op == "overwrite":
        f = random_filter(rng, schema, built.pools, depth=rng.choice([0, 1, 1, 2]))
        rows = _new_rows(rng, built, rng.choice([0, 1, 5]))
        built.log.append(f"overwrite where {describe_filter(f)} with {len(rows)} new rows on {branch}")
        snap = t.overwrite(to_arrow(schema, rows), to_icefloe_expression(f), branch=branch)
        _commit(built, branch, snap, [r for r in current if not eval_iceberg(f, schema, r)] + rows)
    elif op == "upsert":
        old = rng.sample(current, k=min(len(current), rng.randint(0, 3)))
        rows = _new_rows(rng, built, rng.randint(1, 4))
        for r, o in zip(rows, old, strict=False):
            r[RID] = o[RID]  # replaces that row
        keys = {r[RID] for r in rows}
        built.log.append(f"upsert rids {sorted(keys)} on {branch}")
        snap = t.upsert(to_arrow(schema, rows), ["rid"], branch=branch)
        _commit(built, branch, snap, [r for r in current if r[RID] not in keys] + rows)
    elif op == "eq_delete" and current:
        _apply_equality_delete(rng, built, branch)
    elif op == "tag" and t.current_snapshot() is not None:
        name = f"tag{len(built.tags)}"
        built.log.append(f"tag {name} at {t.metadata.current_snapshot_id}")
        with t.manage_snapshots() as ms:
            ms.create_tag(name)
        built.refresh()
        built.tags[name] = built.table.metadata.current_snapshot_id  # type: ignore[assignment]
    elif op == "branch" and t.current_snapshot() is not None:
        name = f"b{len(branches)}"
        built.log.append(f"branch {name} at {t.metadata.current_snapshot_id}")
        with t.manage_snapshots() as ms:
            ms.create_branch(name)
        built.refresh()
        built.heads[name] = list(built.heads["main"])
    elif op == "mode":
        mode = rng.choice(["copy-on-write", "merge-on-read"])
        built.log.append(f"set write.delete.mode={mode}")
        with t.transaction() as tx:
            tx.set_properties(**{"write.delete.mode": mode})
        built.refresh()
    elif op == "schema":
        _apply_schema_change(rng, built)
    elif op == "spec":
        part = random_partition_by(rng, schema, rng.choice([0, 1, 2]), void=False)
        built.log.append(f"partition spec -> {part}")
        evolve_spec(t, part)
        built.refresh()
        built.eq_deletes_allowed = False  # rows now live under several specs (see _apply_equality_delete)


def _partition_of(built: BuiltTable, row: Row) -> tuple[Any, ...]:
    """The partition tuple of a row under the default spec (only used while the table has one
    spec, so the row's file is under it)."""
    from icefloe.spec.values import from_python

    schema = built.schema()
    out = []
    for pf in built.table.spec().fields:
        src = schema.find_field(pf.source_id)
        value = column_value(schema, row, schema.column_name(pf.source_id))
        out.append(pf.transform.apply(src.field_type, from_python(src.field_type, value)))
    return tuple(out)


_EQ_KINDS = (IntegerType, LongType, StringType, DateType, DecimalType, BooleanType, TimestampType)


def _apply_equality_delete(rng: random.Random, built: BuiltTable, branch: str) -> None:
    """Equality deletes keyed on ``rid`` and/or another top-level column (nulls equal nulls),
    one file per partition of the rows they target. Float keys are not generated: the spec does
    not say whether NaN equals NaN or -0.0 equals 0.0 for equality deletes."""
    from icefloe.arrow.deletes import write_equality_deletes

    schema = built.schema()
    current = built.heads[branch]
    others = [f for f in schema.fields if isinstance(f.field_type, _EQ_KINDS) and f.field_id != RID]
    choice = rng.random()
    if others and choice < 0.5:
        key_fields = [rng.choice(others)]
    elif others and choice < 0.7:
        key_fields = [schema.find_field(RID), rng.choice(others)]
    else:
        key_fields = [schema.find_field(RID)]
    targets = rng.sample(current, k=min(len(current), rng.randint(1, 4)))
    by_partition: dict[tuple[Any, ...], list[Row]] = {}
    for r in targets:
        by_partition.setdefault(_partition_of(built, r), []).append(r)
    names = [f.name for f in key_fields]
    built.log.append(
        f"equality delete on {names} of the keys of rids {sorted(r[RID] for r in targets)} on {branch}"
    )
    files = []
    key_schema = Schema(*key_fields)
    for part, rows in by_partition.items():
        keys = [{f.field_id: r.get(f.field_id) for f in key_fields} for r in rows]
        files += write_equality_deletes(
            built.table.io, built.table.metadata, to_arrow(key_schema, keys), names, partition=part
        )
    with built.table.transaction() as tx:
        tx.row_delta(add_delete_files=files, branch=branch)
    built.refresh()
    snap = built.table.metadata.snapshot_for_ref(branch)

    def deleted(r: Row) -> bool:
        for part, rows in by_partition.items():
            for k in rows:
                same = all(r.get(f.field_id) == k.get(f.field_id) for f in key_fields)
                if same and _partition_of(built, r) == part:
                    return True
        return False

    _commit(built, branch, snap, [r for r in current if not deleted(r)])


def _subtree_ids(f: NestedField) -> set[int]:
    out = {f.field_id}
    if not isinstance(f.field_type, PrimitiveType):
        for child in f.field_type.fields:  # type: ignore[attr-defined]
            out |= _subtree_ids(child)
    return out


def _apply_schema_change(rng: random.Random, built: BuiltTable) -> None:
    """One random schema change through ``table.update_schema()``: add, rename, widen or drop a
    top-level column (never ``rid``, never a source of the current partition spec; a source of an
    older spec may go, as Iceberg allows)."""
    schema = built.schema()
    spec_sources = {pf.source_id for pf in built.table.spec().fields}
    change = rng.choice(["add", "add", "rename", "widen", "drop"])
    fields = list(schema.fields)
    update = built.table.update_schema()
    if change == "add":
        name = f"added{built.table.metadata.last_column_id + 1}"
        t = random_primitive(rng, ["int", "long", "string", "double", "date"])
        update.add_column(name, t)
        what = f"add column {name}: {t}"
    elif change == "rename":
        f = rng.choice(fields[1:])
        update.rename_column(f.name, f.name + "_r")
        what = f"rename {f.name} -> {f.name}_r"
    elif change == "widen":
        cands = [f for f in fields if isinstance(f.field_type, IntegerType | FloatType)]
        if not cands:
            return
        f = rng.choice(cands)
        wide: PrimitiveType = LongType() if isinstance(f.field_type, IntegerType) else DoubleType()
        update.update_column(f.name, field_type=wide)
        built.pools[f.field_id] = built.pools[f.field_id] + make_pool(rng, wide)
        what = f"widen {f.name} to {wide}"
    else:
        cands = [f for f in fields[1:] if not (_subtree_ids(f) & spec_sources)]
        if len(cands) < 2:
            return
        f = rng.choice(cands)
        update.delete_column(f.name)
        what = f"drop column {f.name}"
    built.log.append(f"schema: {what}")
    update.commit()
    built.refresh()
    if change == "add":
        added = built.schema().find_field(name)
        built.pools[added.field_id] = make_pool(rng, added.field_type)  # type: ignore[arg-type]
