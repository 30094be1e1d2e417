"""Files a caller hands to a commit stay the caller's (issue 9, defect 3).

A commit may only delete files icefloe wrote itself for that operation. Files handed in through
``append_files``, ``overwrite_files``, ``replace_partitions_files``, ``row_delta`` or
``rewrite_files`` survive every failure (bad input, an exception in the ``with`` block, a
conflict, retries running out) unless the caller passes ``delete_on_failure=True``; they are
checked before anything is written, and a refused file leaves the table and the disk unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.arrow.deletes import write_position_deletes
from icefloe.arrow.writer import write_data_files
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import (
    CommitFailedError,
    ConflictingDataFilesError,
    ExpressionError,
    ValidationError,
)
from icefloe.io.local import local_path
from icefloe.manifest import DataFile, FileFormat
from icefloe.table import Table
from icefloe.testing import CommitFault, FaultInjectingCatalog
from icefloe.transaction import FastAppend, OverwriteFiles

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string())])
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "2"}


def rows(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [part] * len(ids)}, schema=SCHEMA)


def make_table(catalog: InMemoryCatalog, **props: str) -> Table:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["part"], properties={**FAST, **props})
    t.append(rows([1, 2], "a"))
    t.append(rows([3, 4], "b"))
    return t


def callers_file(t: Table, ids: list[int], part: str) -> DataFile:
    """A data file written the way a caller (a Spark executor, another tool) writes one."""
    [f] = write_data_files(t.io, t.metadata, rows(ids, part))
    return f


def exists(f: DataFile) -> bool:
    return Path(local_path(f.file_path)).is_file()


def files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


def snapshot_ids(catalog: InMemoryCatalog) -> list[int]:
    return [s.snapshot_id for s in catalog.load_table("db.t").snapshots()]


def ids(catalog: InMemoryCatalog) -> list[int]:
    return sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


# ---------------------------------------------------------------- failures keep the caller's files
def test_user_exception_in_the_with_block_keeps_the_callers_files(catalog: InMemoryCatalog, wh: Path) -> None:
    t = make_table(catalog)
    before = snapshot_ids(catalog)
    mine = callers_file(t, [10], "a")
    theirs = callers_file(t, [11], "b")
    with pytest.raises(RuntimeError, match="user code"), t.transaction() as tx:
        tx.append_files([mine])
        tx.replace_partitions_files([theirs])
        raise RuntimeError("user code failed")
    assert exists(mine) and exists(theirs)
    assert snapshot_ids(catalog) == before


def test_abandoned_transaction_still_deletes_what_icefloe_wrote(catalog: InMemoryCatalog, wh: Path) -> None:
    t = make_table(catalog)
    before = files_under(wh)
    mine = callers_file(t, [10], "a")
    with pytest.raises(RuntimeError), t.transaction() as tx:
        written = tx.append(rows([20, 21], "b"))
        tx.append_files([mine])
        raise RuntimeError("user code failed")
    assert written and not any(exists(f) for f in written)
    # only the caller's file is left: icefloe's data files, manifests and manifest lists are gone
    assert files_under(wh) - before == {local_path(mine.file_path)}


def test_validation_failure_inside_append_files_keeps_every_file(catalog: InMemoryCatalog, wh: Path) -> None:
    t = make_table(catalog)
    good = callers_file(t, [10], "a")
    unknown_spec = replace(callers_file(t, [11], "b"), spec_id=7)
    before_files = files_under(wh)
    before = snapshot_ids(catalog)
    with pytest.raises(ValidationError, match="partition spec id 7") as info:
        t.transaction().append_files([good, unknown_spec])
    assert info.value.context["files"] == [unknown_spec.file_path]
    assert files_under(wh) == before_files
    assert exists(good) and exists(unknown_spec)
    assert snapshot_ids(catalog) == before


def test_bad_filter_in_overwrite_files_keeps_the_callers_files(catalog: InMemoryCatalog, wh: Path) -> None:
    t = make_table(catalog)
    mine = callers_file(t, [10], "a")
    before_files = files_under(wh)
    with pytest.raises(ExpressionError):
        t.transaction().overwrite_files([mine], "no_such_column = 1")
    assert exists(mine)
    assert files_under(wh) == before_files


def test_conflict_at_commit_keeps_the_callers_files(catalog: InMemoryCatalog, wh: Path) -> None:
    make_table(catalog)
    stale = catalog.load_table("db.t")
    fresh = catalog.load_table("db.t")
    mine = callers_file(stale, [10], "a")
    tx = stale.transaction()
    tx.overwrite_files([mine], "part = 'a'")  # rewrites partition a (serializable by default)
    fresh.append(rows([5], "a"))  # committed concurrently into the same partition
    before = files_under(wh)
    with pytest.raises(ConflictingDataFilesError):
        tx.commit()
    assert exists(mine)
    assert files_under(wh) <= before  # only icefloe's manifests went
    assert ids(catalog) == [1, 2, 3, 4, 5]


def test_commit_failed_after_retries_keeps_the_callers_files(catalog: InMemoryCatalog, wh: Path) -> None:
    faulty = FaultInjectingCatalog(catalog)
    # An append retries until the total timeout (num-retries does not bound it): lose every swap.
    make_table(
        catalog,
        **{
            "commit.retry.num-retries": "1",
            "commit.retry.min-wait-ms": "1",
            "commit.retry.max-wait-ms": "2",
            "commit.retry.total-timeout-ms": "100",
        },
    )
    t = faulty.load_table("db.t")
    mine = callers_file(t, [10], "a")
    before = files_under(wh)
    faulty.inject(*[CommitFault.LOST_SWAP] * 10_000)
    tx = t.transaction()
    tx.append_files([mine])
    with pytest.raises(CommitFailedError):
        tx.commit()
    assert exists(mine)
    assert files_under(wh) == before  # icefloe's manifests and manifest lists are gone


def test_commit_failed_after_retries_deletes_what_icefloe_wrote(catalog: InMemoryCatalog, wh: Path) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog, **{"commit.retry.num-retries": "1"})
    t = faulty.load_table("db.t")
    before = files_under(wh)
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    tx = t.transaction()
    tx.append(rows([20], "a"))
    tx.overwrite(rows([30], "b"), "part = 'b'")
    with pytest.raises(CommitFailedError):
        tx.commit()
    assert files_under(wh) == before


def test_delete_on_failure_true_hands_the_files_over(catalog: InMemoryCatalog, wh: Path) -> None:
    faulty = FaultInjectingCatalog(catalog)
    make_table(catalog, **{"commit.retry.num-retries": "0"})
    t = faulty.load_table("db.t")
    appended = callers_file(t, [10], "a")
    overwritten = callers_file(t, [11], "b")
    before = files_under(wh) - {local_path(appended.file_path), local_path(overwritten.file_path)}
    faulty.inject(CommitFault.LOST_SWAP)
    tx = t.transaction()
    tx.append_files([appended], delete_on_failure=True)
    tx.overwrite_files([overwritten], "part = 'b'", delete_on_failure=True)
    with pytest.raises(CommitFailedError):
        tx.commit()
    assert not exists(appended) and not exists(overwritten)
    assert files_under(wh) == before


def test_producers_do_not_own_added_files_unless_told(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog)
    mine = callers_file(t, [10], "a")
    for action in (
        FastAppend(t.io, [mine]),
        OverwriteFiles(t.io, t.metadata, add=[mine]),
    ):
        action.apply(t.metadata)
        action.cleanup(committed=False)
        assert exists(mine)
    owned = FastAppend(t.io, [mine], owns_files=True)
    owned.apply(t.metadata)
    owned.cleanup(committed=False)
    assert not exists(mine)


# ---------------------------------------------------------------- bad files are refused up front
def _missing(t: Table) -> DataFile:
    f = callers_file(t, [10], "a")
    return replace(f, file_path=f.file_path.replace(".parquet", "-missing.parquet"))


def _wrong_size(t: Table) -> DataFile:
    f = callers_file(t, [10], "a")
    return replace(f, file_size_in_bytes=f.file_size_in_bytes + 1)


def _directory(t: Table) -> DataFile:
    f = callers_file(t, [10], "a")
    return replace(f, file_path=f.file_path.rsplit("/", 1)[0])


def _relative(t: Table) -> DataFile:
    return replace(callers_file(t, [10], "a"), file_path="data/part=a/x.parquet")


def _other_store(t: Table) -> DataFile:
    return replace(callers_file(t, [10], "a"), file_path="s3://bucket/data/x.parquet")


def _puffin_data(t: Table) -> DataFile:
    return replace(callers_file(t, [10], "a"), file_format=FileFormat.PUFFIN)


def _delete_file(t: Table) -> DataFile:
    data = next(iter(t.scan(row_filter="part = 'a'").plan_files())).file
    [d] = write_position_deletes(t.io, t.metadata, {data.file_path: [0]}, spec_id=0, partition=("a",))
    return d


def _bad_partition(t: Table) -> DataFile:
    return replace(callers_file(t, [10], "a"), partition=("a", "extra"))


BAD_FILES: dict[str, tuple[Callable[[Table], DataFile], str]] = {
    "missing": (_missing, "does not exist"),
    "wrong-size": (_wrong_size, "file_size_in_bytes"),
    "directory": (_directory, "not a regular file"),
    "relative": (_relative, "relative"),
    "unaddressable": (_other_store, "cannot address s3://"),
    "puffin-data": (_puffin_data, "cannot be PUFFIN"),
    "delete-file": (_delete_file, "adds data files only"),
    "bad-partition": (_bad_partition, "partition"),
}

METHODS: dict[str, Callable[[Table, list[DataFile]], None]] = {
    "append_files": lambda t, fs: t.transaction().append_files(fs),
    "overwrite_files": lambda t, fs: t.transaction().overwrite_files(fs, "part = 'a'"),
    "replace_partitions_files": lambda t, fs: t.transaction().replace_partitions_files(fs),
    "row_delta": lambda t, fs: t.transaction().row_delta(add_data_files=fs),
}


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("bad", list(BAD_FILES))
def test_bad_files_are_refused_before_anything_is_written(
    catalog: InMemoryCatalog, wh: Path, method: str, bad: str
) -> None:
    t = make_table(catalog)
    make_bad, reason = BAD_FILES[bad]
    good = callers_file(t, [9], "a")
    bad_file = make_bad(t)
    before_files = files_under(wh)
    before = snapshot_ids(catalog)
    with pytest.raises(ValidationError, match=reason) as info:
        METHODS[method](t, [good, bad_file])
    assert bad_file.file_path in str(info.value)
    assert method in str(info.value)
    assert info.value.context["files"] == [bad_file.file_path]
    assert files_under(wh) == before_files
    assert exists(good)
    assert snapshot_ids(catalog) == before
    assert ids(catalog) == [1, 2, 3, 4]


def test_a_data_file_is_refused_as_a_delete_file(catalog: InMemoryCatalog, wh: Path) -> None:
    t = make_table(catalog)
    data = callers_file(t, [10], "a")
    before_files = files_under(wh)
    with pytest.raises(ValidationError, match="expects a delete file"):
        t.transaction().row_delta(add_delete_files=[data])
    assert files_under(wh) == before_files


def test_the_same_file_twice_is_refused(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog)
    f = callers_file(t, [10], "a")
    with pytest.raises(ValidationError, match="given twice"):
        t.transaction().append_files([f, f])
    assert exists(f)


def test_checked_files_commit(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog)
    a = callers_file(t, [10], "a")
    b = callers_file(t, [11], "b")
    with t.transaction() as tx:
        tx.append_files([a])
        tx.replace_partitions_files([b])
    assert ids(catalog) == [1, 2, 10, 11]
