"""``icefloe.spark.sql``: the SQL users already write, run against icefloe tables.

::

    text --sqlglot (Spark dialect)--> statements (split on top-level ';')
      MERGE INTO / UPDATE / DELETE FROM <icefloe table>   -> the builders of icefloe.spark.dml
      INSERT INTO / INSERT OVERWRITE <icefloe table> ...  -> the query (itself through sql()),
                                                             columns by position -> icefloe.spark.write
      SELECT ... FROM <icefloe table> [VERSION | TIMESTAMP AS OF x], and INSERT / CREATE ... AS
      SELECT into Spark tables                            -> each icefloe table (at its snapshot)
                                                             becomes a DataFrame of
                                                             icefloe.spark.read, the text goes to
                                                             spark.sql with those DataFrames
      CREATE TABLE ... USING icefloe                      -> refused with what to do instead
      anything else                                       -> spark.sql(text) unchanged

Which names are icefloe tables: a name of two or more parts (``ns.t``, ``a.b.t``) whose table
exists in the icefloe catalog (``catalog`` / ``catalog_properties``, as for
:func:`icefloe.spark.read`). One-part names (temp views, tables of Spark's current database) and
names the catalog does not have go to Spark unchanged; a leading part equal to the catalog's name
(``default.ns.t``) is dropped. A name both Spark and icefloe have resolves to icefloe.

Expressions (conditions, SET values, INSERT values) are kept as the text the user wrote, cut out of
the statement at sqlglot's token positions, and evaluated by Spark: sqlglot only finds the
statement's structure, it never rewrites an expression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icefloe.errors import IcefloeError, UnsupportedFeatureError, ValidationError

if TYPE_CHECKING:
    from icefloe.catalog import Catalog
    from icefloe.spark.dml import DmlResult, MergeBuilder, SparkTable

__all__ = ["sql"]

_OPEN = {"L_PAREN", "L_BRACKET", "L_BRACE"}
_CLOSE = {"R_PAREN", "R_BRACKET", "R_BRACE"}


def sql(
    spark: SparkSession,
    text: str,
    *,
    catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
) -> DataFrame:
    """Run SQL ``text`` (one or more statements) with icefloe tables resolved through the
    icefloe catalog; returns the last statement's DataFrame. DML statements on icefloe tables
    return one row: ``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
    ``num_inserted_rows``."""
    from icefloe._optional import require
    from icefloe.spark.setup import icefloe_errors

    require("sqlglot", extra="spark", feature="icefloe.spark.sql")
    runner = _Runner(spark, catalog, dict(catalog_properties or {}))
    with icefloe_errors():
        result: DataFrame | None = None
        for statement in _split(text):
            result = runner.run(statement)
        if result is None:
            return spark.sql(text)
        return result


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Tok:
    kind: str  # sqlglot's token type name
    word: str  # upper-cased text
    start: int
    end: int  # exclusive


def _tokens(text: str) -> list[_Tok]:
    import sqlglot

    dialect = sqlglot.Dialect.get_or_raise("spark")
    return [_Tok(t.token_type.name, t.text.upper(), t.start, t.end + 1) for t in dialect.tokenize(text)]


def _depths(tokens: Sequence[_Tok]) -> list[int]:
    """The nesting depth at each token (parentheses, brackets, CASE ... END)."""
    out: list[int] = []
    depth = 0
    for t in tokens:
        if t.kind in _CLOSE or (t.word == "END" and t.kind != "STRING"):
            depth = max(0, depth - 1)
        out.append(depth)
        if t.kind in _OPEN or (t.word == "CASE" and t.kind != "STRING"):
            depth += 1
    return out


def _split(text: str) -> list[str]:
    """The statements of ``text`` (on top-level semicolons), empty ones dropped."""
    try:
        tokens = _tokens(text)
    except Exception:
        return [text]
    depth = _depths(tokens)
    out: list[str] = []
    start = 0
    for t, d in zip(tokens, depth, strict=True):
        if t.kind == "SEMICOLON" and d == 0:
            out.append(text[start : t.start])
            start = t.end
    out.append(text[start:])
    return [s for s in out if s.strip()]


class _Text:
    """One statement's text with its tokens, for cutting out the parts the user wrote."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.depth = _depths(self.tokens)

    def find(self, word: str, start: int = 0, depth: int = 0, end: int | None = None) -> int:
        """Index of the first token ``word`` at ``depth`` from token ``start``, or -1."""
        stop = len(self.tokens) if end is None else end
        for i in range(start, stop):
            if self.tokens[i].word == word and self.depth[i] == depth and self.tokens[i].kind != "STRING":
                return i
        return -1

    def find_all(self, word: str, start: int = 0, depth: int = 0) -> list[int]:
        return [
            i
            for i in range(start, len(self.tokens))
            if self.tokens[i].word == word and self.depth[i] == depth and self.tokens[i].kind != "STRING"
        ]

    def between(self, i: int, j: int) -> str:
        """The text from after token ``i`` up to token ``j`` (exclusive; ``len`` = the end)."""
        start = self.tokens[i].end
        end = self.tokens[j].start if j < len(self.tokens) else len(self.text)
        return self.text[start:end].strip()

    def index_at(self, position: int) -> int:
        """The index of the first token starting at or after character ``position``."""
        for i, t in enumerate(self.tokens):
            if t.start >= position:
                return i
        return len(self.tokens)

    def split_commas(self, i: int, j: int, depth: int) -> list[tuple[int, int]]:
        """Token ranges (exclusive bounds) between tokens ``i`` and ``j`` split on commas at ``depth``."""
        parts: list[tuple[int, int]] = []
        start = i
        for k in range(i + 1, j):
            if self.tokens[k].kind == "COMMA" and self.depth[k] == depth:
                parts.append((start, k))
                start = k
        parts.append((start, j))
        return parts


# --------------------------------------------------------------------------- the runner


class _Runner:
    def __init__(self, spark: SparkSession, catalog: str | None, catalog_properties: dict[str, str]) -> None:
        self.spark = spark
        self.catalog_option = catalog
        self.catalog_properties = catalog_properties
        self._catalog: Catalog | None = None

    # ------------------------------------------------------------------ names
    def catalog(self) -> Catalog:
        if self._catalog is None:
            from icefloe.spark._config import catalog_from_options, spark_catalog_conf

            self._catalog = catalog_from_options(self._options(), spark_catalog_conf(self.spark))
        return self._catalog

    def _options(self) -> dict[str, str]:
        options = {f"catalog.{k}": str(v) for k, v in self.catalog_properties.items()}
        if self.catalog_option:
            options["catalog"] = self.catalog_option
        return options

    def icefloe_name(self, table: Any) -> str | None:
        """The icefloe table a sqlglot Table names, or None (a Spark name)."""
        parts = [str(p.name) for p in table.parts]
        if len(parts) < 2 or parts[0].lower() == "global_temp":
            return None
        cat = self.catalog()
        candidates = [parts]
        catalog_name = getattr(cat, "name", None) or self.catalog_option or "default"
        if len(parts) > 2 and parts[0].lower() in {str(catalog_name).lower(), "icefloe"}:
            candidates.insert(0, parts[1:])
        for candidate in candidates:
            name = ".".join(candidate)
            try:
                if cat.table_exists(name):
                    return name
            except IcefloeError:
                continue
        return None

    def handle(self, name: str, alias: str | None = None) -> SparkTable:
        from icefloe.spark.dml import SparkTable

        t = SparkTable(
            self.spark, name, catalog=self.catalog_option, catalog_properties=self.catalog_properties
        )
        return t.alias(alias) if alias else t

    # ------------------------------------------------------------------ statements
    def run(self, text: str) -> DataFrame:
        import sqlglot
        from sqlglot import exp

        try:
            tree = sqlglot.parse_one(text, read="spark")
        except sqlglot.errors.SqlglotError:
            return self.spark.sql(text)
        if isinstance(tree, exp.Merge | exp.Update | exp.Delete):
            target = tree.this
            name = self.icefloe_name(target) if isinstance(target, exp.Table) else None
            if name is None:
                return _spark_sql(self.spark, self._with_views(text, tree))
            t = _Text(text)
            if isinstance(tree, exp.Merge):
                return _metrics(self.spark, self._merge(t, tree, name).execute())
            if isinstance(tree, exp.Update):
                return _metrics(self.spark, self._update(t, tree, name))
            return _metrics(self.spark, self._delete(t, tree, name))
        if isinstance(tree, exp.Insert):
            target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
            name = self.icefloe_name(target) if isinstance(target, exp.Table) else None
            if name is not None:
                return self._insert(_Text(text), tree, target, name)
            return _spark_sql(self.spark, self._with_views(text, tree))
        if isinstance(tree, exp.Create):
            self._check_create(tree)
            return _spark_sql(self.spark, self._with_views(text, tree))
        if isinstance(tree, exp.Query):
            return _spark_sql(self.spark, self._with_views(text, tree))
        self._check_other(tree)
        return self.spark.sql(text)

    def _check_create(self, tree: Any) -> None:
        from sqlglot import exp

        kind = str(tree.args.get("kind") or "").upper()
        props = tree.args.get("properties")
        using = ""
        if props is not None:
            for p in props.expressions:
                if isinstance(p, exp.FileFormatProperty):
                    using = str(p.this.name if isinstance(p.this, exp.Expression) else p.this).lower()
        if kind == "TABLE" and using == "icefloe":
            raise UnsupportedFeatureError(
                "Spark cannot keep an icefloe table in its catalog: it passes no OPTIONS to the Python "
                "data source of a catalog table, so CREATE TABLE ... USING icefloe cannot work",
                hint="use CREATE TEMPORARY VIEW v USING icefloe OPTIONS (table 'ns.t') (then "
                "spark.table('v') and SQL on v work), or name the table as ns.t in icefloe.spark.sql; create "
                "icefloe tables "
                "with icefloe.spark.create_table",
            )
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        if isinstance(target, exp.Table) and kind == "TABLE" and self.icefloe_name(target) is not None:
            raise UnsupportedFeatureError(
                f"{target.sql(dialect='spark')} is already an icefloe table",
                hint="write to it with INSERT INTO / INSERT OVERWRITE, or drop it with the icefloe catalog",
            )

    def _check_other(self, tree: Any) -> None:
        """DDL and other statements on icefloe tables are not for Spark's catalog."""
        from sqlglot import exp

        tables = [tree.this] if isinstance(getattr(tree, "this", None), exp.Table) else []
        tables += [x for x in tree.args.get("tables") or () if isinstance(x, exp.Table)]
        target = next((x for x in tables if self.icefloe_name(x) is not None), None)
        if target is not None:
            raise UnsupportedFeatureError(
                f"icefloe.spark.sql runs SELECT, INSERT, UPDATE, DELETE and MERGE on icefloe tables; "
                f"{type(tree).__name__.upper()} of {target.sql(dialect='spark')} is not one of them",
                hint="use the icefloe API: catalog.drop_table, table.update_schema(), table.update_spec(), "
                "table.inspect, ...",
            )

    # ------------------------------------------------------------------ SELECT and friends
    def _with_views(self, text: str, tree: Any) -> Any:
        """``text`` with each icefloe table replaced by a DataFrame of icefloe.spark.read, as
        arguments of spark.sql (returned as a _Formatted that run() hands to spark.sql)."""
        from sqlglot import exp

        t: _Text | None = None
        replacements: list[tuple[int, int, DataFrame]] = []
        for table in tree.find_all(exp.Table):
            name = self.icefloe_name(table)
            if name is None:
                continue
            if t is None:
                t = _Text(text)
            start = min(p.meta["start"] for p in table.parts)
            end = max(p.meta["end"] for p in table.parts) + 1
            end, options = self._time_travel(t, table, end)
            replacements.append((start, end, self._read(name, options)))
        if not replacements:
            return text
        return _Formatted(text, sorted(replacements, key=lambda r: r[0]))

    def _time_travel(self, t: _Text, table: Any, end: int) -> tuple[int, dict[str, Any]]:
        """The end of the table's ``[FOR] VERSION | TIMESTAMP AS OF x`` clause and its read
        options (none when there is no clause)."""
        version = table.args.get("version")
        if version is None:
            return end, {}
        i = t.index_at(end)
        if i < len(t.tokens) and t.tokens[i].word == "FOR":
            i += 1
        kind = t.tokens[i].word
        if i + 2 >= len(t.tokens) or t.tokens[i + 1].word != "AS" or t.tokens[i + 2].word != "OF":
            raise ValidationError(f"cannot read the time travel clause of {table.sql(dialect='spark')}")
        j = _expression_end(t, i + 3)
        value_start, value_end = t.tokens[i + 3].start, t.tokens[j - 1].end
        value_text = t.text[value_start:value_end]
        expr = version.expression
        if kind in ("VERSION", "SYSTEM_VERSION"):
            from sqlglot import exp

            if isinstance(expr, exp.Literal) and (not expr.is_string or str(expr.this).isdigit()):
                return value_end, {"snapshot_id": int(str(expr.this))}
            if isinstance(expr, exp.Literal):
                return value_end, {"ref": str(expr.this)}
            raise ValidationError(
                f"VERSION AS OF takes a snapshot id or a branch or tag name, got {value_text}"
            )
        millis = self.spark.sql(f"SELECT unix_millis(CAST({value_text} AS TIMESTAMP))").first()
        if millis is None or millis[0] is None:
            raise ValidationError(f"TIMESTAMP AS OF {value_text} is not a timestamp")
        return value_end, {"as_of_timestamp": int(millis[0])}

    def _read(self, name: str, options: dict[str, Any]) -> DataFrame:
        from icefloe.spark import read

        ref = options.pop("ref", None)
        if ref is not None:
            table = self.catalog().load_table(name)
            kind = table.metadata.refs.get(ref)
            if kind is None:
                from icefloe.errors import NoSuchSnapshotError

                raise NoSuchSnapshotError(f"table {name} has no branch or tag {ref!r}")
            if str(kind.ref_type).lower().endswith("branch"):
                options["branch"] = ref
            else:
                options["tag"] = ref
        return read(
            self.spark,
            name,
            catalog=self.catalog_option,
            catalog_properties=self.catalog_properties or None,
            **options,
        )

    def query(self, text: str) -> DataFrame:
        """A query's DataFrame (its icefloe tables resolved)."""
        return self.run(text)

    # ------------------------------------------------------------------ DML
    def _target(self, t: _Text, table: Any) -> int:
        """The token index after the target table and its alias."""
        end = max(p.meta["end"] for p in table.parts) + 1
        i = t.index_at(end)
        if table.alias:
            if i < len(t.tokens) and t.tokens[i].word == "AS":
                i += 1
            i += 1
        return i

    def _delete(self, t: _Text, tree: Any, name: str) -> DmlResult:
        table = tree.this
        after = self._target(t, table)
        where = t.find("WHERE", after)
        condition = t.between(where, len(t.tokens)) if where >= 0 else None
        return self.handle(name, table.alias or None).delete(condition)

    def _update(self, t: _Text, tree: Any, name: str) -> DmlResult:
        table = tree.this
        after = self._target(t, table)
        set_at = t.find("SET", after)
        where = t.find("WHERE", set_at + 1)
        end = where if where >= 0 else len(t.tokens)
        assignments = self._assignments(t, set_at, end)
        condition = t.between(where, len(t.tokens)) if where >= 0 else None
        return self.handle(name, table.alias or None).update(condition, set=assignments)

    def _assignments(self, t: _Text, i: int, j: int) -> dict[str, str]:
        """``a = expr, t.b = expr`` between tokens ``i`` (exclusive) and ``j`` (exclusive)."""
        out: dict[str, str] = {}
        for lo, hi in t.split_commas(i, j, t.depth[i]):
            eq = next(
                (k for k in range(lo + 1, hi) if t.tokens[k].kind == "EQ" and t.depth[k] == t.depth[i]), -1
            )
            if eq < 0:
                raise ValidationError(f"cannot read the assignment {t.between(lo, hi)!r}")
            column = _column_name(t.between(lo, eq))
            out[column] = t.between(eq, hi)
        return out

    def _merge(self, t: _Text, tree: Any, name: str) -> MergeBuilder:
        from sqlglot import exp

        table = tree.this
        using = t.find("USING", self._target(t, table))
        on = t.find("ON", using + 1)
        whens = t.find_all("WHEN", on + 1)
        if using < 0 or on < 0 or not whens:
            raise ValidationError(
                "cannot read the MERGE statement", hint="MERGE INTO t USING s ON ... WHEN ..."
            )
        source_node = tree.args.get("using")
        source_alias = source_node.alias if source_node is not None else ""
        if not source_alias and isinstance(source_node, exp.Table):
            source_alias = str(source_node.name)
        source = self.query("SELECT * FROM " + t.between(using, on))
        if source_alias:
            source = source.alias(source_alias)
        builder = self.handle(name, table.alias or None).merge(source, t.between(on, whens[0]))
        ast_whens = tree.args["whens"].expressions
        if len(ast_whens) != len(whens):
            raise ValidationError("cannot read the WHEN clauses of the MERGE statement")
        bounds = [*whens, len(t.tokens)]
        for k, when in enumerate(ast_whens):
            self._when(t, builder, when, bounds[k], bounds[k + 1])
        return builder

    def _when(self, t: _Text, builder: MergeBuilder, when: Any, i: int, j: int) -> None:
        from sqlglot import exp

        then = t.find("THEN", i + 1, end=j)
        and_at = t.find("AND", i + 1, end=then)
        condition = t.between(and_at, then) if and_at >= 0 else None
        action = when.args.get("then")
        matched = bool(when.args.get("matched"))
        by_source = bool(when.args.get("source"))
        if isinstance(action, exp.Var) and str(action.this).upper() == "DELETE":
            if matched:
                builder.when_matched_delete(condition)
            elif by_source:
                builder.when_not_matched_by_source_delete(condition)
            else:
                raise ValidationError("WHEN NOT MATCHED clauses insert; they cannot DELETE")
            return
        if isinstance(action, exp.Update):
            star = len(action.expressions) == 1 and isinstance(action.expressions[0], exp.Star)
            if star:
                if not matched:
                    raise ValidationError("UPDATE SET * is for WHEN MATCHED clauses")
                builder.when_matched_update_all(condition)
                return
            set_at = t.find("SET", then + 1, end=j)
            assignments = self._assignments(t, set_at, j)
            if matched:
                builder.when_matched_update(assignments, condition)
            elif by_source:
                builder.when_not_matched_by_source_update(assignments, condition)
            else:
                raise ValidationError("WHEN NOT MATCHED clauses insert; they cannot UPDATE")
            return
        if isinstance(action, exp.Insert):
            if matched or by_source:
                raise ValidationError("INSERT is for WHEN NOT MATCHED [BY TARGET] clauses")
            if isinstance(action.this, exp.Star):
                builder.when_not_matched_insert_all(condition)
                return
            columns = [_column_name(c.sql(dialect="spark")) for c in action.this.expressions]
            values_at = t.find("VALUES", then + 1, end=j)
            open_at = values_at + 1
            close_at = next(
                k
                for k in range(open_at + 1, j)
                if t.tokens[k].kind == "R_PAREN" and t.depth[k] == t.depth[open_at]
            )
            parts = t.split_commas(open_at, close_at, t.depth[open_at] + 1)
            values = [t.between(lo, hi) for lo, hi in parts]
            if len(values) != len(columns):
                raise ValidationError(f"INSERT names {len(columns)} columns but gives {len(values)} values")
            builder.when_not_matched_insert(dict(zip(columns, values, strict=True)), condition)
            return
        raise ValidationError(f"cannot read the action of WHEN clause {when.sql(dialect='spark')}")

    # ------------------------------------------------------------------ INSERT
    def _insert(self, t: _Text, tree: Any, table: Any, name: str) -> DataFrame:
        from sqlglot import exp

        from icefloe.spark import write
        from icefloe.spark.types import to_spark_type

        query_node = tree.args.get("expression")
        if query_node is None:
            raise ValidationError("INSERT needs a query or VALUES")
        start = self._query_start(t, tree, table)
        df = self.query(t.text[t.tokens[start].start :])
        loaded = self.catalog().load_table(name)
        schema = loaded.schema()
        static: dict[str, str] = {}
        dynamic_partitions = False
        partition = table.args.get("partition")
        for p in partition.expressions if partition is not None else ():
            if isinstance(p, exp.EQ):
                static[_column_name(p.this.sql(dialect="spark"))] = p.expression.sql(dialect="spark")
            else:
                dynamic_partitions = True
        listed = (
            [_column_name(c.sql(dialect="spark")) for c in tree.this.expressions]
            if isinstance(tree.this, exp.Schema)
            else [f.name for f in schema.fields if f.name not in static]
        )
        if len(df.columns) != len(listed):
            raise ValidationError(
                f"INSERT into {name} gives {len(df.columns)} columns for {len(listed)}: {', '.join(listed)}",
                hint="name the columns: INSERT INTO ns.t (a, b) SELECT ...",
            )
        by_lower = {f.name.lower(): f for f in schema.fields}
        values = {}
        for source, column in zip(df.columns, listed, strict=True):
            field = by_lower.get(column.lower())
            if field is None:
                raise ValidationError(f"{column!r} is not a column of {name}")
            values[field.name] = df[_quoted(source)]
        for column, literal in static.items():
            field = by_lower.get(column.lower())
            if field is None:
                raise ValidationError(f"partition column {column!r} is not a column of {name}")
            values[field.name] = F.expr(literal)
        df = df.select(
            *[
                (values[f.name] if f.name in values else F.lit(None))
                .cast(to_spark_type(f.field_type))
                .alias(f.name)
                for f in schema.fields
            ]
        )
        options: dict[str, str] = {}
        mode = "append"
        if tree.args.get("overwrite"):
            mode = "overwrite"
            conf = (
                self.spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static") or "static"
            ).lower()
            if static:
                options["overwrite-filter"] = " and ".join(f"{c} = {v}" for c, v in static.items())
            elif dynamic_partitions or conf == "dynamic":
                options["partition-overwrite-mode"] = "dynamic"
            else:
                options["partition-overwrite-mode"] = "static"
        before = loaded.current_snapshot()
        write(
            df,
            name,
            mode,
            options=options,
            catalog=self.catalog_option,
            catalog_properties=self.catalog_properties or None,
        )
        after = loaded.refresh().current_snapshot()
        inserted = 0
        if after is not None and (before is None or after.snapshot_id != before.snapshot_id):
            inserted = int(after.summary.props.get("added-records", "0"))
        return self.spark.createDataFrame(
            [(inserted, inserted)], "num_affected_rows long, num_inserted_rows long"
        )

    def _query_start(self, t: _Text, tree: Any, table: Any) -> int:
        """Token index where the INSERT's query starts (after table, PARTITION and columns)."""
        i = t.index_at(max(p.meta["end"] for p in table.parts) + 1)
        n = len(t.tokens)
        while i < n:
            tok = t.tokens[i]
            if tok.word == "PARTITION" or (tok.kind == "L_PAREN" and not self._query_paren(t, i)):
                j = i + 1 if tok.word == "PARTITION" else i
                close = next(
                    k for k in range(j + 1, n) if t.tokens[k].kind == "R_PAREN" and t.depth[k] == t.depth[j]
                )
                i = close + 1
                continue
            if tok.word in ("BY", "NAME"):
                i += 1
                continue
            return i
        raise ValidationError("INSERT needs a query or VALUES")

    @staticmethod
    def _query_paren(t: _Text, i: int) -> bool:
        """Whether the parenthesis at token ``i`` opens a query (not a column list)."""
        return i + 1 < len(t.tokens) and t.tokens[i + 1].word in ("SELECT", "WITH", "VALUES", "FROM", "TABLE")


@dataclass(frozen=True)
class _Formatted:
    """A statement with DataFrames in place of icefloe tables, for spark.sql's formatter."""

    text: str
    replacements: list[tuple[int, int, DataFrame]]

    def args(self) -> tuple[str, dict[str, DataFrame]]:
        out: list[str] = []
        frames: dict[str, DataFrame] = {}
        position = 0
        for k, (start, end, df) in enumerate(self.replacements):
            out.append(_escape(self.text[position:start]))
            key = f"icefloe_table_{k}"
            out.append("{" + key + "}")
            frames[key] = df
            position = end
        out.append(_escape(self.text[position:]))
        return "".join(out), frames


_OPERATORS = {"PLUS", "DASH", "STAR", "SLASH", "DPIPE", "MOD"}
_TYPED_LITERALS = {"TIMESTAMP", "DATE", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "TIMESTAMPTZ", "INTERVAL"}


def _expression_end(t: _Text, i: int) -> int:
    """The token index after the value expression starting at token ``i`` (a time travel
    value: a literal, ``TIMESTAMP '...'``, a function call, ``INTERVAL '1' DAY``, and these
    combined with arithmetic operators)."""
    n = len(t.tokens)
    while i < n:
        word = t.tokens[i].word
        i += 1
        if word == "INTERVAL":
            i += 1  # the value; then an optional unit (DAY, HOUR, ...)
            unit = i < n and t.tokens[i].kind not in _OPERATORS and t.tokens[i].kind != "STRING"
            if unit and t.tokens[i].word not in ("AS", "WHERE", "JOIN", "ON", "GROUP", "ORDER", "LIMIT"):
                i += 1
        elif word in _TYPED_LITERALS and i < n and t.tokens[i].kind == "STRING":
            i += 1
        if i < n and t.tokens[i].kind == "L_PAREN":
            depth = t.depth[i]
            i = next(k for k in range(i + 1, n) if t.tokens[k].kind == "R_PAREN" and t.depth[k] == depth) + 1
        if i < n and t.tokens[i].kind in _OPERATORS:
            i += 1
            continue
        return i
    return i


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _spark_sql(spark: SparkSession, statement: str | _Formatted) -> DataFrame:
    if isinstance(statement, _Formatted):
        text, frames = statement.args()
        kwargs: dict[str, Any] = dict(frames)
        return spark.sql(text, **kwargs)
    return spark.sql(statement)


def _column_name(text: str) -> str:
    """A (possibly qualified, back-quoted) column reference's own name."""
    import sqlglot
    from sqlglot import exp

    try:
        node = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        node = None
    if isinstance(node, exp.Column | exp.Identifier):
        return str(node.name)
    return text.strip().strip("`")


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _metrics(spark: SparkSession, result: DmlResult) -> DataFrame:
    row = (result.rows_affected, result.rows_updated, result.rows_deleted, result.rows_inserted)
    return spark.createDataFrame(
        [row], "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long"
    )
