"""``table.maintenance.rewrite_data_files``: Java's planning rules and defaults, the three
strategies with the local runner, deletes, partition evolution, pruning, partial progress,
failures and bad input."""

from __future__ import annotations

import itertools
import os
import random
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rewrite_checks import (
    COW,
    MOR,
    SCHEMA,
    check_snapshots_intact,
    data_files,
    delete_files,
    every_snapshot_rows,
    files_under,
    live_entries,
    make_table,
    orphans,
    rows,
    table_rows,
)

from icefloe.arrow.deletes import write_equality_deletes
from icefloe.errors import (
    ConfigError,
    ExpressionError,
    FileIOError,
    SchemaError,
    SortOrderError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io.local import local_path
from icefloe.maintenance._options import ActionOptions
from icefloe.maintenance._sizing import SizeThresholds, pack
from icefloe.maintenance.rewrite_data_files import RewriteDataFiles
from icefloe.manifest import DataFileContent

# ------------------------------------------------------------------ Java's sizing rules


def test_size_defaults_follow_java() -> None:
    s = SizeThresholds.from_options(ActionOptions({}, ("target-file-size-bytes",), "t"), 1000)
    assert (s.target_file_size, s.min_file_size, s.max_file_size) == (1000, 750, 1800)
    assert (s.min_input_files, s.rewrite_all, s.max_group_size) == (5, False, 100 * 1024**3)
    assert s.write_max_file_size() == 1400


def test_expected_output_files_and_split_size_follow_java() -> None:
    s = SizeThresholds.from_options(ActionOptions({}, (), "t"), 100)
    assert s.expected_output_files(50) == 1
    assert s.expected_output_files(210) == 2  # remainder 10 spread: 105 per file is within 10%
    assert s.expected_output_files(250) == 3  # 125 per file would be too big: keep a remainder file
    assert s.expected_output_files(290) == 3  # remainder 90 > min 75: its own file
    big = SizeThresholds.from_options(ActionOptions({}, (), "t"), 1 << 20)
    assert big.input_split_size(1000) == 1 << 20  # at least the target
    assert s.input_split_size(210) == 140  # 105 + Java's 5 KiB split overhead, capped at the writers' max


def test_bin_packing_follows_javas_list_packer() -> None:
    assert pack([4, 4, 4, 20, 1], lambda x: x, 10, 2**63) == [[4, 4], [4], [20], [1]]
    assert pack([1, 1, 1], lambda x: x, 10, 2) == [[1, 1], [1]]
    assert pack([], lambda x: x, 10, 5) == []


@pytest.mark.parametrize(
    ("options", "what"),
    [
        ({"no-such-option": "1"}, "does not know"),
        ({"min-input-files": "abc"}, "must be an integer"),
        ({"min-input-files": "0"}, ">= 1"),
        ({"target-file-size-bytes": "100", "min-file-size-bytes": "100"}, "must be >"),
        ({"target-file-size-bytes": "100", "max-file-size-bytes": "90"}, "must be <"),
        ({"partial-progress.enabled": "maybe"}, "true or false"),
        ({"rewrite-job-order": "random"}, "one of"),
        ({"delete-ratio-threshold": "1.5"}, "<= 1"),
        ({"var-length-contribution": "4"}, "does not know"),  # a z-order option, not bin-pack's
    ],
)
def test_bad_options_are_refused_before_anything_is_read(
    catalog: Any, options: dict[str, str], what: str
) -> None:
    t = make_table(catalog, "opts", files=6)
    location, on_disk = t.metadata_location, files_under(t.location)
    with pytest.raises(ConfigError, match=what):
        t.maintenance.rewrite_data_files(options=options)
    assert t.refresh().metadata_location == location and files_under(t.location) == on_disk


@pytest.mark.parametrize(
    ("kwargs", "error", "what"),
    [
        ({"strategy": "shuffle"}, ValidationError, "unknown rewrite strategy"),
        ({"strategy": "sort"}, SortOrderError, "no sort order"),
        ({"strategy": "sort", "sort_order": "nope desc"}, SortOrderError, "no column"),
        ({"strategy": "binpack", "sort_order": "id"}, ValidationError, "strategy='sort'"),
        ({"strategy": "zorder"}, ValidationError, "needs zorder_columns"),
        ({"strategy": "zorder", "zorder_columns": ["nope"]}, SchemaError, "no such column"),
        ({"strategy": "zorder", "zorder_columns": ["id", "part"]}, ValidationError, "partitioned by it"),
        ({"strategy": "zorder", "zorder_columns": ["id"], "sort_order": "id"}, ValidationError, "sort_order"),
        ({"where": "id >>> 3"}, ExpressionError, "parse"),
        ({"where": "nope = 3"}, ExpressionError, "nope"),
        (
            {"strategy": "zorder", "zorder_columns": ["id"], "options": {"shuffle-partitions-per-file": "2"}},
            UnsupportedFeatureError,
            "shuffle",
        ),
    ],
)
def test_bad_input_raises_typed_errors_and_changes_nothing(
    catalog: Any, kwargs: dict[str, Any], error: type[Exception], what: str
) -> None:
    t = make_table(catalog, "bad", files=6)
    location, on_disk = t.metadata_location, files_under(t.location)
    with pytest.raises(error, match=what):
        t.maintenance.rewrite_data_files(**kwargs)
    assert t.refresh().metadata_location == location and files_under(t.location) == on_disk


def test_empty_table_and_nothing_to_do(catalog: Any) -> None:
    t = catalog.create_table("ns.empty", schema=SCHEMA, partition_by=["part"])
    assert t.maintenance.rewrite_data_files().rewrite_results == ()
    t = make_table(catalog, "four", files=4, part="a")  # 4 small files: fewer than min-input-files
    result = t.maintenance.rewrite_data_files()
    assert result.rewrite_results == () and result.snapshot_ids == ()
    t.append(rows(range(1000, 1010), "a"))
    result = t.maintenance.rewrite_data_files()  # now 5 files: a group
    assert result.rewritten_data_files_count == 5 and result.added_data_files_count == 1


# ------------------------------------------------------------------ bin-pack


def test_binpack_keeps_every_row_and_applies_deletes(catalog: Any) -> None:
    t = make_table(catalog, "mor", files=10, properties=MOR)
    t.delete("id in (3, 4, 50, 51, 52, 333)")
    before = every_snapshot_rows(t)
    start = t.current_snapshot()
    assert delete_files(t)
    result = t.maintenance.rewrite_data_files()
    assert result.rewritten_data_files_count == 20 and result.added_data_files_count == 2
    assert {r.info.partition for r in result.rewrite_results} == {("a",), ("b",)}
    assert result.rewritten_bytes_count > 0 and result.added_bytes_count > 0
    snap = t.current_snapshot()
    assert snap.summary.operation.value == "replace" and result.snapshot_ids == (snap.snapshot_id,)
    assert table_rows(t) == before[start.snapshot_id]
    # the new files keep the starting snapshot's data sequence number
    for e in live_entries(t):
        if e.data_file.content == DataFileContent.DATA:
            assert e.sequence_number == start.sequence_number
            assert e.file_sequence_number == snap.sequence_number
    # icefloe's merge-on-read deletes are file-scoped: they go with the files they applied to
    assert delete_files(t) == [] and result.removed_delete_files_count > 0
    check_snapshots_intact(t, before)
    assert orphans(t) == set()


def test_equality_deletes_still_apply_and_become_dangling(catalog: Any) -> None:
    t = make_table(catalog, "eq", files=6, part="a")
    deletes = write_equality_deletes(
        t.io, t.metadata, pa.table({"id": [1, 2, 60]}), ["id"], spec_id=0, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=deletes, delete_on_failure=True)
    before = every_snapshot_rows(t)
    expected = before[t.current_snapshot().snapshot_id]
    assert [r[0] for r in expected][:3] == [0, 3, 4]
    result = t.maintenance.rewrite_data_files()
    assert result.rewritten_data_files_count == 6
    assert table_rows(t) == expected
    assert len(delete_files(t)) == 1  # no data file older than the delete is left: it dangles
    result = t.maintenance.rewrite_data_files(options={"remove-dangling-deletes": "true"})
    assert result.rewrite_results == () and result.removed_delete_files_count == 1
    assert delete_files(t) == [] and table_rows(t) == expected
    check_snapshots_intact(t, before)


def test_use_starting_sequence_number_false(catalog: Any) -> None:
    t = make_table(catalog, "seq", files=6, part="a")
    t.maintenance.rewrite_data_files(options={"use-starting-sequence-number": "false"})
    snap = t.current_snapshot()
    assert {e.sequence_number for e in live_entries(t)} == {snap.sequence_number}


def test_where_limits_the_partitions(catalog: Any) -> None:
    t = make_table(catalog, "where", files=8)
    result = t.maintenance.rewrite_data_files(where="part = 'a'")
    assert {r.info.partition for r in result.rewrite_results} == {("a",)}
    assert sum(1 for f in data_files(t) if f.partition == ("b",)) == 8


def test_rewrite_all_job_order_and_max_files(catalog: Any) -> None:
    t = make_table(catalog, "order", files=6, part="a")
    t.append(rows(range(1000, 1400), "b"))
    t.append(rows(range(2000, 2400), "b"))
    options = {
        "rewrite-all": "true",
        "rewrite-job-order": "files-asc",
        "max-concurrent-file-group-rewrites": "1",
    }
    plan = RewriteDataFiles(t, options=options).plan()
    assert [g.info.partition for g in plan.groups] == [("b",), ("a",)]  # fewest files first
    plan = RewriteDataFiles(t, options={**options, "rewrite-job-order": "files-desc"}).plan()
    assert [g.info.partition for g in plan.groups] == [("a",), ("b",)]
    result = RewriteDataFiles(t, options=options).execute(plan)
    assert sorted(r.rewritten_data_files_count for r in result.rewrite_results) == [2, 6]
    t2 = make_table(catalog, "limit", files=8, part="a")
    result = t2.maintenance.rewrite_data_files(options={"max-files-to-rewrite": "5"})
    assert result.rewritten_data_files_count == 5 and len(data_files(t2)) == 4


def test_delete_file_threshold_rewrites_files_with_many_deletes(catalog: Any) -> None:
    t = make_table(catalog, "thresh", files=2, part="a", rows_per_file=200, properties=MOR)
    t.delete("id = 1")
    t.delete("id = 2")
    opts = {"target-file-size-bytes": "1000", "min-file-size-bytes": "0", "max-file-size-bytes": "100000000"}
    assert t.maintenance.rewrite_data_files(options=opts).rewrite_results == ()
    result = t.maintenance.rewrite_data_files(options={**opts, "delete-file-threshold": "2"})
    assert result.rewritten_data_files_count == 1  # the file with two delete files
    assert [r[0] for r in table_rows(t)][:3] == [0, 3, 4]


def test_target_file_size_splits_the_output(catalog: Any) -> None:
    t = make_table(catalog, "split", files=40, rows_per_file=250, part="a")
    size = sum(f.file_size_in_bytes for f in data_files(t))
    target = size // 4
    result = t.maintenance.rewrite_data_files(options={"target-file-size-bytes": str(target)})
    assert result.rewritten_data_files_count == 40
    assert 2 <= result.added_data_files_count <= 8
    assert len(table_rows(t)) == 40 * 250


# ------------------------------------------------------------------ partition evolution


def test_files_of_older_specs_are_rewritten_into_the_current_spec(catalog: Any) -> None:
    t = make_table(catalog, "evolve", files=6)
    with t.update_spec() as u:
        u.add_field("bucket(2, id)")
    for i in range(3):
        t.append(rows(range(5000 + 10 * i, 5010 + 10 * i)))
    before = every_snapshot_rows(t)
    expected = table_rows(t)
    current = t.spec().spec_id
    result = t.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    old_group = [r for r in result.rewrite_results if r.info.spec_id is None]
    assert (
        len(old_group) == 1
        and old_group[0].rewritten_data_files_count == 12
        and old_group[0].info.partition == ()
    )
    assert {f.spec_id for f in data_files(t)} == {current}
    assert {f.partition for f in data_files(t)} == {(p, b) for p in "ab" for b in (0, 1)}
    assert table_rows(t) == expected
    check_snapshots_intact(t, before)


# ------------------------------------------------------------------ sort and z-order


def _shuffled_table(catalog: Any, name: str, files: int = 20, per_file: int = 200) -> Any:
    t = catalog.create_table(f"ns.{name}", schema=SCHEMA, partition_by=[])
    ids = list(range(files * per_file))
    random.Random(7).shuffle(ids)
    for i in range(files):
        chunk = ids[i * per_file : (i + 1) * per_file]
        t.append(
            pa.table(
                {
                    "id": chunk,
                    "part": ["x"] * len(chunk),
                    "v": [float((j * 7919) % (files * per_file)) for j in chunk],
                    "s": [f"s{j:06d}" for j in chunk],
                },
                schema=SCHEMA,
            )
        )
    return t


def _planned(t: Any, where: str) -> int:
    return len(t.scan(row_filter=where).plan_files())


def test_sort_by_the_tables_order_prunes_and_records_the_order(catalog: Any) -> None:
    t = _shuffled_table(catalog, "sorted")
    order = t.replace_sort_order("id")
    before = table_rows(t)
    assert _planned(t, "id < 400") == 20
    size = sum(f.file_size_in_bytes for f in data_files(t))
    result = t.maintenance.rewrite_data_files(
        strategy="sort", options={"target-file-size-bytes": str(size // 8)}
    )
    assert result.added_data_files_count >= 4
    assert table_rows(t) == before
    assert _planned(t, "id < 400") <= 2
    for f in data_files(t):
        assert f.sort_order_id == order.order_id
        ids = pq.read_table(local_path(f.file_path), columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids)
    # the files cover disjoint ranges
    ranges = sorted(
        (min(x), max(x))
        for x in (pq.read_table(local_path(f.file_path)).column("id").to_pylist() for f in data_files(t))
    )
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))


def test_sort_by_a_given_order(catalog: Any) -> None:
    t = _shuffled_table(catalog, "given", files=8)
    result = t.maintenance.rewrite_data_files(
        strategy="sort", sort_order="v desc, id", options={"rewrite-all": "true"}
    )
    assert result.added_data_files_count == 1
    (f,) = data_files(t)
    assert f.sort_order_id == 0  # not an order of the table
    v = pq.read_table(local_path(f.file_path), columns=["v"]).column("v").to_pylist()
    assert v == sorted(v, reverse=True)
    t.replace_sort_order("v desc", "id")
    t.maintenance.rewrite_data_files(
        strategy="sort", sort_order=["v desc", "id"], options={"rewrite-all": "true"}
    )
    assert data_files(t)[0].sort_order_id == t.sort_order().order_id


def test_zorder_prunes_on_both_columns(catalog: Any) -> None:
    t = _shuffled_table(catalog, "zorder", files=20)
    before = table_rows(t)
    size = sum(f.file_size_in_bytes for f in data_files(t))
    filters = ["id < 500", "v < 500"]
    planned_before = [_planned(t, w) for w in filters]
    result = t.maintenance.rewrite_data_files(
        strategy="zorder", zorder_columns=["id", "v"], options={"target-file-size-bytes": str(size // 8)}
    )
    assert result.added_data_files_count >= 4
    assert table_rows(t) == before
    planned_after = [_planned(t, w) for w in filters]
    assert all(a < b for a, b in zip(planned_after, planned_before, strict=True)), (
        planned_before,
        planned_after,
    )
    assert all(f.sort_order_id == 0 for f in data_files(t))


def test_sort_of_a_partitioned_table_after_evolution(catalog: Any) -> None:
    t = make_table(catalog, "sortevolve", files=6)
    with t.update_spec() as u:
        u.add_field("bucket(2, id)")
    t.append(rows(range(700, 760)))
    before = table_rows(t)
    t.maintenance.rewrite_data_files(strategy="sort", sort_order="v", options={"rewrite-all": "true"})
    assert table_rows(t) == before
    assert {f.spec_id for f in data_files(t)} == {t.spec().spec_id}
    for f in data_files(t):
        v = pq.read_table(local_path(f.file_path), columns=["v"]).column("v").to_pylist()
        assert v == sorted(v)


# ------------------------------------------------------------------ partial progress and failures


def test_partial_progress_commits_in_batches(catalog: Any) -> None:
    t = make_table(catalog, "partial", files=6, partition_by=["bucket(3, id)"])
    before = every_snapshot_rows(t)
    expected = table_rows(t)
    n = len(t.snapshots())
    result = t.maintenance.rewrite_data_files(
        options={
            "partial-progress.enabled": "true",
            "partial-progress.max-commits": "2",
            "min-input-files": "2",
        }
    )
    assert len(result.rewrite_results) == 3
    assert len(result.snapshot_ids) == 2 and len(t.snapshots()) == n + 2
    check_snapshots_intact(t, before)
    assert table_rows(t) == expected


def _failing_reads(monkeypatch: pytest.MonkeyPatch, table: Any, partition: tuple[Any, ...]) -> None:
    """The last data file of ``partition`` is lost from storage, so reading it fails: the splits
    of its group read before it have written their files, which must go."""
    del monkeypatch
    bad = sorted(f.file_path for f in data_files(table) if f.partition == partition)[-1]
    os.remove(local_path(bad))


# several splits per group: some write their files before another one fails
SMALL_SPLITS = {
    "target-file-size-bytes": "3000",
    "min-file-size-bytes": "2999",
    "max-file-size-bytes": "3001",
}


def test_a_failed_group_fails_the_rewrite_and_leaves_nothing(
    catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = make_table(catalog, "fail", files=10)
    location = t.metadata_location
    _failing_reads(monkeypatch, t, ("b",))
    with pytest.raises(FileIOError, match="No such file"):
        t.maintenance.rewrite_data_files(options=SMALL_SPLITS)
    assert t.refresh().metadata_location == location
    assert orphans(t) == set()


def test_partial_progress_reports_failed_groups(catalog: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_table(catalog, "failpartial", files=10)
    _failing_reads(monkeypatch, t, ("b",))
    result = t.maintenance.rewrite_data_files(options={"partial-progress.enabled": "true", **SMALL_SPLITS})
    assert [r.info.partition for r in result.rewrite_results] == [("a",)]
    assert [f.info.partition for f in result.rewrite_failures] == [("b",)]
    assert "FileIOError" in result.rewrite_failures[0].error and result.failed_data_files_count == 10
    assert orphans(t) == set()


def test_plan_is_picklable(catalog: Any) -> None:
    import pickle

    t = make_table(catalog, "pickle", files=6, properties=MOR)
    t.delete("id = 3")
    plan = RewriteDataFiles(t, "zorder", zorder_columns=["id", "s"]).plan()
    again = pickle.loads(pickle.dumps(plan))
    assert again.groups == plan.groups and again.strategy == plan.strategy


def test_cow_table_round_trip(catalog: Any) -> None:
    t = make_table(catalog, "cow", files=6, properties=COW)
    t.delete("id < 10")
    before = every_snapshot_rows(t)
    t.maintenance.rewrite_data_files(strategy="sort", sort_order="s")
    check_snapshots_intact(t, before)
    assert len(table_rows(t)) == 6 * 50 - 10


def test_files_of_older_schemas_are_read_by_field_id(catalog: Any) -> None:
    """After a rename and an added column the files are read by field id (icefloe's reader), not
    by name: no value is lost to the rename."""
    from icefloe.arrow.rewrite import _plain_files

    t = make_table(catalog, "renamed", files=6, part="a")
    assert _plain_files(t.metadata, [task for task in t.scan().plan_files()])
    with t.update_schema() as u:
        u.rename_column("s", "label")
        u.add_column("extra", pa.int64())
    assert not _plain_files(t.metadata, [task for task in t.scan().plan_files()])
    before = table_rows(t)
    assert all(r[3] is not None for r in before)
    t.maintenance.rewrite_data_files()
    assert table_rows(t) == before
