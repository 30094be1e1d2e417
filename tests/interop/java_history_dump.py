"""Iceberg Java's side of the history tests; runs with the ORACLE's Python.

usage: java_history_dump.py SPEC.json OUT.json

SPEC: {"db", "catalog", "warehouse", "hadoop_warehouse" (optional: the Hadoop catalog ``hcat``),
       "metadata_tables": [[table, name], ...],
       "changelogs": [{"key", "table", "start", "end", "compute_updates", "net_changes",
                       "identifier_columns"}],
       "incremental": [{"key", "table", "start", "end"}],
       "refs": [[table, ref], ...]}

One JVM (Spark 3.5 + Iceberg 1.10 JdbcCatalog over icefloe's SQLite catalog) reads Java's metadata
tables (``select * from cat.ns.t.files``), changelog views (the ``create_changelog_view``
procedure), incremental append reads (``start-snapshot-id`` / ``end-snapshot-id``) and branch or
tag reads. OUT gets the rows in :mod:`history_norm`'s JSON form.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

import history_norm  # noqa: E402
from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402


def rows_of(df: Any) -> dict[str, Any]:
    return {
        "columns": df.columns,
        "rows": [{c: history_norm.norm(r[c]) for c in df.columns} for r in df.collect()],
    }


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out: dict[str, Any] = {
        "metadata_tables": {},
        "changelogs": {},
        "incremental": {},
        "refs": {},
        "errors": [],
    }
    cat = spec["catalog"]
    spark = get_spark(
        warehouse=spec.get("hadoop_warehouse"),
        catalog_db=spec.get("db"),
        jdbc_name=cat,
        jdbc_warehouse=spec.get("warehouse"),
    )
    try:
        for table, name in spec.get("metadata_tables", []):
            try:
                fq = table if table.count(".") >= 2 else f"{cat}.{table}"  # hcat.ns.t: already qualified
                out["metadata_tables"][f"{table}.{name}"] = rows_of(spark.sql(f"select * from {fq}.{name}"))
            except Exception as ex:
                out["errors"].append(f"{table}.{name}: {type(ex).__name__}: {str(ex)[:600]}")
        for i, c in enumerate(spec.get("changelogs", [])):
            opts = [f"'start-snapshot-id', '{c['start']}'"] if c.get("start") is not None else []
            if c.get("end") is not None:
                opts.append(f"'end-snapshot-id', '{c['end']}'")
            args = [f"table => '{c['table']}'", f"changelog_view => 'cl_{i}'"]
            if opts:
                args.append(f"options => map({', '.join(opts)})")
            if c.get("compute_updates"):
                args.append("compute_updates => true")
            if c.get("net_changes"):
                args.append("net_changes => true")
            if c.get("identifier_columns"):
                ids = ", ".join(f"'{x}'" for x in c["identifier_columns"])
                args.append(f"identifier_columns => array({ids})")
            try:
                spark.sql(f"CALL {c.get('catalog', cat)}.system.create_changelog_view({', '.join(args)})")
                out["changelogs"][c["key"]] = rows_of(spark.sql(f"select * from cl_{i}"))
            except Exception as ex:
                out["errors"].append(f"changelog {c['key']}: {type(ex).__name__}: {str(ex)[:600]}")
        for c in spec.get("incremental", []):
            try:
                r = spark.read.format("iceberg").option("start-snapshot-id", str(c["start"]))
                if c.get("end") is not None:
                    r = r.option("end-snapshot-id", str(c["end"]))
                out["incremental"][c["key"]] = rows_of(r.load(f"{c.get('catalog', cat)}.{c['table']}"))
            except Exception as ex:
                out["errors"].append(f"incremental {c['key']}: {type(ex).__name__}: {str(ex)[:600]}")
        for table, ref in spec.get("refs", []):
            try:
                df = spark.read.format("iceberg").option("branch", ref).load(f"{cat}.{table}")
                out["refs"][f"{table}@{ref}"] = rows_of(df)
            except Exception:
                try:
                    df = spark.read.format("iceberg").option("tag", ref).load(f"{cat}.{table}")
                    out["refs"][f"{table}@{ref}"] = rows_of(df)
                except Exception as ex:
                    out["errors"].append(f"ref {table}@{ref}: {type(ex).__name__}: {str(ex)[:600]}")
    finally:
        shutdown_jvm(spark)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
