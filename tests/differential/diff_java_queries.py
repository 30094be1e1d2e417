"""Iceberg Java's side of the differential reads; runs with the ORACLE's Python.

usage: diff_java_queries.py SPEC.json OUT.json

SPEC: {"db", "catalog", "warehouse",
       "queries": [{"key", "table": "catalog.ns.t", "read": {"snapshot-id" | "tag" | "branch": v},
                    "sql": "SELECT ... FROM v ...", "fields": [Iceberg field JSON] (row queries)}]}

One JVM (Spark 3.5 + Iceberg 1.10, JdbcCatalog over icefloe's SQLite catalog) loads each table
through ``spark.read.format("iceberg")`` with the read options, names it ``v`` and runs the SQL.
OUT: {key: {"rows": [canonical row text (canon.py)]} | {"values": [aggregate values]} | {"error"}}.
Aggregate values: numbers and strings as they are, floats as repr text, decimals as text, dates
as ISO text, timestamps as epoch microseconds, binary as hex.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import sys
import time
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

import canon  # type: ignore[import-not-found]  # noqa: E402
from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402


def jsonable(v: Any) -> Any:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        return canon._micros(v)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, bytes | bytearray):
        return bytes(v).hex()
    return v


def collect(df: Any) -> list[Any]:
    """Rows as dicts through Arrow (no Python datetime conversion of Spark 3.5's collect, which
    fails on timestamps near year 1), else Spark Rows."""
    try:
        import pyarrow as pa

        batches = df._collect_as_arrow()
        if not batches:
            return []
        table = pa.Table.from_batches(batches)
        if len(set(table.column_names)) < len(table.column_names):
            raise ValueError("duplicate column names")
        rows: list[Any] = table.to_pylist()
        return rows
    except Exception:  # types Spark 3.5 cannot ship as Arrow
        return list(df.collect())


def main() -> int:
    # canon.py quantizes decimals in the default 28-digit context; decimal(38, s) needs more
    decimal.getcontext().prec = 100
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    spark = get_spark(catalog_db=spec["db"], jdbc_name=spec["catalog"], jdbc_warehouse=spec["warehouse"])
    out: dict[str, Any] = {}
    try:
        for q in spec["queries"]:
            try:
                reader = spark.read.format("iceberg")
                for k, v in q["read"].items():
                    reader = reader.option(k, v)
                reader.load(q["table"]).createOrReplaceTempView("v")
                rows = collect(spark.sql(q["sql"]))
                if "fields" in q:
                    schema = {"fields": q["fields"]}
                    out[q["key"]] = {"rows": [canon.row_text(schema, r) for r in rows]}
                else:
                    first = rows[0]
                    values = list(first.values()) if isinstance(first, dict) else list(first)
                    out[q["key"]] = {"values": [jsonable(x) for x in values]}
            except Exception as ex:  # reported per query; the batch goes on
                out[q["key"]] = {"error": f"{type(ex).__name__}: {str(ex)[:1500]}"}
    finally:
        shutdown_jvm(spark)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
