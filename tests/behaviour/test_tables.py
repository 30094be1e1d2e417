"""Table behaviour that must hold for every catalog on every store: the lifecycle (create, load,
list, rename, register, drop, purge), writes (append, overwrite, copy-on-write and merge-on-read
deletes, upsert, transactions), concurrent writers through separate catalog handles, and failed
commits that leave no file behind."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from icefloe.catalog._files import reachable_files
from icefloe.errors import (
    ConflictError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from icefloe.table import Table

from .conftest import Env

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string()), pa.field("v", pa.int64())]
)
MODES = ["copy-on-write", "merge-on-read"]
Row = tuple[int, str, int]
METADATA_NAME = re.compile(r"/metadata/\d{5}-[0-9a-f-]{36}\.metadata\.json$")


def arrow(rows: list[Row]) -> pa.Table:
    cols = list(zip(*rows, strict=True)) if rows else [[], [], []]
    return pa.table({n: list(c) for n, c in zip(("id", "part", "v"), cols, strict=True)}, schema=SCHEMA)


def rows_of(t: Table, **scan: object) -> list[Row]:
    data = t.scan(**scan).to_arrow().to_pylist()  # type: ignore[arg-type]
    return sorted((r["id"], r["part"], r["v"]) for r in data)


def make_table(env: Env, name: str = "t", mode: str = "copy-on-write") -> Table:
    if not env.catalog.namespace_exists("db"):
        env.catalog.create_namespace("db")
    props = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
    return env.catalog.create_table(f"db.{name}", SCHEMA, partition_by=["part"], properties=props)


def live_files(env: Env, t: Table) -> set[str]:
    """Every file the table's metadata history references (canonical spelling)."""
    groups = reachable_files(t.io, t.metadata, t.metadata_location)
    return {env.store.key(f) for group in groups for f in group}


def test_create_load_list_rename_and_drop(env: Env) -> None:
    t = make_table(env)
    assert t.metadata.location == f"{env.store.warehouse}/db/t"
    assert METADATA_NAME.search(t.metadata_location)
    assert env.store.exists(t.metadata_location)

    other = env.reopen()
    loaded = other.load_table("db.t")
    assert loaded.metadata_location == t.metadata_location
    assert loaded.schema().same_columns(t.schema())
    assert other.list_tables("db") == [("db", "t")]
    with pytest.raises(TableAlreadyExistsError):
        other.create_table("db.t", SCHEMA)

    t.append(arrow([(1, "a", 10)]))
    env.catalog.create_namespace("archive")
    moved = env.catalog.rename_table("db.t", "archive.t")
    assert rows_of(moved) == [(1, "a", 10)]
    assert other.list_tables("db") == [] and other.list_tables("archive") == [("archive", "t")]
    with pytest.raises(NoSuchTableError):
        other.load_table("db.t")

    files = env.store.files(moved.location)
    env.catalog.drop_table("archive.t")  # without purge: the files stay
    assert not other.table_exists("archive.t")
    assert env.store.files(moved.location) == files


def test_register_an_existing_table(env: Env) -> None:
    t = make_table(env)
    t.append(arrow([(1, "a", 1), (2, "b", 2)]))
    env.catalog.drop_table("db.t")
    registered = env.reopen().register_table("db.again", t.metadata_location)
    assert registered.metadata_location == t.metadata_location
    assert rows_of(registered) == [(1, "a", 1), (2, "b", 2)]
    registered.append(arrow([(3, "a", 3)]))
    assert rows_of(env.catalog.load_table("db.again")) == [(1, "a", 1), (2, "b", 2), (3, "a", 3)]


def test_append_scan_and_time_travel(env: Env) -> None:
    t = make_table(env)
    first = t.append(arrow([(1, "a", 1), (2, "b", 2)]))
    assert first is not None
    t.append(arrow([(3, "a", 3)]))
    assert all(f.startswith(env.store.warehouse) for f in live_files(env, t))
    reader = env.reopen().load_table("db.t")
    assert rows_of(reader) == [(1, "a", 1), (2, "b", 2), (3, "a", 3)]
    assert rows_of(reader, row_filter="part = 'a' and v >= 2") == [(3, "a", 3)]
    assert rows_of(reader, snapshot_id=first.snapshot_id) == [(1, "a", 1), (2, "b", 2)]


def test_overwrite_by_filter_and_in_full(env: Env) -> None:
    t = make_table(env)
    t.append(arrow([(1, "a", 1), (2, "a", 2), (3, "b", 3)]))
    t.overwrite(arrow([(9, "a", 9)]), "part = 'a'")
    assert rows_of(t) == [(3, "b", 3), (9, "a", 9)]
    t.overwrite(arrow([(7, "c", 7)]))
    assert rows_of(env.reopen().load_table("db.t")) == [(7, "c", 7)]


@pytest.mark.parametrize("mode", MODES)
def test_delete_and_upsert(env: Env, mode: str) -> None:
    t = make_table(env, mode=mode)
    t.append(arrow([(i, "a" if i % 2 else "b", i) for i in range(1, 9)]))
    snap = t.delete("v >= 6 and part = 'b'")  # 6 and 8: part of a file, so rows are rewritten or deleted
    assert snap is not None
    added_deletes = int(snap.summary.properties.get("added-delete-files", "0"))
    assert (added_deletes > 0) == (mode == "merge-on-read")
    t.upsert(arrow([(1, "a", 100), (20, "b", 20)]), ["id"])
    expected = [(1, "a", 100), (2, "b", 2), (3, "a", 3), (4, "b", 4), (5, "a", 5), (7, "a", 7), (20, "b", 20)]
    assert rows_of(env.reopen().load_table("db.t")) == expected


def test_transaction_commits_every_action_or_none(env: Env) -> None:
    t = make_table(env, mode="merge-on-read")
    t.append(arrow([(1, "a", 1), (2, "b", 2)]))
    with t.transaction() as tx:
        tx.append(arrow([(3, "a", 3)]))
        tx.delete("id = 1")
    assert rows_of(env.reopen().load_table("db.t")) == [(2, "b", 2), (3, "a", 3)]

    before = t.refresh().metadata_location
    with pytest.raises(ZeroDivisionError), t.transaction() as tx:
        tx.append(arrow([(4, "a", 4)]))
        raise ZeroDivisionError
    assert t.refresh().metadata_location == before


def test_writers_on_separate_handles_all_land(env: Env) -> None:
    """Two handles on the same catalog append on top of the same base; the second commit loses
    the swap, retries on the new base, and both appends land."""
    make_table(env)
    a = env.catalog.load_table("db.t")
    b = env.reopen().load_table("db.t")
    a.append(arrow([(1, "a", 1)]))
    b.append(arrow([(2, "b", 2)]))  # b's base is stale: retried on top of a's snapshot
    final = env.reopen().load_table("db.t")
    assert rows_of(final) == [(1, "a", 1), (2, "b", 2)]
    assert len(final.snapshots()) == 2


def test_a_conflict_leaves_no_file_behind(env: Env) -> None:
    """A serializable copy-on-write delete that rewrites part of a file, while a concurrent writer
    appended a row it would have deleted, fails with a ConflictError when statement restarts are
    off; its rewritten data file, manifests and manifest list are deleted again."""
    t = make_table(env)
    with t.transaction() as tx:
        tx.set_properties(**{"commit.statement-restart.max-attempts": "1"})
    t = t.refresh()
    t.append(arrow([(1, "a", 1), (2, "a", 2)]))
    stale = env.reopen().load_table("db.t")
    env.catalog.load_table("db.t").append(arrow([(1, "a", 10)]))  # matches the delete's filter
    with pytest.raises(ConflictError):
        stale.delete("id = 1")
    t = t.refresh()
    assert rows_of(t) == [(1, "a", 1), (1, "a", 10), (2, "a", 2)]
    assert env.store.files(t.location) == live_files(env, t)


def test_a_restarted_delete_leaves_no_file_behind(env: Env) -> None:
    """The same conflict with restarts on (the default): the delete runs again on the new snapshot,
    removes both matching rows, and the first attempt's files are deleted."""
    t = make_table(env)
    t.append(arrow([(1, "a", 1), (2, "a", 2)]))
    stale = env.reopen().load_table("db.t")
    env.catalog.load_table("db.t").append(arrow([(1, "a", 10)]))
    stale.delete("id = 1")
    t = t.refresh()
    assert rows_of(t) == [(2, "a", 2)]
    assert env.store.files(t.location) == live_files(env, t)


def test_purge_deletes_every_file_the_table_wrote(env: Env) -> None:
    t = make_table(env, mode="merge-on-read")
    t.append(arrow([(1, "a", 1), (2, "b", 2)]))
    t.delete("id = 1")
    t.upsert(arrow([(2, "b", 20)]), ["id"])
    t.overwrite(arrow([(5, "c", 5)]), "part = 'c'")
    t = t.refresh()
    written = env.store.files(t.location)
    assert written == live_files(env, t)
    assert any(f.endswith(".parquet") for f in written)
    env.catalog.drop_table("db.t", purge=True)
    assert env.store.files(t.location) == set()
    assert not env.reopen().table_exists("db.t")


def test_branches_tags_and_rollback(env: Env) -> None:
    """Branch and tag changes are metadata commits like any other (refs set and removed through
    the catalog): a write to a branch leaves main alone until main is fast-forwarded to it."""
    t = make_table(env)
    first = t.append(arrow([(1, "a", 1)]))
    assert first is not None
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", first.snapshot_id).create_branch("dev")
    t.refresh().append(arrow([(2, "b", 2)]), branch="dev")

    reader = env.reopen().load_table("db.t")
    assert set(reader.refs()) == {"main", "v1", "dev"}
    assert rows_of(reader) == [(1, "a", 1)]
    assert rows_of(reader, ref="dev") == [(1, "a", 1), (2, "b", 2)]
    with reader.manage_snapshots() as ms:
        ms.fast_forward("main", "dev")
    assert rows_of(env.reopen().load_table("db.t")) == [(1, "a", 1), (2, "b", 2)]

    with t.refresh().manage_snapshots() as ms:
        ms.rollback_to(first.snapshot_id).remove_branch("dev")
    final = env.reopen().load_table("db.t")
    assert set(final.refs()) == {"main", "v1"}
    assert rows_of(final) == rows_of(final, ref="v1") == [(1, "a", 1)]


def test_replace_partitions_and_table_properties(env: Env) -> None:
    t = make_table(env)
    t.append(arrow([(1, "a", 1), (2, "b", 2), (3, "c", 3)]))
    t.replace_partitions(arrow([(10, "a", 10), (20, "b", 20)]))  # partitions a and b only
    with t.transaction() as tx:
        tx.set_properties(owner="suite", **{"commit.retry.num-retries": "7"})
    t.transaction().remove_properties("owner")  # an abandoned transaction changes nothing
    reader = env.reopen().load_table("db.t")
    assert rows_of(reader) == [(3, "c", 3), (10, "a", 10), (20, "b", 20)]
    assert reader.properties["owner"] == "suite" and reader.properties["commit.retry.num-retries"] == "7"


def test_compaction_rewrites_files_and_keeps_rows(env: Env) -> None:
    """The commit of a compaction (maintenance's rewrite of small files): three files of one
    partition become one; the rows, and every file on the store being live, stay true."""
    from icefloe.arrow.writer import write_data_files

    t = make_table(env)
    for i in range(3):
        t.append(arrow([(i, "a", i)]))
    before = rows_of(t)
    small = [task.file for task in t.scan().plan_files()]
    assert len(small) == 3
    compacted = write_data_files(t.io, t.metadata, t.scan().to_arrow())
    with t.transaction() as tx:
        tx.rewrite_files(remove=small, add=compacted, delete_on_failure=True)
    t = env.reopen().load_table("db.t")
    snapshot = t.current_snapshot()
    assert snapshot is not None and snapshot.summary.operation.value == "replace"
    assert [task.file.file_path for task in t.scan().plan_files()] == [f.file_path for f in compacted]
    assert rows_of(t) == before
    assert env.store.files(t.location) == live_files(env, t)
