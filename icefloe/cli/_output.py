"""Rendering results: rich tables for people, JSON for scripts (``--json``), and the one-line
error format (``error: ...`` then ``hint: ...``)."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import click
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli._state import State

__all__ = ["emit_done", "emit_rows", "plain", "to_json", "write_json"]


def plain(value: Any) -> Any:
    """A value as JSON types: datetimes as ISO text, decimals and UUIDs as text, bytes as base64,
    enums by value, mappings and sequences recursively (Arrow's map columns arrive as lists of
    pairs and stay lists)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [plain(v) for v in value]
    return str(value)


def to_json(value: Any) -> str:
    return json.dumps(plain(value), indent=2, ensure_ascii=False)


def write_json(value: Any) -> None:
    click.echo(to_json(value))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return str(value.strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def emit_rows(
    state: State,
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    title: str | None = None,
    formats: Mapping[str, Callable[[Any], str]] | None = None,
    json_rows: Sequence[Mapping[str, Any]] | None = None,
    empty: str = "(none)",
    right: Iterable[str] = (),
) -> None:
    """Rows as a table (only ``columns``, each cell through ``formats[column]`` if given), or
    with ``--json`` as a JSON array of ``json_rows`` (default: the rows, every key)."""
    if state.json:
        write_json(list(json_rows if json_rows is not None else rows))
        return
    console = state.out
    if not rows:
        console.print(Text(empty, style="dim"))
        return
    cols = list(columns) if columns is not None else list(rows[0].keys())
    aligned = set(right)
    table = RichTable(title=title, title_justify="left", header_style="bold", show_edge=False, pad_edge=False)
    for c in cols:
        table.add_column(c, justify="right" if c in aligned else "left", overflow="fold")
    fmt = formats or {}
    for row in rows:
        table.add_row(*(Text(fmt[c](row.get(c)) if c in fmt else _cell(row.get(c))) for c in cols))
    console.print(table)


def emit_done(state: State, message: str, result: Mapping[str, Any]) -> None:
    """The outcome of a change: one line for people, ``result`` as a JSON object for scripts."""
    if state.json:
        write_json(dict(result))
    else:
        state.out.print(Text(message))
