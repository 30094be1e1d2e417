"""Metadata commands (history, snapshots, refs, files, manifests, partitions) and ``query``."""

from __future__ import annotations

import json

import pytest

import icefloe
from icefloe.cli._query import plan_query
from tests.cli.conftest import Invoke, as_json


def test_history_and_snapshots(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    history = as_json(icefloe_cli("history", "sales.orders", "--json"))
    assert [h["snapshot_id"] for h in history] == [s.snapshot_id for s in orders.snapshots()]
    assert [h["operation"] for h in history] == ["append"] * 5 + ["delete"]
    assert history[-1]["total_records"] == "500"
    snaps = as_json(icefloe_cli("snapshots", "sales.orders", "--json"))
    assert len(snaps) == 6 and snaps[0]["summary"]["added-records"] == "100"
    assert snaps[0]["parent_id"] is None and snaps[1]["parent_id"] == snaps[0]["snapshot_id"]
    human = icefloe_cli("snapshots", "sales.orders").stdout
    assert "append" in human and "delete" in human
    limited = icefloe_cli("history", "sales.orders", "--limit", "2")
    assert "showing 2 of 6 rows" in limited.stderr


def test_refs_files_manifests_partitions(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    refs = as_json(icefloe_cli("refs", "sales.orders", "--json"))
    assert refs == [
        {
            "name": "main",
            "type": "BRANCH",
            "snapshot_id": orders.current_snapshot().snapshot_id,  # type: ignore[union-attr]
            "max_reference_age_in_ms": None,
            "min_snapshots_to_keep": None,
            "max_snapshot_age_in_ms": None,
        }
    ]
    files = as_json(icefloe_cli("files", "sales.orders", "--json"))
    assert sorted(f["content"] for f in files) == [0, 0, 0, 0, 0, 1]
    assert {f["partition"]["ts_day"] for f in files} == {"2024-01-01", "2024-01-02", "2024-01-03"}
    deletes = as_json(icefloe_cli("files", "sales.orders", "--content", "deletes", "--json"))
    assert [f["record_count"] for f in deletes] == [20]
    first = orders.snapshots()[0].snapshot_id
    assert len(as_json(icefloe_cli("files", "sales.orders", "--snapshot", str(first), "--json"))) == 1
    human = icefloe_cli("files", "sales.orders").stdout
    assert "position deletes" in human and "ts_day=2024-01-01" in human
    manifests = as_json(icefloe_cli("manifests", "sales.orders", "--json"))
    assert len(manifests) == 6 and sum(m["content"] for m in manifests) == 1
    assert "deletes" in icefloe_cli("manifests", "sales.orders").stdout
    parts = as_json(icefloe_cli("partitions", "sales.orders", "--json"))
    by_day = {p["partition"]["ts_day"]: p for p in parts}
    assert by_day["2024-01-01"]["record_count"] == 200
    assert by_day["2024-01-01"]["position_delete_record_count"] == 20
    assert "ts_day=2024-01-03" in icefloe_cli("partitions", "sales.orders").stdout


def test_query_streams_duckdb_results(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    sql = "SELECT ts::date AS d, count(*) AS n, min(id) AS lo FROM sales.orders GROUP BY d ORDER BY d"
    assert as_json(icefloe_cli("query", sql, "--json")) == [
        {"d": "2024-01-01", "n": 180, "lo": 20},
        {"d": "2024-01-02", "n": 200, "lo": 100},
        {"d": "2024-01-03", "n": 100, "lo": 200},
    ]
    human = icefloe_cli("query", sql)
    assert "2024-01-02" in human.stdout and "3 rows" in human.stderr
    # a self-join scans the table twice: each scan streams its own reader
    joined = as_json(
        icefloe_cli(
            "query", "SELECT count(*) AS n FROM sales.orders a JOIN sales.orders b USING (id)", "--json"
        )
    )
    assert joined == [{"n": 480}]
    csv_out = icefloe_cli("query", "SELECT id, s FROM sales.orders ORDER BY id LIMIT 2", "--csv").stdout
    assert csv_out == "id,s\n20,s2\n21,s0\n"
    shown = icefloe_cli("query", "SELECT * FROM sales.orders", "--max-rows", "3")
    assert "first 3 rows shown" in shown.stderr
    # Spark SQL (backticks) is read too, and namespace-qualified columns refer to the table
    spark_sql = "SELECT `id`, sales.orders.s FROM sales.orders WHERE id >= 498 ORDER BY id"
    assert as_json(icefloe_cli("query", spark_sql, "--json")) == [
        {"id": 498, "s": "s0"},
        {"id": 499, "s": "s1"},
    ]
    # time travel applies to every table of the statement
    first = orders.snapshots()[0].snapshot_id
    n = as_json(
        icefloe_cli("query", "SELECT count(*) AS n FROM sales.orders", "--snapshot", str(first), "--json")
    )
    assert n == [{"n": 100}]


def test_query_reads_only_the_named_columns(orders: icefloe.Table, catalog: icefloe.Catalog) -> None:
    plan = plan_query(catalog, "SELECT s, count(*) FROM sales.orders WHERE id > 3 GROUP BY s")
    assert [f.name for f in plan.scans[0].projection().fields] == ["id", "s"]
    assert plan.sql == "SELECT s, COUNT(*) FROM __icefloe_0 AS orders WHERE id > 3 GROUP BY s"
    star = plan_query(catalog, "SELECT * FROM sales.orders o")
    assert [f.name for f in star.scans[0].projection().fields] == ["id", "s", "ts"]
    counted = plan_query(catalog, "SELECT count(*) FROM sales.orders")
    assert len(counted.scans[0].projection().fields) == 1
    with_cte = plan_query(catalog, "WITH x AS (SELECT id FROM sales.orders) SELECT count(*) FROM x")
    assert with_cte.tables == ["sales.orders"]


def test_query_explain(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    info = as_json(icefloe_cli("query", "SELECT id FROM sales.orders", "--explain", "--json"))
    assert info["sql"] == "SELECT id FROM __icefloe_0 AS orders"
    assert info["scans"][0]["table"] == "sales.orders" and info["scans"][0]["columns"] == ["id"]


@pytest.mark.parametrize(
    ("sql", "message", "hint"),
    [
        (
            "SELECT * FROM sales.nope",
            "error: table 'sales.nope' does not exist",
            "hint: tables in 'sales': orders",
        ),
        ("SELECT nope FROM sales.orders", "error: DuckDB: Binder Error", "hint: the statement DuckDB ran"),
        (
            "SELECT 1; SELECT 2",
            "error: expected one SQL statement, got 2",
            "hint: run one statement per query",
        ),
    ],
)
def test_query_errors(icefloe_cli: Invoke, orders: icefloe.Table, sql: str, message: str, hint: str) -> None:
    r = icefloe_cli("query", sql, code=1)
    lines = r.stderr.splitlines()
    assert lines[0].startswith(message), r.stderr
    assert lines[1].startswith(hint), r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_query_json_streams_a_json_array(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    out = icefloe_cli("query", "SELECT id FROM sales.orders WHERE id < 0", "--json").stdout
    assert json.loads(out) == []
