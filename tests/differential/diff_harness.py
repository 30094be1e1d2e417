"""The differential read harness: random queries over the tables of
:mod:`icefloe.testing.tables`, run through every read path, compared with the model.

Paths and the semantics each one must follow (see ``diff_sql`` for the SQL rules)::

    arrow        table.scan(row_filter, selected_fields, snapshot_id | ref, limit).to_arrow()
                 / .to_batches() / .count()                                  Iceberg semantics
    duckdb       DuckDB SQL over scan().to_arrow() of the whole snapshot     DuckDB SQL semantics
    duckdb-scan  scan(row_filter=...).to_duckdb(), then SQL aggregates       Iceberg, then SQL
    spark        spark.read.format("icefloe") [+ snapshot-id | tag | branch], then DataFrame
                 operations (filter as Spark SQL text, select, limit, agg, self-join), several on
                 ONE DataFrame                                               Spark SQL semantics
                 ... or with .option("filter", <icefloe text>)               Iceberg semantics
    fast         icefloe.spark.read(columns, where, snapshot_id | tag | branch), then Spark
                 operations on that DataFrame                    Iceberg for where, then Spark
    java         Iceberg Java 1.10 in Spark 3.5 (the oracle), Spark SQL over the same tables,
                 run in one JVM for a batch of tables (diff_java_queries.py)  Spark SQL semantics

Rows compare as multisets of canonical row texts (NaN, -0.0 and 0.0 all distinct); a limit
checks the count and that the rows are a sub-multiset; aggregates per ``diff_sql``.

What the Iceberg Java oracle is held to, beyond Spark SQL semantics (each a documented defect of
Iceberg Java 1.10 / Spark 3.5, with a reproduction in the function named; none is applied to an
icefloe path):

* ``java_certain``: Java prunes files with Spark's pushed filters by Iceberg's float rules (NaN
  compares false, -0.0 sorts below 0.0), so rows whose filtered float value is NaN or a zero may
  be missing; every other expected row must be there, and no unexpected row.
* ``java_queries``: no filters on uuid columns (Java prunes uuid bounds with signed comparisons),
  and no prefix tests of identity partition columns (``java_prefix_on_identity_partition``: Java's
  residual evaluation of ``startsWith`` throws NullPointerException on a null partition value).
* ``java_binds_to_current_schema``: a time-travel filter on a column renamed or dropped since
  the snapshot fails in Java with ``Cannot find field``; that error is accepted for such columns.
* ``diff_sql.SPARK35``: prefixes as ``startswith()`` (Spark 3.5's LIKE mishandles ``_`` before a
  supplementary character).
* Tables with a ``time`` column are not generated for Java (Spark 3.5 has no TIME type).

Every case is reproducible from (run seed, case number): the table seed is derived from both,
and the queries from the table seed. Every failure message carries the command that replays
just that case.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import random
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import diff_sql as S
import pyarrow as pa

from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    FixedType,
    NestedField,
    PrimitiveType,
    StructType,
    TimeType,
    UUIDType,
)
from icefloe.testing.tables import (
    BuiltTable,
    Filter,
    Pred,
    ReadTarget,
    Row,
    TableOptions,
    describe_filter,
    eval_iceberg,
    filter_columns,
    filterable_columns,
    model_rows_by_name,
    project,
    random_filter,
    row_text,
    to_icefloe_expression,
    to_icefloe_text,
)

TEST_FILE = "tests/differential/test_differential_reads.py"


# ------------------------------------------------------------------------------ cases


@dataclasses.dataclass(frozen=True)
class Case:
    seed: int
    number: int
    test: str  # the test function, for the replay command

    @property
    def table_seed(self) -> int:
        return self.seed * 1_000_003 + self.number

    def replay(self) -> str:
        node = f"{TEST_FILE}::{self.test}"
        env = f"ICEFLOE_DIFF_SEED={self.seed} ICEFLOE_DIFF_CASE={self.number}"
        return (
            f"{env} .venv/bin/pytest {shlex.quote(node)}"
            f"   (or: .venv/bin/pytest {shlex.quote(node)} --seed {self.seed} --case {self.number})"
        )

    def label(self) -> str:
        return f"seed {self.seed} case {self.number} (table seed {self.table_seed})"


class Report:
    """The discrepancies of one case, printed with everything needed to replay it."""

    def __init__(self, case: Case, built: BuiltTable | None = None) -> None:
        self.case = case
        self.built = built
        self.problems: list[str] = []
        self.checked: collections.Counter[str] = collections.Counter()

    def add(self, path: str, query: str, detail: str) -> None:
        self.problems.append(f"[{path}] {query}\n    {detail}")

    def ok(self, path: str) -> None:
        self.checked[path] += 1

    def message(self) -> str:
        lines = [
            f"differential read mismatch, {self.case.label()}: {len(self.problems)} problem(s)",
            f"replay: {self.case.replay()}",
        ]
        if self.built is not None:
            lines.append("table:")
            lines.append(self.built.describe())
        lines += self.problems[:12]
        if len(self.problems) > 12:
            lines.append(f"... and {len(self.problems) - 12} more")
        return "\n".join(lines)

    def check(self) -> None:
        if self.problems:
            raise AssertionError(self.message())


# ------------------------------------------------------------------------------ queries


@dataclasses.dataclass
class Query:
    target: ReadTarget
    filter: Filter | None
    columns: list[str] | None  # projection (dotted paths allowed on icefloe paths)
    limit: int | None = None
    form: str = "text"  # icefloe filter as "text" or "expr" (expression objects)
    agg_column: str | None = None

    def describe(self) -> str:
        parts = [f"target={self.target.describe()}"]
        text = describe_filter(self.filter) if self.filter is not None else "none"
        parts.append("filter=" + (text if len(text) < 1500 else text[:1500] + f"... ({len(text)} chars)"))
        if self.filter is not None:
            parts.append(f"form={self.form}")
        if self.columns is not None:
            parts.append(f"columns={self.columns}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        if self.agg_column is not None:
            parts.append(f"aggregates of {self.agg_column}")
        return " ".join(parts)


def icefloe_filter(q: Query) -> Any:
    """The query's filter for icefloe: text where it has one and the query asks for text."""
    if q.filter is None:
        return None
    if q.form == "text":
        text = to_icefloe_text(q.filter)
        if text is not None:
            return text
    return to_icefloe_expression(q.filter)


def random_columns(rng: random.Random, schema: Schema, nested: bool) -> list[str] | None:
    """None (every column) or a random non-empty subset, in random order (results keep schema
    order); with ``nested``, sometimes single fields of structs."""
    if rng.random() < 0.35:
        return None
    names = [f.name for f in schema.fields]
    chosen = rng.sample(names, k=rng.randint(1, len(names)))
    if nested:
        subs = [p for p, _ in filterable_columns(schema) if "." in p]
        if subs and rng.random() < 0.4:
            chosen.append(rng.choice(subs))
            top = chosen[-1].split(".")[0]
            chosen = [c for c in chosen if c != top]
    return chosen


def random_query(
    rng: random.Random,
    built: BuiltTable,
    *,
    nested_columns: bool,
    nan_literals: bool = False,
    targets: Sequence[ReadTarget] | None = None,
    skip_filter_types: tuple[type, ...] = (),
) -> tuple[Query, Schema, list[Row]]:
    target = rng.choice(list(targets) if targets is not None else built.targets())
    schema, rows = built.resolve(target)
    depth = rng.choice([0, 1, 2, 3])
    f = None
    if rng.random() >= 0.12:
        f = random_filter(rng, schema, built.pools, depth, nan_literals, skip_filter_types)
    q = Query(target, f, random_columns(rng, schema, nested_columns))
    q.form = "expr" if rng.random() < 0.3 else "text"
    if rng.random() < 0.2:
        q.limit = rng.choice([0, 1, 3, 10])
    return q, schema, rows


def wide_filter(rng: random.Random, schema: Schema, built: BuiltTable) -> Filter:
    """A left-deep chain of a few hundred predicates joined by one operator (the shape of a
    generated ``id in (...)``-style filter), for the depth of every recursive evaluator."""
    from icefloe.testing.tables import And, Or, random_predicate

    join = And if rng.random() < 0.3 else Or
    f: Filter = random_predicate(rng, schema, built.pools)
    for _ in range(rng.randint(200, 400)):
        f = join(f, random_predicate(rng, schema, built.pools))
    return f


def aggregate_column(rng: random.Random, schema: Schema, sql_paths: bool = True) -> str | None:
    cols = [
        p for p, t in filterable_columns(schema) if isinstance(t, S.ORDERED) and (sql_paths or "." not in p)
    ]
    return rng.choice(cols) if cols else None


# ------------------------------------------------------------------------------ comparing


def canonical(fields: Sequence[NestedField], rows: Iterable[Any]) -> collections.Counter[str]:
    return collections.Counter(row_text(fields, r) for r in rows)


def diff_rows(got: collections.Counter[str], want: collections.Counter[str], limit: int = 3) -> str:
    only_got = sorted((got - want).elements())
    only_want = sorted((want - got).elements())
    lines = [
        f"{sum(got.values())} rows read vs {sum(want.values())} expected: "
        f"{len(only_got)} unexpected, {len(only_want)} missing"
    ]
    lines += [f"      unexpected: {x[:400]}" for x in only_got[:limit]]
    lines += [f"      missing:    {x[:400]}" for x in only_want[:limit]]
    return "\n".join(lines)


def compare_rows(
    report: Report,
    path: str,
    query: str,
    fields: Sequence[NestedField],
    got_rows: Iterable[Any],
    want_rows: Iterable[Mapping[str, Any]],
    limit: int | None = None,
) -> None:
    got, want = canonical(fields, got_rows), canonical(fields, want_rows)
    if limit is not None:
        n = min(limit, sum(want.values()))
        if sum(got.values()) != n or got - want:
            report.add(path, query, f"limit {limit}: " + diff_rows(got, want))
            return
    elif got != want:
        report.add(path, query, diff_rows(got, want))
        return
    report.ok(path)


def expected_rows(
    schema: Schema, rows: Sequence[Row], keep: Callable[[Row], bool], columns: Sequence[str] | None
) -> tuple[tuple[NestedField, ...], list[dict[str, Any]]]:
    fields = project(schema, columns)
    return fields, model_rows_by_name(fields, [r for r in rows if keep(r)])


def iceberg_keep(f: Filter | None, schema: Schema) -> Callable[[Row], bool]:
    return (lambda r: True) if f is None else (lambda r: eval_iceberg(f, schema, r))


def sql_keep(f: Filter | None, schema: Schema, dialect: str) -> Callable[[Row], bool]:
    return (lambda r: True) if f is None else (lambda r: S.eval_sql(f, schema, r, dialect))


def compare_aggregates(
    report: Report,
    path: str,
    query: str,
    t: PrimitiveType,
    got: Sequence[Any],
    values: Sequence[Any],
) -> None:
    want = S.expected_aggregates(t, values)
    names = ["count(*)", "count(c)", "min", "max", "sum"]
    bad = [
        f"{names[i]}: got {got[i]!r}, expected {want[i]!r}"
        for i in range(len(want))
        if i >= len(got) or not S.same_aggregate(t, i, got[i], want[i])
    ]
    if bad:
        report.add(path, query, "; ".join(bad))
    else:
        report.ok(path)


def column_values(schema: Schema, rows: Iterable[Row], path: str) -> list[Any]:
    from icefloe.testing.tables import column_value

    return [column_value(schema, r, path) for r in rows]


def scan_kwargs(target: ReadTarget) -> dict[str, Any]:
    if target.kind == "snapshot":
        return {"snapshot_id": target.value}
    if target.kind in ("tag", "branch"):
        return {"ref": target.value}
    return {}


def guarded(report: Report, path: str, query: str, fn: Callable[[], None]) -> None:
    """Run one check; an exception is a discrepancy too (the model says the read is valid)."""
    try:
        fn()
    except AssertionError:
        raise
    except Exception as e:
        report.add(
            path, query, f"raised {type(e).__name__}: {str(e).splitlines()[0][:400] if str(e) else ''}"
        )


# ------------------------------------------------------------------------------ arrow + duckdb


ARROW_OPTIONS = TableOptions()


def run_arrow_duckdb_case(report: Report, built: BuiltTable, queries: int) -> None:
    """Random queries through the Arrow scan, DuckDB over the Arrow output, and DuckDB over a
    filtered scan."""
    import duckdb

    rng = random.Random(report.case.table_seed ^ 0xA770)
    t = built.table
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    full_cache: dict[ReadTarget, pa.Table] = {}
    try:
        for _ in range(queries):
            q, schema, rows = random_query(rng, built, nested_columns=True)
            if rng.random() < 0.03:
                q.filter = wide_filter(rng, schema, built)
            text = q.describe()
            choice = rng.random()
            if choice < 0.55:
                guarded(
                    report, "arrow", text, functools.partial(_arrow_query, report, t, q, schema, rows, rng)
                )
            elif choice < 0.85:
                sql_q = dataclasses.replace(q, columns=random_columns(rng, schema, False))
                if rng.random() < 0.35:
                    sql_q.agg_column = aggregate_column(rng, schema)
                run = functools.partial(_duckdb_query, report, t, sql_q, schema, rows, con, full_cache)
                guarded(report, "duckdb", sql_q.describe(), run)
            else:
                q.agg_column = aggregate_column(rng, schema)
                run = functools.partial(_duckdb_scan_query, report, t, q, schema, rows, con)
                guarded(report, "duckdb-scan", q.describe(), run)
    finally:
        con.close()


def _arrow_query(
    report: Report, t: Any, q: Query, schema: Schema, rows: list[Row], rng: random.Random
) -> None:
    scan = t.scan(
        row_filter=icefloe_filter(q),
        selected_fields=tuple(q.columns) if q.columns else ("*",),
        limit=q.limit,
        **scan_kwargs(q.target),
    )
    fields, want = expected_rows(schema, rows, iceberg_keep(q.filter, schema), q.columns)
    how = rng.choice(["to_arrow", "to_arrow", "to_batches", "count"])
    text = f"{q.describe()} via {how}"
    if how == "count":
        n = scan.count()
        expect = len(want) if q.limit is None else min(q.limit, len(want))
        if n != expect:
            report.add("arrow", text, f"count() = {n}, expected {expect}")
        else:
            report.ok("arrow")
        return
    result = scan.to_arrow() if how == "to_arrow" else scan.to_batches().read_all()
    names = [f.name for f in fields]
    if result.column_names != names:
        report.add("arrow", text, f"columns {result.column_names}, expected {names}")
        return
    compare_rows(report, "arrow", text, fields, result.to_pylist(), want, q.limit)


def _full(t: Any, target: ReadTarget, cache: dict[ReadTarget, pa.Table]) -> pa.Table:
    if target not in cache:
        cache[target] = t.scan(**scan_kwargs(target)).to_arrow()
    return cache[target]


def _select_list(dialect: str, fields: Sequence[NestedField]) -> str:
    return ", ".join(S.column_ref(dialect, f.name) for f in fields)


def _duckdb_query(
    report: Report,
    t: Any,
    q: Query,
    schema: Schema,
    rows: list[Row],
    con: Any,
    cache: dict[ReadTarget, pa.Table],
) -> None:
    con.register("t", _full(t, q.target, cache))
    where = "" if q.filter is None else " WHERE " + S.to_sql(q.filter, schema, S.DUCKDB)
    keep = sql_keep(q.filter, schema, S.DUCKDB)
    text = q.describe()
    if q.agg_column is not None:
        col_t = dict(filterable_columns(schema))[q.agg_column]
        sql = f"SELECT {', '.join(S.agg_sql(S.DUCKDB, col_t, q.agg_column))} FROM t{where}"
        got = list(con.sql(sql).fetchall()[0])
        values = column_values(schema, [r for r in rows if keep(r)], q.agg_column)
        compare_aggregates(report, "duckdb", f"{text}\n    sql: {sql}", col_t, got, values)
        return
    fields, want = expected_rows(schema, rows, keep, q.columns)
    limit = f" LIMIT {q.limit}" if q.limit is not None else ""
    sql = f"SELECT {_select_list(S.DUCKDB, fields)} FROM t{where}{limit}"
    got_rows = con.sql(sql).to_arrow_table().to_pylist()
    compare_rows(report, "duckdb", f"{text}\n    sql: {sql}", fields, got_rows, want, q.limit)


def _duckdb_scan_query(report: Report, t: Any, q: Query, schema: Schema, rows: list[Row], con: Any) -> None:
    if q.agg_column is None:
        return
    scan = t.scan(row_filter=icefloe_filter(q), **scan_kwargs(q.target))
    scan.to_duckdb("s", con)
    col_t = dict(filterable_columns(schema))[q.agg_column]
    sql = f"SELECT {', '.join(S.agg_sql(S.DUCKDB, col_t, q.agg_column))} FROM s"
    got = list(con.sql(sql).fetchall()[0])
    keep = iceberg_keep(q.filter, schema)
    values = column_values(schema, [r for r in rows if keep(r)], q.agg_column)
    compare_aggregates(report, "duckdb-scan", f"{q.describe()}\n    sql: {sql}", col_t, got, values)


# ------------------------------------------------------------------------------ spark


def _spark_reader(spark: Any, target: ReadTarget) -> Any:
    reader = spark.read.format("icefloe")
    if target.kind == "snapshot":
        reader = reader.option("snapshot-id", str(target.value))
    elif target.kind in ("tag", "branch"):
        reader = reader.option(target.kind, str(target.value))
    return reader


def _spark_fields(schema: Schema, columns: Sequence[str] | None) -> tuple[NestedField, ...]:
    return project(schema, columns)


def _all_nullable(t: Any) -> Any:
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _all_nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_all_nullable(t.elementType), True)
    if isinstance(t, T.MapType):
        return T.MapType(t.keyType, _all_nullable(t.valueType), True)
    return t


def spark_rows(df: Any) -> list[dict[str, Any]]:
    """The DataFrame's rows through Arrow, read with every field nullable.

    PySpark 4.3's ``toArrow()`` fails on a null struct that has a required field (ArrowInvalid
    "nulls in input cannot be viewed as non-nullable"): the JVM writes the child null under the
    null struct and ``toArrow`` then casts the batches to the non-nullable schema. It happens with
    plain Spark data (``select case when ... then null else named_struct(...) end``), no icefloe
    involved; ``DataFrame.to()`` a schema that differs only in nullability avoids it.
    """
    return list(df.to(_all_nullable(df.schema)).toArrow().to_pylist())


def _agg_values(df: Any, exprs: Sequence[str]) -> list[Any]:
    from pyspark.sql import functions as F

    tbl = df.agg(*[F.expr(e) for e in exprs]).toArrow()
    return [tbl.column(i)[0].as_py() for i in range(tbl.num_columns)]


def run_spark_sequence(report: Report, spark: Any, built: BuiltTable, steps: int, rng: random.Random) -> None:
    """Several differently filtered, projected, aggregated and joined queries on ONE DataFrame of
    the data source (Spark semantics throughout). Starts with the pattern of the filter leak
    fixed in icefloe/spark/source.py (count, filtered count, count again, a self-join of two
    filtered views), then random steps."""
    from pyspark.sql import functions as F

    target = rng.choice(built.targets())
    schema, rows = built.resolve(target)
    df = _spark_reader(spark, target).load(built.identifier)
    path = "spark"

    def pick() -> Filter:
        return random_filter(rng, schema, built.pools, rng.choice([0, 1, 2]), nan_literals=True)

    def kept(f: Filter) -> list[Row]:
        return [r for r in rows if S.eval_sql(f, schema, r, S.SPARK)]

    first = pick()
    plan: list[tuple[str, Any]] = [("count", None), ("filter_count", first), ("count", None), ("join", None)]
    kinds = ["filter_count", "rows", "agg", "join", "limit", "chain", "count", "rows"]
    plan += [(k, None) for k in (rng.choice(kinds) for _ in range(max(0, steps - 4)))]
    for i, (kind, given) in enumerate(plan):
        where = f"df of target={target.describe()}, step {i}: {kind}"
        f = given if given is not None else pick()
        sql = S.to_sql(f, schema, S.SPARK)

        def step(kind: str = kind, f: Filter = f, sql: str = sql, where: str = where) -> None:
            text = f"{where} filter={describe_filter(f)}\n    spark sql: {sql}"
            if kind == "count":
                n = df.count()
                _expect(report, path, f"{where}: df.count()", n, len(rows))
            elif kind == "filter_count":
                _expect(
                    report, path, text + "\n    df.filter(sql).count()", df.filter(sql).count(), len(kept(f))
                )
            elif kind == "chain":
                g = pick()
                sql2 = S.to_sql(g, schema, S.SPARK)
                n = df.filter(sql).filter(sql2).count()
                want = len([r for r in kept(f) if S.eval_sql(g, schema, r, S.SPARK)])
                _expect(report, path, f"{text}\n    then .filter({sql2}).count()", n, want)
            elif kind in ("rows", "limit"):
                cols = random_columns(rng, schema, False)
                fields = _spark_fields(schema, cols)
                out = df.filter(sql).select(*[F.col(S.column_ref(S.SPARK, x.name)) for x in fields])
                limit = rng.choice([0, 1, 5]) if kind == "limit" else None
                if limit is not None:
                    out = out.limit(limit)
                want = model_rows_by_name(fields, kept(f))
                compare_rows(
                    report,
                    path,
                    f"{text} columns={cols} limit={limit}",
                    fields,
                    spark_rows(out),
                    want,
                    limit,
                )
            elif kind == "agg":
                col = aggregate_column(rng, schema)
                if col is None:
                    return
                col_t = dict(filterable_columns(schema))[col]
                exprs = S.agg_sql(S.SPARK, col_t, col)
                got = _agg_values(df.filter(sql), exprs)
                compare_aggregates(
                    report, path, f"{text} agg {exprs}", col_t, got, column_values(schema, kept(f), col)
                )
            elif kind == "join":
                g = pick()
                sql2 = S.to_sql(g, schema, S.SPARK)
                left = df.filter(sql).alias("l")
                right = df.filter(sql2).alias("r")
                joined = left.join(right, F.col("l.rid") == F.col("r.rid")).select(F.col("l.rid"))
                got_ids = collections.Counter(joined.toArrow().column(0).to_pylist())
                right_ids = {r[1] for r in kept(g)}
                want_ids = collections.Counter(r[1] for r in kept(f) if r[1] in right_ids)
                if got_ids != want_ids:
                    report.add(
                        path,
                        f"{text}\n    self-join with df.filter({sql2}) on rid",
                        f"rids {sorted(got_ids.elements())[:20]} "
                        f"vs expected {sorted(want_ids.elements())[:20]}",
                    )
                else:
                    report.ok(path)

        guarded(report, path, f"{where} filter={describe_filter(f)}", step)


def _expect(report: Report, path: str, text: str, got: int, want: int) -> None:
    if got != want:
        report.add(path, text, f"got {got}, expected {want}")
    else:
        report.ok(path)


def run_spark_single(report: Report, spark: Any, built: BuiltTable, rng: random.Random) -> None:
    """One filtered, projected query on a fresh data-source DataFrame (no earlier query on it)."""
    from pyspark.sql import functions as F

    q, schema, rows = random_query(rng, built, nested_columns=False, nan_literals=True)
    reader = _spark_reader(spark, q.target)
    fields = _spark_fields(schema, q.columns)
    option = None
    if q.filter is not None and rng.random() < 0.35:
        # the source's own filter option: pruning and residuals with Iceberg's semantics
        option = to_icefloe_text(q.filter)
    sql = None if q.filter is None or option is not None else S.to_sql(q.filter, schema, S.SPARK)
    text = f"{q.describe()}\n    " + (
        f"option filter: {option}" if option is not None else f"spark sql: {sql}"
    )

    def run() -> None:
        out = (reader.option("filter", option) if option is not None else reader).load(built.identifier)
        if sql is not None:
            out = out.filter(sql)
        out = out.select(*[F.col(S.column_ref(S.SPARK, x.name)) for x in fields])
        if q.limit is not None:
            out = out.limit(q.limit)
        keep = iceberg_keep(q.filter, schema) if option is not None else sql_keep(q.filter, schema, S.SPARK)
        want = model_rows_by_name(fields, [r for r in rows if keep(r)])
        compare_rows(report, "spark", text, fields, spark_rows(out), want, q.limit)

    guarded(report, "spark", text, run)


def run_fast_path(report: Report, spark: Any, built: BuiltTable, rng: random.Random) -> None:
    """``icefloe.spark.read`` (Iceberg semantics for ``where``), then Spark operations on the
    DataFrame it returns (Spark semantics)."""
    import icefloe.spark

    q, schema, rows = random_query(rng, built, nested_columns=True, targets=built.targets())
    kwargs: dict[str, Any] = {}
    if q.target.kind == "snapshot":
        kwargs["snapshot_id"] = q.target.value
    elif q.target.kind in ("tag", "branch"):
        kwargs[q.target.kind] = q.target.value
    text = f"icefloe.spark.read {q.describe()}"

    def run() -> None:
        df = icefloe.spark.read(spark, built.identifier, columns=q.columns, where=icefloe_filter(q), **kwargs)
        fields, want = expected_rows(schema, rows, iceberg_keep(q.filter, schema), q.columns)
        compare_rows(report, "fast", text, fields, spark_rows(df), want)
        kept = [r for r in rows if iceberg_keep(q.filter, schema)(r)]
        _expect(report, "fast", f"{text}: then df.count()", df.count(), len(kept))
        visible = Schema(*fields)
        if filterable_columns(visible):
            # a projection keeps the field ids, so the model rows and pools serve it as they are
            g = random_filter(rng, visible, built.pools, rng.choice([0, 1]), nan_literals=True)
            sql2 = S.to_sql(g, visible, S.SPARK)
            want_n = len([r for r in kept if S.eval_sql(g, visible, r, S.SPARK)])
            _expect(
                report, "fast", f"{text}: then df.filter({sql2}).count()", df.filter(sql2).count(), want_n
            )
        _expect(report, "fast", f"{text}: then df.count() again", df.count(), len(kept))

    guarded(report, "fast", text, run)


# ------------------------------------------------------------------------------ java


def java_options() -> TableOptions:
    """Iceberg Java's Spark 3.5 has no time type; everything else is generated for Java too."""
    from icefloe.testing.tables import PRIMITIVE_KINDS

    return TableOptions(kinds=tuple(k for k in PRIMITIVE_KINDS if k != "time"))


def _fields_json(fields: Sequence[NestedField]) -> list[dict[str, Any]]:
    schema_json: dict[str, Any] = Schema(*fields).to_json()
    out: list[dict[str, Any]] = schema_json["fields"]
    return out


@dataclasses.dataclass
class JavaQuery:
    key: str
    case: Case
    built: BuiltTable
    query: Query
    sql: str
    fields: tuple[NestedField, ...] | None  # rows queries
    agg_type: PrimitiveType | None
    want_rows: list[dict[str, Any]] | None
    want_values: list[Any] | None
    # the rows Java must return even with its NaN/zero pruning (see java_certain); rows queries
    certain_rows: list[dict[str, Any]] | None = None
    certain_count: int | None = None  # aggregate queries

    def spec(self, catalog: str) -> dict[str, Any]:
        read: dict[str, str] = {}
        t = self.query.target
        if t.kind == "snapshot":
            read["snapshot-id"] = str(t.value)
        elif t.kind in ("tag", "branch"):
            read[t.kind] = str(t.value)
        out: dict[str, Any] = {
            "key": self.key,
            "table": f"{catalog}.{self.built.identifier}",
            "read": read,
            "sql": self.sql,
        }
        if self.fields is not None:
            out["fields"] = _fields_json(self.fields)
        return out


def java_certain(f: Filter | None, schema: Schema) -> Callable[[Row], bool]:
    """Rows Iceberg Java must return for a filter that Spark keeps them by.

    Iceberg Java 1.10 prunes files with the filters Spark pushes, by Iceberg's float rules (NaN
    compares false, -0.0 orders below 0.0), while Spark then evaluates the rest by its own (NaN is
    the largest value and equals NaN, -0.0 = 0.0). A row whose float value in a filtered column is
    NaN or a zero is therefore returned or not depending on which other rows share its file
    (``x >= CAST('Infinity' AS FLOAT)`` drops NaN rows from files whose finite values are small).
    Such rows may be missing from Java's result; every other row must be there, and nothing else."""
    if f is None:
        return lambda r: True
    from icefloe.spec.types import DoubleType, FloatType
    from icefloe.testing.tables import column_value

    types = dict(filterable_columns(schema))
    floats = [c for c in filter_columns(f) if isinstance(types[c], FloatType | DoubleType)]

    def certain(r: Row) -> bool:
        for c in floats:
            v = column_value(schema, r, c)
            if v is not None and (v != v or v == 0.0):
                return False
        return True

    return certain


def java_queries(case: Case, built: BuiltTable, n: int) -> list[JavaQuery]:
    """Spark SQL (as Spark 3.5 spells it) for Iceberg Java. uuid columns are not filtered on:
    Iceberg Java 1.10 compares uuid bounds as signed numbers when pruning (``u =
    'ffffffff-ffff-ffff-ffff-ffffffffffff'`` finds nothing in a file that also holds
    ``00000000-...-0001``), so such results say nothing about icefloe."""
    rng = random.Random(case.table_seed ^ 0x7A7A)
    out = []
    for i in range(n):
        while True:
            q, schema, rows = random_query(
                rng, built, nested_columns=False, nan_literals=True, skip_filter_types=(UUIDType,)
            )
            if not java_prefix_on_identity_partition(q.filter, schema, built):
                break
        keep = sql_keep(q.filter, schema, S.SPARK)
        certain = java_certain(q.filter, schema)
        where = "" if q.filter is None else " WHERE " + S.to_sql(q.filter, schema, S.SPARK35)
        key = f"{case.number}.{i}"
        kept = [r for r in rows if keep(r)]
        if rng.random() < 0.3 and (col := aggregate_column(rng, schema)) is not None:
            q.agg_column = col
            col_t = dict(filterable_columns(schema))[col]
            sql = f"SELECT {', '.join(S.agg_sql(S.SPARK, col_t, col))} FROM v{where}"
            jq = JavaQuery(key, case, built, q, sql, None, col_t, None, column_values(schema, kept, col))
            jq.certain_count = len([r for r in kept if certain(r)])
            out.append(jq)
            continue
        fields, want = expected_rows(schema, rows, keep, q.columns)
        limit = f" LIMIT {q.limit}" if q.limit is not None else ""
        sql = f"SELECT {_select_list(S.SPARK, fields)} FROM v{where}{limit}"
        jq = JavaQuery(key, case, built, q, sql, fields, None, want, None)
        jq.certain_rows = model_rows_by_name(fields, [r for r in kept if certain(r)])
        out.append(jq)
    return out


def java_prefix_on_identity_partition(f: Filter | None, schema: Schema, built: BuiltTable) -> bool:
    """Whether ``f`` tests a prefix (LIKE 'p%', startswith) of a column that a partition spec of
    the table uses as an identity source. Iceberg Java 1.10's ``ResidualEvaluator`` evaluates the
    pushed ``startsWith`` / ``notStartsWith`` on the partition value without a null check: a file
    whose partition value is null fails the whole query with NullPointerException ("Cannot invoke
    String.startsWith(String) because the return value of BoundReference.eval(StructLike) is
    null"). Such queries are not generated for Java."""
    if f is None:
        return False
    from icefloe.testing.tables import fold_filter
    from icefloe.transforms import TransformKind

    identity = {
        pf.source_id
        for spec in built.table.metadata.partition_specs
        for pf in spec.fields
        if pf.transform.kind is TransformKind.IDENTITY
    }
    prefixes: list[str] = []

    def leaf(p: Any) -> None:
        if isinstance(p, Pred) and p.op in ("starts_with", "not_starts_with"):
            prefixes.append(p.column)

    fold_filter(f, leaf, lambda n, children: None)
    return any(schema.find_field(c).field_id in identity for c in prefixes)


def java_binds_to_current_schema(jq: JavaQuery, error: str) -> bool:
    """Iceberg Java 1.10 binds the filters Spark pushes into a time-travel read to the table's
    CURRENT schema: a filter on a column the read's snapshot has under another name (renamed or
    dropped since) fails with ``Cannot find field``. That error, for exactly such a column, is the
    documented Java behaviour (see the module docstring); any other error is a discrepancy."""
    m = re.search(r"Cannot find field '([^']+)' in struct", error)
    if m is None or jq.query.target.kind not in ("snapshot", "tag") or jq.query.filter is None:
        return False
    name = m.group(1)
    current = {p for p, _ in filterable_columns(jq.built.schema())}
    return name in filter_columns(jq.query.filter) and name not in current


def check_java_result(report: Report, jq: JavaQuery, result: Mapping[str, Any]) -> None:
    text = f"{jq.query.describe()}\n    spark sql: {jq.sql}"
    if "error" in result:
        if java_binds_to_current_schema(jq, result["error"]):
            report.ok("java-known-limitation")
            return
        report.add("java", text, f"Iceberg Java raised {result['error'][:500]}")
        return
    if jq.fields is not None:
        got = collections.Counter(result["rows"])
        want = canonical(jq.fields, jq.want_rows or [])
        sure = canonical(jq.fields, jq.certain_rows or [])
        limit = jq.query.limit
        n_got = sum(got.values())
        if limit is None:
            bad = bool(got - want) or bool(sure - got)
        else:
            low, high = min(limit, sum(sure.values())), min(limit, sum(want.values()))
            bad = bool(got - want) or not low <= n_got <= high
        if bad:
            uncertain = sum(want.values()) - sum(sure.values())
            note = f" ({uncertain} expected rows may be missing: NaN/zero pruning)" if uncertain else ""
            report.add(
                "java", text, (f"limit {limit}: " if limit is not None else "") + diff_rows(got, want) + note
            )
            return
        report.ok("java")
        return
    assert jq.agg_type is not None
    got_values = [_decode_java(jq.agg_type, i, v) for i, v in enumerate(result["values"])]
    want_values = jq.want_values or []
    if jq.certain_count is not None and jq.certain_count != len(want_values):
        # rows Java may drop (NaN/zero pruning): only the count's range is certain
        if not jq.certain_count <= int(got_values[0]) <= len(want_values):
            report.add(
                "java", text, f"count(*) {got_values[0]} outside [{jq.certain_count}, {len(want_values)}]"
            )
        else:
            report.ok("java")
        return
    compare_aggregates(report, "java", text, jq.agg_type, got_values, want_values)


def _decode_java(t: PrimitiveType, index: int, v: Any) -> Any:
    """Java's aggregate values came as canonical JSON (see diff_java_queries.py)."""
    import datetime as dt
    import decimal

    from icefloe.spec.types import (
        DateType,
        DecimalType,
        DoubleType,
        FloatType,
        TimestampType,
        TimestamptzType,
    )

    if v is None or index < 2:
        return v
    if isinstance(t, FloatType | DoubleType):
        return float(v)
    if isinstance(t, DecimalType) or index == 4:
        return decimal.Decimal(str(v))
    if isinstance(t, DateType):
        return dt.date.fromisoformat(v)
    if isinstance(t, TimestampType | TimestamptzType):
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(v))
    if isinstance(t, BinaryType | FixedType):
        return bytes.fromhex(v)
    return v


def unsupported_by_java(built: BuiltTable) -> str | None:
    for f in built.schema().fields:
        if _contains(f.field_type, TimeType):
            return f"column {f.name} has type time, which Iceberg Java's Spark 3.5 cannot read"
    return None


def _contains(t: Any, cls: type) -> bool:
    if isinstance(t, cls):
        return True
    if isinstance(t, StructType):
        return any(_contains(f.field_type, cls) for f in t.fields)
    return any(_contains(f.field_type, cls) for f in getattr(t, "fields", ()))


# ------------------------------------------------------------------------------ options

DEFAULT_SEED = 20261


def _option(config: Any, name: str, env: str) -> int | None:
    try:
        value = config.getoption(name)
    except ValueError:  # not registered: tests/differential/conftest.py was not an initial conftest
        value = None
    if value is None:
        text = os.environ.get(env, "")
        value = int(text) if text.strip() else None
    return None if value is None else int(value)


def run_seed(config: Any) -> int:
    seed = _option(config, "--seed", "ICEFLOE_DIFF_SEED")
    return DEFAULT_SEED if seed is None else seed


def case_numbers(config: Any, default: int) -> list[int]:
    """``--case K`` alone, else ``range(--cases N)``, else ``range(default)``."""
    only = _option(config, "--case", "ICEFLOE_DIFF_CASE")
    if only is not None:
        return [only]
    n = _option(config, "--cases", "ICEFLOE_DIFF_CASES")
    return list(range(default if n is None else n))
