"""commit_table: requirements, the compare-and-swap, and metadata file naming."""

from __future__ import annotations

import shutil
import threading
import uuid
from pathlib import Path

import pytest

from icefloe.catalog import Catalog
from icefloe.errors import CommitFailedError, NoSuchTableError
from icefloe.io.local import local_path
from icefloe.spec.schema import Schema
from icefloe.spec.updates import AssertCurrentSchemaId, AssertTableUUID, SetProperties


def version_of(location: str) -> int:
    return int(location.rsplit("/", 1)[-1].split("-", 1)[0])


def metadata_names(location: str) -> list[str]:
    folder = Path(local_path(location)).parent
    return sorted(p.name for p in folder.glob("*.metadata.json"))


def test_commit_writes_next_version(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    locations = [table.metadata_location]
    for i in range(3):
        metadata, location = catalog.commit_table(
            "db.t",
            [AssertTableUUID(table.metadata.table_uuid), AssertCurrentSchemaId(0)],
            [SetProperties({f"k{i}": str(i)})],
        )
        assert metadata.properties[f"k{i}"] == str(i)
        locations.append(location)
    assert [version_of(loc) for loc in locations] == [0, 1, 2, 3]
    assert len(set(locations)) == 4
    loaded = catalog.load_table("db.t")
    assert loaded.metadata_location == locations[-1]
    assert loaded.metadata.properties == {**loaded.metadata.properties, "k0": "0", "k1": "1", "k2": "2"}
    assert [e.metadata_file for e in loaded.metadata.metadata_log] == locations[:-1]
    assert len(metadata_names(locations[-1])) == 4


def test_commit_without_updates_is_a_no_op(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    metadata, location = catalog.commit_table("db.t", [], [])
    assert location == table.metadata_location
    assert metadata == table.metadata


def test_failed_requirement_changes_nothing(catalog: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    with pytest.raises(CommitFailedError) as e:
        catalog.commit_table("db.t", [AssertTableUUID(uuid.uuid4())], [SetProperties({"a": "b"})])
    assert e.value.retryable
    assert catalog.load_table("db.t").metadata_location == table.metadata_location
    assert metadata_names(table.metadata_location) == [table.metadata_location.rsplit("/", 1)[-1]]


def test_commit_missing_table(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    with pytest.raises(NoSuchTableError):
        catalog.commit_table("db.nope", [], [SetProperties({"a": "b"})])


def test_lost_swap_raises_and_cleans_up(
    catalog: Catalog, pointers: Catalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer commits between our read and our swap: we lose, our file is deleted, and
    the table holds exactly the winner's change. Through a REST server the race happens behind
    it, and the client gets the server's 409 as a retryable CommitFailedError."""
    catalog.create_namespace("db")
    catalog.create_table("db.t", schema)
    original_read = pointers._read
    raced = False

    def read_then_race(location: str):  # type: ignore[no-untyped-def]
        nonlocal raced
        base = original_read(location)
        if not raced:
            raced = True
            pointers.commit_table("db.t", [], [SetProperties({"winner": "b"})])
        return base

    monkeypatch.setattr(pointers, "_read", read_then_race)
    with pytest.raises(CommitFailedError) as e:
        catalog.commit_table("db.t", [], [SetProperties({"loser": "a"})])
    assert e.value.retryable
    monkeypatch.undo()
    table = catalog.load_table("db.t")
    assert table.metadata.properties.get("winner") == "b"
    assert "loser" not in table.metadata.properties
    names = metadata_names(table.metadata_location)
    assert len(names) == 2 and version_of(table.metadata_location) == 1


def test_stale_swap(catalog: Catalog, pointers: Catalog, schema: Schema) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    _, new = catalog.commit_table("db.t", [], [SetProperties({"a": "1"})])
    with pytest.raises(CommitFailedError):
        pointers._swap_pointer(("db", "t"), table.metadata_location, new + ".other")
    assert catalog.load_table("db.t").metadata_location == new
    assert pointers.load_table("db.t").metadata_location == new


def test_concurrent_commits_all_land_once(catalog: Catalog, schema: Schema) -> None:
    """Writers in threads retry on CommitFailedError; every change lands exactly once."""
    catalog.create_namespace("db")
    catalog.create_table("db.t", schema)
    writers, per_writer = 4, 4
    conflicts = 0
    lock = threading.Lock()

    def writer(w: int) -> None:
        nonlocal conflicts
        for i in range(per_writer):
            while True:
                try:
                    catalog.commit_table("db.t", [], [SetProperties({f"w{w}-{i}": "x"})])
                    break
                except CommitFailedError:
                    with lock:
                        conflicts += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    table = catalog.load_table("db.t")
    keys = {k for k in table.metadata.properties if k.startswith(("w0", "w1", "w2", "w3"))}
    assert keys == {f"w{w}-{i}" for w in range(writers) for i in range(per_writer)}
    assert version_of(table.metadata_location) == writers * per_writer
    assert len(metadata_names(table.metadata_location)) == writers * per_writer + 1


def test_version_follows_registered_hadoop_name(catalog: Catalog, schema: Schema, tmp_path: Path) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema)
    hadoop_style = tmp_path / "v7.metadata.json"
    shutil.copy(local_path(table.metadata_location), hadoop_style)
    catalog.register_table("db.r", str(hadoop_style))
    _, location = catalog.commit_table("db.r", [], [SetProperties({"a": "b"})])
    assert version_of(location) == 8


def test_create_through_commit(catalog: Catalog, schema: Schema, warehouse_dir: Path) -> None:
    """AssertCreate + the updates of a new table: the REST-style create transaction."""
    from icefloe.spec.metadata_builder import TableMetadataBuilder
    from icefloe.spec.partition import UNPARTITIONED_SPEC
    from icefloe.spec.sort_order import UNSORTED_SORT_ORDER
    from icefloe.spec.updates import AssertCreate

    catalog.create_namespace("db")
    location = f"{warehouse_dir.as_uri()}/db/new"
    builder = TableMetadataBuilder.new_table(schema, UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, location, {})
    updates = list(builder.updates)
    metadata, metadata_location = catalog.commit_table("db.new", [AssertCreate()], updates)
    assert version_of(metadata_location) == 0
    assert catalog.load_table("db.new").metadata == metadata
    with pytest.raises(CommitFailedError):
        catalog.commit_table("db.new", [AssertCreate()], updates)
    assert catalog.load_table("db.new").metadata_location == metadata_location


def test_commit_tables_is_all_or_nothing(catalog: Catalog, schema: Schema) -> None:
    from icefloe.catalog import TableCommit

    catalog.create_namespace("db")
    a = catalog.create_table("db.a", schema)
    b = catalog.create_table("db.b", schema)
    results = catalog.commit_tables(
        [
            TableCommit(a.identifier, [AssertTableUUID(a.metadata.table_uuid)], [SetProperties({"x": "1"})]),
            TableCommit(b.identifier, [], [SetProperties({"x": "1"})]),
        ]
    )
    assert [m.properties["x"] for m, _ in results] == ["1", "1"]
    locations = {n: catalog.load_table(f"db.{n}").metadata_location for n in ("a", "b")}
    # one stale requirement: neither table moves
    with pytest.raises(CommitFailedError):
        catalog.commit_tables(
            [
                TableCommit(a.identifier, [], [SetProperties({"x": "2"})]),
                TableCommit(b.identifier, [AssertCurrentSchemaId(99)], [SetProperties({"x": "2"})]),
            ]
        )
    for n in ("a", "b"):
        table = catalog.load_table(f"db.{n}")
        assert table.metadata_location == locations[n] and table.properties["x"] == "1"
    with pytest.raises(NoSuchTableError):
        catalog.commit_tables(
            [TableCommit(a.identifier), TableCommit(("db", "nope"), [], [SetProperties({"y": "1"})])]
        )
    assert catalog.commit_tables([]) == []
