"""Table lifecycle behaviour, identical for every catalog."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import Catalog
from icefloe.errors import (
    NoSuchNamespaceError,
    NoSuchTableError,
    PartitionSpecError,
    TableAlreadyExistsError,
)
from icefloe.io.local import local_path
from icefloe.spec.schema import Schema

METADATA_NAME = re.compile(r"^(\d{5})-[0-9a-f-]{36}\.metadata\.json$")


def metadata_files(table_dir: Path) -> list[str]:
    meta = table_dir / "metadata"
    return sorted(p.name for p in meta.glob("*.metadata.json")) if meta.is_dir() else []


def test_create_and_load(catalog: Catalog, schema: Schema, warehouse_dir: Path) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", schema, properties={"owner": "me"})
    assert table.identifier == ("db", "events")
    # Java JdbcCatalog layout: <warehouse>/<ns>/<table>
    assert table.metadata.location == f"{warehouse_dir.as_uri()}/db/events"
    name = table.metadata_location.rsplit("/", 1)[-1]
    assert METADATA_NAME.match(name) and name.startswith("00000-")
    assert table.metadata_location.startswith(f"{warehouse_dir.as_uri()}/db/events/metadata/")
    assert Path(local_path(table.metadata_location)).is_file()
    assert table.metadata.properties["owner"] == "me"
    assert table.metadata.format_version == 2
    assert table.schema().same_columns(schema)

    loaded = catalog.load_table(("db", "events"))
    assert loaded.metadata_location == table.metadata_location
    assert loaded.metadata == table.metadata
    assert loaded.catalog is catalog
    assert catalog.table_exists("db.events")
    assert not catalog.table_exists("db.nope")
    assert catalog.list_tables("db") == [("db", "events")]


def test_multilevel_namespace(catalog: Catalog, schema: Schema, warehouse_dir: Path) -> None:
    catalog.create_namespace("a.b")
    table = catalog.create_table("a.b.t", schema)
    assert table.metadata.location == f"{warehouse_dir.as_uri()}/a/b/t"
    assert catalog.list_tables("a.b") == [("a", "b", "t")]
    assert catalog.list_tables("a") == []


def test_namespace_location_property(catalog: Catalog, schema: Schema, tmp_path: Path) -> None:
    where = (tmp_path / "elsewhere").as_uri()
    catalog.create_namespace("db", {"location": where})
    assert catalog.create_table("db.t", schema).metadata.location == f"{where}/t"
    explicit = (tmp_path / "explicit").as_uri()
    assert catalog.create_table("db.u", schema, location=explicit + "/").metadata.location == explicit


def test_fresh_ids_and_partitioning(catalog: Catalog) -> None:
    from icefloe.spec.types import LongType, NestedField, TimestamptzType

    catalog.create_namespace("db")
    odd = Schema(NestedField(10, "id", LongType(), required=True), NestedField(20, "ts", TimestamptzType()))
    table = catalog.create_table("db.t", odd, partition_by=["day(ts)", "bucket(4, id)"])
    assert [f.field_id for f in table.schema().fields] == [1, 2]
    spec = table.spec()
    assert [(f.source_id, f.name, str(f.transform)) for f in spec.fields] == [
        (2, "ts_day", "day"),
        (1, "id_bucket", "bucket[4]"),
    ]


def test_arrow_schema(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    pa_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    table = catalog.create_table("db.t", pa_schema)
    assert [(f.name, f.required) for f in table.schema().fields] == [("id", True), ("name", False)]


def test_format_version_property(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.v1", schema, properties={"format-version": "1"})
    assert table.metadata.format_version == 1
    assert "format-version" not in table.metadata.properties


def test_create_errors_leave_state(catalog: Catalog, schema: Schema, warehouse_dir: Path) -> None:
    with pytest.raises(NoSuchNamespaceError) as e:
        catalog.create_table("nope.t", schema)
    assert "create_namespace" in (e.value.hint or "")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    before = metadata_files(warehouse_dir / "db" / "t")
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", schema)
    assert metadata_files(warehouse_dir / "db" / "t") == before
    assert catalog.load_table("db.t").metadata_location == table.metadata_location
    with pytest.raises(PartitionSpecError):
        catalog.create_table("db.bad", schema, partition_by=["day(nope)"])
    with pytest.raises(PartitionSpecError):
        catalog.create_table("db.bad", schema, partition_by="day(ts)")  # type: ignore[arg-type]
    assert not catalog.table_exists("db.bad")
    assert not (warehouse_dir / "db" / "bad").exists()


def test_no_such_table_hints(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.events", schema)
    with pytest.raises(NoSuchTableError) as e:
        catalog.load_table("db.event")
    assert "db.events" in (e.value.hint or "")
    with pytest.raises(NoSuchTableError) as e:
        catalog.load_table("nope.events")
    assert "does not exist" in (e.value.hint or "")


def test_drop_keeps_files(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    catalog.drop_table("db.t")
    assert not catalog.table_exists("db.t")
    assert catalog.list_tables("db") == []
    assert Path(local_path(table.metadata_location)).is_file()
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("db.t")


def test_rename(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    catalog.create_namespace("other")
    table = catalog.create_table("db.t", schema)
    renamed = catalog.rename_table("db.t", "other.t2")
    assert renamed.identifier == ("other", "t2")
    assert renamed.metadata_location == table.metadata_location
    assert not catalog.table_exists("db.t")
    assert catalog.list_tables("other") == [("other", "t2")]

    catalog.create_table("db.t", schema)
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table("db.t", "other.t2")
    with pytest.raises(NoSuchNamespaceError):
        catalog.rename_table("db.t", "nope.t")
    with pytest.raises(NoSuchTableError):
        catalog.rename_table("db.missing", "db.x")
    assert catalog.list_tables("db") == [("db", "t")]
    assert catalog.list_tables("other") == [("other", "t2")]


def test_register(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    copy = catalog.register_table("db.copy", table.metadata_location)
    assert copy.metadata == table.metadata
    with pytest.raises(TableAlreadyExistsError):
        catalog.register_table("db.copy", table.metadata_location)
    with pytest.raises(NoSuchNamespaceError):
        catalog.register_table("nope.copy", table.metadata_location)
    assert catalog.list_tables("db") == [("db", "copy"), ("db", "t")]


def test_register_missing_file(catalog: Catalog, tmp_path: Path) -> None:
    from icefloe.errors import FileIOError

    catalog.create_namespace("db")
    with pytest.raises(FileIOError):
        catalog.register_table("db.t", str(tmp_path / "nope.metadata.json"))
    assert not catalog.table_exists("db.t")


def test_register_java_table(catalog: Catalog, oracle_ref: Path) -> None:
    """A table written by Iceberg Java (Hadoop layout, vN.metadata.json) registers and loads."""
    index = json.loads((oracle_ref / "index.json").read_text())
    entry = next(t for t in index["tables"] if t["table"] == "ref.mor_v2" and t["catalog"] == "hcat")
    catalog.create_namespace("ref")
    table = catalog.register_table("ref.mor_v2", entry["metadata_location"])
    expected = json.loads((oracle_ref / entry["expected"]).read_text())
    assert table.metadata.current_snapshot_id == expected["current_snapshot_id"]
    assert [s.snapshot_id for s in table.metadata.snapshots] == expected["snapshot_ids"]
    assert catalog.load_table("ref.mor_v2").metadata_location == entry["metadata_location"]


def test_purge_removes_reachable_files(catalog: Catalog, tmp_path: Path) -> None:
    """Purge deletes exactly the files the metadata references: data and delete files, manifests,
    manifest lists, every metadata file in the log. The table is written by PyIceberg (appends,
    then a delete) and registered here, so this does not depend on icefloe's own writer."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    py = PyIcebergSqlCatalog(
        "py", uri=f"sqlite:///{tmp_path / 'py.db'}", warehouse=(tmp_path / "pywh").as_uri()
    )
    py.create_namespace("ns")
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    py_table = py.create_table("ns.t", schema=arrow_schema)
    for start in (0, 10):
        py_table.append(pa.table({"id": list(range(start, start + 5))}, schema=arrow_schema))
    py_table.delete("id < 3")
    py_table = py.load_table("ns.t")
    table_dir = Path(local_path(py_table.metadata.location))
    before = {p for p in table_dir.rglob("*") if p.is_file()}
    assert any(p.suffix == ".parquet" for p in before)
    assert any(p.name.startswith("snap-") for p in before)
    assert len([p for p in before if p.name.endswith(".metadata.json")]) >= 4
    # a file the metadata does not reference survives: purge never lists directories
    stray = table_dir / "data" / "not-referenced.txt"
    stray.write_text("x")

    catalog.create_namespace("db")
    catalog.register_table("db.t", py_table.metadata_location)
    catalog.drop_table("db.t", purge=True)
    left = {p for p in table_dir.rglob("*") if p.is_file()}
    assert left == {stray}
    assert not catalog.table_exists("db.t")
