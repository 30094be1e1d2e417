"""Scans to Polars and DuckDB without materialising, ``count()`` from metadata, readable reprs,
typed errors naming the extra to install, and ``progress=`` callbacks on writes."""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.table.scan import DataScan

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def _rows(start: int, n: int, day: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + n)),
            "s": [f"s{i % 3}" for i in range(start, start + n)],
            "ts": [dt.datetime(2024, 1, day, tzinfo=dt.UTC)] * n,
        },
        schema=SCHEMA,
    )


@pytest.fixture
def table(any_catalog: Any) -> icefloe.Table:
    any_catalog.create_namespace("db")
    t = any_catalog.create_table(
        "db.t", schema=SCHEMA, partition_by=["day(ts)"], properties={"write.delete.mode": "merge-on-read"}
    )
    for i in range(4):
        t.append(_rows(i * 100, 100, 1 + i % 2))
    return t  # type: ignore[no-any-return]


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: DataScan, task: Any) -> Any:
        raise AssertionError(f"read {task.file.file_path}")

    monkeypatch.setattr(DataScan, "_read_task", refuse)


def test_count_from_metadata_reads_no_file(table: icefloe.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_reads(monkeypatch)
    assert table.scan().count() == 400
    assert table.scan(row_filter="ts >= '2024-01-02'").count() == 200  # decided by the partition
    assert table.scan(row_filter="id >= 0").count() == 400  # every file's bounds match
    assert table.scan(row_filter="id >= 100 and id < 200").count() == 100  # one file, all rows match
    assert table.scan(limit=7).count() == 7


def test_count_reads_what_metadata_cannot_decide(table: icefloe.Table) -> None:
    assert table.scan(row_filter="id >= 50 and s = 's1'").count() == len(
        table.scan(row_filter="id >= 50 and s = 's1'").to_arrow()
    )
    table.delete("id < 30")
    assert table.scan().count() == 370  # the delete file applies to one file
    assert table.scan(row_filter="id < 40").count() == 10
    assert table.scan(row_filter="s = 's0'", limit=5).count() == 5
    assert table.scan(limit=0).count() == 0
    empty = table.catalog.create_table("db.empty", schema=SCHEMA)
    assert empty.scan().count() == 0


def test_to_polars_is_lazy_and_pushes_down(table: icefloe.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    pl = pytest.importorskip("polars")
    table.delete("id < 10")
    lf = table.scan().to_polars()
    assert isinstance(lf, pl.LazyFrame)
    projections: list[tuple[str, ...]] = []
    real_select = DataScan.select

    def spy(self: DataScan, *names: str) -> DataScan:
        projections.append(names)
        return real_select(self, *names)

    monkeypatch.setattr(DataScan, "select", spy)
    got = lf.filter(pl.col("id") >= 390).select("s").collect()
    assert sorted(got["s"].to_list()) == sorted(f"s{i % 3}" for i in range(390, 400))
    assert projections and all(set(p) <= {"id", "s"} for p in projections)
    assert lf.head(3).collect().height == 3
    assert lf.select(pl.len()).collect().item() == 390
    expected = table.scan().to_arrow().sort_by("id")
    assert lf.sort("id").collect().to_arrow().cast(expected.schema).equals(expected)


def test_to_duckdb_streams_instead_of_materialising(
    table: icefloe.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("duckdb")

    def refuse(self: DataScan) -> Any:
        raise AssertionError("to_duckdb must not read everything into one Arrow table")

    monkeypatch.setattr(DataScan, "to_arrow", refuse)
    con = table.scan(row_filter="id < 250").to_duckdb("t")
    assert con.execute("SELECT count(*), max(id) FROM t").fetchall() == [(250, 249)]
    # registered as a re-readable stream: a second query and a self-join scan it again
    assert con.execute("SELECT count(*) FROM t a JOIN t b USING (id)").fetchall() == [(250,)]
    table.scan().to_duckdb("u", con)
    assert con.execute("SELECT count(*) FROM u").fetchall() == [(400,)]


@pytest.mark.parametrize(
    ("module", "call", "extra"),
    [
        ("pandas", lambda s: s.to_pandas(), "pandas"),
        ("duckdb", lambda s: s.to_duckdb("t"), "duckdb"),
        ("polars", lambda s: s.to_polars(), "polars"),
    ],
)
def test_missing_extras_are_named(
    table: icefloe.Table, monkeypatch: pytest.MonkeyPatch, module: str, call: Any, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(icefloe.MissingDependencyError) as e:
        call(table.scan())
    assert e.value.context["extra"] == extra
    assert e.value.hint == f"pip install 'icefloe[{extra}]'"
    assert f"needs the Python package '{module}'" in e.value.message
    assert isinstance(e.value, ImportError)


def test_reprs_are_readable(table: icefloe.Table) -> None:
    r = repr(table)
    assert r.startswith(
        "Table('db.t', format v2, 3 columns, partitioned by day(ts), 400 rows in 4 files, snapshot "
    )
    assert "append" in r
    snap = table.current_snapshot()
    assert snap is not None
    sr = repr(snap)
    assert sr.startswith(f"Snapshot(snapshot_id={snap.snapshot_id}, operation='append', committed='")
    assert "added_records=100" in sr and "total_records=400" in sr and "manifest_list" not in sr
    assert repr(table.schema()) == (
        "Schema(schema_id=0, [1: id: optional long, 2: s: optional string, 3: ts: optional timestamptz])"
    )
    assert repr(table.scan(row_filter="id > 3", selected_fields=("id",), limit=2)).startswith(
        "DataScan('db.t', "
    )
    assert "limit=2" in repr(table.scan(limit=2))
    assert repr(table.health()).startswith("TableHealth('db.t', ")


def test_progress_callbacks_on_writes(table: icefloe.Table) -> None:
    events: list[icefloe.Progress] = []
    table.append(_rows(1000, 50, 3), progress=events.append)
    writes = [e for e in events if e.stage == "write"]
    assert writes[0].done == 0 and writes[-1].done == 50 and writes[-1].total == 50
    assert writes[-1].fraction == 1.0 and writes[-1].unit == "rows"
    assert [(e.stage, e.done, e.total) for e in events[-2:]] == [("commit", 0, 1), ("commit", 1, 1)]
    assert all(e.operation == "append" for e in events)
    assert str(events[-1]) == "append: commit 1/1 steps"

    events.clear()
    reader = pa.RecordBatchReader.from_batches(SCHEMA, _rows(2000, 30, 3).to_batches(max_chunksize=10))
    table.overwrite(reader, "id >= 2000", progress=events.append)
    assert [e.done for e in events if e.stage == "write"] == [0, 10, 20, 30]
    assert {e.operation for e in events} == {"overwrite"}
    events.clear()
    table.delete("id >= 2000", progress=events.append)
    assert [(e.operation, e.stage, e.done) for e in events] == [
        ("delete", "commit", 0),
        ("delete", "commit", 1),
    ]
    table.upsert(_rows(0, 5, 1), ["id"], progress=events.append)
    table.replace_partitions(_rows(0, 5, 1), progress=events.append)
    assert {"upsert", "replace_partitions"} <= {e.operation for e in events}


def test_a_failing_progress_callback_stops_the_write(table: icefloe.Table) -> None:
    before = table.current_snapshot()

    def stop(event: icefloe.Progress) -> None:
        if event.stage == "write" and event.done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        table.append(_rows(1000, 50, 3), progress=stop)
    assert table.refresh().current_snapshot() == before


def test_create_namespace_if_not_exists(any_catalog: Any) -> None:
    assert any_catalog.create_namespace_if_not_exists("a", {"owner": "x"}) is True
    assert any_catalog.create_namespace_if_not_exists("a", {"owner": "y"}) is False
    assert any_catalog.load_namespace_properties("a")["owner"] == "x"


def test_progress_callbacks_on_maintenance(table: icefloe.Table) -> None:
    events: list[icefloe.Progress] = []
    table.maintenance.rewrite_data_files(options={"min-input-files": 2}, progress=events.append)
    assert [(e.stage, e.done, e.total, e.unit) for e in events] == [
        ("plan", 0, 1, "steps"),
        ("rewrite", 0, 2, "groups"),
        ("rewrite", 2, 2, "groups"),
    ]
    events.clear()
    table.maintenance.rewrite_manifests(progress=events.append)
    assert {e.operation for e in events} == {"rewrite_manifests"}
    assert events[-1].stage == "rewrite" and events[-1].done == events[-1].total


def test_stopping_before_the_commit_leaves_no_files(table: icefloe.Table) -> None:
    from pathlib import Path

    data_dir = Path(table.location.removeprefix("file://")) / "data"
    before = sorted(p for p in data_dir.rglob("*.parquet"))

    def stop_at_commit(event: icefloe.Progress) -> None:
        if event.stage == "commit":
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        table.append(_rows(5000, 10, 3), progress=stop_at_commit)
    assert sorted(p for p in data_dir.rglob("*.parquet")) == before
    assert table.refresh().scan().count() == 400
