"""Iceberg Java 1.10's scan planning (the oracle's environment), timed in its own process.

    <oracle venv>/bin/python bench/_java_planning.py JOBS.json --repeat K

Runs with the oracle venv's Python (Spark 3.5 + Iceberg 1.10 jars) and never imports icefloe.
Each job of ``JOBS.json`` (``[{"key", "metadata", "column", "op": "eq"|"ge", "value"}]``) loads
the table straight from its metadata file (``StaticTableOperations`` + ``BaseTable`` with a
``HadoopFileIO``, no catalog) and times ``table.newScan().filter(expr).planFiles()`` counted
inside the JVM (``Iterables.size``, so no task crosses py4j), one untimed warm-up (JIT) then
``K`` rounds. The scan's ``ScanReport`` (an ``InMemoryMetricsReporter``) gives the manifests
Java scanned and skipped. Prints one JSON line: ``{key: {"times_s", "files", "scanned_manifests",
"skipped_manifests"}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

ORACLE = os.environ.get("ICEFLOE_ORACLE_DIR", "/work/shared/oracle")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("jobs")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with open(args.jobs) as f:
        jobs: list[dict[str, Any]] = json.load(f)
    sys.path.insert(0, ORACLE)
    from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]

    spark = get_spark(app_name="icefloe-bench-java-planning", driver_memory="3g")
    out: dict[str, Any] = {}
    try:
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        iceberg = jvm.org.apache.iceberg
        size = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size
        for job in jobs:
            io = iceberg.hadoop.HadoopFileIO(conf)
            table = iceberg.BaseTable(iceberg.StaticTableOperations(job["metadata"], io), job["key"])
            exprs = iceberg.expressions.Expressions
            if job["op"] == "eq":
                expr = exprs.equal(job["column"], job["value"])
            else:
                expr = exprs.greaterThanOrEqual(job["column"], job["value"])
            times: list[float] = []
            files = scanned = skipped = -1
            for r in range(args.repeat + 1):
                reporter = iceberg.metrics.InMemoryMetricsReporter()
                t0 = time.perf_counter()
                tasks = table.newScan().metricsReporter(reporter).filter(expr).planFiles()
                files = int(size(tasks))
                elapsed = time.perf_counter() - t0
                tasks.close()  # sends the scan report
                if r > 0:
                    times.append(elapsed)
                metrics = reporter.scanReport().scanMetrics()
                scanned = int(metrics.scannedDataManifests().value())
                skipped = int(metrics.skippedDataManifests().value())
            out[job["key"]] = {
                "times_s": times,
                "files": files,
                "scanned_manifests": scanned,
                "skipped_manifests": skipped,
            }
        out["_spark"] = spark.version
    finally:
        shutdown_jvm(spark)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
