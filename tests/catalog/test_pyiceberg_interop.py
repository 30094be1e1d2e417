"""One SQL catalog (SQLite, and PostgreSQL on the suite's server), two libraries: PyIceberg 0.12's
SqlCatalog sees what icefloe writes and icefloe sees what PyIceberg writes (pyiceberg is a
test-only dependency)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.io.local import local_path
from icefloe.spec.schema import Schema

pytest.importorskip("pyiceberg")

NAME = "shared"
pytestmark = pytest.mark.catalogs("sqlite", "postgres")


@pytest.fixture
def db(catalog_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The shared catalog database's SQLAlchemy URL (both libraries take the same URL)."""
    if catalog_kind == "postgres":
        return str(request.getfixturevalue("postgres_server").create_database(f"py_{uuid.uuid4().hex[:10]}"))
    return f"sqlite:///{tmp_path / 'shared.db'}"


@pytest.fixture
def ours(db: str, tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = SqlCatalog(NAME, uri=db, warehouse=(tmp_path / "wh").as_uri())
    yield cat
    cat.close()


_opened: list[Any] = []


@pytest.fixture(autouse=True)
def _close_pyiceberg_catalogs() -> Iterator[None]:
    yield
    while _opened:  # PyIceberg never disposes its engine; open PostgreSQL connections would leak
        _opened.pop().engine.dispose()


def theirs(db: str, tmp_path: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    cat = PyIcebergSqlCatalog(NAME, uri=db, warehouse=f"file://{tmp_path / 'pywh'}")
    _opened.append(cat)
    return cat


def test_pyiceberg_reads_icefloe_tables(ours: SqlCatalog, db: str, tmp_path: Path, schema: Schema) -> None:
    from icefloe.spec.updates import SetProperties

    ours.create_namespace("db", {"owner": "icefloe"})
    ours.create_namespace("a.b")
    table = ours.create_table("db.events", schema, partition_by=["day(ts)"], properties={"p": "1"})
    _, location = ours.commit_table("db.events", [], [SetProperties({"p": "2"})])
    ours.create_table("a.b.deep", schema)

    py = theirs(db, tmp_path)
    assert sorted(py.list_namespaces()) == [("a",), ("db",)]
    assert py.list_namespaces("a") == [("a", "b")]
    assert py.load_namespace_properties("db")["owner"] == "icefloe"
    assert py.list_tables("db") == [("db", "events")]
    assert py.list_tables("a.b") == [("a", "b", "deep")]
    py_table = py.load_table("db.events")
    assert py_table.metadata_location == location
    assert str(py_table.metadata.table_uuid) == str(table.metadata.table_uuid)
    assert py_table.metadata.properties["p"] == "2"
    assert [f.name for f in py_table.schema().fields] == ["id", "ts", "s"]
    assert [f.name for f in py_table.spec().fields] == ["ts_day"]


def test_icefloe_sees_pyiceberg_tables(ours: SqlCatalog, db: str, tmp_path: Path) -> None:
    py = theirs(db, tmp_path)
    py.create_namespace("pyns")
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    py_table = py.create_table("pyns.t", schema=arrow_schema, properties={"format-version": "2"})
    py_table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=arrow_schema))
    py_table = py.load_table("pyns.t")

    assert ("pyns",) in ours.list_namespaces()
    assert ours.list_tables("pyns") == [("pyns", "t")]
    table = ours.load_table("pyns.t")
    assert table.metadata_location == py_table.metadata_location
    assert table.metadata.current_snapshot_id == py_table.metadata.current_snapshot_id
    assert len(table.metadata.snapshots) == 1

    # icefloe commits on top of PyIceberg's commit; PyIceberg follows
    from icefloe.spec.updates import SetProperties

    ours.commit_table("pyns.t", [], [SetProperties({"touched-by": "icefloe"})])
    assert py.load_table("pyns.t").metadata.properties["touched-by"] == "icefloe"


def test_purge_of_a_pyiceberg_table(ours: SqlCatalog, db: str, tmp_path: Path) -> None:
    """Purge deletes exactly the files the metadata references (written here by PyIceberg)."""
    py = theirs(db, tmp_path)
    py.create_namespace("pyns")
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    py_table = py.create_table("pyns.t", schema=arrow_schema)
    for start in (0, 10):
        py_table.append(pa.table({"id": list(range(start, start + 5))}, schema=arrow_schema))
    py_table.delete("id < 3")
    location = Path(local_path(py.load_table("pyns.t").metadata.location))
    files = {p for p in location.rglob("*") if p.is_file()}
    assert any(p.suffix == ".parquet" for p in files) and any(p.suffix == ".avro" for p in files)
    stray = location / "unrelated.txt"
    stray.write_text("keep me")

    ours.drop_table("pyns.t", purge=True)
    assert {p for p in location.rglob("*") if p.is_file()} == {stray}
    assert py.list_tables("pyns") == []


def test_pyiceberg_opens_a_v1_database_created_by_icefloe(ours: SqlCatalog, db: str, tmp_path: Path) -> None:
    ours.create_namespace("db")
    py = theirs(db, tmp_path)
    assert py._schema_version == "v1"
    py.create_namespace("other")
    # PyIceberg stores its namespace marker the same way Java does
    assert ours.load_namespace_properties("other") == {}
    assert json.dumps(sorted(ours.list_namespaces())) == json.dumps([["db"], ["other"]])


def test_pyiceberg_namespace_survives_removing_its_properties(
    ours: SqlCatalog, db: str, tmp_path: Path
) -> None:
    py = theirs(db, tmp_path)
    py.create_namespace("withprops", {"a": "1"})  # PyIceberg writes no 'exists' marker here
    ours.update_namespace_properties("withprops", removals=["a"])
    assert ours.namespace_exists("withprops")
    assert py.namespace_exists("withprops")
