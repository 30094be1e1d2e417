"""Iceberg Java on Spark 3.5 (the oracle's environment), timed inside its own process.

    <oracle venv>/bin/python bench/_java_spark.py LINEITEM.parquet WORKDIR --repeat K

Runs with the oracle venv's Python (Spark 3.5 + Iceberg 1.10 jars), never imports icefloe. Writes
``lineitem`` into a Hadoop-catalog Iceberg table and with ``df.write.parquet``, then scans both
(full, and one month of ``l_shipdate`` with three columns) into Spark's ``noop`` sink, alternating
the order each round after one warm-up round. Prints one JSON line: the times of each contender.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any

ORACLE = os.environ.get("ICEFLOE_ORACLE_DIR", "/work/shared/oracle")
SPARK_FILTER = "l_shipdate >= date'1995-01-01' and l_shipdate < date'1995-02-01'"
COLUMNS = ["l_orderkey", "l_extendedprice", "l_discount"]


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("lineitem")
    p.add_argument("workdir")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    sys.path.insert(0, ORACLE)
    from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]

    wh = os.path.join(args.workdir, "warehouse")
    spark = get_spark(warehouse=wh, app_name="icefloe-bench-java", driver_memory="2g")
    times: dict[str, list[float]] = {}
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS hcat.b")
        source = spark.read.parquet(args.lineitem).cache()
        rows = source.count()
        for r in range(args.repeat + 1):
            name, raw = f"hcat.b.lineitem_{r}", os.path.join(args.workdir, "raw", f"lineitem_{r}")

            def write_java(name: str = name) -> None:
                source.writeTo(name).create()

            def write_raw(raw: str = raw) -> None:
                source.write.parquet(raw)

            def scan(kind: str, filtered: bool, name: str = name, raw: str = raw) -> None:
                df = spark.table(name) if kind == "java" else spark.read.parquet(raw)
                _noop(df.where(SPARK_FILTER).select(*COLUMNS) if filtered else df)

            steps: list[tuple[str, Any]] = [("write.iceberg_java", write_java), ("write.raw", write_raw)]
            for filtered, label in ((False, "scan_full"), (True, "scan_filtered")):
                steps += [
                    (f"{label}.iceberg_java", lambda f=filtered: scan("java", f)),
                    (f"{label}.raw", lambda f=filtered: scan("raw", f)),
                ]
            pairs = [steps[i : i + 2] for i in range(0, len(steps), 2)]
            for pair in pairs:
                for key, fn in reversed(pair) if r % 2 else pair:
                    t0 = time.perf_counter()
                    fn()
                    if r > 0:
                        times.setdefault(key, []).append(time.perf_counter() - t0)
        version = spark.version
    finally:
        shutdown_jvm(spark)
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(json.dumps({"spark": version, "rows": rows, "times_s": times}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
