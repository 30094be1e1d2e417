"""A table written under several partition specs behaves as one table: planning prunes every
spec's files with that spec's own projection of a filter, copy-on-write and merge-on-read deletes
and upserts touch files of every spec, dynamic overwrites replace partitions of the new files'
spec only (as Iceberg Java's ``ReplacePartitions`` does), equality deletes keep their spec's
scope, and the incremental, changelog and metadata-table reads see every spec.

The rows always equal a Python model that knows, for every row, the spec it was written under.
Column metrics are off (``write.metadata.metrics.default=none``), so every file skipped by a
filter was skipped by its partition: the planned files must be exactly those whose partition
(under the file's own spec) may match, computed here independently of icefloe."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.arrow.deletes import write_equality_deletes
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.manifest import DataFileContent
from icefloe.table import Table

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
DAY_US = 86_400_000_000
HOUR_US = 3_600_000_000
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("ts", TS), ("cat", pa.string()), ("v", pa.int64())]
)


def us(t: dt.datetime) -> int:
    return (t - EPOCH) // dt.timedelta(microseconds=1)


def make_rows(start: int, n: int, *, v: int = 0) -> list[dict[str, Any]]:
    base = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    return [
        {
            "id": i,
            "ts": base + dt.timedelta(hours=(i * 5) % 60, minutes=i % 60),
            "cat": "abc"[i % 3],
            "v": i + v,
        }
        for i in range(start, start + n)
    ]


def where_in(column: str, values: Any) -> str:
    return f"{column} in ({', '.join(str(v) for v in sorted(set(values)))})"


def ids(m: Model, pred: Callable[[dict[str, Any]], bool]) -> list[int]:
    return [r["id"] for r in m.current() if pred(r)]


def arrow(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


# The model: each spec's partition function, by the transform names the spec JSON uses.
def partition_of(t: Table, spec_id: int, row: dict[str, Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for f in t.metadata.spec_by_id(spec_id).fields:
        column = t.schema().column_name(f.source_id)
        value = row[column]
        kind = str(f.transform)
        if kind == "identity":
            out.append(value)
        elif kind == "day":
            out.append(us(value) // DAY_US)
        elif kind == "hour":
            out.append(us(value) // HOUR_US)
        else:  # pragma: no cover - the tests below use these three
            raise AssertionError(kind)
    return tuple(out)


@dataclass
class Model:
    table: Table
    rows: dict[int, tuple[dict[str, Any], int]] = field(default_factory=dict)  # id -> (row, spec id)
    snapshots: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def record(self) -> None:
        snap = self.table.current_snapshot()
        assert snap is not None
        self.snapshots[snap.snapshot_id] = self.current()
        self.check()

    def current(self) -> list[dict[str, Any]]:
        return sorted((r for r, _ in self.rows.values()), key=lambda r: r["id"])

    def append(self, rows: list[dict[str, Any]]) -> None:
        self.table.append(arrow(rows))
        spec = self.table.metadata.default_spec_id
        for r in rows:
            self.rows[r["id"]] = (r, spec)
        self.record()

    def delete(self, where: str, pred: Callable[[dict[str, Any]], bool]) -> None:
        self.table.delete(where)
        self.rows = {k: (r, s) for k, (r, s) in self.rows.items() if not pred(r)}
        self.record()

    def upsert(self, rows: list[dict[str, Any]]) -> None:
        self.table.upsert(arrow(rows), ["id"])
        spec = self.table.metadata.default_spec_id
        for r in rows:
            self.rows[r["id"]] = (r, spec)
        self.record()

    def replace_partitions(self, rows: list[dict[str, Any]]) -> None:
        """Java's ReplacePartitions: the new files' spec is the current one; rows of that spec in
        the partitions the new rows touch go (all rows, when that spec is unpartitioned); rows
        of other specs stay."""
        t = self.table
        spec = t.metadata.default_spec_id
        touched = {partition_of(t, spec, r) for r in rows}
        everything = t.spec().is_unpartitioned()
        self.rows = {
            k: (r, s)
            for k, (r, s) in self.rows.items()
            if not (everything or (s == spec and partition_of(t, spec, r) in touched))
        }
        t.replace_partitions(arrow(rows))
        for r in rows:
            self.rows[r["id"]] = (r, spec)
        self.record()

    def check(self) -> None:
        for sid, want in self.snapshots.items():
            got = self.table.scan(snapshot_id=sid).to_arrow().to_pylist()
            assert sorted(got, key=lambda r: r["id"]) == want, f"snapshot {sid}"


def set_mode(t: Table, mode: str) -> None:
    with t.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": mode, "write.merge.mode": mode, "write.update.mode": mode})


def evolve(t: Table, change: Callable[[Any], Any]) -> None:
    with t.update_spec() as u:
        change(u)


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = InMemoryCatalog("m", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


def four_spec_table(catalog: InMemoryCatalog) -> Model:
    """day(ts) -> hour(ts) -> hour(ts) + identity(cat) -> identity(cat), an append under each."""
    t = catalog.create_table(
        "ns.t",
        schema=SCHEMA,
        partition_by=["day(ts)"],
        properties={"write.metadata.metrics.default": "none", "write.delete.mode": "copy-on-write"},
    )
    m = Model(t)
    m.append(make_rows(0, 24))
    evolve(t, lambda u: u.remove_field("ts_day").add_field("hour(ts)"))
    m.append(make_rows(100, 24))
    evolve(t, lambda u: u.add_identity("cat"))
    m.append(make_rows(200, 24))
    evolve(t, lambda u: u.remove_field("hour(ts)"))
    m.append(make_rows(300, 24))
    assert [[f.name for f in s.fields] for s in t.metadata.partition_specs] == [
        ["ts_day"],
        ["ts_hour"],
        ["ts_hour", "cat"],
        ["cat"],
    ]
    assert [[f.field_id for f in s.fields] for s in t.metadata.partition_specs] == [
        [1000],
        [1001],
        [1001, 1002],
        [1002],
    ]
    return m


def live_files(t: Table) -> list[Any]:
    return [task.file for task in t.scan().plan_files()]


# ------------------------------------------------------------------ planning and pruning


def _ts_may_match(t: Table, f: Any, lo: int, hi: int) -> bool:
    """Whether a file's partition may hold a ts in [lo, hi), under the file's own spec."""
    for pf, value in zip(t.metadata.spec_by_id(f.spec_id).fields, f.partition, strict=True):
        unit = {"day": DAY_US, "hour": HOUR_US}.get(str(pf.transform))
        if unit is not None and value is not None and not (value * unit < hi and (value + 1) * unit > lo):
            return False
    return True


def _cat_may_match(t: Table, f: Any, cat: str) -> bool:
    for pf, value in zip(t.metadata.spec_by_id(f.spec_id).fields, f.partition, strict=True):
        if str(pf.transform) == "identity" and value != cat:
            return False
    return True


FILTERS: list[tuple[str, Callable[[dict[str, Any]], bool], Callable[[Table, Any], bool]]] = [
    (
        "ts >= '2024-03-02T00:00:00+00:00' and ts < '2024-03-02T01:00:00+00:00'",
        lambda r: (
            dt.datetime(2024, 3, 2, tzinfo=dt.UTC) <= r["ts"] < dt.datetime(2024, 3, 2, 1, tzinfo=dt.UTC)
        ),
        lambda t, f: _ts_may_match(
            t, f, us(dt.datetime(2024, 3, 2, tzinfo=dt.UTC)), us(dt.datetime(2024, 3, 2, 1, tzinfo=dt.UTC))
        ),
    ),
    (
        "ts < '2024-03-01T10:00:00+00:00'",
        lambda r: r["ts"] < dt.datetime(2024, 3, 1, 10, tzinfo=dt.UTC),
        lambda t, f: _ts_may_match(t, f, -(2**62), us(dt.datetime(2024, 3, 1, 10, tzinfo=dt.UTC))),
    ),
    ("cat = 'b'", lambda r: r["cat"] == "b", lambda t, f: _cat_may_match(t, f, "b")),
    (
        "cat = 'a' and ts >= '2024-03-03T00:00:00+00:00'",
        lambda r: r["cat"] == "a" and r["ts"] >= dt.datetime(2024, 3, 3, tzinfo=dt.UTC),
        lambda t, f: (
            _cat_may_match(t, f, "a")
            and _ts_may_match(t, f, us(dt.datetime(2024, 3, 3, tzinfo=dt.UTC)), 2**62)
        ),
    ),
]


def check_pruning(m: Model) -> None:
    t = m.table
    files = live_files(t)
    assert {f.spec_id for f in files} >= {0, 1, 2, 3}
    for text, row_pred, part_pred in FILTERS:
        scan = t.scan(row_filter=text)
        planned = sorted(task.file.file_path for task in scan.plan_files())
        expected = sorted(f.file_path for f in files if part_pred(t, f))
        assert planned == expected, text
        assert len(planned) < len(files), f"{text}: nothing pruned"
        got = sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == [r for r in m.current() if row_pred(r)], text


def test_filters_prune_the_files_of_every_spec(catalog: InMemoryCatalog) -> None:
    m = four_spec_table(catalog)
    check_pruning(m)
    # time travel: a snapshot of two specs plans with the same per-spec rules
    second = m.table.snapshots()[1].snapshot_id
    scan = m.table.scan(row_filter="ts < '2024-03-01T10:00:00+00:00'", snapshot_id=second)
    files = [task.file for task in m.table.scan(snapshot_id=second).plan_files()]
    planned = sorted(task.file.file_path for task in scan.plan_files())
    lim = us(dt.datetime(2024, 3, 1, 10, tzinfo=dt.UTC))
    assert planned == sorted(f.file_path for f in files if _ts_may_match(m.table, f, -(2**62), lim))


# ------------------------------------------------------------------ row-level changes


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_deletes_and_upserts_touch_every_spec(catalog: InMemoryCatalog, mode: str) -> None:
    m = four_spec_table(catalog)
    t = m.table
    set_mode(t, mode)
    gone = ids(m, lambda r: r["v"] % 3 == 0)
    m.delete(where_in("v", gone), lambda r: r["v"] in gone)
    gone = ids(m, lambda r: r["id"] % 5 == 1)
    m.delete(where_in("id", gone) + " and cat != 'c'", lambda r: r["id"] in gone and r["cat"] != "c")
    # rows of every spec change; new ids arrive too
    m.upsert([{**r, "v": r["v"] + 1000} for r in make_rows(0, 3) + make_rows(101, 2) + make_rows(205, 2)])
    m.upsert([*make_rows(400, 3), {**make_rows(302, 1)[0], "cat": "zz"}])
    check_pruning(m)
    files = [task.file for task in t.scan().plan_files()]
    if mode == "merge-on-read":
        deletes = [d for task in t.scan().plan_files() for d in task.delete_files]
        assert deletes and {d.content for d in deletes} == {DataFileContent.POSITION_DELETES}
        for task in t.scan().plan_files():
            for d in task.delete_files:
                # a position delete file carries its data file's spec and partition
                assert (d.spec_id, d.partition) == (task.file.spec_id, task.file.partition)
        assert {d.spec_id for d in deletes} >= {0, 1, 2, 3}
    else:
        assert all(not task.delete_files for task in t.scan().plan_files())
        # copy-on-write rewrites keep each file's own spec
    assert {f.spec_id for f in files} >= {0, 1, 2, 3}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_replace_partitions_replaces_partitions_of_the_new_spec_only(
    catalog: InMemoryCatalog, mode: str
) -> None:
    """Iceberg Java's ReplacePartitions drops the files in the (spec, partition) tuples of the new
    files: rows of cat 'a' written under older specs stay."""
    m = four_spec_table(catalog)
    set_mode(m.table, mode)
    gone = ids(m, lambda r: r["id"] % 4 == 0)
    m.delete(where_in("id", gone), lambda r: r["id"] in gone)
    m.replace_partitions([{**r, "cat": "a", "v": -r["id"]} for r in make_rows(500, 3)])
    current = m.current()
    assert any(r["cat"] == "a" and r["id"] < 300 for r in current)  # older specs' 'a' rows stayed
    assert not any(r["cat"] == "a" and 300 <= r["id"] < 500 for r in current)  # spec 3's 'a' went
    # under hour(ts) + cat again (spec 2 is reused), the same rule for that spec
    evolve(m.table, lambda u: u.add_field("hour(ts)"))
    assert m.table.metadata.default_spec_id == 4  # [cat, ts_hour] is not [ts_hour, cat]
    m.replace_partitions([{**make_rows(203, 1)[0], "id": 600}])
    check_pruning(m)


def test_replace_partitions_under_an_unpartitioned_spec_replaces_everything(catalog: InMemoryCatalog) -> None:
    """Java: when the new files' spec is unpartitioned, the whole table is replaced, the files of
    every other spec included."""
    m = four_spec_table(catalog)
    set_mode(m.table, "merge-on-read")
    gone = ids(m, lambda r: r["id"] % 4 == 0)
    m.delete(where_in("id", gone), lambda r: r["id"] in gone)
    evolve(m.table, lambda u: u.remove_field("cat"))
    assert m.table.spec().is_unpartitioned()
    m.replace_partitions(make_rows(700, 2))
    assert [r["id"] for r in m.current()] == [700, 701]
    snap = m.table.current_snapshot()
    assert snap is not None and snap.summary.get("replace-partitions") == "true"
    assert all(not task.delete_files for task in m.table.scan().plan_files())
    assert int(snap.summary.get("total-delete-files") or 0) == 0


def test_equality_deletes_keep_their_specs_scope(catalog: InMemoryCatalog) -> None:
    """An equality delete of an unpartitioned spec applies to every older data file of every
    spec; one of a partitioned spec only to data files of the same spec and partition."""
    t = catalog.create_table("ns.eq", schema=SCHEMA, properties={"write.metadata.metrics.default": "none"})
    m = Model(t)
    m.append(make_rows(0, 9))  # spec 0: unpartitioned
    evolve(t, lambda u: u.add_identity("cat"))
    m.append(make_rows(100, 9))  # spec 1: identity(cat)

    def eq_delete(values: list[int], spec_id: int, partition: tuple[Any, ...]) -> None:
        files = write_equality_deletes(
            t.io,
            t.metadata,
            pa.table({"v": pa.array(values, pa.int64())}),
            ["v"],
            spec_id=spec_id,
            partition=partition,
        )
        with t.transaction() as tx:
            tx.row_delta(add_delete_files=files, delete_on_failure=True)
        m.rows = {
            k: (r, s)
            for k, (r, s) in m.rows.items()
            if not (r["v"] in values and (spec_id == 0 or (s == spec_id and (r["cat"],) == partition)))
        }
        m.record()

    cat_of = {r["v"]: r["cat"] for r in m.current()}
    # global: v in {1, 101} goes in both specs
    eq_delete([1, 101], 0, ())
    assert not {1, 101} & {r["v"] for r in m.current()}
    # spec 1, partition of v=104: 104 goes, 4 (the same cat, but spec 0) stays
    eq_delete([4, 104], 1, (cat_of[104],))
    assert 4 in [r["v"] for r in m.current()] and 104 not in [r["v"] for r in m.current()]
    # spec 1, a partition that v=105 is not in: nothing goes
    other = next(c for c in "abc" if c != cat_of[105])
    eq_delete([105], 1, (other,))
    assert 105 in [r["v"] for r in m.current()]
    # rows written after a delete are not deleted by it
    m.append([{**make_rows(101, 1)[0], "id": 900}])
    assert 900 in [r["id"] for r in m.current()]


# ------------------------------------------------------------------ reads over history


def test_incremental_changelog_and_metadata_tables_see_every_spec(catalog: InMemoryCatalog) -> None:
    m = four_spec_table(catalog)
    t = m.table
    first = t.snapshots()[0].snapshot_id
    appended = sorted(r["id"] for r in t.incremental_append_scan(first).to_arrow().to_pylist())
    assert appended == list(range(100, 124)) + list(range(200, 224)) + list(range(300, 324))
    before = {r["id"]: r for r in m.current()}
    m.delete("cat = 'b'", lambda r: r["cat"] == "b")
    m.upsert([{**make_rows(3, 1)[0], "v": 99}])
    changes = t.changelog_scan(first, net_changes=True).to_arrow().to_pylist()
    after = {r["id"]: r for r in m.current()}
    first_rows = {r["id"]: r for r in m.snapshots[first]}
    want: dict[int, set[str]] = {}
    for k in set(first_rows) | set(after):
        if first_rows.get(k) != after.get(k):
            want[k] = (
                {"INSERT"} if k not in first_rows else {"DELETE"} if k not in after else {"DELETE", "INSERT"}
            )
    got: dict[int, set[str]] = {}
    for r in changes:
        got.setdefault(r["id"], set()).add(r["_change_type"])
    assert got == want
    assert before  # the rows before the delete were read
    # the partitions metadata table: one struct over every spec's fields, by field id
    parts = t.inspect.partitions()
    struct = parts.schema.field("partition").type
    assert [struct.field(i).name for i in range(struct.num_fields)] == ["ts_day", "ts_hour", "cat"]
    files = t.inspect.files().to_pylist()
    assert sum(r["record_count"] for r in parts.to_pylist()) == sum(
        f["record_count"] for f in files if f["content"] == 0
    )
    keys = {(r["spec_id"], tuple(sorted((r["partition"] or {}).items()))) for r in parts.to_pylist()}
    want_keys = set()
    for f in live_files(t):
        named = dict.fromkeys(("ts_day", "ts_hour", "cat"))
        for pf, value in zip(t.metadata.spec_by_id(f.spec_id).fields, f.partition, strict=True):
            named[pf.name] = value
        want_keys.add(named_key(f.spec_id, named))
    assert {(s, tuple((k, norm(v)) for k, v in p)) for s, p in keys} == want_keys


def norm(v: Any) -> Any:
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return (v - dt.date(1970, 1, 1)).days
    if isinstance(v, dt.datetime):
        return us(v) // HOUR_US
    return v


def named_key(spec_id: int, named: dict[str, Any]) -> tuple[int, tuple[tuple[str, Any], ...]]:
    return spec_id, tuple(sorted(named.items()))
