"""One JSON form for rows from Spark (Iceberg Java) and from Arrow (icefloe), so that metadata
tables and changelogs can be compared value by value. Pure Python: the oracle's interpreter
imports it too (``java_history_dump.py``)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Mapping
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def norm(value: Any) -> Any:
    """Timestamps as epoch microseconds (naive ones are UTC), dates as ISO text, bytes as hex,
    decimals as text, maps as key-sorted pairs, structs (Spark Rows, dicts) as dicts."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "asDict"):
        return {k: norm(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, Mapping):
        return sorted(([norm(k), norm(v)] for k, v in value.items()), key=lambda kv: json.dumps(kv[0]))
    if isinstance(value, list | tuple):
        # Arrow gives maps as lists of (key, value) tuples; lists stay lists.
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return sorted(([norm(k), norm(v)] for k, v in value), key=lambda kv: json.dumps(kv[0]))
        return [norm(x) for x in value]
    return str(value)


def norm_struct(value: Any) -> Any:
    """Like :func:`norm`, but a dict is a struct (Arrow's struct values), not a map."""
    if isinstance(value, dict):
        return {k: norm_struct(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return {k: norm_struct(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, list) and not (value and all(isinstance(x, tuple) and len(x) == 2 for x in value)):
        return [norm_struct(x) for x in value]
    return norm(value)


def row_text(row: Mapping[str, Any], columns: list[str]) -> str:
    return json.dumps({c: norm_struct(row.get(c)) for c in columns}, sort_keys=True)
