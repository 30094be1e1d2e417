"""Iceberg Java's snapshot expiry (the Spark action behind ``CALL ... expire_snapshots``), run
on tables registered in a JdbcCatalog of its own, *without deleting anything*:
``ExpireSnapshotsSparkAction.expireFiles()`` commits the expiry and returns the files it would
delete. Runs with the oracle's Python (Spark 3.5, Iceberg 1.10); never imports icefloe.

    java_expire.py SPEC.json OUT.json

SPEC: {"catalog_db", "warehouse", "jobs": [{"key", "metadata", "older_than", "retain_last",
"snapshot_ids"}]}. OUT: {"jobs": {key: {"files": [[path, type]], "before": [ids], "after": [ids],
"refs_after": [names]}}, "errors": {key: message}}.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    from spark_iceberg import get_spark, shutdown_jvm  # the oracle dir is on PYTHONPATH

    spark = get_spark(
        warehouse=spec["warehouse"],
        catalog_db=spec["catalog_db"],
        jdbc_name="oracle",
        app_name="icefloe-expire-oracle",
    )
    out: dict = {"jobs": {}, "errors": {}}
    try:
        jvm = spark._jvm
        spark.sql("CREATE NAMESPACE IF NOT EXISTS oracle.x")
        for job in spec["jobs"]:
            key = job["key"]
            try:
                spark.sql(
                    f"CALL oracle.system.register_table(table => 'x.{key}', "
                    f"metadata_file => '{job['metadata']}')"
                )
                table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                    spark._jsparkSession, f"oracle.x.{key}"
                )
                before = sorted(int(s.snapshotId()) for s in table.snapshots())
                action = jvm.org.apache.iceberg.spark.actions.SparkActions.get(
                    spark._jsparkSession
                ).expireSnapshots(table)
                if job.get("older_than") is not None:
                    action = action.expireOlderThan(int(job["older_than"]))
                if job.get("retain_last") is not None:
                    action = action.retainLast(int(job["retain_last"]))
                for sid in job.get("snapshot_ids") or ():
                    action = action.expireSnapshotId(int(sid))
                rows = action.expireFiles().collectAsList()
                files = [[str(r.getPath()), str(r.getType())] for r in rows]
                table.refresh()
                after = sorted(int(s.snapshotId()) for s in table.snapshots())
                refs = sorted(str(k) for k in table.refs().keySet())
                out["jobs"][key] = {"files": files, "before": before, "after": after, "refs_after": refs}
            except Exception as e:
                text = f"{type(e).__name__}: {e}"
                causes = [line for line in text.splitlines() if "Caused by" in line]
                out["errors"][key] = "\n".join([text[:1500], *causes])
    finally:
        shutdown_jvm(spark)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
