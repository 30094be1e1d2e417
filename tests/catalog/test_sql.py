"""SqlCatalog specifics: the JDBC catalog tables (V0 and V1), SQLite settings, database failures
during the compare-and-swap."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    NoSuchTableError,
)
from icefloe.io.local import local_path
from icefloe.spec.schema import Schema

JAVA_V0_TABLES = (
    "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,"
    "table_namespace VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
    "metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, table_namespace, table_name))"
)
JAVA_NAMESPACES = (
    "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
    "namespace VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, namespace, property_key))"
)


def columns(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as con:
        return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(db)
    try:
        return list(con.execute(sql))
    finally:
        con.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "catalog.db"


def open_sql(db: Path, wh: Path, name: str = "c", **props: str) -> SqlCatalog:
    return SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=wh.as_uri(), **props)


def test_new_database_uses_v1_and_java_rows(db: Path, tmp_path: Path, schema: Schema) -> None:
    cat = open_sql(db, tmp_path)
    assert cat.schema_version == "V1"
    assert columns(db, "iceberg_tables") == [
        "catalog_name",
        "table_namespace",
        "table_name",
        "metadata_location",
        "previous_metadata_location",
        "iceberg_type",
    ]
    assert columns(db, "iceberg_namespace_properties") == [
        "catalog_name",
        "namespace",
        "property_key",
        "property_value",
    ]
    cat.create_namespace("a.b", {"owner": "me"})
    table = cat.create_table("a.b.t", schema)
    assert sorted(rows(db, "select * from iceberg_namespace_properties")) == [
        ("c", "a.b", "exists", "true"),
        ("c", "a.b", "owner", "me"),
    ]
    assert rows(db, "select * from iceberg_tables") == [
        ("c", "a.b", "t", table.metadata_location, None, "TABLE")
    ]
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    cat.close()


def test_previous_metadata_location(db: Path, tmp_path: Path, schema: Schema) -> None:
    from icefloe.spec.updates import SetProperties

    cat = open_sql(db, tmp_path)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    _, new = cat.commit_table("db.t", [], [SetProperties({"a": "b"})])
    assert rows(db, "select metadata_location, previous_metadata_location from iceberg_tables") == [
        (new, table.metadata_location)
    ]
    cat.close()


def test_v0_database_stays_v0(db: Path, tmp_path: Path, schema: Schema) -> None:
    with sqlite3.connect(db) as con:
        con.execute(JAVA_V0_TABLES)
        con.execute(JAVA_NAMESPACES)
    cat = open_sql(db, tmp_path)
    assert cat.schema_version == "V0"
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    assert "iceberg_type" not in columns(db, "iceberg_tables")
    assert cat.load_table("db.t").metadata_location == table.metadata_location
    cat.close()
    migrated = open_sql(db, tmp_path, **{"schema-version": "V1"})
    assert migrated.schema_version == "V1"
    assert columns(db, "iceberg_tables")[-1] == "iceberg_type"
    assert migrated.list_tables("db") == [("db", "t")]  # NULL iceberg_type counts as a table
    migrated.close()


def test_views_are_not_tables(db: Path, tmp_path: Path) -> None:
    cat = open_sql(db, tmp_path)
    with sqlite3.connect(db) as con:
        con.execute("insert into iceberg_tables values ('c', 'v', 'view1', '/x.metadata.json', null, 'VIEW')")
    assert cat.namespace_exists("v")
    assert cat.list_tables("v") == []
    assert not cat.table_exists("v.view1")
    with pytest.raises(NoSuchTableError):
        cat.load_table("v.view1")
    cat.close()


def test_catalog_names_are_isolated(db: Path, tmp_path: Path, schema: Schema) -> None:
    a, b = open_sql(db, tmp_path, "a"), open_sql(db, tmp_path, "b")
    a.create_namespace("db")
    a.create_table("db.t", schema)
    assert b.list_namespaces() == []
    assert not b.table_exists("db.t")
    b.create_namespace("db")
    assert b.list_tables("db") == []
    a.close()
    b.close()


def test_two_handles_on_one_file_share_state(db: Path, tmp_path: Path, schema: Schema) -> None:
    from icefloe.spec.updates import SetProperties

    a, b = open_sql(db, tmp_path), open_sql(db, tmp_path)
    a.create_namespace("db")
    a.create_table("db.t", schema)
    seen_by_b = b.load_table("db.t")
    a.commit_table("db.t", [], [SetProperties({"x": "1"})])
    with pytest.raises(CommitFailedError):
        b._swap_pointer(("db", "t"), seen_by_b.metadata_location, seen_by_b.metadata_location + ".new")
    assert b.load_table("db.t").metadata.properties["x"] == "1"
    a.close()
    b.close()


def test_in_memory_database_is_shared_across_threads(tmp_path: Path, schema: Schema) -> None:
    cat = SqlCatalog("m", uri="sqlite:///:memory:", warehouse=tmp_path.as_uri())
    cat.create_namespace("db")
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(cat.namespace_exists("db")))
    thread.start()
    thread.join()
    assert result == [True]
    cat.close()


def test_configuration_errors(db: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SqlCatalog("c", warehouse=tmp_path.as_uri())
    with pytest.raises(ConfigError):
        open_sql(db, tmp_path, **{"init-catalog-tables": "false"})
    with pytest.raises(ConfigError):
        open_sql(db, tmp_path, **{"schema-version": "V9"})


def test_missing_warehouse(db: Path, schema: Schema) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{db}")
    cat.create_namespace("db")
    with pytest.raises(ConfigError) as e:
        cat.create_table("db.t", schema)
    assert "warehouse" in (e.value.hint or "")
    assert not cat.table_exists("db.t")
    cat.close()


def test_failure_during_database_commit_is_unknown(db: Path, tmp_path: Path, schema: Schema) -> None:
    """The COMMIT itself fails: the outcome is unknown, and the new metadata file must stay."""
    from icefloe.spec.updates import SetProperties

    cat = open_sql(db, tmp_path)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)

    def fail_commit(conn: object) -> None:
        raise OperationalError("COMMIT", {}, Exception("connection lost"))

    event.listen(cat._engine, "commit", fail_commit)
    try:
        with pytest.raises(CommitStateUnknownError) as e:
            cat.commit_table("db.t", [], [SetProperties({"a": "b"})])
    finally:
        event.remove(cat._engine, "commit", fail_commit)
    assert not e.value.retryable
    new_location = e.value.context["metadata_location"]
    assert Path(local_path(new_location)).is_file()
    assert cat.load_table("db.t").metadata_location == table.metadata_location
    cat.close()


def test_failure_of_the_update_statement_is_a_known_failure(db: Path, tmp_path: Path, schema: Schema) -> None:
    from icefloe.spec.updates import SetProperties

    cat = open_sql(db, tmp_path)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)

    def fail_update(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.startswith("UPDATE iceberg_tables"):
            raise OperationalError(statement, {}, Exception("database is locked"))

    event.listen(cat._engine, "before_cursor_execute", fail_update)
    try:
        with pytest.raises(CommitFailedError):
            cat.commit_table("db.t", [], [SetProperties({"a": "b"})])
    finally:
        event.remove(cat._engine, "before_cursor_execute", fail_update)
    folder = Path(local_path(table.metadata_location)).parent
    assert sorted(p.name for p in folder.iterdir()) == [table.metadata_location.rsplit("/", 1)[-1]]
    cat.close()


def test_java_jdbc_catalog_database(tmp_path: Path, oracle_ref: Path) -> None:
    """Open (a copy of) the SQLite database Iceberg Java's JdbcCatalog wrote (V0 schema)."""
    source = oracle_ref / "catalog.db"
    if not source.is_file():
        pytest.skip("the reference tables were generated without --catalog-db")
    db = tmp_path / "java.db"
    shutil.copy(source, db)
    cat = SqlCatalog("oracle", uri=f"sqlite:///{db}", warehouse=(tmp_path / "wh").as_uri())
    assert cat.schema_version == "V0"
    assert cat.list_namespaces() == [("ref",)]
    assert cat.load_namespace_properties("ref").get("owner") is not None
    tables = cat.list_tables("ref")
    assert ("ref", "mor_v2") in tables
    expected = {
        str(r[0]): str(r[1]) for r in rows(db, "select table_name, metadata_location from iceberg_tables")
    }
    for ident in tables:
        table = cat.load_table(ident)
        assert table.metadata_location == expected[ident[-1]]
        assert table.metadata.current_snapshot() is not None
    cat.close()
