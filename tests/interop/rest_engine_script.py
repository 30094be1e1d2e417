"""Run by the oracle's Python: DuckDB or Iceberg Java (Spark 3.5) against a REST catalog server.

usage: rest_engine_script.py SPEC.json OUT.json, SPEC = {"engine": "duckdb" | "java", "url": ...,
"client_id": ..., "client_secret": ..., "namespace": ..., "read": "table", "insert": [[id, s], ...],
"create": "new table", "httpfs": path (DuckDB)}. Both engines read ``read``, append ``insert`` to
it, create ``create`` (Java: partitioned, merge-on-read) with rows and delete one; the rows they
saw go to OUT.json.
"""

from __future__ import annotations

import json
import sys

import _oracle_env

_oracle_env.ensure_venv()


def run_duckdb(spec: dict) -> dict:
    import duckdb

    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions=false")
    con.execute("SET autoload_known_extensions=false")
    con.execute(f"LOAD '{spec['httpfs']}'")
    con.execute(f"LOAD '{_oracle_env.duckdb_extension('avro')}'")
    con.execute(f"LOAD '{_oracle_env.duckdb_extension('iceberg')}'")
    con.execute(
        "CREATE SECRET ice (TYPE iceberg, CLIENT_ID ?, CLIENT_SECRET ?, OAUTH2_SERVER_URI ?)".replace(
            "?", "'{}'"
        ).format(spec["client_id"], spec["client_secret"], spec["url"] + "/v1/oauth/tokens")
    )
    con.execute(f"ATTACH 'icefloe' AS ice (TYPE iceberg, ENDPOINT '{spec['url']}', SECRET ice)")
    ns, read, create = spec["namespace"], spec["read"], spec["create"]
    seen = con.execute(f"SELECT id, s FROM ice.{ns}.{read} ORDER BY id").fetchall()
    for row_id, s in spec["insert"]:
        con.execute(f"INSERT INTO ice.{ns}.{read} VALUES (?, ?)", [row_id, s])
    con.execute(f"CREATE TABLE ice.{ns}.{create} (id BIGINT, s VARCHAR)")
    con.execute(f"INSERT INTO ice.{ns}.{create} VALUES (1, 'd1'), (2, 'd2'), (3, 'd3')")
    after = con.execute(f"SELECT id, s FROM ice.{ns}.{read} ORDER BY id").fetchall()
    return {"seen": [list(r) for r in seen], "after": [list(r) for r in after]}


def run_java(spec: dict) -> dict:
    from spark_iceberg import get_spark

    pre = "spark.sql.catalog.rest"
    spark = get_spark(
        extra_conf={
            pre: "org.apache.iceberg.spark.SparkCatalog",
            f"{pre}.type": "rest",
            f"{pre}.uri": spec["url"],
            f"{pre}.credential": f"{spec['client_id']}:{spec['client_secret']}",
        }
    )
    ns, read, create = spec["namespace"], spec["read"], spec["create"]
    seen = [list(r) for r in spark.sql(f"SELECT id, s FROM rest.{ns}.{read} ORDER BY id").collect()]
    values = ", ".join(f"({int(i)}, '{s}')" for i, s in spec["insert"])
    spark.sql(f"INSERT INTO rest.{ns}.{read} VALUES {values}")
    spark.sql(
        f"CREATE TABLE rest.{ns}.{create} (id bigint, s string) USING iceberg PARTITIONED BY (bucket(2, id)) "
        "TBLPROPERTIES ('write.delete.mode'='merge-on-read', 'format-version'='2')"
    )
    spark.sql(f"INSERT INTO rest.{ns}.{create} VALUES (1, 'j1'), (2, 'j2'), (3, 'j3')")
    spark.sql(f"DELETE FROM rest.{ns}.{create} WHERE id = 2")
    namespaces = [r[0] for r in spark.sql("SHOW NAMESPACES IN rest").collect()]
    after = [list(r) for r in spark.sql(f"SELECT id, s FROM rest.{ns}.{read} ORDER BY id").collect()]
    spark.stop()
    return {"seen": seen, "after": after, "namespaces": namespaces}


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    result = run_duckdb(spec) if spec["engine"] == "duckdb" else run_java(spec)
    with open(sys.argv[2], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
