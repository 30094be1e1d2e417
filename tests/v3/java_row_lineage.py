"""Run by the oracle's Python (Iceberg Java 1.10 on Spark 3.5): read the row lineage of tables.

    python java_row_lineage.py JOBS.json OUT.json

JOBS.json is a list of ``{"name", "metadata", "snapshot_id" (or null), "key"}``; OUT.json maps
each name to ``[[key, _row_id, _last_updated_sequence_number], ...]`` as Iceberg Java reads them
(``spark.read.format("iceberg").load(metadata.json)`` then ``select``), or to ``{"error": text}``.
One JVM reads every job.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    from spark_iceberg import get_spark, read_metadata

    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    spark = get_spark(None, None, "oracle", None)
    out: dict[str, object] = {}
    for job in jobs:
        try:
            df = read_metadata(spark, job["metadata"], job.get("snapshot_id"))
            rows = df.select(job["key"], "_row_id", "_last_updated_sequence_number").collect()
            out[job["name"]] = sorted([r[0], r[1], r[2]] for r in rows)
        except Exception as e:  # reported to the test, which fails with the text
            out[job["name"]] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    spark.stop()
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
