"""Text for people: partition specs and sort orders the way they are written
(``day(ts)``, ``bucket(16, id)``, ``id desc nulls last``), sizes and times, and the ``repr`` of a
table. Shared by the reprs, ``table.health()`` and the CLI."""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.schema import Schema
    from icefloe.spec.sort_order import SortOrder
    from icefloe.table._table import Table

__all__ = ["format_bytes", "format_millis", "partition_terms", "sort_terms", "table_repr"]

_PARAM = re.compile(r"^(\w+)\[(\d+)\]$")


def _term(transform: object, column: str) -> str:
    text = str(transform)
    if text == "identity":
        return column
    m = _PARAM.match(text)
    if m:
        return f"{m.group(1)}({m.group(2)}, {column})"
    return f"{text}({column})"


def _column(schema: Schema, field_id: int) -> str:
    try:
        return schema.column_name(field_id)
    except Exception:  # a source column dropped since: show its id
        return f"#{field_id}"


def partition_terms(spec: PartitionSpec, schema: Schema) -> list[str]:
    """``["day(ts)", "bucket(16, id)"]``: the spec as ``partition_by`` takes it."""
    return [_term(f.transform, _column(schema, f.source_id)) for f in spec.fields]


def sort_terms(order: SortOrder, schema: Schema) -> list[str]:
    """``["id desc nulls last", "day(ts) asc nulls first"]``: the order as
    ``replace_sort_order`` takes it."""
    out = []
    for f in order.fields:
        nulls = f.null_order.value.replace("-", " ") if f.null_order is not None else ""
        out.append(f"{_term(f.transform, _column(schema, f.source_id))} {f.direction.value} {nulls}")
    return out


def format_bytes(n: float | None) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_millis(ms: int | None) -> str:
    """Epoch milliseconds as ``2024-06-01 12:00:00 UTC``."""
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def table_repr(table: Table) -> str:
    md = table.metadata
    schema = md.schema()
    spec = md.spec()
    parts = [repr(table.name), f"format v{md.format_version}", f"{len(schema.fields)} columns"]
    terms = partition_terms(spec, schema)
    parts.append(f"partitioned by {', '.join(terms)}" if terms else "unpartitioned")
    order = md.sort_order()
    if not order.is_unsorted:
        parts.append(f"sorted by {', '.join(sort_terms(order, schema))}")
    snap = md.current_snapshot()
    if snap is None:
        parts.append("no snapshot")
    else:
        records = snap.summary.get("total-records")
        files = snap.summary.get("total-data-files")
        if records is not None and files is not None:
            parts.append(f"{records} rows in {files} files")
        parts.append(
            f"snapshot {snap.snapshot_id} ({snap.operation.value}, {format_millis(snap.timestamp_ms)})"
        )
    return f"Table({', '.join(parts)})"
