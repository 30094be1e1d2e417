"""Row lineage of format v3 tables on the Arrow path: reading ``_row_id`` and
``_last_updated_sequence_number``, and keeping them through row changes and maintenance.

Scenarios: appended rows inherit ``first_row_id + position`` and the file's data sequence number;
values stored in a data file win over inheritance; deletes (deletion vectors) still apply;
copy-on-write and merge-on-read updates keep every row's id and give updated rows the new
sequence number; delete, overwrite and upsert keep the surviving rows' lineage; compaction and
manifest rewrites keep it too (and compaction drops the deletion vectors of the files it
rewrites); tables below v3 refuse the columns. A Hypothesis model runs random sequences of
append / update / delete / compact and checks that a row's id never changes while it lives, ids
are unique, and each row's sequence number is that of the snapshot that last wrote it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.arrow.writer import write_data_files
from icefloe.errors import UnsupportedFeatureError
from icefloe.scan.row_lineage import with_lineage

from .conftest import MOR, SCHEMA, rows

LINEAGE = ("_row_id", "_last_updated_sequence_number")


def lineage(t: Any, *, where: str | None = None) -> dict[int, tuple[int, int]]:
    """id -> (_row_id, _last_updated_sequence_number) of the live rows."""
    scan = t.scan(selected_fields=("id", *LINEAGE), row_filter=where)
    out = {}
    for r in scan.to_arrow().to_pylist():
        assert r["id"] not in out
        out[r["id"]] = (r["_row_id"], r["_last_updated_sequence_number"])
    return out


def seq(t: Any) -> int:
    return int(t.current_snapshot().sequence_number)


def _v3(catalog: Any, name: str = "ns.t", partitioned: bool = False, **props: str) -> Any:
    return catalog.create_table(
        name,
        schema=SCHEMA,
        partition_by=["cat"] if partitioned else (),
        properties={"format-version": "3", **props},
    )


def test_appended_rows_inherit_first_row_id_and_sequence_number(catalog: Any) -> None:
    t = _v3(catalog)
    t.append(rows(range(5)))
    s1 = seq(t)
    t.append(rows(range(5, 8)))
    s2 = seq(t)
    got = lineage(t)
    # first append: row ids 0..4 in file order; second: 5..7 (next-row-id after the first)
    assert got == {i: (i, s1) for i in range(5)} | {i: (i, s2) for i in range(5, 8)}
    assert t.metadata.next_row_id == 8
    # the columns come after the table's columns; every read API gives them
    table = t.scan(selected_fields=("*", "_row_id")).to_arrow()
    assert table.column_names == ["id", "cat", "_row_id"]
    assert table.schema.field("_row_id").metadata[b"PARQUET:field_id"] == b"2147483540"
    batches = list(t.scan().select("_last_updated_sequence_number", "id").to_batches())
    assert {b.schema.names[-1] for b in batches} == {"_last_updated_sequence_number"}
    values = sorted(v for b in batches for v in b.column("_last_updated_sequence_number").to_pylist())
    assert values == sorted([s1] * 5 + [s2] * 3)
    # a filter on table columns combines with them; a limit too
    assert lineage(t, where="id >= 6") == {6: (6, s2), 7: (7, s2)}
    assert t.scan(selected_fields=("_row_id",), limit=2).to_arrow().num_rows == 2


def test_values_stored_in_the_file_win(catalog: Any) -> None:
    t = _v3(catalog)
    t.append(rows(range(2)))  # next-row-id 2
    schema = with_lineage(t.metadata.schema(), LINEAGE)
    data = pa.table(
        {
            "id": pa.array([10, 11, 12], pa.int64()),
            "cat": ["a", "b", "a"],
            "_row_id": pa.array([100, None, 7], pa.int64()),
            "_last_updated_sequence_number": pa.array([None, 1, None], pa.int64()),
        }
    )
    files = write_data_files(t.io, t.metadata, data, schema=schema)
    tx = t.transaction()
    tx.append_files(files)
    tx.commit()
    t.refresh()
    s = seq(t)
    got = lineage(t)
    # stored values win; a null row id inherits first_row_id (2) + position (1)
    assert (got[10], got[11], got[12]) == ((100, s), (3, 1), (7, s))


def test_deletes_still_apply_and_keep_the_other_rows_lineage(catalog: Any) -> None:
    t = _v3(catalog, partitioned=True, **MOR)
    t.append(rows(range(20)))
    before = lineage(t)
    t.delete("id in (0, 3, 6, 9, 12, 15, 18)")
    t.delete("id = 4")  # a second deletion vector for the same file merges the first
    after = lineage(t)
    assert after == {i: v for i, v in before.items() if i % 3 and i != 4}
    assert t.scan(selected_fields=("id", "_row_id")).count() == len(after)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_update_keeps_row_ids_and_takes_the_new_sequence_number(catalog: Any, mode: str) -> None:
    t = _v3(catalog, partitioned=True, **{"write.update.mode": mode, "write.delete.mode": mode})
    t.append(rows(range(10)))
    t.append(rows(range(10, 16)))
    before = lineage(t)
    t.update("id in (1, 2, 12)", set={"cat": "z"})
    s = seq(t)
    after = lineage(t)
    assert set(after) == set(before)
    for i, (row_id, last) in after.items():
        assert row_id == before[i][0]
        assert last == (s if i in (1, 2, 12) else before[i][1])
    t.update("id = 2", set={"cat": "y"})  # updated twice: the id still stays
    assert lineage(t)[2] == (before[2][0], seq(t))


def test_delete_overwrite_and_upsert_keep_the_surviving_rows(catalog: Any) -> None:
    t = _v3(catalog)
    t.append(rows(range(8)))
    before = lineage(t)
    t.delete("id = 1")  # copy-on-write rewrite of the file
    t.overwrite(rows([20]), where="id = 3")
    s_overwrite = seq(t)
    t.upsert(rows([5, 30]), key_columns=["id"])
    s_upsert = seq(t)
    after = lineage(t)
    for i in (0, 2, 4, 6, 7):
        assert after[i] == before[i], i
    assert after[20][1] == s_overwrite and after[30][1] == s_upsert and after[5][1] == s_upsert
    # new rows get ids that no row had before
    new = {after[i][0] for i in (20, 30, 5)}
    assert len(new) == 3 and not new & {v[0] for v in before.values()}
    assert len({v[0] for v in after.values()}) == len(after)


@pytest.mark.parametrize("strategy", ["binpack", "sort"])
def test_compaction_keeps_lineage_and_drops_the_rewritten_files_dvs(catalog: Any, strategy: str) -> None:
    t = _v3(catalog, partitioned=True, **MOR)
    for lo in range(0, 30, 10):
        t.append(rows(range(lo, lo + 10)))
    t.delete("id in (0, 4, 8, 12, 16, 20, 24, 28)")
    t.update("id in (5, 25)", set={"cat": "a"})
    before = lineage(t)
    assert any(task.delete_files for task in t.scan().plan_files())
    kwargs: dict[str, Any] = {"sort_order": "id desc"} if strategy == "sort" else {}
    result = t.maintenance.rewrite_data_files(strategy=strategy, options={"rewrite-all": "true"}, **kwargs)
    assert result.rewritten_data_files_count > 0
    assert lineage(t) == before
    assert not any(task.delete_files for task in t.scan().plan_files())
    assert result.removed_delete_files_count > 0
    # the next change after the rewrite still keeps the ids
    t.update("id = 7", set={"cat": "q"})
    assert lineage(t)[7] == (before[7][0], seq(t))


def test_rewrite_manifests_keeps_first_row_ids(catalog: Any) -> None:
    t = _v3(catalog, partitioned=True)
    for lo in range(0, 12, 3):
        t.append(rows(range(lo, lo + 3)))
    before = lineage(t)
    first_ids = sorted(task.file.first_row_id for task in t.scan().plan_files())
    result = t.maintenance.rewrite_manifests()
    assert result.rewritten_manifests
    assert lineage(t) == before
    assert sorted(task.file.first_row_id for task in t.scan().plan_files()) == first_ids
    t.append(rows(range(100, 102)))
    after = lineage(t)
    assert len({v[0] for v in after.values()}) == len(after)  # new ids do not collide


def test_rewrite_position_delete_files_on_v3_keeps_lineage(catalog: Any) -> None:
    """A table with deletion vectors only: nothing to do, no commit. An upgraded table's v2
    position delete files become vectors: no data file is rewritten, so every row keeps its
    _row_id and _last_updated_sequence_number."""
    t = _v3(catalog, **MOR)
    t.append(rows(range(6)))
    t.delete("id = 1")
    location = t.metadata_location
    assert t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"}).snapshot_ids == ()
    assert t.refresh().metadata_location == location

    up = catalog.create_table("ns.up_deletes", schema=SCHEMA, properties={"format-version": "2", **MOR})
    up.append(rows(range(6)))
    up.delete("id = 2")  # a v2 position delete file
    up.upgrade_format_version(3)
    up.append(rows(range(6, 9)))  # a v3 snapshot lists the old manifest: row ids to inherit
    before = lineage(up)
    assert up.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"}).snapshot_ids
    assert all(d.file_format.value == "PUFFIN" for task in up.scan().plan_files() for d in task.delete_files)
    assert lineage(up) == before


def test_tables_below_v3_refuse_the_columns(catalog: Any) -> None:
    t = catalog.create_table("ns.v2", schema=SCHEMA, properties={"format-version": "2"})
    t.append(rows(range(3)))
    for fields in (("id", "_row_id"), ("_last_updated_sequence_number",)):
        with pytest.raises(UnsupportedFeatureError, match="format v3"):
            t.scan(selected_fields=fields)
    # a table column that happens to have the name is just a column
    other = catalog.create_table(
        "ns.named", schema=pa.schema([pa.field("_row_id", pa.int64())]), properties={"format-version": "2"}
    )
    other.append(pa.table({"_row_id": pa.array([9], pa.int64())}))
    assert other.scan(selected_fields=("_row_id",)).to_arrow().to_pylist() == [{"_row_id": 9}]


def test_upgraded_table_gets_row_ids_for_its_old_rows(catalog: Any) -> None:
    t = catalog.create_table("ns.up", schema=SCHEMA, properties={"format-version": "2"})
    t.append(rows(range(4)))
    t.upgrade_format_version(3)
    # no v3 snapshot has listed the old manifest yet: no row ids to inherit
    assert {v[0] for v in lineage(t).values()} == {None}
    t.append(rows(range(4, 6)))
    got = lineage(t)
    assert None not in {v[0] for v in got.values()} and len({v[0] for v in got.values()}) == 6
    before = got
    t.update("id = 1", set={"cat": "z"})
    assert lineage(t)[1] == (before[1][0], seq(t))


# --------------------------------------------------------------------------- model test


class _Model:
    """What the rows' lineage must be: id -> (row id first seen, sequence number expected)."""

    def __init__(self) -> None:
        self.row_ids: dict[int, int] = {}
        self.seqs: dict[int, int] = {}
        self.retired: set[int] = set()

    def check(self, t: Any) -> None:
        got = lineage(t)
        assert set(got) == set(self.seqs)
        for i, (row_id, last) in got.items():
            assert row_id is not None and last == self.seqs[i], (i, row_id, last, self.seqs[i])
            if i in self.row_ids:
                assert row_id == self.row_ids[i], f"row {i} changed its _row_id"
            else:
                assert row_id not in self.retired, "a new row reused a retired _row_id"
                self.row_ids[i] = row_id
        assert len({v[0] for v in got.values()}) == len(got), "duplicate _row_id"


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 6)),
        st.tuples(st.just("update"), st.integers(0, 6)),
        st.tuples(st.just("delete"), st.integers(0, 6)),
        st.tuples(st.just("compact"), st.just(0)),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, mode=st.sampled_from(["copy-on-write", "merge-on-read"]))
def test_model_row_ids_are_stable_and_unique(catalog: Any, ops: list[tuple[str, int]], mode: str) -> None:
    name = f"ns.m{next(_names)}"
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    t = _v3(catalog, name, partitioned=True, **props)
    model = _Model()
    next_id = 0
    for op, n in ops:
        live = sorted(model.seqs)
        if op == "append":
            t.append(rows(range(next_id, next_id + n)))
            for i in range(next_id, next_id + n):
                model.seqs[i] = seq(t)
            next_id += n
        elif op == "update" and live:
            chosen = live[n % len(live) :: 3]
            t.update(f"id in ({', '.join(map(str, chosen))})", set={"cat": "u"})
            for i in chosen:
                model.seqs[i] = seq(t)
        elif op == "delete" and live:
            chosen = live[n % len(live) :: 4]
            t.delete(f"id in ({', '.join(map(str, chosen))})")
            for i in chosen:
                del model.seqs[i]
                model.retired.add(model.row_ids.pop(i))
        elif op == "compact" and live:
            t.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
        model.check(t)


def _counter() -> Any:
    import itertools

    return itertools.count()


_names = _counter()
