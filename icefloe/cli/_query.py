"""``icefloe query "SELECT ... FROM ns.t ..."``: SQL on DuckDB over icefloe scans.

sqlglot parses the statement (DuckDB's dialect, or Spark's when DuckDB's cannot read it) and
finds its table references; each one with a namespace (``ns.t``, ``a.b.t``) becomes an icefloe
scan of that table, projected to the columns the statement names, registered in DuckDB as an
Arrow stream (:class:`icefloe.table.scan.ArrowStreamSource`) and referenced under its own name
(keeping ``t`` as its alias). DuckDB's result is streamed out batch by batch.
"""

from __future__ import annotations

import csv
import json
import sys
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table as RichTable
from rich.text import Text

from icefloe._optional import require
from icefloe.cli._output import _cell, plain
from icefloe.cli._state import State, json_option, pass_state
from icefloe.errors import ValidationError

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.table import DataScan, Table

__all__ = ["COMMANDS", "QueryPlan", "plan_query"]

_BATCH_ROWS = 10_000


class QueryPlan:
    """The rewritten statement and the scans it reads (``names[i]`` is registered as
    ``scans[i]``)."""

    def __init__(self, sql: str, names: list[str], scans: list[DataScan], tables: list[str]) -> None:
        self.sql = sql
        self.names = names
        self.scans = scans
        self.tables = tables


def _parse(sql: str, dialect: str | None) -> tuple[Any, str]:
    sqlglot = require("sqlglot", extra="duckdb", feature="icefloe query")
    errors = []
    for candidate in [dialect] if dialect else ["duckdb", "spark"]:
        try:
            statements = [s for s in sqlglot.parse(sql, read=candidate) if s is not None]
        except sqlglot.errors.SqlglotError as e:
            errors.append(f"{candidate}: {' '.join(str(e).split())}")
            continue
        if len(statements) != 1:
            raise ValidationError(
                f"expected one SQL statement, got {len(statements)}", hint="run one statement per query"
            )
        return statements[0], candidate
    raise ValidationError(f"cannot parse the query ({'; '.join(errors)})", hint="check the SQL syntax")


def plan_query(
    catalog: Any,
    sql: str,
    *,
    dialect: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: str | None = None,
) -> QueryPlan:
    """Parse ``sql``, resolve its ``namespace.table`` references in ``catalog`` and rewrite it for
    DuckDB (see the module doc)."""
    from sqlglot import exp

    tree, _ = _parse(sql, dialect)
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    # Every identifier the statement uses: a scan reads only the columns named somewhere in it
    # (a superset of what it needs), all columns when a star selects them.
    identifiers = {i.name.lower() for i in tree.find_all(exp.Identifier)}
    needs_all = any(not isinstance(s.parent, exp.Count) for s in tree.find_all(exp.Star)) or any(
        isinstance(f, exp.Anonymous) and str(f.name).lower() == "columns"
        for f in tree.find_all(exp.Anonymous)
    )
    loaded: dict[tuple[str, ...], Table] = {}
    names: list[str] = []
    scans: list[DataScan] = []
    tables: list[str] = []
    for node in list(tree.find_all(exp.Table)):
        if not isinstance(node.this, exp.Identifier):
            continue  # a table function: read_parquet(...), range(10), ...
        parts = tuple(p for p in (node.catalog, node.db, node.name) if p)
        if len(parts) < 2 or (len(parts) == 1 and parts[0].lower() in cte_names):
            continue  # a CTE, or a table of DuckDB's own: left to DuckDB
        table = loaded.get(parts)
        if table is None:
            table = loaded[parts] = catalog.load_table(parts)
        scan = table.scan(snapshot_id=snapshot_id, ref=ref, as_of_timestamp=as_of)
        fields = [f.name for f in scan.schema().fields]
        if not needs_all:
            used = [f for f in fields if f.lower() in identifiers] or fields[:1]
            scan = scan.select(*used)
        name = f"__icefloe_{len(names)}"
        names.append(name)
        scans.append(scan)
        tables.append(".".join(parts))
        alias = node.alias
        node.set("catalog", None)
        node.set("db", None)
        node.set("this", exp.to_identifier(name))
        if not alias:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(parts[-1])))
    # columns qualified with the namespace (ns.t.col) refer to the alias now
    for column in tree.find_all(exp.Column):
        if column.args.get("db") is not None:
            column.set("db", None)
            column.set("catalog", None)
    return QueryPlan(tree.sql(dialect="duckdb"), names, scans, tables)


def _execute(plan: QueryPlan) -> pa.RecordBatchReader:
    duckdb = require("duckdb", extra="duckdb", feature="icefloe query")
    con = duckdb.connect()
    for name, scan in zip(plan.names, plan.scans, strict=True):
        scan.to_duckdb(name, con)
    try:
        relation = con.sql(plan.sql)
        if relation is None:  # a statement without a result
            import pyarrow as pa

            return pa.RecordBatchReader.from_batches(pa.schema([]), [])
        if hasattr(relation, "to_arrow_reader"):  # DuckDB 1.4+
            return relation.to_arrow_reader(_BATCH_ROWS)  # type: ignore[no-any-return]
        return relation.fetch_arrow_reader(_BATCH_ROWS)  # type: ignore[no-any-return]
    except duckdb.Error as e:
        message = " ".join(str(e).split())
        hint = f"the statement DuckDB ran: {plan.sql}"
        if "does not exist" in message and "Table" in message:
            hint += "; name icefloe tables with their namespace (ns.table)"
        raise ValidationError(f"DuckDB: {message}", hint=hint) from None


def _rows(reader: pa.RecordBatchReader) -> Any:
    for batch in reader:
        yield from batch.to_pylist()


@click.command("query")
@click.argument("sql")
@click.option(
    "--dialect", type=click.Choice(["duckdb", "spark"]), help="SQL dialect [default: DuckDB, then Spark]."
)
@click.option("--snapshot", "snapshot_id", type=int, help="Read every table at this snapshot id.")
@click.option("--ref", help="Read every table at this branch or tag.")
@click.option("--as-of", help="Read every table as of this time (ISO-8601 or epoch ms).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV output (streamed).")
@click.option(
    "--max-rows",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="Rows shown in the table view.",
)
@click.option(
    "--explain", is_flag=True, help="Print the statement DuckDB runs and the scans, without running it."
)
@json_option
@pass_state
def query_cmd(
    state: State,
    sql: str,
    dialect: str | None,
    snapshot_id: int | None,
    ref: str | None,
    as_of: str | None,
    as_csv: bool,
    max_rows: int,
    explain: bool,
) -> None:
    """Run SQL on DuckDB over icefloe tables (namespace.table references); the rows stream out.

    \b
    icefloe query "SELECT ts::date AS d, count(*) FROM sales.orders GROUP BY d ORDER BY d"
    icefloe query --json "SELECT * FROM sales.orders WHERE id < 10"
    """
    as_of_value: Any = int(as_of) if as_of is not None and as_of.isdigit() else as_of
    plan = plan_query(
        state.catalog(), sql, dialect=dialect, snapshot_id=snapshot_id, ref=ref, as_of=as_of_value
    )
    if explain:
        info: dict[str, Any] = {
            "sql": plan.sql,
            "scans": [
                {"name": n, "table": t, "columns": [f.name for f in s.projection().fields], "scan": repr(s)}
                for n, t, s in zip(plan.names, plan.tables, plan.scans, strict=True)
            ],
        }
        if state.json:
            click.echo(json.dumps(info, indent=2))
        else:
            state.out.print(Text(plan.sql))
            for s in info["scans"]:
                state.out.print(Text(f"{s['name']} = {s['table']} columns {', '.join(s['columns'])}"))
        return
    reader = _execute(plan)
    names = list(reader.schema.names)
    if state.json:
        out = sys.stdout
        out.write("[")
        first = True
        for row in _rows(reader):
            out.write(("\n  " if first else ",\n  ") + json.dumps(plain(row), ensure_ascii=False))
            first = False
        out.write("\n]\n" if not first else "]\n")
        return
    if as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        for row in _rows(reader):
            writer.writerow(["" if row[n] is None else plain(row[n]) for n in names])
        return
    table = RichTable(show_edge=False, header_style="bold")
    for n in names:
        table.add_column(n, overflow="fold")
    shown = 0
    more = False
    for row in _rows(reader):
        if shown == max_rows:
            more = True
            break
        table.add_row(*(Text(_cell(row[n])) for n in names))
        shown += 1
    state.out.print(table)
    note = f"{shown} row{'s' if shown != 1 else ''}"
    if more:
        note = f"first {shown} rows shown (--max-rows N, or --json / --csv for all)"
    state.err.print(Text(note, style="dim"))


COMMANDS = [query_cmd]
