"""Iceberg Java's side of the schema-evolution agreement tests; runs with the ORACLE's Python.

usage: java_schema_evolution.py SPEC.json OUT.json

SPEC: {"db", "catalog", "warehouse",                      icefloe's SQLite catalog (JdbcCatalog)
       "cases": [{"key", "metadata", "ops": [op, ...]}],  UpdateSchema replays
       "tables": [table, ...]}                            ns.t names in that catalog

One JVM (Spark 3.5 + Iceberg 1.10):

* each case loads the table of ``metadata`` (read-only StaticTableOperations), replays ``ops`` on
  Java's ``table.updateSchema()`` and returns ``SchemaParser.toJson(update.apply())``, or the
  error Java raised. Nothing is committed.
* each table (loaded through the JdbcCatalog over icefloe's catalog) returns every schema of the
  table as Java parses it (``SchemaParser.toJson``), the current schema id, and Spark's
  ``DESCRIBE TABLE`` rows.

Ops: ["allow_incompatible"], ["case_insensitive"], ["add", parent|null, name, type, doc|null,
required], ["delete", n], ["rename", n, new], ["type", n, primitive], ["optional", n],
["require", n], ["doc", n, doc], ["move_first", n], ["move_before", n, ref],
["move_after", n, ref], ["identifier", [names]], ["union", schema JSON]. Types are the spec's
JSON forms.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

from spark_iceberg import get_spark, java_table, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out: dict[str, Any] = {"cases": {}, "tables": {}, "errors": []}
    cat = spec["catalog"]
    spark = get_spark(catalog_db=spec["db"], jdbc_name=cat, jdbc_warehouse=spec["warehouse"])
    jvm = spark._jvm
    parser = jvm.org.apache.iceberg.SchemaParser
    types = jvm.org.apache.iceberg.types.Types

    def jtype(t: Any) -> Any:
        if isinstance(t, str):
            return types.fromPrimitiveString(t)
        wrapper = {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 999999, "name": "x", "required": False, "type": t}],
        }
        return parser.fromJson(json.dumps(wrapper)).findField(999999).type()

    def jlist(items: list[str]) -> Any:
        arr = jvm.java.util.ArrayList()
        for i in items:
            arr.add(i)
        return arr

    def replay(update: Any, ops: list[list[Any]]) -> Any:
        for op in ops:
            kind, args = op[0], op[1:]
            if kind == "allow_incompatible":
                update = update.allowIncompatibleChanges()
            elif kind == "case_insensitive":
                update = update.caseSensitive(False)
            elif kind == "add":
                parent, name, typ, doc, required = args
                if required:
                    update = update.addRequiredColumn(parent, name, jtype(typ), doc)
                else:
                    update = update.addColumn(parent, name, jtype(typ), doc)
            elif kind == "delete":
                update = update.deleteColumn(args[0])
            elif kind == "rename":
                update = update.renameColumn(args[0], args[1])
            elif kind == "type":
                update = update.updateColumn(args[0], types.fromPrimitiveString(args[1]))
            elif kind == "optional":
                update = update.makeColumnOptional(args[0])
            elif kind == "require":
                update = update.requireColumn(args[0])
            elif kind == "doc":
                update = update.updateColumnDoc(args[0], args[1])
            elif kind == "move_first":
                update = update.moveFirst(args[0])
            elif kind == "move_before":
                update = update.moveBefore(args[0], args[1])
            elif kind == "move_after":
                update = update.moveAfter(args[0], args[1])
            elif kind == "identifier":
                update = update.setIdentifierFields(jlist(args[0]))
            elif kind == "union":
                update = update.unionByNameWith(parser.fromJson(json.dumps(args[0])))
            else:
                raise ValueError(f"unknown op {kind}")
        return update.apply()

    try:
        for case in spec.get("cases", []):
            try:
                table = java_table(spark, case["metadata"])
                result = replay(table.updateSchema(), case["ops"])
                out["cases"][case["key"]] = {"schema": json.loads(parser.toJson(result)), "error": None}
            except Exception as e:
                java = getattr(e, "java_exception", None)
                message = str(java.getMessage()) if java is not None else f"{type(e).__name__}: {e}"
                out["cases"][case["key"]] = {"schema": None, "error": message}
        for name in spec.get("tables", []):
            try:
                jt = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                    spark._jsparkSession, f"{cat}.{name}"
                )
                schemas = {}
                it = jt.schemas().entrySet().iterator()
                while it.hasNext():
                    entry = it.next()
                    schemas[str(entry.getKey())] = json.loads(parser.toJson(entry.getValue()))
                describe = [
                    [r["col_name"], r["data_type"], r["comment"]]
                    for r in spark.sql(f"DESCRIBE TABLE {cat}.{name}").collect()
                ]
                out["tables"][name] = {
                    "schemas": schemas,
                    "current_schema_id": int(jt.schema().schemaId()),
                    "describe": describe,
                }
            except Exception:
                out["errors"].append(f"table {name}: {traceback.format_exc(limit=4)}")
    finally:
        with open(sys.argv[2], "w") as f:
            json.dump(out, f)
        shutdown_jvm(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
