"""icefloe writes format v3 with deletion vectors, Iceberg Java 1.10 (Spark) and DuckDB read it.

Expected rows come from a Python model of the operations, never from icefloe's read path. Every
snapshot of each table is checked (one JVM for all tables, via ../shared/oracle):

``v3_dvs``       v3 from the start: append; delete over two data files (one Puffin file, two
                 DVs); a second delete on the same data file (merged DV, old one removed);
                 a merge-on-read update (DVs plus new rows); an append
``v3_upgraded``  v2 with a file-scoped and a partition-scoped position delete file, upgraded to
                 v3, then a delete that folds both into a DV, and one on a file without deletes
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import interop_support as sup

from icefloe.arrow.deletes import write_position_deletes
from icefloe.manifest import FileFormat

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()), pa.field("n", pa.int64())]
)
MOR = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}


def _rows(ids: range | list[int]) -> list[dict[str, Any]]:
    return [{"id": i, "cat": "ab"[i % 2], "n": i * 10} for i in ids]


@dataclasses.dataclass
class Built:
    name: str
    metadata_location: str
    snapshots: dict[int, list[dict[str, Any]]]
    current: int


class _Recorder:
    def __init__(self, t: Any) -> None:
        self.t = t
        self.model: list[dict[str, Any]] = []
        self.snapshots: dict[int, list[dict[str, Any]]] = {}

    def append(self, ids: range | list[int]) -> None:
        new = _rows(ids)
        self.t.append(pa.Table.from_pylist(new, schema=SCHEMA))
        self.model += new
        self.record()

    def delete(self, where: str, doomed: set[int]) -> None:
        self.t.delete(where)
        self.model = [r for r in self.model if r["id"] not in doomed]
        self.record()

    def record(self) -> None:
        self.t = self.t.refresh()
        self.snapshots[self.t.current_snapshot().snapshot_id] = [dict(r) for r in self.model]

    def built(self, name: str) -> Built:
        return Built(name, self.t.metadata_location, self.snapshots, self.t.current_snapshot().snapshot_id)


def _build_dvs(cat: Any) -> Built:
    t = cat.create_table(
        "v.v3_dvs", schema=SCHEMA, partition_by=["cat"], properties={"format-version": "3", **MOR}
    )
    r = _Recorder(t)
    r.append(range(40))
    r.delete("id < 6", set(range(6)))
    r.delete("id = 8 or id = 10 or id = 12", {8, 10, 12})  # the "a" file's DV again
    r.t.update("id >= 30", {"n": pc_neg()})
    r.model = [{**x, "n": -x["n"]} if x["id"] >= 30 else x for x in r.model]
    r.record()
    r.append([100, 101])
    r.delete("id = 31 or id = 100", {31, 100})  # a row rewritten by the update, a new file
    return r.built("v3_dvs")


def pc_neg() -> Any:
    import pyarrow.compute as pc

    return pc.negate(pc.field("n"))


def _build_upgraded(cat: Any) -> Built:
    t = cat.create_table(
        "v.v3_upgraded", schema=SCHEMA, partition_by=["cat"], properties={"format-version": "2", **MOR}
    )
    r = _Recorder(t)
    r.append(range(0, 20, 2))
    r.append(range(20, 40, 2))
    r.append(range(1, 10, 2))
    r.delete("id = 0", {0})  # a file-scoped position delete file
    files = {
        pq.read_table(sup.local_path(task.file.file_path))["id"][0].as_py(): task.file
        for task in r.t.scan().plan_files()
    }
    first, second = files[0], files[20]
    shared = write_position_deletes(
        r.t.io, r.t.metadata, {first.file_path: [2], second.file_path: [0]}, partition=("a",)
    )
    with r.t.transaction() as tx:
        tx.row_delta(add_delete_files=shared)
    r.model = [x for x in r.model if x["id"] not in (4, 20)]
    r.record()
    r.t.upgrade_format_version(3)
    r.record()  # same snapshot, now under v3 metadata
    r.delete("id = 6 or id = 22", {6, 22})  # folds the position deletes into DVs
    r.delete("id = 3", {3})  # a file that never had deletes
    r.append([50, 51])
    # The shared position delete file is still live (partition-scoped, so the DVs above kept
    # it); rewrite_position_delete_files turns it into the two files' DVs, as Java's action does.
    result = r.t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert result.added_delete_files_count == 2
    r.record()
    left = [
        d for task in r.t.scan().plan_files() for d in task.delete_files if d.file_format != FileFormat.PUFFIN
    ]
    assert left == []
    return r.built("v3_upgraded")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    root = tmp_path_factory.mktemp("interop_v3")
    wh = root / "warehouse"
    wh.mkdir()
    cat = sup.icefloe_catalog("interop_v3", root / "catalog.db", wh)
    cat.create_namespace("v")
    return {"v3_dvs": _build_dvs(cat), "v3_upgraded": _build_upgraded(cat)}


def _schema(b: Built, sid: int) -> dict[str, Any]:
    return sup.schema_json(b.metadata_location, sid)


@pytest.mark.parametrize("name", ["v3_dvs", "v3_upgraded"])
def test_icefloe_reads_its_own_v3_tables(built: dict[str, Built], name: str) -> None:
    from icefloe.arrow.reader import read_task
    from icefloe.io.local import LocalFileIO
    from icefloe.scan.planner import plan_files
    from icefloe.spec.table_metadata import read_metadata_json

    b = built[name]
    md = read_metadata_json(Path(sup.local_path(b.metadata_location)).read_text())
    assert md.format_version == 3
    io = LocalFileIO()
    for sid, want in b.snapshots.items():
        schema = md.schema()
        got = [
            r
            for task in plan_files(io, md, md.snapshot_by_id(sid))
            for batch in read_task(io, task, schema, schema)
            for r in batch.to_pylist()
        ]
        diff = sup.diff_rows(_schema(b, sid), got, want, "icefloe", "model")
        assert not diff, f"{name}@{sid}: {diff}"


@pytest.mark.oracle
@pytest.mark.java
def test_java_and_duckdb_read_icefloe_v3(
    built: dict[str, Built], oracle_available: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    jobs = [
        sup.VerifyJob(
            name=b.name,
            metadata_location=b.metadata_location,
            current_snapshot_id=b.current,
            snapshots={sid: sup.checksum(_schema(b, sid), rows) for sid, rows in b.snapshots.items()},
        )
        for b in built.values()
    ]
    outcomes = sup.run_verify_batch(jobs, tmp_path_factory.mktemp("verify_v3"), engines=("spark", "duckdb"))
    problems = [sup.format_outcome(o) for o in outcomes.values() if o.problems]
    assert not problems, "\n\n".join(problems)
