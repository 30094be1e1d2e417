"""Iceberg Java's side of the shared-SQLite-catalog test; runs with the ORACLE's Python.

usage: java_sqlite_roundtrip.py SPEC.json OUT.json

SPEC: {"db", "catalog", "warehouse", "namespace", "read": [table, ...],
       "append": {table: [row, ...]}, "create": {"table", "rows": [row, ...]}}
with rows as {"id", "s", "ts_us", "v", "cat"}. One JVM (Spark 3.5 + Iceberg 1.10 JdbcCatalog
over the same SQLite file) lists namespaces and tables, reads each table of ``read`` (rows and
the oracle checksum), appends rows, and creates + fills a table. OUT gets what it saw.

Instead of "db" (a SQLite file), SPEC may hold "jdbc": {"uri", "user", "password"} (PostgreSQL;
the driver jar comes from ORACLE_EXTRA_JARS) and "metadata_locations": {table: location} for
the tables of "read".
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import sys
import time
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

import canon  # type: ignore[import-not-found]  # noqa: E402
from spark_iceberg import get_spark, shutdown_jvm  # type: ignore[import-not-found]  # noqa: E402

DDL = "id bigint NOT NULL, s string, ts timestamp, v double, cat string"


def metadata_location(db: str, catalog: str, table: str) -> str:
    ns, _, name = table.rpartition(".")
    con = sqlite3.connect(db)
    try:
        row = con.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name=? AND table_namespace=? "
            "AND table_name=?",
            (catalog, ns, name),
        ).fetchone()
    finally:
        con.close()
    return str(row[0])


def to_tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return [
        (
            r["id"],
            r["s"],
            None if r["ts_us"] is None else epoch + dt.timedelta(microseconds=r["ts_us"]),
            r["v"],
            r["cat"],
        )
        for r in rows
    ]


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out: dict[str, Any] = {"reads": {}, "errors": []}
    db, cat, ns = spec.get("db"), spec["catalog"], spec["namespace"]
    if "jdbc" in spec:
        pre = f"spark.sql.catalog.{cat}"
        conf = {
            pre: "org.apache.iceberg.spark.SparkCatalog",
            f"{pre}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            f"{pre}.uri": spec["jdbc"]["uri"],
            f"{pre}.jdbc.user": spec["jdbc"]["user"],
            f"{pre}.jdbc.password": spec["jdbc"]["password"],
            f"{pre}.warehouse": spec["warehouse"],
        }
        spark = get_spark(extra_conf=conf)
    else:
        spark = get_spark(catalog_db=db, jdbc_name=cat, jdbc_warehouse=spec["warehouse"])
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("s", T.StringType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("v", T.DoubleType()),
            T.StructField("cat", T.StringType()),
        ]
    )
    try:
        out["namespaces"] = [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {cat}").collect()]
        out["tables"] = sorted(r["tableName"] for r in spark.sql(f"SHOW TABLES IN {cat}.{ns}").collect())
        for t in spec["read"]:
            try:
                rows = spark.table(f"{cat}.{t}").collect()
                location = spec["metadata_locations"][t] if "jdbc" in spec else metadata_location(db, cat, t)
                sch = canon.schema_for(canon.load_metadata_json(location))
                n, ck = canon.checksum_rows(sch, rows)
                out["reads"][t] = {"rows": n, "checksum": ck}
            except Exception as ex:
                out["errors"].append(f"read {t}: {type(ex).__name__}: {str(ex)[:800]}")
        for t, rows in spec.get("append", {}).items():
            try:
                spark.createDataFrame(to_tuples(rows), schema).writeTo(f"{cat}.{t}").append()
            except Exception as ex:
                out["errors"].append(f"append {t}: {type(ex).__name__}: {str(ex)[:800]}")
        c = spec.get("create")
        if c:
            fq = f"{cat}.{c['table']}"
            spark.sql(
                f"CREATE TABLE {fq} ({DDL}) USING iceberg PARTITIONED BY (days(ts), bucket(4, id)) "
                "TBLPROPERTIES ('format-version'='2')"
            )
            for batch in c["batches"]:
                spark.createDataFrame(to_tuples(batch), schema).writeTo(fq).append()
    finally:
        shutdown_jvm(spark)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
