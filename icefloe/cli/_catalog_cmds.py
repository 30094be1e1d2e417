"""Namespaces and tables: list, describe, create, load data, drop, rename, set properties."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli._output import emit_done, emit_rows, write_json
from icefloe.cli._state import State, json_option, parse_key_values, pass_state
from icefloe.errors import SchemaError, TableAlreadyExistsError, ValidationError
from icefloe.table._repr import format_bytes, format_millis, partition_terms, sort_terms

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.spec.schema import Schema
    from icefloe.table import Table

__all__ = ["COMMANDS", "describe_table", "open_data", "parse_columns"]


def _dotted(levels: tuple[str, ...]) -> str:
    return ".".join(levels)


# --------------------------------------------------------------------------- namespaces


@click.command("namespaces")
@click.argument("parent", required=False, default="")
@click.option("--recursive", "-r", is_flag=True, help="Also the namespaces below them, every level.")
@json_option
@pass_state
def namespaces_cmd(state: State, parent: str, recursive: bool) -> None:
    """List the namespaces (below PARENT)."""
    cat = state.catalog()
    found: list[tuple[str, ...]] = []
    todo = [tuple(parent.split(".")) if parent else ()]
    while todo:
        children = cat.list_namespaces(todo.pop(0))
        found.extend(children)
        if recursive:
            todo.extend(children)
    names = sorted(_dotted(ns) for ns in found)
    if state.json:
        write_json(names)
        return
    emit_rows(state, [{"namespace": n} for n in names], empty="(no namespaces)")


@click.command("create-namespace")
@click.argument("namespace")
@click.option("--property", "-p", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed when it exists already.")
@json_option
@pass_state
def create_namespace_cmd(
    state: State, namespace: str, properties: tuple[str, ...], if_not_exists: bool
) -> None:
    """Create NAMESPACE (dotted for nested ones: a.b)."""
    props = parse_key_values(properties, "--property")
    cat = state.catalog()
    if if_not_exists:
        created = cat.create_namespace_if_not_exists(namespace, props)
    else:
        cat.create_namespace(namespace, props)
        created = True
    what = "created" if created else "already exists:"
    emit_done(state, f"{what} namespace {namespace}", {"namespace": namespace, "created": created})


@click.command("drop-namespace")
@click.argument("namespace")
@json_option
@pass_state
def drop_namespace_cmd(state: State, namespace: str) -> None:
    """Drop an empty NAMESPACE."""
    state.catalog().drop_namespace(namespace)
    emit_done(state, f"dropped namespace {namespace}", {"namespace": namespace, "dropped": True})


# --------------------------------------------------------------------------- tables


@click.command("tables")
@click.argument("namespace", required=False, default="")
@json_option
@pass_state
def tables_cmd(state: State, namespace: str) -> None:
    """List the tables of NAMESPACE (of every namespace when omitted)."""
    cat = state.catalog()
    spaces: list[tuple[str, ...]] = []
    if namespace:
        spaces.append(tuple(namespace.split(".")))
    else:
        todo: list[tuple[str, ...]] = [()]
        while todo:
            children = cat.list_namespaces(todo.pop(0))
            spaces.extend(children)
            todo.extend(children)
    names = sorted(_dotted(t) for ns in spaces for t in cat.list_tables(ns))
    if state.json:
        write_json(names)
        return
    emit_rows(state, [{"table": n} for n in names], empty="(no tables)")


def _summary_int(summary: Any, key: str) -> int | None:
    value = summary.get(key) if summary is not None else None
    return int(value) if value is not None and str(value).lstrip("-").isdigit() else None


def describe_table(table: Table) -> dict[str, Any]:
    """What ``icefloe describe`` shows, as JSON types."""
    md = table.metadata
    schema = md.schema()
    snap = md.current_snapshot()
    summary = snap.summary if snap is not None else None
    counts = {
        key.replace("-", "_"): _summary_int(summary, key)
        for key in (
            "total-records",
            "total-data-files",
            "total-delete-files",
            "total-files-size",
            "total-position-deletes",
            "total-equality-deletes",
        )
    }
    return {
        "table": table.name,
        "location": md.location,
        "metadata_location": table.metadata_location,
        "table_uuid": None if md.table_uuid is None else str(md.table_uuid),
        "format_version": md.format_version,
        "schema": {
            "schema_id": schema.schema_id,
            "identifier_fields": [schema.column_name(i) for i in schema.identifier_field_ids],
            "fields": [
                {
                    "id": f.field_id,
                    "name": f.name,
                    "type": str(f.field_type),
                    "required": f.required,
                    "doc": f.doc,
                }
                for f in schema.fields
            ],
        },
        "partition_spec": {"spec_id": md.default_spec_id, "fields": partition_terms(md.spec(), schema)},
        "sort_order": {"order_id": md.default_sort_order_id, "fields": sort_terms(md.sort_order(), schema)},
        "properties": dict(sorted(md.properties.items())),
        "current_snapshot": None
        if snap is None
        else {
            "snapshot_id": snap.snapshot_id,
            "parent_snapshot_id": snap.parent_snapshot_id,
            "sequence_number": snap.sequence_number,
            "timestamp_ms": snap.timestamp_ms,
            "operation": snap.operation.value,
            "summary": dict(snap.summary.properties),
        },
        "counts": {
            **counts,
            "snapshots": len(md.snapshots),
            "refs": len(md.refs),
            "schemas": len(md.schemas),
        },
        "refs": {
            name: {"type": r.ref_type.value, "snapshot_id": r.snapshot_id} for name, r in md.refs.items()
        },
    }


def _kv_table(title: str, rows: list[tuple[str, Any]]) -> RichTable:
    t = RichTable(title=title, title_justify="left", show_header=False, show_edge=False, box=None)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(k, Text("-" if v is None else str(v)))
    return t


@click.command("describe")
@click.argument("table")
@json_option
@pass_state
def describe_cmd(state: State, table: str) -> None:
    """Schema, partitioning, sort order, properties, current snapshot, size and counts of TABLE."""
    d = describe_table(state.table(table))
    if state.json:
        write_json(d)
        return
    out = state.out
    c = d["counts"]
    snap = d["current_snapshot"]
    out.print(Text(d["table"], style="bold"))
    out.print(
        _kv_table(
            "",
            [
                ("location", d["location"]),
                ("metadata", d["metadata_location"]),
                ("format version", d["format_version"]),
                ("uuid", d["table_uuid"]),
                ("partitioned by", ", ".join(d["partition_spec"]["fields"]) or "(unpartitioned)"),
                ("sorted by", ", ".join(d["sort_order"]["fields"]) or "(unsorted)"),
            ],
        )
    )
    out.print()
    schema = RichTable(title=f"Schema {d['schema']['schema_id']}", title_justify="left", show_edge=False)
    for col in ("id", "name", "type", "required", "doc"):
        schema.add_column(col, overflow="fold")
    for f in d["schema"]["fields"]:
        schema.add_row(str(f["id"]), f["name"], f["type"], "yes" if f["required"] else "", f["doc"] or "")
    out.print(schema)
    out.print()
    sizes = [
        ("rows", c["total_records"]),
        ("data files", c["total_data_files"]),
        ("delete files", c["total_delete_files"]),
        ("position deletes", c["total_position_deletes"]),
        ("equality deletes", c["total_equality_deletes"]),
        ("total size", format_bytes(c["total_files_size"]) if c["total_files_size"] is not None else None),
        ("snapshots", c["snapshots"]),
        ("branches and tags", ", ".join(f"{n} ({r['type']})" for n, r in d["refs"].items()) or "-"),
    ]
    if snap is None:
        out.print(_kv_table("Current snapshot", [("snapshot", "(none: the table is empty)")]))
    else:
        out.print(
            _kv_table(
                "Current snapshot",
                [
                    ("snapshot id", snap["snapshot_id"]),
                    ("operation", snap["operation"]),
                    ("committed", format_millis(snap["timestamp_ms"])),
                    ("parent", snap["parent_snapshot_id"]),
                    *sizes,
                ],
            )
        )
    if d["properties"]:
        out.print()
        out.print(_kv_table("Properties", list(d["properties"].items())))


# --------------------------------------------------------------------------- create / load

_ALIASES = {
    "bigint": "long",
    "int64": "long",
    "integer": "int",
    "int32": "int",
    "smallint": "int",
    "tinyint": "int",
    "short": "int",
    "byte": "int",
    "varchar": "string",
    "text": "string",
    "char": "string",
    "str": "string",
    "bool": "boolean",
    "real": "float",
    "float32": "float",
    "float64": "double",
    "bytes": "binary",
    "varbinary": "binary",
    "timestamp_ntz": "timestamp",
    "timestamp_tz": "timestamptz",
    "timestamp_ltz": "timestamptz",
}
_COLUMN = re.compile(r"^\s*(\S+)\s+(.+?)(\s+not\s+null|\s+required)?\s*$", re.IGNORECASE)


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def parse_columns(text: str) -> Schema:
    """``"id long not null, name string, price decimal(10, 2)"`` as a schema (primitive types:
    Iceberg's names and common SQL ones such as bigint, varchar)."""
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import NestedField, parse_primitive

    fields = []
    for i, part in enumerate(_split_top(text), start=1):
        m = _COLUMN.match(part)
        if m is None:
            raise SchemaError(
                f"cannot read the column definition {part.strip()!r}",
                hint="write columns as 'name type [not null]', separated by commas: "
                "--schema 'id long not null, ts timestamptz, amount decimal(10, 2)'",
            )
        name, type_text, required = m.group(1).strip('`"'), m.group(2).strip(), m.group(3) is not None
        lowered = type_text.lower()
        type_text = _ALIASES.get(lowered, lowered)
        try:
            field_type = parse_primitive(type_text)
        except SchemaError:
            raise SchemaError(
                f"unknown type {m.group(2).strip()!r} of column {name!r}",
                hint="use boolean, int, long, float, double, decimal(P, S), date, time, timestamp, "
                "timestamptz, string, uuid, binary or fixed[N]; for nested types create the table "
                "from a Parquet file (--from data.parquet)",
            ) from None
        fields.append(NestedField(i, name, field_type, required=required))
    if not fields:
        raise SchemaError("the schema has no columns", hint="--schema 'id long, name string'")
    return Schema(*fields)


def open_data(path: str) -> tuple[pa.RecordBatchReader, int | None]:
    """A Parquet, CSV or JSON-lines file as a stream of batches, and its row count when the
    format tells it up front (Parquet)."""
    import pyarrow as pa

    p = Path(path)
    if not p.is_file():
        raise ValidationError(
            f"no such file: {path}", hint="give the path of a Parquet, CSV or JSON-lines file"
        )
    suffix = "".join(p.suffixes[-2:]).lower() if p.suffix.lower() in (".gz", ".zst") else p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(p)
        return pa.RecordBatchReader.from_batches(pf.schema_arrow, pf.iter_batches()), pf.metadata.num_rows
    if suffix.startswith(".csv"):
        import pyarrow.csv as pcsv

        return pcsv.open_csv(p), None
    if suffix.startswith((".json", ".jsonl", ".ndjson")):
        import pyarrow.json as pjson

        table = pjson.read_json(p)
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), table.num_rows
    raise ValidationError(f"cannot tell the format of {path}", hint="name the file .parquet, .csv or .jsonl")


def _append_files(state: State, table: Table, paths: tuple[str, ...], branch: str) -> tuple[int, int]:
    """Append each file as one snapshot; returns (rows, snapshots)."""
    rows = snapshots = 0
    for path in paths:
        reader, _total = open_data(path)
        counted = 0

        def count(batches: pa.RecordBatchReader) -> Any:
            nonlocal counted
            for b in batches:
                counted += b.num_rows
                yield b

        import pyarrow as pa

        stream = pa.RecordBatchReader.from_batches(reader.schema, count(reader))
        with state.progress(f"appending {Path(path).name}") as progress:
            snap = table.append(stream, branch=branch, progress=progress)
        rows += counted
        snapshots += snap is not None
    return rows, snapshots


@click.command("create")
@click.argument("table")
@click.option("--schema", "columns", metavar="COLUMNS", help="'id long not null, ts timestamptz, ...'.")
@click.option(
    "--from",
    "from_files",
    multiple=True,
    metavar="FILE",
    help="Take the schema from this Parquet/CSV/JSON-lines file and load its rows; repeatable.",
)
@click.option(
    "--partition-by", multiple=True, metavar="TERM", help="day(ts), bucket(16, id), a column; repeatable."
)
@click.option("--sort-by", multiple=True, metavar="TERM", help="'id', 'day(ts) desc nulls last'; repeatable.")
@click.option(
    "--property", "-p", "properties", multiple=True, metavar="KEY=VALUE", help="Table property; repeatable."
)
@click.option("--location", help="Table location (default: below the warehouse).")
@click.option(
    "--if-not-exists", is_flag=True, help="Succeed when the table exists already (nothing is loaded)."
)
@json_option
@pass_state
def create_cmd(
    state: State,
    table: str,
    columns: str | None,
    from_files: tuple[str, ...],
    partition_by: tuple[str, ...],
    sort_by: tuple[str, ...],
    properties: tuple[str, ...],
    location: str | None,
    if_not_exists: bool,
) -> None:
    """Create TABLE (namespace.table) from --schema or from data files (--from)."""
    if (columns is None) == (not from_files):
        raise click.UsageError("give either --schema or --from")
    schema: Any = parse_columns(columns) if columns is not None else open_data(from_files[0])[0].schema
    cat = state.catalog()
    try:
        t = cat.create_table(
            table,
            schema=schema,
            partition_by=list(partition_by) or None,
            location=location,
            properties=parse_key_values(properties, "--property"),
        )
    except TableAlreadyExistsError:
        if not if_not_exists:
            raise
        emit_done(state, f"table {table} already exists", {"table": table, "created": False})
        return
    try:
        if sort_by:
            t.replace_sort_order(*sort_by)
        rows, snapshots = _append_files(state, t, from_files, "main")
    except BaseException:
        cat.drop_table(table, purge=True)  # all or nothing: no half-made table
        raise
    loaded = f", loaded {rows:,} rows" if from_files else ""
    emit_done(
        state,
        f"created {table} at {t.location}{loaded}",
        {"table": table, "created": True, "location": t.location, "rows": rows, "snapshots": snapshots},
    )


@click.command("append")
@click.argument("table")
@click.argument("files", nargs=-1, required=True)
@click.option("--branch", default="main", show_default=True)
@json_option
@pass_state
def append_cmd(state: State, table: str, files: tuple[str, ...], branch: str) -> None:
    """Append the rows of Parquet/CSV/JSON-lines FILES to TABLE (one snapshot per file)."""
    t = state.table(table)
    rows, snapshots = _append_files(state, t, files, branch)
    snap = t.current_snapshot()
    emit_done(
        state,
        f"appended {rows:,} rows to {table} in {snapshots} snapshot(s)",
        {
            "table": table,
            "rows": rows,
            "snapshots": snapshots,
            "snapshot_id": snap.snapshot_id if snap else None,
        },
    )


@click.command("drop")
@click.argument("table")
@click.option(
    "--purge", is_flag=True, help="Also delete every file of the table (data, manifests, metadata)."
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before purging.")
@json_option
@pass_state
def drop_cmd(state: State, table: str, purge: bool, yes: bool) -> None:
    """Drop TABLE from the catalog (its files stay unless --purge)."""
    cat = state.catalog()
    if purge and not yes:
        if state.json:
            raise click.UsageError("--purge with --json needs --yes (there is no one to ask)")
        click.confirm(f"delete every file of {table}?", abort=True, err=True)
    report = cat.drop_table(table, purge=purge)
    result: dict[str, Any] = {"table": table, "dropped": True, "purged": purge}
    message = f"dropped {table}"
    if report is not None:
        result.update(
            deleted_files=report.deleted,
            not_deleted=[str(f) for f in report.not_deleted],
            complete=report.complete,
        )
        message += f" and deleted {report.deleted} files"
        if not report.complete:
            message += f" ({len(report.not_deleted)} could not be deleted)"
    emit_done(state, message, result)


@click.command("rename")
@click.argument("table")
@click.argument("new_name")
@json_option
@pass_state
def rename_cmd(state: State, table: str, new_name: str) -> None:
    """Rename TABLE to NEW_NAME (also across namespaces; files stay where they are)."""
    state.catalog().rename_table(table, new_name)
    emit_done(state, f"renamed {table} to {new_name}", {"table": table, "new_name": new_name})


@click.command("set-properties")
@click.argument("table")
@click.argument("assignments", nargs=-1, metavar="KEY=VALUE...")
@click.option("--unset", multiple=True, metavar="KEY", help="Remove this property; repeatable.")
@json_option
@pass_state
def set_properties_cmd(
    state: State, table: str, assignments: tuple[str, ...], unset: tuple[str, ...]
) -> None:
    """Set (KEY=VALUE) or remove (--unset KEY) table properties, in one commit."""
    updates = parse_key_values(assignments, "property")
    if not updates and not unset:
        raise click.UsageError("give KEY=VALUE pairs to set or --unset KEY")
    t = state.table(table)
    with t.transaction() as tx:
        if updates:
            tx.set_properties(**updates)
        if unset:
            tx.remove_properties(*unset)
    emit_done(
        state,
        f"{table}: set {', '.join(updates) or '-'}; removed {', '.join(unset) or '-'}",
        {"table": table, "set": updates, "removed": list(unset)},
    )


COMMANDS = [
    namespaces_cmd,
    create_namespace_cmd,
    drop_namespace_cmd,
    tables_cmd,
    describe_cmd,
    create_cmd,
    append_cmd,
    drop_cmd,
    rename_cmd,
    set_properties_cmd,
]
