"""Iceberg Java's row-level SQL (MERGE INTO, DELETE FROM) on Spark 3.5 (the oracle's environment),
one statement at a time on request, so that the benchmark can alternate it with icefloe's.

    <oracle venv>/bin/python bench/_java_merge.py CATALOG.db CATALOG_NAME WAREHOUSE FIRST_TABLE

Runs with the oracle venv's Python (Spark 3.5 + Iceberg 1.10 jars), never imports icefloe. The
tables were created by icefloe in the SQLite catalog (the JdbcCatalog reads the same catalog
tables, whose table properties choose copy-on-write or merge-on-read); ``FIRST_TABLE`` warms the
session up. Then it reads one job per line on stdin, ``{"sql": "MERGE INTO ..."}``, runs it
(planning, the Spark jobs and the commit) and answers one JSON line: the seconds it took inside
this process and the snapshot summary of the table's new snapshot (``{"table": "b.t3"}``). An
empty line or end of input ends it. It prints a JSON line once the session is up.
"""

from __future__ import annotations

import json
import os
import sys
import time

ORACLE = os.environ.get("ICEFLOE_ORACLE_DIR", "/work/shared/oracle")


def main() -> int:
    db, name, warehouse, first = sys.argv[1:5]
    sys.path.insert(0, ORACLE)
    from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]

    spark = get_spark(
        catalog_db=db,
        jdbc_name=name,
        jdbc_warehouse=warehouse,
        app_name="icefloe-bench-merge",
        driver_memory="2g",
        extra_conf={"spark.sql.shuffle.partitions": "4"},
    )
    try:
        spark.sql(f"SELECT count(*) FROM {name}.{first}").collect()
        print(json.dumps({"ready": True, "spark": spark.version}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            job = json.loads(line)
            t0 = time.perf_counter()
            spark.sql(job["sql"]).collect()
            elapsed = time.perf_counter() - t0
            summary = spark.sql(
                f"SELECT summary FROM {name}.{job['table']}.snapshots ORDER BY committed_at DESC LIMIT 1"
            ).collect()[0]["summary"]
            print(json.dumps({"seconds": elapsed, "summary": dict(summary)}, default=str), flush=True)
    finally:
        shutdown_jvm(spark)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
