"""Namespaces and tables from the command line: list, create (from a schema and from files),
describe, append, set properties, rename, drop."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

import icefloe
from tests.cli.conftest import Invoke, as_json, rows


def test_help_lists_every_command(icefloe_cli: Invoke) -> None:
    out = icefloe_cli("--help").stdout
    for command in (
        "namespaces", "tables", "describe", "history", "snapshots", "refs", "files", "manifests",
        "partitions", "query", "create", "drop", "rename", "branch", "tag", "rollback", "cherry-pick",
        "compact", "expire", "remove-orphans", "rewrite-manifests", "health", "serve",
    ):  # fmt: skip
        assert f"  {command} " in out, command
    assert icefloe.__version__ in icefloe_cli("--version").stdout


def test_namespaces_and_tables(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    icefloe_cli("create-namespace", "sales.eu", "-p", "owner=ops")
    icefloe_cli("create-namespace", "sales.eu", "--if-not-exists")
    assert as_json(icefloe_cli("namespaces", "--json")) == ["sales"]
    assert as_json(icefloe_cli("--json", "namespaces", "--recursive")) == ["sales", "sales.eu"]
    assert as_json(icefloe_cli("tables", "--json")) == ["sales.orders"]
    assert as_json(icefloe_cli("tables", "sales.eu", "--json")) == []
    assert "sales.orders" in icefloe_cli("tables").stdout
    done = as_json(icefloe_cli("drop-namespace", "sales.eu", "--json"))
    assert done == {"namespace": "sales.eu", "dropped": True}


def test_describe(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    d = as_json(icefloe_cli("describe", "sales.orders", "--json"))
    assert d["table"] == "sales.orders"
    assert [f["name"] for f in d["schema"]["fields"]] == ["id", "s", "ts"]
    assert d["partition_spec"]["fields"] == ["day(ts)"]
    assert d["sort_order"]["fields"] == []
    assert d["properties"]["write.delete.mode"] == "merge-on-read"
    assert d["current_snapshot"]["operation"] == "delete"
    assert d["counts"]["total_records"] == 500  # the delete is a position delete file
    assert d["counts"]["total_position_deletes"] == 20
    assert d["counts"]["total_data_files"] == 5
    assert d["counts"]["snapshots"] == 6
    human = icefloe_cli("describe", "sales.orders").stdout
    for text in ("day(ts)", "timestamptz", "merge-on-read", "position deletes", "main (branch)"):
        assert text in human, text


def test_create_from_schema(icefloe_cli: Invoke, catalog: icefloe.Catalog) -> None:
    icefloe_cli("create-namespace", "db")
    out = as_json(
        icefloe_cli(
            "create", "db.events",
            "--schema", "id bigint not null, name varchar, amount decimal(10, 2), at timestamptz",
            "--partition-by", "day(at)", "--partition-by", "bucket(4, id)", "--sort-by", "id desc",
            "-p", "write.delete.mode=merge-on-read", "--json",
        )
    )  # fmt: skip
    assert out["created"] is True
    t = catalog.load_table("db.events")
    assert [(f.name, str(f.field_type), f.required) for f in t.schema().fields] == [
        ("id", "long", True),
        ("name", "string", False),
        ("amount", "decimal(10, 2)", False),
        ("at", "timestamptz", False),
    ]
    assert "day(at), bucket(4, id)" in repr(t)
    assert "sorted by id desc nulls last" in repr(t)
    assert t.properties["write.delete.mode"] == "merge-on-read"
    again = as_json(icefloe_cli("create", "db.events", "--schema", "x int", "--if-not-exists", "--json"))
    assert again["created"] is False


def test_create_and_append_from_files(icefloe_cli: Invoke, catalog: icefloe.Catalog, tmp_path: Path) -> None:
    pq.write_table(rows(0, 250, 1), tmp_path / "a.parquet")
    pq.write_table(rows(250, 50, 2), tmp_path / "b.parquet")
    (tmp_path / "c.csv").write_text("id,s,ts\n300,x,2024-01-03T00:00:00Z\n301,y,2024-01-03T01:00:00Z\n")
    icefloe_cli("create-namespace", "db")
    out = as_json(
        icefloe_cli(
            "create", "db.t", "--from", str(tmp_path / "a.parquet"), "--partition-by", "day(ts)", "--json"
        )
    )
    assert out["rows"] == 250 and out["snapshots"] == 1
    out = as_json(
        icefloe_cli("append", "db.t", str(tmp_path / "b.parquet"), str(tmp_path / "c.csv"), "--json")
    )
    assert out["rows"] == 52 and out["snapshots"] == 2
    t = catalog.load_table("db.t")
    assert t.scan().count() == 302
    assert sorted(t.scan(row_filter="id >= 300").to_arrow().column("s").to_pylist()) == ["x", "y"]
    assert "appended 50 rows" in icefloe_cli("append", "db.t", str(tmp_path / "b.parquet")).stdout


def test_set_properties_rename_drop(
    icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog
) -> None:
    icefloe_cli(
        "set-properties", "sales.orders", "commit.retry.num-retries=7", "--unset", "write.delete.mode"
    )
    props = catalog.load_table("sales.orders").properties
    assert props["commit.retry.num-retries"] == "7" and "write.delete.mode" not in props
    icefloe_cli("rename", "sales.orders", "sales.orders2")
    assert catalog.table_exists("sales.orders2") and not catalog.table_exists("sales.orders")
    location = Path(catalog.load_table("sales.orders2").location.removeprefix("file://"))
    assert location.exists()
    # purging asks first; "n" keeps everything
    icefloe_cli("drop", "sales.orders2", "--purge", input="n\n", code=1)
    assert catalog.table_exists("sales.orders2")
    out = as_json(icefloe_cli("drop", "sales.orders2", "--purge", "--yes", "--json"))
    assert out["dropped"] and out["purged"] and out["deleted_files"] > 10 and out["complete"]
    assert not catalog.table_exists("sales.orders2")
    assert not list(location.rglob("*.parquet"))


def test_create_needs_a_schema_source(icefloe_cli: Invoke, catalog: icefloe.Catalog) -> None:
    r = icefloe_cli("create", "db.t", code=2)
    assert r.stderr.startswith("error: give either --schema or --from")
    icefloe_cli("create-namespace", "db")
    r = icefloe_cli("create", "db.t", "--schema", "id long, x varchar2", code=1)
    assert "error: unknown type 'varchar2' of column 'x'" in r.stderr
    assert "hint: use boolean, int, long" in r.stderr
