"""Deterministic test data for the tables icefloe writes in the interop suite.

Two families: ``types`` (every v2 type, nulls wherever a field is optional, NaN/inf/-0.0,
pre-1970 dates and timestamps, non-ASCII strings) and ``part_*`` (one table per partition
transform and source type, over a shared source schema whose values straddle transform
boundaries: negative ints, pre-1970 dates, hour/day/month/year edges, nulls).
Each table gets several appends so time travel over snapshots is exercised.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import uuid
from typing import Any

import pyarrow as pa

UTC = dt.UTC
D = decimal.Decimal

# ------------------------------------------------------------------ every type

LST_TYPE = pa.list_(pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.string())]))

TYPES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("b", pa.bool_()),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("dec38", pa.decimal128(38, 10)),
        pa.field("dt", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tstz", pa.timestamp("us", tz="UTC")),
        pa.field("s", pa.string()),
        pa.field("u", pa.uuid()),
        pa.field("fx", pa.binary(16)),
        pa.field("bin", pa.binary()),
        pa.field(
            "st",
            pa.struct(
                [
                    pa.field("a", pa.int32()),
                    pa.field("b", pa.string()),
                    pa.field("inner", pa.struct([pa.field("x", pa.float64())])),
                ]
            ),
        ),
        pa.field("li", pa.list_(pa.int32())),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field("lst", LST_TYPE),
    ]
)

_FLOATS = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5, -2.25, 3.4028234663852886e38, 1e-45]
_WORDS = ["alpha", "日本語", "émoji 🧊", "", "Ω≈ç√", "tab\tnew\nline", "z" * 40]
_DATES = [
    dt.date(1900, 1, 1),
    dt.date(1969, 12, 31),
    dt.date(1970, 1, 1),
    dt.date(1960, 6, 15),
    dt.date(2024, 2, 29),
    dt.date(9999, 12, 31),
]
_TS = [
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1950, 3, 4, 5, 6, 7, 890123),
    dt.datetime(1970, 1, 1),
    dt.datetime(2024, 2, 29, 12, 0, 0, 1),
    dt.datetime(2000, 1, 1, 0, 0, 0, 500000),
]


def _types_row(i: int) -> dict[str, Any]:
    if i % 9 == 8:  # every optional column null
        return {name: (i if name == "id" else None) for name in TYPES_SCHEMA.names}
    sign = -1 if i % 2 else 1
    ts = _TS[i % len(_TS)] + dt.timedelta(minutes=i * 37)
    return {
        "id": i,
        "b": i % 3 == 0,
        "i": sign * (i * 7919 % 2_147_483_647) if i % 5 else -(2**31),
        "l": sign * i * 1_000_000_007 if i % 7 else 2**63 - 1,
        "f": _FLOATS[i % len(_FLOATS)],
        "d": _FLOATS[(i + 3) % len(_FLOATS)] if i % 4 else i / 3.0,
        "dec": D(sign * i * 12345 % 10**10).scaleb(-2),
        # at most 28 significant digits: canon.py quantizes in Python's default decimal context
        "dec38": (D("123456789012345678.0123456789") * sign) if i % 3 else D(i).scaleb(-10),
        "dt": _DATES[i % len(_DATES)],
        "ts": ts,
        "tstz": ts.replace(tzinfo=UTC) - dt.timedelta(hours=i),
        "s": f"{_WORDS[i % len(_WORDS)]}-{i}",
        "u": uuid.UUID(int=(i * 0x9E3779B97F4A7C15F39CC0605CEDC835) % (1 << 128)).bytes,
        "fx": bytes((i * 13 + k) % 256 for k in range(16)),
        "bin": bytes([i % 256, 0, 255]) * (i % 3),
        "st": None
        if i % 5 == 3
        else {"a": i if i % 2 else None, "b": _WORDS[i % 7], "inner": None if i % 4 == 0 else {"x": i + 0.5}},
        "li": None if i % 6 == 5 else ([i, None, -i] if i % 4 else []),
        "m": None if i % 7 == 6 else ({f"k{i % 5}": i, "zero": None} if i % 2 else {}),
        # null list<struct> values: PyIceberg 0.12 reads them as [] (oracle README)
        "lst": None
        if i % 4 == 2
        else ([{"x": i + 0.25, "y": "y"}, {"x": None, "y": None}, None] if i % 3 else []),
    }


def types_batches(n_batches: int = 3, rows_per_batch: int = 18) -> list[pa.Table]:
    out = []
    for b in range(n_batches):
        rows = [_types_row(b * rows_per_batch + k) for k in range(rows_per_batch)]
        out.append(pa.Table.from_pylist(rows, schema=TYPES_SCHEMA))
    return out


# ``time`` has a table of its own: Spark 3.5 refuses any table with a time column, so the
# other engines check it while Spark's refusal is accepted for this table only.
TIME_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("tm", pa.time64("us")), pa.field("s", pa.string())]
)
_TIMES = [dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 0, 0, 1), dt.time(0, 0, 0, 1), None]


def time_batches(n_batches: int = 2, rows_per_batch: int = 10) -> list[pa.Table]:
    return [
        pa.Table.from_pylist(
            [
                {"id": k, "tm": _TIMES[k % len(_TIMES)], "s": f"t{k}"}
                for k in range(b * rows_per_batch, (b + 1) * rows_per_batch)
            ],
            TIME_SCHEMA,
        )
        for b in range(n_batches)
    ]


# ------------------------------------------------------------------ partition transforms

PART_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("b", pa.bool_()),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("u", pa.uuid()),
        pa.field("bin", pa.binary()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tstz", pa.timestamp("us", tz="UTC")),
        pa.field("v", pa.float64()),
    ]
)

_P_INTS = [-1_000_001, -11, -10, -9, -1, 0, 1, 9, 10, 2_147_483_647, None]
_P_LONGS = [-(2**63), -101, -100, -1, 0, 99, 100, 2**40 + 3, None]
_P_STR = ["", "a", "abc", "abcd", "日本語の文", "émoji🧊x", "Zz", None]
_P_DATES = [
    dt.date(1969, 12, 31),
    dt.date(1969, 1, 1),
    dt.date(1970, 1, 1),
    dt.date(1900, 2, 28),
    dt.date(2020, 12, 31),
    dt.date(2021, 1, 1),
    None,
]
_P_DEC = [D("-0.01"), D("-1.00"), D("0.00"), D("0.99"), D("1.00"), D("12345678.90"), D("-99999999.99"), None]
_P_BIN = [b"", b"\x00", b"\x00\x01\x02", b"\xff\xfe\xfd\xfc", b"ab", None]
_P_TS = [
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1969, 12, 31, 23, 0, 0),
    dt.datetime(1970, 1, 1, 0, 0, 0),
    dt.datetime(1970, 1, 1, 0, 59, 59, 999999),
    dt.datetime(1955, 7, 1, 12, 30, 0, 1),
    dt.datetime(2024, 12, 31, 23, 59, 59),
    dt.datetime(2025, 1, 1, 0, 0, 0),
    None,
]


def _part_row(k: int) -> dict[str, Any]:
    ts = _P_TS[k % len(_P_TS)]
    return {
        "id": k,
        "b": None if k % 5 == 4 else k % 2 == 0,
        "i": _P_INTS[k % len(_P_INTS)],
        "l": _P_LONGS[(k * 3) % len(_P_LONGS)],
        "s": _P_STR[k % len(_P_STR)],
        "d": _P_DATES[k % len(_P_DATES)],
        "dec": _P_DEC[k % len(_P_DEC)],
        "u": None if k % 6 == 5 else uuid.UUID(int=(k % 4) * 0x0123456789ABCDEF0123456789ABCDEF).bytes,
        "bin": _P_BIN[k % len(_P_BIN)],
        "ts": ts,
        "tstz": None if ts is None else (ts + dt.timedelta(minutes=k)).replace(tzinfo=UTC),
        "v": k * 0.5,
    }


def part_batches(n_batches: int = 3, rows_per_batch: int = 14) -> list[pa.Table]:
    return [
        pa.Table.from_pylist([_part_row(b * rows_per_batch + k) for k in range(rows_per_batch)], PART_SCHEMA)
        for b in range(n_batches)
    ]


@dataclasses.dataclass(frozen=True)
class PartCase:
    name: str
    partition_by: tuple[str, ...]
    # filters exercising pruning on the partition source column (text for icefloe/PyIceberg)
    probes: tuple[str, ...] = ()


def _probes(col: str, values: list[str]) -> tuple[str, ...]:
    return (*tuple(f"{col} = {v}" for v in values), f"{col} is null")


PART_CASES: tuple[PartCase, ...] = (
    # identity on several types
    PartCase("part_identity_int", ("i",), _probes("i", ["-10", "0", "2147483647"])),
    PartCase("part_identity_long", ("identity(l)",), _probes("l", ["-100", "0", "1099511627779"])),
    PartCase("part_identity_string", ("s",), _probes("s", ["'abc'", "'日本語の文'", "''"])),
    PartCase("part_identity_date", ("d",), _probes("d", ["'1969-12-31'", "'2021-01-01'"])),
    PartCase("part_identity_bool", ("b",), _probes("b", ["true", "false"])),
    PartCase("part_identity_decimal", ("dec",), _probes("dec", ["-0.01", "12345678.90"])),
    PartCase("part_identity_timestamptz", ("tstz",), ("tstz is null",)),
    # bucket[N]
    PartCase("part_bucket_int", ("bucket(4, i)",), _probes("i", ["-10", "0", "9"])),
    PartCase("part_bucket_long", ("bucket(5, l)",), _probes("l", ["-100", "99"])),
    PartCase("part_bucket_string", ("bucket(3, s)",), _probes("s", ["'abc'", "'日本語の文'", "''"])),
    PartCase("part_bucket_date", ("bucket(4, d)",), _probes("d", ["'1969-12-31'", "'1970-01-01'"])),
    PartCase("part_bucket_decimal", ("bucket(6, dec)",), _probes("dec", ["-0.01", "1.00"])),
    PartCase(
        "part_bucket_uuid",
        ("bucket(3, u)",),
        ("u = '01234567-89ab-cdef-0123-456789abcdef'", "u is null"),
    ),
    # truncate[W]
    PartCase("part_truncate_int", ("truncate(10, i)",), _probes("i", ["-11", "-10", "-1", "9"])),
    PartCase("part_truncate_long", ("truncate(100, l)",), _probes("l", ["-101", "-100", "99"])),
    PartCase("part_truncate_string", ("truncate(2, s)",), _probes("s", ["'abc'", "'日本語の文'", "'a'"])),
    PartCase("part_truncate_decimal", ("truncate(50, dec)",), _probes("dec", ["-0.01", "0.99", "1.00"])),
    PartCase("part_truncate_binary", ("truncate(2, bin)",), ("bin is null",)),
    # year / month / day / hour on date, timestamp, timestamptz (pre-1970 values included)
    PartCase("part_year_date", ("year(d)",), _probes("d", ["'1969-12-31'", "'1969-01-01'", "'1970-01-01'"])),
    PartCase("part_month_date", ("month(d)",), _probes("d", ["'1969-12-31'", "'1900-02-28'"])),
    PartCase("part_day_date", ("day(d)",), _probes("d", ["'1969-12-31'", "'2020-12-31'"])),
    PartCase(
        "part_year_timestamp",
        ("year(ts)",),
        ("ts < '1970-01-01T00:00:00'", "ts >= '2025-01-01T00:00:00'", "ts is null"),
    ),
    PartCase(
        "part_month_timestamp", ("month(ts)",), ("ts = '1969-12-31T23:00:00'", "ts < '1960-01-01T00:00:00'")
    ),
    PartCase(
        "part_day_timestamp",
        ("day(ts)",),
        ("ts = '1969-12-31T23:59:59.999999'", "ts >= '1970-01-01T00:00:00'", "ts is null"),
    ),
    PartCase(
        "part_hour_timestamp",
        ("hour(ts)",),
        ("ts = '1969-12-31T23:00:00'", "ts > '1969-12-31T23:00:00'", "ts < '1970-01-01T01:00:00'"),
    ),
    PartCase(
        "part_year_timestamptz", ("year(tstz)",), ("tstz < '1970-01-01T00:00:00+00:00'", "tstz is null")
    ),
    PartCase("part_month_timestamptz", ("month(tstz)",), ("tstz >= '2025-01-01T00:00:00+00:00'",)),
    PartCase("part_day_timestamptz", ("day(tstz)",), ("tstz < '1970-01-01T00:00:00+00:00'",)),
    PartCase(
        "part_hour_timestamptz",
        ("hour(tstz)",),
        ("tstz >= '1969-12-31T23:00:00+00:00' and tstz < '1970-01-01T01:00:00+00:00'",),
    ),
    # void, and a multi-field spec
    PartCase("part_void", ("void(s)",), _probes("s", ["'abc'"])),
    PartCase(
        "part_multi",
        ("day(tstz)", "bucket(16, id)", "truncate(3, s)", "b"),
        ("id = 7", "b = true and s = 'abc'", "tstz < '1970-01-01T00:00:00+00:00'"),
    ),
)
