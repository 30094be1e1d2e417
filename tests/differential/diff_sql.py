"""The SQL side of the differential read harness: filters rendered as Spark SQL and DuckDB SQL,
and the model of what those engines return (their semantics differ from Iceberg's on purpose).

Rules of each dialect, as modelled (every rule is a documented engine behaviour, not a tolerance):

* Spark SQL (the icefloe data source, the DataFrame operations after ``icefloe.spark.read``, and
  Iceberg Java through Spark 3.5): three-valued logic, a row is kept only when the filter is TRUE;
  ``!=``, ``not in``, ``not like`` and NOT of any comparison are NULL (so dropped) for null values;
  NaN equals NaN and is greater than every other value (``x < NaN`` is true for non-NaN x, ``NaN >
  inf``); ``-0.0 = 0.0``; ``isnan(null)`` is false (so ``not isnan(x)`` keeps nulls).
* DuckDB (over icefloe's Arrow output): as Spark, except ``isnan(null)`` is NULL (so ``not
  isnan(x)`` drops nulls).
* Literals are typed to the column in both dialects (``CAST('0.1' AS FLOAT)``, ``DATE '...'``,
  ``TIMESTAMP_NTZ '...'``), so a float literal means its float32 rounding as in Iceberg. The
  exceptions are literals beyond the column type's range: integers stay wide literals and floats
  beyond float32 become DOUBLE literals, so the comparison is exact arithmetic after widening
  (unlike Iceberg, where a float literal beyond float32 is "above every value", NaN and inf
  included).
* Aggregates: ``count(*)``, ``count(c)``, ``min``/``max`` (NaN is the largest value; nulls
  ignored; -0.0 and 0.0 are the same value, so either may come back when both are present) and
  ``sum`` (integers summed as DECIMAL(38,0) in Spark so that ANSI mode cannot overflow; decimals of
  precision above 28 are not summed since both engines may overflow them; float sums compare
  within a relative tolerance, NaN when a NaN or both infinities are present).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.testing.tables import (
    F32_MAX,
    And,
    Between,
    Filter,
    Not,
    Or,
    Pred,
    Truth,
    column_value,
    f32,
    filterable_columns,
    fold_filter,
)

SPARK = "spark"
DUCKDB = "duckdb"
SPARK35 = "spark35"
"""Spark SQL as Spark 3.5 runs it (Iceberg Java's oracle): as SPARK, but prefixes are spelled
``startswith(c, 'p')``, since Spark 3.5's LIKE misses strings where ``_`` (escaped or not) is
followed by a supplementary character (``'x😀' LIKE '_😀'`` is false; fixed in Spark 4)."""

# ------------------------------------------------------------------------------ literals


def _beyond_float32(t: PrimitiveType, v: Any) -> bool:
    return isinstance(t, FloatType) and isinstance(v, float) and math.isfinite(v) and abs(v) > F32_MAX


def sql_literal_value(t: PrimitiveType, v: Any) -> Any:
    """The value a typed SQL literal has: float literals round to float32 unless beyond its range."""
    if isinstance(t, FloatType) and not _beyond_float32(t, v):
        return f32(float(v))
    return v


def _float_text(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def _spark_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 32:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def _duck_string(s: str) -> str:
    parts = []
    buf = ""
    for ch in s:
        if ord(ch) < 32:
            parts.append("'" + buf.replace("'", "''") + "'")
            parts.append(f"chr({ord(ch)})")
            buf = ""
        else:
            buf += ch
    parts.append("'" + buf.replace("'", "''") + "'")
    return "(" + " || ".join(parts) + ")" if len(parts) > 1 else parts[0]


def _ts_text(v: dt.datetime) -> str:
    day = f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    return f"{day} {v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}"


def literal(dialect: str, t: PrimitiveType, v: Any) -> str:
    """A SQL literal of column type ``t`` in ``dialect``."""
    spark = dialect in (SPARK, SPARK35)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(t, IntegerType | LongType):
        return str(v)
    if isinstance(t, FloatType | DoubleType):
        text = _float_text(float(v))
        if spark and math.isnan(float(v)):
            text = "NaN"
        kind = "DOUBLE" if isinstance(t, DoubleType) or _beyond_float32(t, v) else "FLOAT"
        if kind == "FLOAT":
            text = _float_text(f32(float(v)))
        return f"CAST('{text}' AS {kind})"
    if isinstance(t, DecimalType):
        return f"CAST('{format(v, 'f')}' AS DECIMAL({t.precision},{t.scale}))"
    if isinstance(t, DateType):
        return f"DATE '{v.year:04d}-{v.month:02d}-{v.day:02d}'"
    if isinstance(t, TimeType):
        return f"TIME '{v.isoformat()}'"
    if isinstance(t, TimestampType):
        return f"{'TIMESTAMP_NTZ' if spark else 'TIMESTAMP'} '{_ts_text(v)}'"
    if isinstance(t, TimestamptzType):
        utc = v.astimezone(dt.UTC)
        return f"TIMESTAMP '{_ts_text(utc)}+00:00'" if spark else f"TIMESTAMPTZ '{_ts_text(utc)}+00'"
    if isinstance(t, StringType):
        return _spark_string(v) if spark else _duck_string(v)
    if isinstance(t, UUIDType):
        return f"'{v}'" if spark else f"'{v}'::UUID"
    if isinstance(t, BinaryType | FixedType):
        return f"X'{v.hex()}'" if spark else f"from_hex('{v.hex()}')"
    raise TypeError(f"no literal for {t}")


def column_ref(dialect: str, path: str) -> str:
    if dialect in (SPARK, SPARK35):
        return ".".join("`" + p.replace("`", "``") + "`" for p in path.split("."))
    return ".".join('"' + p.replace('"', '""') + '"' for p in path.split("."))


def _like(dialect: str, prefix: str) -> str:
    pattern = "".join("\\" + c if c in "\\%_" else c for c in prefix) + "%"
    if dialect == SPARK:
        return _spark_string(pattern)
    return _duck_string(pattern) + " ESCAPE '\\'"


_SQL_OPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=", "ne": "<>"}


def to_sql(f: Filter, schema: Schema, dialect: str) -> str:
    """``f`` as a SQL boolean expression of ``dialect`` over the columns of ``schema``."""
    types = dict(filterable_columns(schema))
    return _sql(f, types, dialect)


def _sql(f: Filter, types: Mapping[str, PrimitiveType], dialect: str) -> str:
    def node(n: And | Or | Not, children: list[str]) -> str:
        if isinstance(n, Not):
            return f"NOT ({children[0]})"
        return f"({children[0]}) {'AND' if isinstance(n, And) else 'OR'} ({children[1]})"

    text: str = fold_filter(f, lambda p: _sql_leaf(p, types, dialect), node)
    return text


def _sql_leaf(f: Pred | Between | Truth, types: Mapping[str, PrimitiveType], dialect: str) -> str:
    if isinstance(f, Truth):
        return "true" if f.value else "false"
    t = types[f.column]
    col = column_ref(dialect, f.column)
    if isinstance(f, Between):
        return f"{col} BETWEEN {literal(dialect, t, f.low)} AND {literal(dialect, t, f.high)}"
    op = f.op
    if op == "is_null":
        return f"{col} IS NULL"
    if op == "not_null":
        return f"{col} IS NOT NULL"
    if op == "is_nan":
        return f"isnan({col})"
    if op == "not_nan":
        return f"NOT isnan({col})"
    if op in ("starts_with", "not_starts_with") and dialect == SPARK35:
        test = f"startswith({col}, {_spark_string(f.value)})"
        return test if op == "starts_with" else f"NOT {test}"
    if op == "starts_with":
        return f"{col} LIKE {_like(dialect, f.value)}"
    if op == "not_starts_with":
        return f"{col} NOT LIKE {_like(dialect, f.value)}"
    if op in ("in", "not_in"):
        lits = ", ".join(literal(dialect, t, v) for v in f.value)
        return f"{col} {'IN' if op == 'in' else 'NOT IN'} ({lits})"
    return f"{col} {_SQL_OPS[op]} {literal(dialect, t, f.value)}"


# ------------------------------------------------------------------------------ semantics


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def sql_compare(a: Any, b: Any) -> int:
    """SQL total order of two non-null values of one type: NaN above everything and equal to
    itself, -0.0 equal to 0.0."""
    if _nan(a) or _nan(b):
        return (1 if _nan(a) else 0) - (1 if _nan(b) else 0)
    return (a > b) - (a < b)


def eval_sql(f: Filter, schema: Schema, row: Mapping[int, Any], dialect: str) -> bool:
    """Whether ``dialect`` keeps ``row`` (its filter is TRUE, not FALSE or NULL)."""
    types = dict(filterable_columns(schema))
    return _eval(f, schema, types, row, dialect) is True


def _eval(
    f: Filter, schema: Schema, types: Mapping[str, PrimitiveType], row: Mapping[int, Any], dialect: str
) -> bool | None:
    """Three-valued: None is SQL's NULL."""

    def node(n: And | Or | Not, children: list[bool | None]) -> bool | None:
        if isinstance(n, Not):
            return None if children[0] is None else not children[0]
        a, b = children
        if isinstance(n, And):
            if a is False or b is False:
                return False
            return None if a is None or b is None else True
        if a is True or b is True:
            return True
        return None if a is None or b is None else False

    result: bool | None = fold_filter(f, lambda p: _eval_leaf(p, schema, types, row, dialect), node)
    return result


def _eval_leaf(
    f: Pred | Between | Truth,
    schema: Schema,
    types: Mapping[str, PrimitiveType],
    row: Mapping[int, Any],
    dialect: str,
) -> bool | None:
    if isinstance(f, Truth):
        return f.value
    t = types[f.column]
    v = column_value(schema, row, f.column)
    if isinstance(f, Between):
        lo = _eval_leaf(Pred("ge", f.column, f.low), schema, types, row, dialect)
        hi = _eval_leaf(Pred("le", f.column, f.high), schema, types, row, dialect)
        return _between(lo, hi)
    op = f.op
    if op == "is_null":
        return v is None
    if op == "not_null":
        return v is not None
    if op in ("is_nan", "not_nan"):
        if v is None:
            r: bool | None = False if dialect == SPARK else None
        else:
            r = _nan(v)
        if r is None:
            return None
        return r if op == "is_nan" else not r
    if v is None:
        return None
    if op in ("starts_with", "not_starts_with"):
        hit = v.startswith(f.value)
        return hit if op == "starts_with" else not hit
    if op in ("in", "not_in"):
        hit = any(sql_compare(v, sql_literal_value(t, x)) == 0 for x in f.value)
        return hit if op == "in" else not hit
    c = sql_compare(v, sql_literal_value(t, f.value))
    return {"lt": c < 0, "le": c <= 0, "gt": c > 0, "ge": c >= 0, "eq": c == 0, "ne": c != 0}[op]


def _between(lo: bool | None, hi: bool | None) -> bool | None:
    """BETWEEN is ``x >= lo AND x <= hi`` in three-valued logic."""
    if lo is False or hi is False:
        return False
    return None if lo is None or hi is None else True


# ------------------------------------------------------------------------------ aggregates

SUMMABLE = (IntegerType, LongType, FloatType, DoubleType, DecimalType)
ORDERED = (
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    BinaryType,
    BooleanType,
)


def summable(t: PrimitiveType) -> bool:
    return isinstance(t, SUMMABLE) and not (isinstance(t, DecimalType) and t.precision > 28)


def agg_sql(dialect: str, t: PrimitiveType, col: str) -> list[str]:
    """Select-list of the aggregates of column ``col``: count(*), count(col), min, max[, sum]."""
    c = column_ref(dialect, col)
    out = ["count(*)", f"count({c})", f"min({c})", f"max({c})"]
    if summable(t):
        if dialect == SPARK and isinstance(t, IntegerType | LongType):
            out.append(f"sum(CAST({c} AS DECIMAL(38,0)))")
        else:
            out.append(f"sum({c})")
    return out


def expected_aggregates(t: PrimitiveType, values: Sequence[Any]) -> list[Any]:
    """count(*), count(c), min, max[, sum] of the (filtered) column values, SQL semantics."""
    present = [v for v in values if v is not None]
    lo = hi = None
    for v in present:
        if lo is None or sql_compare(v, lo) < 0:
            lo = v
        if hi is None or sql_compare(v, hi) > 0:
            hi = v
    out: list[Any] = [len(values), len(present), lo, hi]
    if summable(t):
        out.append(_model_sum(t, present))
    return out


class FloatSum:
    """A float sum: exact value (or NaN/inf) and the size of its terms, for the tolerance."""

    def __init__(self, value: float, scale: float, overflow: bool) -> None:
        self.value, self.scale, self.overflow = value, scale, overflow

    def __repr__(self) -> str:
        return f"~{self.value!r}"


def _model_sum(t: PrimitiveType, values: Sequence[Any]) -> Any:
    if not values:
        return None
    if isinstance(t, FloatType | DoubleType):
        fl = [float(v) for v in values]
        finite = [v for v in fl if math.isfinite(v)]
        scale = sum(abs(v) for v in finite)
        if scale > 1e307 or math.isinf(scale):
            # a running sum may overflow to an infinity in some order (then inf - inf is NaN)
            return FloatSum(math.nan, scale, True)
        if any(math.isnan(v) for v in fl) or (math.inf in fl and -math.inf in fl):
            return FloatSum(math.nan, 0.0, False)
        if math.inf in fl or -math.inf in fl:
            return FloatSum(math.inf if math.inf in fl else -math.inf, 0.0, False)
        return FloatSum(math.fsum(finite), scale, False)
    if isinstance(t, DecimalType):
        return sum((decimal.Decimal(v) for v in values), decimal.Decimal(0))
    return sum(int(v) for v in values)


def same_aggregate(t: PrimitiveType, index: int, got: Any, want: Any) -> bool:
    """Whether aggregate number ``index`` (see `expected_aggregates`) agrees."""
    if index < 2:
        return int(got) == int(want)
    if want is None or got is None:
        return got is None and want is None
    if index in (2, 3):
        if isinstance(t, FloatType | DoubleType):
            g, w = float(got), float(want)
            if math.isnan(w):
                return math.isnan(g)
            return g == w  # -0.0 == 0.0: either zero may be the extreme
        return _canon_scalar(t, got) == _canon_scalar(t, want)
    if isinstance(want, FloatSum):
        g = float(got)
        if math.isnan(want.value):
            return math.isnan(g) or want.overflow
        if want.overflow:
            return True  # the running sum may overflow to inf (or inf - inf = NaN) in any order
        if math.isinf(want.value):
            return g == want.value
        return abs(g - want.value) <= 1e-9 * want.scale + 1e-300
    return decimal.Decimal(got) == decimal.Decimal(want)


def _canon_scalar(t: PrimitiveType, v: Any) -> Any:
    from icefloe.testing.tables import canon_value

    return canon_value(t, v)


def describe_values(vals: Sequence[Any]) -> str:
    return "[" + ", ".join(repr(v) for v in vals) + "]"


def is_uuid(v: Any) -> bool:
    return isinstance(v, uuid.UUID)


Evaluator = Callable[[Filter, Schema, Mapping[int, Any]], bool]
