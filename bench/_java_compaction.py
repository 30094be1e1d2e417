"""Iceberg Java's ``rewrite_data_files`` on Spark 3.5 (the oracle's environment), one job at a time
on request, so that the benchmark can alternate it with icefloe's rewrites round by round.

    <oracle venv>/bin/python bench/_java_compaction.py CATALOG.db CATALOG_NAME WAREHOUSE FIRST_TABLE

Runs with the oracle venv's Python (Spark 3.5 + Iceberg 1.10 jars), never imports icefloe. The
tables were created by icefloe in the SQLite catalog (the JdbcCatalog reads the same catalog
tables); ``FIRST_TABLE`` warms the session up. Then it reads one job per line on stdin,
``{"table": "ns.t", "strategy": "binpack"|"sort", "sort_order": "..."}``, runs it as one
``CALL <catalog>.system.rewrite_data_files(...)`` (planning, the Spark job and the commit) and
answers one JSON line: the seconds it took inside this process and Java's result counters. An
empty line or end of input ends it. It prints ``ready`` once the session is up.
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
        app_name="icefloe-bench-compaction",
        driver_memory="2g",
    )
    try:
        spark.sql(f"SELECT count(*) FROM {name}.{first}").collect()
        print(json.dumps({"ready": True, "spark": spark.version}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            job = json.loads(line)
            args = [f"table => '{job['table']}'", f"strategy => '{job['strategy']}'"]
            if job.get("sort_order"):
                args.append(f"sort_order => '{job['sort_order']}'")
            t0 = time.perf_counter()
            row = spark.sql(f"CALL {name}.system.rewrite_data_files({', '.join(args)})").collect()[0]
            elapsed = time.perf_counter() - t0
            print(json.dumps({**job, "seconds": elapsed, "result": row.asDict()}, default=str), flush=True)
    finally:
        shutdown_jvm(spark)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
