"""MERGE on Spark: the join of target and source, and which clause applies to each row.

::

    target (candidate files, with file key and position)  JOIN  source   ON <condition>
      join type: inner, right (NOT MATCHED clauses), left (NOT MATCHED BY SOURCE), full (both);
      copy-on-write: left or full (every row of a rewritten file is written again);
      only NOT MATCHED clauses: source LEFT ANTI JOIN target, nothing of the target rewritten
    -> clause = the first clause (in the order given) whose kind fits the row and whose
       condition is TRUE; its action sets the row's kind (update, delete, insert) and values

Clause kinds: WHEN MATCHED (a target and a source row), WHEN NOT MATCHED [BY TARGET] (a source
row without target row), WHEN NOT MATCHED BY SOURCE (a target row without source row). As in
Spark and Delta, only the last clause of a kind may omit its condition, and a target row that
several source rows match fails the statement when there are MATCHED clauses.

Pruning: without NOT MATCHED BY SOURCE clauses only target rows that can match are read: the ON
condition's target-only conjuncts, and for each ``t.k = s.k`` the source's range of ``k`` (its
values when there are few and they leave gaps in the range), computed by one aggregation of the
source (and one more job for the few values).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st

from icefloe.errors import IcefloeError, SchemaError, ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    GreaterThanOrEqual,
    In,
    LessThanOrEqual,
    bind,
)
from icefloe.spark._dml_exec import (
    CLAUSE,
    S_MARK,
    T_MARK,
    RowLevelChange,
    _Context,
    _quoted,
    _true,
    and_all,
    resolve_assignments,
    to_column,
)
from icefloe.spark._dml_runner import (
    KIND,
    KIND_DELETE,
    KIND_INSERT,
    KIND_KEEP,
    KIND_UPDATE,
    LINEAGE_ROW_ID,
    LINEAGE_SEQ,
    MATCHED,
)
from icefloe.spark._metadata_columns import KEY, ROW_POS
from icefloe.spark.types import to_spark_type
from icefloe.spec.types import DateType, DecimalType, IntegerType, LongType, StringType

if TYPE_CHECKING:
    from icefloe.spec.schema import Schema
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import Table

__all__ = ["MATCHED_KIND", "NOT_MATCHED", "NOT_MATCHED_BY_SOURCE", "Clause", "MergeChange", "check_clauses"]

MATCHED_KIND = "matched"
NOT_MATCHED = "not_matched"
NOT_MATCHED_BY_SOURCE = "not_matched_by_source"
_ACTIONS = {
    MATCHED_KIND: ("update", "delete"),
    NOT_MATCHED: ("insert",),
    NOT_MATCHED_BY_SOURCE: ("update", "delete"),
}
_KINDS = {"update": KIND_UPDATE, "delete": KIND_DELETE, "insert": KIND_INSERT}
_SMALL_KEY_SET = 64
#: estimated source bytes per shuffle partition up to which the join may hash the source
_HASH_SOURCE_BYTES = 96 * 1024 * 1024
_LOCAL_MAP_THRESHOLD = "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold"
_ADVISORY_SIZE = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


@dataclass(frozen=True)
class Clause:
    """One WHEN clause. ``assignments`` is None for ``*`` (all columns by name) and for delete."""

    kind: str
    action: str
    condition: str | Column | None = None
    assignments: Mapping[str, str | Column] | None = None
    all_columns: bool = False

    def describe(self) -> str:
        what = {
            MATCHED_KIND: "WHEN MATCHED",
            NOT_MATCHED: "WHEN NOT MATCHED",
            NOT_MATCHED_BY_SOURCE: "WHEN NOT MATCHED BY SOURCE",
        }
        return f"{what[self.kind]} ... {self.action.upper()}"


def check_clauses(clauses: Sequence[Clause]) -> None:
    """At least one clause; in each kind only the last clause may omit its condition."""
    if not clauses:
        raise ValidationError(
            "a MERGE needs at least one WHEN clause",
            hint="e.g. .when_matched_update_all().when_not_matched_insert_all()",
        )
    for kind in _ACTIONS:
        of_kind = [c for c in clauses if c.kind == kind]
        for c in of_kind[:-1]:
            if c.condition is None:
                raise ValidationError(
                    f"only the last {c.describe().split(' ...')[0]} clause may omit its condition",
                    hint="give the earlier clauses a condition, or drop the clauses after the one without",
                )


class MergeChange(RowLevelChange):
    command = "merge"

    def __init__(
        self,
        spark: SparkSession,
        load: Callable[[], Table],
        alias: str | None,
        source: DataFrame,
        condition: str | Column,
        clauses: Sequence[Clause],
        schema_evolution: bool,
    ) -> None:
        super().__init__(spark, load, alias)
        check_clauses(clauses)
        self.source = source
        self.condition = condition
        self.clauses = list(clauses)
        self.schema_evolution = schema_evolution
        self.has_matched = any(c.kind == MATCHED_KIND for c in clauses)
        self.has_insert = any(c.kind == NOT_MATCHED for c in clauses)
        self.has_by_source = any(c.kind == NOT_MATCHED_BY_SOURCE for c in clauses)

    # ------------------------------------------------------------------ hooks
    def prepare(self, table: Table) -> tuple[TableMetadata, str | None]:
        if not self.schema_evolution or not any(c.all_columns for c in self.clauses):
            return table.metadata, None
        from icefloe.spark._merge_schema import MERGE_SCHEMA, merge_for_write

        return merge_for_write(table.metadata, self.source.schema, {MERGE_SCHEMA: "true"})

    def insert_only(self) -> bool:
        return not self.has_matched and not self.has_by_source

    def check_cardinality(self) -> bool:
        return self.has_matched

    def dedupe_kept(self) -> bool:
        return not self.has_matched

    def _may_insert(self) -> bool:
        return self.has_insert

    def group_rewrites(self) -> bool:
        # A left outer join streams the target (broadcast or shuffled by the join keys, AQE
        # splitting only target partitions): all matches of a target row are produced in one
        # task. A full outer join without join keys may broadcast the target instead.
        return self.has_insert and not self._join_keys

    _join_keys = False
    _source_rows: int | None = None  # counted with the source's key ranges

    def join_confs(self) -> dict[str, str]:
        """A small source (counted, estimated at most ``_HASH_SOURCE_BYTES`` a shuffle partition):
        Spark's adaptive execution may join by hashing the shuffled source instead of sorting both
        sides (its own check: every shuffled partition of the hashed side at most the advisory
        partition size). The target, 6 times larger in the benchmark, is then never sorted."""
        if self._source_rows is None:
            return {}
        width = _row_width(self.source.schema)
        conf = self.spark.conf
        partitions = int(conf.get("spark.sql.shuffle.partitions", "200") or 200)
        if width is None or self._source_rows * width > _HASH_SOURCE_BYTES * max(1, partitions):
            return {}
        if str(conf.get(_LOCAL_MAP_THRESHOLD)).strip().lower() not in ("0", "0b"):
            return {}  # the user's own setting
        return {_LOCAL_MAP_THRESHOLD: str(conf.get(_ADVISORY_SIZE))}

    def prune(self, ctx: _Context) -> tuple[BooleanExpression, bool]:
        from icefloe.spark._conditions import analyze_condition

        info = analyze_condition(self.condition, ctx.table.schema(), ctx.target_names, self.source.columns)
        self._join_keys = bool(info.join_keys)
        if self.has_by_source:
            return AlwaysTrue(), False  # every target row may be "not matched by source"
        ranges = self._key_ranges(ctx.table.schema(), info.join_keys)
        return and_all([info.implied, *ranges]), False

    def _key_ranges(self, schema: Schema, keys: Sequence[Any]) -> list[BooleanExpression]:
        """Per join key ``t.k = <source expr>``: the source's values (few) or range of it."""
        usable = []
        for k in keys:
            t = schema.find_field(k.target_column).field_type
            try:
                expr = F.expr(k.source_sql)
                spark_type = self.source.select(expr).schema.fields[0].dataType
            except Exception:  # not an expression of the source alone
                continue
            if _same_family(t, spark_type):
                usable.append((k.target_column, expr))
        if not usable:
            return []
        aggs: list[Column] = [F.count(F.lit(1)).alias("rows")]
        for i, (_, expr) in enumerate(usable):
            aggs += [
                F.min(expr).alias(f"lo{i}"),
                F.max(expr).alias(f"hi{i}"),
                F.approx_count_distinct(expr).alias(f"n{i}"),
            ]
        row = self.source.agg(*aggs).collect()[0]
        self._source_rows = int(row["rows"])
        out: list[BooleanExpression] = []
        for i, (column, expr) in enumerate(usable):
            lo, hi, n = row[f"lo{i}"], row[f"hi{i}"], row[f"n{i}"]
            if lo is None:
                return [AlwaysFalse()]  # no source row has a key: no target row matches
            candidate: BooleanExpression = And(GreaterThanOrEqual(column, lo), LessThanOrEqual(column, hi))
            if n is not None and n <= _SMALL_KEY_SET and not _dense(lo, hi, n):
                values = [
                    r[0]
                    for r in self.source.select(expr)
                    .where(expr.isNotNull())
                    .distinct()
                    .limit(4 * _SMALL_KEY_SET)
                    .collect()
                ]
                if len(values) <= 2 * _SMALL_KEY_SET:
                    candidate = In(column, values)
            try:
                bind(schema, candidate)
            except IcefloeError:
                continue
            out.append(candidate)
        return out

    # ------------------------------------------------------------------ the join
    def _source(self) -> DataFrame:
        return self.source.withColumn(S_MARK, F.lit(True))

    def _clause_values(self, ctx: _Context, t: DataFrame, s: DataFrame) -> list[dict[str, Column]]:
        schema = ctx.schema
        source_by_lower = {c.lower(): c for c in self.source.columns}
        target_names = {c.lower() for c in t.columns}
        out: list[dict[str, Column]] = []
        for c in self.clauses:
            if c.action == "delete":
                out.append({})
            elif c.all_columns:
                values: dict[str, Column] = {}
                for f in schema.fields:
                    name = source_by_lower.get(f.name.lower())
                    if name is not None:
                        values[f.name] = s[_quoted(name)]
                    elif not self.schema_evolution:
                        raise SchemaError(
                            f"{c.describe()} * needs a source column {f.name!r} for every target column",
                            hint="add the column to the source, list the columns explicitly, or allow "
                            "missing columns with .with_schema_evolution()",
                            column=f.name,
                        )
                    elif c.action == "insert" or f.name.lower() not in target_names:
                        values[f.name] = F.lit(None)
                out.append(values)
            else:
                out.append(resolve_assignments(schema, c.assignments or {}, c.describe()))
        return out

    def _marks(self, t: DataFrame, s: DataFrame) -> tuple[Column, Column, Column]:
        t_present = t[T_MARK].isNotNull()
        s_present = s[S_MARK].isNotNull()
        return t_present & s_present, ~t_present, ~s_present

    def _clause_index(self, t: DataFrame, s: DataFrame) -> Column:
        matched, not_matched, by_source = self._marks(t, s)
        base = {MATCHED_KIND: matched, NOT_MATCHED: not_matched, NOT_MATCHED_BY_SOURCE: by_source}
        index: Column | None = None
        for i, c in enumerate(self.clauses):
            when = base[c.kind] if c.condition is None else base[c.kind] & _true(to_column(c.condition))
            index = F.when(when, F.lit(i + 1)) if index is None else index.when(when, F.lit(i + 1))
        assert index is not None
        return index.otherwise(F.lit(0))

    def _rows(self, ctx: _Context, t: DataFrame, how: str, keep_target: bool) -> DataFrame:
        s = self._source()
        joined = t.join(s, to_column(self.condition), how)
        joined = joined.withColumn(CLAUSE, self._clause_index(t, s))
        idx = F.col(CLAUSE)
        values = self._clause_values(ctx, t, s)
        kind: Column = F.lit(KIND_KEEP)
        for action in ("update", "delete", "insert"):
            ids = [i + 1 for i, c in enumerate(self.clauses) if c.action == action]
            if ids:
                kind = F.when(idx.isin(ids), F.lit(_KINDS[action])).otherwise(kind)
        per_column: dict[str, Column] = {}
        target_columns = set(t.columns)
        updates = [v for c, v in zip(self.clauses, values, strict=True) if c.action == "update"]
        for f in ctx.schema.fields:
            current = t[_quoted(f.name)] if f.name in target_columns else F.lit(None)
            expr: Column | None = None
            for i, v in enumerate(values):
                if f.name in v:
                    when = idx == F.lit(i + 1)
                    expr = F.when(when, v[f.name]) if expr is None else expr.when(when, v[f.name])
            # merge-on-read writes only rows that get new values: when every update sets the
            # column, the target's own value is never needed, and Spark then reads (and
            # shuffles) only the target columns the join needs
            unused = not keep_target and all(f.name in v for v in updates)
            if unused:
                current = F.lit(None)
            if expr is not None:
                per_column[f.name] = expr.otherwise(current)
            elif unused:
                per_column[f.name] = current
        matched, _, _ = self._marks(t, s)
        out = joined.select(*self.output(ctx, t, kind, matched, per_column))
        wanted = F.col(KIND) != F.lit(KIND_KEEP)
        if keep_target:
            wanted = wanted | F.col(KEY).isNotNull()
        elif self.has_matched:
            wanted = wanted | F.col(MATCHED)
        return out.filter(wanted)

    def changed_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        if self.insert_only():
            return self._inserts(ctx, t)
        how = {
            (False, False): "inner",
            (True, False): "right",
            (False, True): "left",
            (True, True): "full",
        }[(self.has_insert, self.has_by_source)]
        return self._rows(ctx, t, how, keep_target=False)

    def affected_files(self, ctx: _Context, t: DataFrame) -> DataFrame | None:
        if self.has_by_source:
            return None
        return t.join(self._source(), to_column(self.condition), "left_semi").select(t[KEY])

    def rewritten_rows(self, ctx: _Context, t: DataFrame) -> DataFrame:
        return self._rows(ctx, t, "full" if self.has_insert else "left", keep_target=True)

    def _inserts(self, ctx: _Context, t: DataFrame) -> DataFrame:
        """Only NOT MATCHED clauses: the source rows without a match, nothing else."""
        s = self._source()
        rows = s.join(t, to_column(self.condition), "left_anti")
        index: Column | None = None
        for i, c in enumerate(self.clauses):
            when = F.lit(True) if c.condition is None else _true(to_column(c.condition))
            index = F.when(when, F.lit(i + 1)) if index is None else index.when(when, F.lit(i + 1))
        assert index is not None
        rows = rows.withColumn(CLAUSE, index.otherwise(F.lit(0))).filter(F.col(CLAUSE) > 0)
        values = self._clause_values(ctx, t, s)
        cols = [
            F.lit(None).cast("long").alias(KEY),
            F.lit(None).cast("long").alias(ROW_POS),
            F.lit(KIND_INSERT).cast("byte").alias(KIND),
            F.lit(False).alias(MATCHED),
        ]
        idx = F.col(CLAUSE)
        for f in ctx.schema.fields:
            expr: Column | None = None
            for i, v in enumerate(values):
                if f.name in v:
                    when = idx == F.lit(i + 1)
                    expr = F.when(when, v[f.name]) if expr is None else expr.when(when, v[f.name])
            value = F.lit(None) if expr is None else expr
            cols.append(value.cast(to_spark_type(f.field_type)).alias(f.name))
        if ctx.lineage:  # new rows: row ids and sequence numbers assigned at commit
            cols += [
                F.lit(None).cast("long").alias(LINEAGE_ROW_ID),
                F.lit(None).cast("long").alias(LINEAGE_SEQ),
            ]
        return rows.select(*cols)


def _row_width(schema: st.StructType) -> int | None:
    """Estimated bytes of a row in Spark's row format: a null bit set, 8 bytes a column, and
    for strings and binary (and wide decimals) about 24 bytes more; None with nested types."""
    atomic = (
        st.BooleanType,
        st.ByteType,
        st.ShortType,
        st.IntegerType,
        st.DateType,
        st.FloatType,
        st.LongType,
        st.DoubleType,
        st.TimestampType,
        st.TimestampNTZType,
    )
    total = 8
    for f in schema.fields:
        t = f.dataType
        if isinstance(t, st.StringType | st.BinaryType):
            total += 8 + 24
        elif isinstance(t, st.DecimalType):
            total += 8 if t.precision <= 18 else 8 + 16
        elif isinstance(t, atomic):
            total += 8
        else:
            return None
    return total


def _dense(lo: Any, hi: Any, n: int) -> bool:
    """Whether the source holds (about) every integer from ``lo`` to ``hi``: its values then
    prune no more than its range does, and are not fetched (a job saved). ``n`` is an
    estimate; taken too high it only costs pruning, never a result."""
    if isinstance(lo, bool) or not isinstance(lo, int) or not isinstance(hi, int):
        return False
    return hi - lo + 1 <= n


def _same_family(t: Any, spark_type: st.DataType) -> bool:
    """Whether min/max of a source value of ``spark_type`` order like the target column ``t``."""
    if isinstance(t, IntegerType | LongType):
        return isinstance(spark_type, st.ByteType | st.ShortType | st.IntegerType | st.LongType)
    if isinstance(t, StringType):
        return isinstance(spark_type, st.StringType)
    if isinstance(t, DateType):
        return isinstance(spark_type, st.DateType)
    if isinstance(t, DecimalType):
        return isinstance(spark_type, st.DecimalType)
    return False
