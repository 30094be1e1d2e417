"""Iceberg Java's side of the partition-evolution agreement tests; runs with the ORACLE's Python.

usage: java_partition_evolution.py SPEC.json OUT.json

SPEC: {"db", "catalog", "warehouse",                      icefloe's SQLite catalog (JdbcCatalog)
       "cases": [{"key", "metadata", "ops": [op, ...]}],  UpdatePartitionSpec replays
       "steps": [[sql, ...], ...],                        Spark SQL, the table's specs after each step
       "step_table": "ns.t",                              the table the steps evolve
       "tables": [table, ...],                            ns.t: specs as Java parses them, and rows
       "scans": [{"key", "table", "where"}]}              Java's rows of a filtered read

One JVM (Spark 3.5 + Iceberg 1.10):

* each case loads the table of ``metadata`` (read-only StaticTableOperations), replays ``ops`` on
  Java's ``table.updateSpec()`` and returns the fields of ``update.apply()``, or the error Java
  raised. Nothing is committed.
* each step runs its SQL statements (``ALTER TABLE ... ADD PARTITION FIELD``, inserts, dynamic
  overwrites) and records every spec of ``step_table``, its default spec id and last partition id.
* each table returns its specs (``PartitionSpecParser.toJson``), default spec id, last partition
  id and all rows (``select *``).

Ops: ["case_insensitive"], ["add", term, name|null], ["add_identity", column],
["remove_name", name], ["remove_term", term], ["rename", name, new]. Terms: ["identity", c],
["bucket", n, c], ["truncate", n, c], ["year"|"month"|"day"|"hour", c].
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
import traceback
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

from spark_iceberg import get_spark, java_table, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _norm(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.UTC)
        d = v - _EPOCH
        return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out: dict[str, Any] = {"cases": {}, "steps": [], "tables": {}, "scans": {}, "errors": []}
    cat = spec["catalog"]
    spark = get_spark(
        catalog_db=spec["db"],
        jdbc_name=cat,
        jdbc_warehouse=spec["warehouse"],
        extra_conf={"spark.sql.sources.partitionOverwriteMode": "dynamic"},
    )
    jvm = spark._jvm
    expressions = jvm.org.apache.iceberg.expressions.Expressions
    spec_parser = jvm.org.apache.iceberg.PartitionSpecParser

    def term(t: list[Any]) -> Any:
        kind = t[0]
        if kind == "identity":
            return expressions.ref(t[1])
        if kind == "bucket":
            return expressions.bucket(t[2], int(t[1]))
        if kind == "truncate":
            return expressions.truncate(t[2], int(t[1]))
        return getattr(expressions, kind)(t[1])

    def fields(s: Any) -> list[list[Any]]:
        return [[int(f.sourceId()), int(f.fieldId()), str(f.name()), str(f.transform())] for f in s.fields()]

    def replay(update: Any, ops: list[list[Any]]) -> Any:
        for op in ops:
            kind, args = op[0], op[1:]
            if kind == "case_insensitive":
                update = update.caseSensitive(False)
            elif kind == "add":
                if args[1] is None:
                    update = update.addField(term(args[0]))
                else:
                    update = update.addField(args[1], term(args[0]))
            elif kind == "add_identity":
                update = update.addField(args[0])
            elif kind == "remove_name":
                update = update.removeField(args[0])
            elif kind == "remove_term":
                update = update.removeField(term(args[0]))
            elif kind == "rename":
                update = update.renameField(args[0], args[1])
            else:
                raise ValueError(f"unknown op {kind}")
        return update.apply()

    def load(name: str) -> Any:
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"{cat}.{name}")

    def specs_of(name: str) -> dict[str, Any]:
        jt = load(name)
        ops = jt.operations().current()
        specs = {}
        it = jt.specs().entrySet().iterator()
        while it.hasNext():
            entry = it.next()
            specs[str(entry.getKey())] = json.loads(spec_parser.toJson(entry.getValue()))
        return {
            "specs": specs,
            "default_spec_id": int(jt.spec().specId()),
            "last_partition_id": int(ops.lastAssignedPartitionId()),
        }

    try:
        for case in spec.get("cases", []):
            try:
                table = java_table(spark, case["metadata"])
                result = replay(table.updateSpec(), case["ops"])
                out["cases"][case["key"]] = {"fields": fields(result), "error": None}
            except Exception as e:
                java = getattr(e, "java_exception", None)
                message = str(java.getMessage()) if java is not None else f"{type(e).__name__}: {e}"
                out["cases"][case["key"]] = {"fields": None, "error": message}
        for step in spec.get("steps", []):
            try:
                for sql in step:
                    spark.sql(sql)
                out["steps"].append(specs_of(spec["step_table"]))
            except Exception:
                out["errors"].append(f"step {step}: {traceback.format_exc(limit=3)}")
                out["steps"].append(None)
        for name in spec.get("tables", []):
            try:
                info = specs_of(name)
                df = spark.sql(f"select * from {cat}.{name}")
                info["rows"] = [{k: _norm(v) for k, v in r.asDict().items()} for r in df.collect()]
                out["tables"][name] = info
            except Exception:
                out["errors"].append(f"table {name}: {traceback.format_exc(limit=3)}")
        for s in spec.get("scans", []):
            try:
                df = spark.sql(f"select id from {cat}.{s['table']} where {s['where']}")
                out["scans"][s["key"]] = sorted(int(r["id"]) for r in df.collect())
            except Exception:
                out["errors"].append(f"scan {s['key']}: {traceback.format_exc(limit=3)}")
    finally:
        with open(sys.argv[2], "w") as f:
            json.dump(out, f)
        shutdown_jvm(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
