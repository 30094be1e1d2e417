"""Iceberg Java's side of the sort-order agreement tests; runs with the ORACLE's Python.

usage: java_sort_order.py SPEC.json OUT.json

SPEC: {"db", "catalog", "warehouse",          icefloe's SQLite catalog (JdbcCatalog)
       "table", "create",                     ns.t and the CREATE TABLE column list
       "steps": ["id", "days(ts) DESC", "", ...],   WRITE ORDERED BY <step> ("": WRITE UNORDERED)
       "files_of": ["ns.t2", ...]}            tables whose files' sort_order_id Java reports

One JVM (Spark 3.5 + Iceberg 1.10). After each step: the table's default sort order and all its
sort orders as Java serializes them (``SortOrderParser.toJson``), the schema (id -> name) and the
``write.distribution-mode`` property. For ``files_of``: ``SELECT file_path, sort_order_id FROM
<table>.files``.
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

from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out: dict[str, Any] = {"steps": [], "files": {}, "errors": []}
    cat = spec["catalog"]
    spark = get_spark(catalog_db=spec["db"], jdbc_name=cat, jdbc_warehouse=spec["warehouse"])
    jvm = spark._jvm
    parser = jvm.org.apache.iceberg.SortOrderParser
    name = f"{cat}.{spec['table']}"

    def load() -> Any:
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)

    try:
        spark.sql(f"CREATE TABLE {name} ({spec['create']}) USING iceberg")
        for step in spec["steps"]:
            try:
                clause = f"WRITE ORDERED BY {step}" if step else "WRITE UNORDERED"
                spark.sql(f"ALTER TABLE {name} {clause}")
                jt = load()
                orders = {}
                it = jt.sortOrders().entrySet().iterator()
                while it.hasNext():
                    entry = it.next()
                    orders[str(entry.getKey())] = json.loads(parser.toJson(entry.getValue()))
                columns = {}
                names = jvm.org.apache.iceberg.types.TypeUtil.indexNameById(jt.schema().asStruct())
                it = names.entrySet().iterator()
                while it.hasNext():
                    entry = it.next()
                    columns[str(entry.getKey())] = str(entry.getValue())
                out["steps"].append(
                    {
                        "step": step,
                        "default": json.loads(parser.toJson(jt.sortOrder())),
                        "orders": orders,
                        "columns": columns,
                        "distribution_mode": jt.properties().get("write.distribution-mode"),
                        "error": None,
                    }
                )
            except Exception as e:
                java = getattr(e, "java_exception", None)
                message = str(java.getMessage()) if java is not None else f"{type(e).__name__}: {e}"
                out["steps"].append({"step": step, "error": message})
        for table in spec.get("files_of", []):
            try:
                rows = spark.sql(f"SELECT file_path, sort_order_id FROM {cat}.{table}.files").collect()
                out["files"][table] = {r["file_path"]: r["sort_order_id"] for r in rows}
            except Exception:
                out["errors"].append(f"files of {table}: {traceback.format_exc(limit=4)}")
    except Exception:
        out["errors"].append(traceback.format_exc(limit=6))
    finally:
        with open(sys.argv[2], "w") as f:
            json.dump(out, f)
        shutdown_jvm(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
