"""Iceberg Java's snapshot expiry on Spark 3.5 (the oracle's environment), timed in its own process.

    <oracle venv>/bin/python bench/_java_expire.py TEMPLATE_DIR METADATA OLDER_THAN_MS WORKDIR --repeat K

Runs with the oracle venv's Python (Spark 3.5 + Iceberg 1.10 jars), never imports icefloe.
``TEMPLATE_DIR`` holds the table (its metadata uses absolute paths inside it): every round
restores a fresh copy there (outside the clock), registers it in a JdbcCatalog under a new name
and expires everything older than ``OLDER_THAN_MS`` except the current snapshot, with
``CALL oracle.system.expire_snapshots(...)`` (``ExpireSnapshotsSparkAction``) and with the core
API (``table.expireSnapshots().expireOlderThan(..).retainLast(1).commit()``), alternating the
order each round after one warm-up round. Prints one JSON line: the times and deleted counts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from typing import Any

ORACLE = os.environ.get("ICEFLOE_ORACLE_DIR", "/work/shared/oracle")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("template")
    p.add_argument("metadata")
    p.add_argument("older_than", type=int)
    p.add_argument("workdir")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    sys.path.insert(0, ORACLE)
    from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]

    os.makedirs(args.workdir, exist_ok=True)
    pristine = os.path.join(args.workdir, "pristine")
    shutil.rmtree(pristine, ignore_errors=True)
    shutil.copytree(args.template, pristine)
    spark = get_spark(
        catalog_db=os.path.join(args.workdir, "java.db"),
        jdbc_warehouse=os.path.join(args.workdir, "jwh"),
        app_name="icefloe-bench-java-expire",
        driver_memory="2g",
    )
    stamp = dt.datetime.fromtimestamp(args.older_than / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    times: dict[str, list[float]] = {}
    counts: dict[str, dict[str, int]] = {}
    try:
        jvm = spark._jvm

        def restore(name: str) -> None:
            shutil.rmtree(args.template, ignore_errors=True)
            shutil.copytree(pristine, args.template)
            ns = name.rsplit(".", 1)[0]
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS oracle.{ns}")
            spark.sql(
                f"CALL oracle.system.register_table(table => '{name}', metadata_file => '{args.metadata}')"
            )

        def procedure(name: str) -> dict[str, int]:
            row = spark.sql(
                f"CALL oracle.system.expire_snapshots(table => '{name}', "
                f"older_than => TIMESTAMP '{stamp}', retain_last => 1)"
            ).collect()[0]
            d = row.asDict()
            return {
                "data_files": int(d["deleted_data_files_count"]),
                "manifests": int(d["deleted_manifest_files_count"]),
                "manifest_lists": int(d["deleted_manifest_lists_count"]),
            }

        def core(name: str) -> dict[str, int]:
            table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                spark._jsparkSession, f"oracle.{name}"
            )
            table.expireSnapshots().expireOlderThan(args.older_than).retainLast(1).commit()
            return {}

        contenders: list[tuple[str, Any]] = [("java_procedure", procedure), ("java_core", core)]
        for r in range(args.repeat + 1):
            for key, fn in reversed(contenders) if r % 2 else contenders:
                name = f"b{r}.{key}"
                restore(name)
                t0 = time.perf_counter()
                out = fn(name)
                elapsed = time.perf_counter() - t0
                if r > 0:
                    times.setdefault(key, []).append(elapsed)
                    if out:
                        counts[key] = out
        version = spark.version
    finally:
        shutdown_jvm(spark)
        shutil.rmtree(args.template, ignore_errors=True)
        shutil.copytree(pristine, args.template)
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(json.dumps({"spark": version, "times_s": times, "counts": counts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
