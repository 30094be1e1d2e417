"""Iceberg Java's side of the row-level SQL comparison; runs with the ORACLE's Python.

usage: java_dml.py SPEC.json OUT.json

SPEC: {"warehouse": DIR, "catalog_db": FILE, "source_ddl": DDL, "jobs": [
          {"name", "table": "ns.t", "start_metadata": LOCATION, "properties": {..},
           "source_rows": [[...], ...], "statements": [SQL, ...], "schema": ICEBERG_SCHEMA_JSON,
           "icefloe_metadata": LOCATION}]}

One JVM (Spark 3.5 + Iceberg 1.10, a JdbcCatalog ``oracle`` over its own SQLite file, the default
catalog of the session so that ``ns.t`` names its tables). Per job: register the table icefloe
started from (``register_table`` on the same metadata file: a copy in Java's catalog; Java's
commits write new files, never icefloe's), create temp view ``src``, run the statements, and
report the final rows as the oracle's canonical row texts; then read the table icefloe
produced from its metadata file. OUT: {name: {"java": [...], "icefloe_read_by_java": [...],
"errors": [...]}}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

import canon  # type: ignore[import-not-found]  # noqa: E402
from spark_iceberg import get_spark, read_metadata, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    spark = get_spark(
        catalog_db=spec["catalog_db"],
        jdbc_name="oracle",
        jdbc_warehouse=spec["warehouse"],
        extra_conf={"spark.sql.defaultCatalog": "oracle"},
    )
    out: dict[str, Any] = {}
    try:
        namespaces = {j["table"].rsplit(".", 1)[0] for j in spec["jobs"]}
        for ns in sorted(namespaces):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS oracle.{ns}")
        for job in spec["jobs"]:
            res: dict[str, Any] = {"errors": []}
            schema = job["schema"]
            try:
                spark.sql(
                    f"CALL oracle.system.register_table(table => '{job['table']}', "
                    f"metadata_file => '{job['start_metadata']}')"
                )
                rows = [tuple(r) for r in job["source_rows"]]
                spark.createDataFrame(rows, spec["source_ddl"]).createOrReplaceTempView("src")
                for statement in job["statements"]:
                    spark.sql(statement).collect()
                res["java"] = [canon.row_text(schema, r) for r in spark.table(job["table"]).collect()]
            except Exception as ex:  # report, and go on with the next job
                res["errors"].append(f"java: {type(ex).__name__}: {str(ex)[:1500]}")
            try:
                got = read_metadata(spark, job["icefloe_metadata"]).collect()
                res["icefloe_read_by_java"] = [canon.row_text(schema, r) for r in got]
            except Exception as ex:
                res["errors"].append(f"read: {type(ex).__name__}: {str(ex)[:1500]}")
            out[job["name"]] = res
    finally:
        shutdown_jvm(spark)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
