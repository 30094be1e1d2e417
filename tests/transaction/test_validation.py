"""Each conflict check of icefloe.transaction.conflicts, as a scenario:

setup (table partitioned by ``part``: file A = ids 1, 2 in ``a``; file B = ids 3, 4 in ``b``)
/ what was read (a stale handle loaded before the concurrent commit)
/ what committed meanwhile (through a fresh handle) / what we try / the expected outcome.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import (
    ConfigError,
    ConflictError,
    ConflictingDataFilesError,
    ConflictingDeleteFilesError,
    MissingFilesError,
)
from icefloe.expressions import parse
from icefloe.manifest import DataFile, ManifestContent, read_manifest, read_manifest_list
from icefloe.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string())])
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "2"}


def rows(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [part] * len(ids)}, schema=SCHEMA)


def setup(catalog: InMemoryCatalog, mode: str = "copy-on-write", level: str = "serializable") -> Table:
    catalog.create_namespace("db")
    # The checks themselves are under test: a statement must not restart past them.
    props = {**FAST, "commit.statement-restart.max-attempts": "1"}
    for c in ("delete", "update", "merge"):
        props[f"write.{c}.mode"] = mode
        props[f"write.{c}.isolation-level"] = level
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["part"], properties=props)
    t.append(rows([1, 2], "a"))
    t.append(rows([3, 4], "b"))
    return t


def ids(t: Table) -> list[int]:
    return sorted(t.refresh().scan().to_arrow().column("id").to_pylist())


def file_a(t: Table) -> DataFile:
    snap = t.current_snapshot()
    assert snap is not None
    for m in read_manifest_list(t.io, snap.manifest_list):
        if m.content == ManifestContent.DATA:
            for e in read_manifest(t.io, m):
                if e.is_live and e.data_file.partition == ("a",):
                    return e.data_file
    raise AssertionError("no file in partition a")


def race(
    catalog: InMemoryCatalog, ours: Callable[[Table], object], concurrent: Callable[[Table], object]
) -> tuple[Table, int]:
    """Load our handle (what was read), commit ``concurrent`` through another one, then run ours.
    Returns our stale handle and the concurrent snapshot's id."""
    stale = catalog.load_table("db.t")
    fresh = catalog.load_table("db.t")
    concurrent(fresh)
    snap = fresh.current_snapshot()
    assert snap is not None
    ours(stale)
    return stale, snap.snapshot_id


# ---------------------------------------------------------------- 1. validate_added_data_files
def test_serializable_delete_conflicts_with_a_concurrent_append_of_matching_rows(
    catalog: InMemoryCatalog,
) -> None:
    setup(catalog)
    with pytest.raises(ConflictingDataFilesError) as info:
        race(catalog, lambda t: t.delete("id = 1"), lambda t: t.append(rows([1], "a")))
    err = info.value
    concurrent = catalog.load_table("db.t").current_snapshot()
    assert concurrent is not None
    assert err.context["snapshot_id"] == concurrent.snapshot_id
    assert err.context["isolation_level"] == "serializable"
    assert err.context["operation"] and err.context["files"]
    assert "snapshot" in (err.hint or "")
    assert ids(catalog.load_table("db.t")) == [1, 1, 2, 3, 4]  # only the concurrent append landed


def test_a_metadata_only_delete_has_a_serial_order_with_a_concurrent_append(catalog: InMemoryCatalog) -> None:
    """File A matches wholly, so the delete drops it by metadata; the appended row was not there
    when the delete ran (delete, then append), so nothing conflicts."""
    setup(catalog)
    race(catalog, lambda t: t.delete("id <= 2"), lambda t: t.append(rows([2], "a")))
    assert ids(catalog.load_table("db.t")) == [2, 3, 4]


def test_serializable_delete_ignores_a_concurrent_append_that_cannot_match(catalog: InMemoryCatalog) -> None:
    setup(catalog)
    race(catalog, lambda t: t.delete("id <= 2"), lambda t: t.append(rows([9], "c")))
    assert ids(catalog.load_table("db.t")) == [3, 4, 9]


def test_snapshot_isolation_delete_accepts_a_concurrent_append(catalog: InMemoryCatalog) -> None:
    setup(catalog, level="snapshot")
    race(catalog, lambda t: t.delete("id = 1"), lambda t: t.append(rows([1], "a")))
    # The new row was not seen by the delete, and survives it.
    assert ids(catalog.load_table("db.t")) == [1, 2, 3, 4]


def test_serializable_replace_partitions_conflicts_with_an_append_to_the_same_partition(
    catalog: InMemoryCatalog,
) -> None:
    setup(catalog)
    with pytest.raises(ConflictingDataFilesError):
        race(catalog, lambda t: t.replace_partitions(rows([7], "a")), lambda t: t.append(rows([8], "a")))
    race_ok = catalog.load_table("db.t")
    assert ids(race_ok) == [1, 2, 3, 4, 8]


def test_replace_partitions_at_snapshot_isolation_replaces_what_is_there_now(
    catalog: InMemoryCatalog,
) -> None:
    setup(catalog, level="snapshot")
    race(catalog, lambda t: t.replace_partitions(rows([7], "a")), lambda t: t.append(rows([8], "a")))
    assert ids(catalog.load_table("db.t")) == [3, 4, 7]


# ---------------------------------------------------------------- 2. validate_no_new_delete_files
@pytest.mark.parametrize("level", ["serializable", "snapshot"])
def test_merge_on_read_delete_conflicts_with_a_concurrent_delete_at_both_levels(
    catalog: InMemoryCatalog, level: str
) -> None:
    """apache/iceberg#10720: Spark skips this check for MOR DELETE at snapshot isolation."""
    setup(catalog, mode="merge-on-read", level=level)
    with pytest.raises(ConflictingDeleteFilesError) as info:
        race(catalog, lambda t: t.delete("id = 1"), lambda t: t.delete("id = 2"))
    assert info.value.context["isolation_level"] == level
    assert ids(catalog.load_table("db.t")) == [1, 3, 4]


def test_copy_on_write_delete_conflicts_with_new_deletes_for_the_file_it_rewrites(
    catalog: InMemoryCatalog,
) -> None:
    t = setup(catalog)
    t.transaction()  # the table starts in copy-on-write; the concurrent writer uses merge-on-read

    def concurrent_mor_delete(fresh: Table) -> None:
        from icefloe.arrow.deletes import write_position_deletes

        a = file_a(fresh)
        files = write_position_deletes(fresh.io, fresh.metadata, {a.file_path: [1]}, partition=("a",))
        with fresh.transaction() as tx:
            tx.row_delta(add_delete_files=files)

    with pytest.raises(ConflictingDeleteFilesError):
        race(catalog, lambda t: t.delete("id = 1"), concurrent_mor_delete)
    assert ids(catalog.load_table("db.t")) == [1, 3, 4]


# ------------------------------------------------- 3. validate_no_new_deletes_for_data_files
def test_rewrite_conflicts_with_new_position_deletes_for_a_replaced_file(catalog: InMemoryCatalog) -> None:
    from icefloe.arrow.writer import write_data_files

    t = setup(catalog)
    a = file_a(t)
    compacted = write_data_files(t.io, t.metadata, rows([1, 2], "a"))

    def rewrite(stale: Table) -> None:
        with stale.transaction() as tx:
            tx.rewrite_files(remove=[a], add=compacted)

    def concurrent_mor_delete(fresh: Table) -> None:
        from icefloe.arrow.deletes import write_position_deletes

        files = write_position_deletes(fresh.io, fresh.metadata, {a.file_path: [0]}, partition=("a",))
        with fresh.transaction() as tx:
            tx.row_delta(add_delete_files=files)

    with pytest.raises(ConflictingDeleteFilesError) as info:
        race(catalog, rewrite, concurrent_mor_delete)
    assert a.file_path in info.value.context["files"]
    assert ids(catalog.load_table("db.t")) == [2, 3, 4]


def test_rewrite_keeping_the_sequence_number_accepts_a_concurrent_equality_delete(
    catalog: InMemoryCatalog,
) -> None:
    from icefloe.arrow.deletes import write_equality_deletes
    from icefloe.arrow.writer import write_data_files

    t = setup(catalog)
    a = file_a(t)
    compacted = write_data_files(t.io, t.metadata, rows([1, 2], "a"))

    def rewrite(stale: Table) -> None:
        with stale.transaction() as tx:
            tx.rewrite_files(remove=[a], add=compacted)

    def concurrent_equality_delete(fresh: Table) -> None:
        files = write_equality_deletes(fresh.io, fresh.metadata, rows([1], "a"), ["id"], partition=("a",))
        with fresh.transaction() as tx:
            tx.row_delta(add_delete_files=files)

    race(catalog, rewrite, concurrent_equality_delete)
    # The compacted rows kept the old data sequence number, so the equality delete still applies.
    assert ids(catalog.load_table("db.t")) == [2, 3, 4]


# ---------------------------------------------------------------- 4. validate_data_files_exist
def test_merge_on_read_delete_conflicts_when_its_data_file_was_rewritten(catalog: InMemoryCatalog) -> None:
    setup(catalog, mode="merge-on-read", level="snapshot")

    def concurrent_cow_delete(fresh: Table) -> None:
        with fresh.transaction() as tx:
            tx.set_properties(**{"write.delete.mode": "copy-on-write"})
        fresh.delete("id = 2")

    with pytest.raises(MissingFilesError) as info:
        race(catalog, lambda t: t.delete("id = 1"), concurrent_cow_delete)
    assert len(info.value.context["files"]) == 1
    assert ids(catalog.load_table("db.t")) == [1, 3, 4]


# ---------------------------------------------------------------- 5. validate_deleted_files_exist
def test_copy_on_write_delete_conflicts_when_the_file_it_rewrites_was_removed(
    catalog: InMemoryCatalog,
) -> None:
    setup(catalog, level="snapshot")
    with pytest.raises(MissingFilesError) as info:
        race(catalog, lambda t: t.delete("id = 1"), lambda t: t.delete("part = 'a'"))
    assert info.value.hint
    assert ids(catalog.load_table("db.t")) == [3, 4]


def test_actions_of_one_transaction_do_not_conflict_with_each_other(catalog: InMemoryCatalog) -> None:
    t = setup(catalog)
    with t.transaction() as tx:
        tx.append(rows([5], "a"))
        tx.delete("id <= 2")  # serializable, and the append matches: but it is our own
        tx.upsert(rows([5, 6], "a"), ["id"])
    assert ids(t) == [3, 4, 5, 6]
    assert len(t.snapshots()) == 5


def test_a_conflict_in_a_transaction_commits_none_of_its_actions(catalog: InMemoryCatalog) -> None:
    setup(catalog)

    def ours(stale: Table) -> None:
        with stale.transaction() as tx:
            tx.append(rows([9], "c"))
            tx.delete("id = 1")

    with pytest.raises(ConflictError):
        race(catalog, ours, lambda t: t.append(rows([1], "a")))
    assert ids(catalog.load_table("db.t")) == [1, 1, 2, 3, 4]


def test_an_unknown_isolation_level_is_a_config_error(catalog: InMemoryCatalog) -> None:
    import dataclasses

    t = setup(catalog)
    before = dict(t.metadata.properties)
    with pytest.raises(ConfigError, match="isolation"), t.transaction() as tx:
        tx.set_properties(**{"write.delete.isolation-level": "read-committed"})
    assert dict(t.metadata.properties) == before
    # Written by another engine: the delete refuses it and the table stays as it was.
    bad = {**t.metadata.properties, "write.delete.isolation-level": "read-committed"}
    t.metadata = dataclasses.replace(t.metadata, properties=bad)
    with pytest.raises(ConfigError, match="isolation"):
        t.delete("id = 1")
    assert ids(t) == [1, 2, 3, 4]


def test_a_starting_snapshot_outside_the_branch_history_cannot_be_validated(catalog: InMemoryCatalog) -> None:
    from icefloe.transaction.conflicts import ValidationContext

    t = setup(catalog)
    ctx = ValidationContext(t.io, t.metadata, t.current_snapshot(), 12345, operation="delete")
    with pytest.raises(ConflictError, match="not an ancestor") as info:
        ctx.new_snapshots()
    assert info.value.hint


def test_the_checks_read_only_the_manifests_of_new_snapshots(catalog: InMemoryCatalog) -> None:
    """Validation walks back from the new head to the starting snapshot and opens only the
    manifests those snapshots added."""
    from icefloe.testing import CountingFileIO
    from icefloe.transaction.conflicts import ValidationContext, validate_added_data_files

    t = setup(catalog)
    start = t.current_snapshot()
    assert start is not None
    for i in range(3):
        t.append(rows([10 + i], "c"))
    io = CountingFileIO(t.io)
    ctx = ValidationContext(io, t.metadata, t.current_snapshot(), start.snapshot_id, operation="delete")
    validate_added_data_files(ctx, parse("part = 'a'"))
    lists = [p for p in io.opened if "/snap-" in p]
    manifests = [p for p in io.opened if "/snap-" not in p]
    assert len(lists) == 3 and len(manifests) == 3  # only what the 3 new snapshots added
    assert all(n == 1 for n in io.opened.values())
