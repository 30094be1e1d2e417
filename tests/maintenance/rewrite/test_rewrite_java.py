"""After each rewrite, Iceberg Java 1.10 (and PyIceberg 0.12, DuckDB 1.5) read every retained
snapshot and agree with the expected rows; and icefloe compacts tables Iceberg Java wrote.

Tables (one JVM verifies them all, ``verify_table.py --index --all-snapshots``):

- ``ice_mor``: merge-on-read position and equality deletes, then a merge of the position delete
  files, bin-pack compaction (deletes applied), dangling-delete removal, a manifest rewrite.
  Expected rows come from a Python model of the appends and deletes (never from icefloe's reads).
- ``ice_sorted``: shuffled appends, sort compaction by the table's order, then a z-order.
- ``ice_evolved``: files of two partition specs compacted into the current one.
- ``ref_mor_v2`` / ``ref_part_identity``: Java's reference tables, copied (metadata with a new
  location in a temporary directory; the shared reference files are only read) and registered,
  then rewritten by icefloe. Expected rows: the reference's own expectations per snapshot, and
  for icefloe's snapshots the rows of the snapshot they rewrote.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "interop"))

import interop_support as sup
from rewrite_checks import MOR, SCHEMA, rows

from icefloe.arrow.deletes import write_equality_deletes

pytestmark = [pytest.mark.oracle, pytest.mark.java]


@dataclasses.dataclass
class Built:
    name: str
    metadata_location: str
    current: int
    snapshots: dict[int, tuple[int, str]]  # snapshot id -> (rows, checksum)
    pyiceberg_error: str | None = None


class Model:
    """Rows by id; the expected rows of every snapshot recorded as operations commit."""

    def __init__(self) -> None:
        self.rows: dict[int, dict[str, Any]] = {}
        self.snapshots: dict[int, list[dict[str, Any]]] = {}

    def append(self, t: Any, data: pa.Table) -> None:
        t.append(data)
        for r in data.to_pylist():
            self.rows[r["id"]] = r
        self.record(t)

    def deleted(self, t: Any, ids: list[int]) -> None:
        for i in ids:
            self.rows.pop(i, None)
        self.record(t)

    def record(self, t: Any) -> None:
        t.refresh()
        self.snapshots[t.current_snapshot().snapshot_id] = sorted(self.rows.values(), key=lambda r: r["id"])

    def built(self, name: str, t: Any, pyiceberg_error: str | None = None) -> Built:
        t.refresh()
        loc = t.metadata_location
        sums = {sid: sup.checksum(sup.schema_json(loc, sid), r) for sid, r in self.snapshots.items()}
        assert set(sums) == {s.snapshot_id for s in t.snapshots()}
        return Built(name, loc, t.current_snapshot().snapshot_id, sums, pyiceberg_error)


def _mor(cat: Any) -> Built:
    t = cat.create_table("ns.ice_mor", schema=SCHEMA, partition_by=["part"], properties=MOR)
    m = Model()
    for i in range(8):
        m.append(t, rows(range(i * 40, (i + 1) * 40)))
    for ids in ([1, 3, 5], [7, 41], [2, 4], [81, 83, 85, 87]):
        t.delete("id in (" + ", ".join(map(str, ids)) + ")")
        m.deleted(t, ids)
    eq = write_equality_deletes(
        t.io, t.metadata, pa.table({"id": [9, 11]}), ["id"], spec_id=0, partition=("a",)
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=eq, delete_on_failure=True)
    m.deleted(t, [9, 11])
    t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    m.record(t)
    t.maintenance.rewrite_data_files(options={"min-input-files": "2"})
    m.record(t)
    result = t.maintenance.rewrite_data_files(
        options={"remove-dangling-deletes": "true", "min-input-files": "1000"}
    )
    assert result.removed_delete_files_count >= 1
    m.record(t)
    t.maintenance.rewrite_manifests()
    m.record(t)
    return m.built("ice_mor", t, pyiceberg_error="does not yet support equality deletes")


def _sorted(cat: Any) -> Built:
    t = cat.create_table("ns.ice_sorted", schema=SCHEMA, partition_by=[])
    m = Model()
    ids = list(range(2000))
    random.Random(3).shuffle(ids)
    for i in range(10):
        m.append(t, rows(ids[i * 200 : (i + 1) * 200], "x"))
    t.replace_sort_order("s desc", "id")
    t.maintenance.rewrite_data_files("sort", options={"target-file-size-bytes": "8000"})
    m.record(t)
    t.maintenance.rewrite_data_files("zorder", zorder_columns=["id", "v"], options={"rewrite-all": "true"})
    m.record(t)
    return m.built("ice_sorted", t)


def _evolved(cat: Any) -> Built:
    t = cat.create_table("ns.ice_evolved", schema=SCHEMA, partition_by=["part"])
    m = Model()
    for i in range(4):
        m.append(t, rows(range(i * 30, (i + 1) * 30)))
    with t.update_spec() as u:
        u.add_field("bucket(4, id)")
    m.record(t)
    for i in range(4, 7):
        m.append(t, rows(range(i * 30, (i + 1) * 30)))
    t.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    m.record(t)
    assert {f.spec_id for task in t.scan().plan_files() for f in [task.file]} == {t.spec().spec_id}
    return m.built("ice_evolved", t)


def _listing(d: Path) -> dict[str, float]:
    return {str(p.relative_to(d)): p.stat().st_mtime for p in d.rglob("*")}


def _copy_reference(cat: Any, reference: Path, table: str, scratch: Path) -> tuple[Any, dict[str, Any]]:
    """Java's reference table, registered from a copy of its metadata whose location is
    ``scratch``: icefloe reads the shared files and writes only under ``scratch``."""
    expected = json.loads((reference / "expected" / f"hcat.ref.{table}.json").read_text())
    source = Path(expected["metadata_location"])
    meta = json.loads(source.read_text())
    meta["location"] = scratch.as_uri()
    (scratch / "metadata").mkdir(parents=True)
    shutil.copy(source.parent / "version-hint.text", scratch / "metadata" / "version-hint.text")
    target = scratch / "metadata" / source.name
    target.write_text(json.dumps(meta))
    return cat.register_table(f"ns.ref_{table}", target.as_uri()), expected


def _reference(cat: Any, reference: Path, table: str, scratch: Path, rewrite: Any) -> Built:
    t, expected = _copy_reference(cat, reference, table, scratch)
    sums = {int(k): (v["row_count"], v["checksum"]) for k, v in expected["snapshots"].items()}
    current = t.current_snapshot().snapshot_id
    rewrite(t)
    t.refresh()
    for s in t.snapshots():
        if s.snapshot_id not in sums:  # icefloe's rewrites: the rows of the snapshot rewritten
            sums[s.snapshot_id] = sums[current]
            got = t.scan(snapshot_id=s.snapshot_id).to_arrow().to_pylist()
            assert sup.checksum(sup.schema_json(t.metadata_location, s.snapshot_id), got) == sums[current]
    assert len(t.snapshots()) > len(expected["snapshots"])
    return Built(f"ref_{table}", t.metadata_location, t.current_snapshot().snapshot_id, sums)


def _rewrite_mor_v2(t: Any) -> None:
    t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    r = t.maintenance.rewrite_data_files(options={"rewrite-all": "true", "remove-dangling-deletes": "true"})
    assert r.rewritten_data_files_count > 0
    t.maintenance.rewrite_manifests()


def _rewrite_part_identity(t: Any) -> None:
    r = t.maintenance.rewrite_data_files("sort", sort_order="id desc", options={"rewrite-all": "true"})
    assert r.rewritten_data_files_count > 0
    t.maintenance.rewrite_manifests()


@pytest.fixture(scope="module")
def oracle_available() -> None:
    sup.require_oracle()


@pytest.fixture(scope="module")
def reference() -> Path:
    return sup.ensure_reference_tables()


@pytest.fixture(scope="module")
def built(reference: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    import icefloe

    root = tmp_path_factory.mktemp("rewrite_java")
    (root / "wh").mkdir()
    cat = icefloe.load_catalog(
        "rewrite_java", type="sql", uri=f"sqlite:///{root / 'c.db'}", warehouse=(root / "wh").as_uri()
    )
    cat.create_namespace("ns")
    ref_dirs = [reference / "hadoop" / "ref" / n for n in ("mor_v2", "part_identity")]
    untouched = {d: _listing(d) for d in ref_dirs}
    tables = [_mor(cat), _sorted(cat), _evolved(cat)]
    tables.append(_reference(cat, reference, "mor_v2", root / "ref_mor_v2", _rewrite_mor_v2))
    tables.append(
        _reference(cat, reference, "part_identity", root / "ref_part_identity", _rewrite_part_identity)
    )
    for d, listing in untouched.items():
        assert _listing(d) == listing, f"the shared reference table {d} was modified"
    return {b.name: b for b in tables}


def test_format_v3_java_table_compacts_keeping_row_lineage(reference: Path, tmp_path: Path) -> None:
    """Java's v3 table with deletion vectors: compaction and a manifest rewrite keep every row's
    _row_id and _last_updated_sequence_number and drop the vectors; rewriting position delete
    files does nothing (as Java's action on a v3 table without v2 position delete files)."""
    import icefloe

    (tmp_path / "wh").mkdir()
    cat = icefloe.load_catalog(
        "v3", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("ns")
    t, _ = _copy_reference(cat, reference, "mor_v3_dv", tmp_path / "v3")

    def lineage() -> list[tuple[Any, ...]]:
        fields = ("id", "_row_id", "_last_updated_sequence_number")
        return sorted(tuple(r.values()) for r in t.scan(selected_fields=fields).to_arrow().to_pylist())

    before = lineage()
    assert any(task.delete_files for task in t.scan().plan_files())
    location = t.metadata_location
    nothing = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    assert nothing.rewrite_results == () and nothing.snapshot_ids == ()
    assert t.refresh().metadata_location == location
    result = t.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    assert result.rewritten_data_files_count > 0 and result.removed_delete_files_count > 0
    assert not any(task.delete_files for task in t.scan().plan_files())
    assert lineage() == before
    t.maintenance.rewrite_manifests()
    assert lineage() == before


def test_java_pyiceberg_duckdb_read_every_snapshot(
    built: dict[str, Built], oracle_available: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    jobs = [
        sup.VerifyJob(
            name=b.name,
            metadata_location=b.metadata_location,
            current_snapshot_id=b.current,
            snapshots=b.snapshots,
            known_engine_errors={"pyiceberg": b.pyiceberg_error} if b.pyiceberg_error else {},
        )
        for b in built.values()
    ]
    outcomes = sup.run_verify_batch(jobs, tmp_path_factory.mktemp("verify_rewrites"))
    problems = [sup.format_outcome(o) for o in outcomes.values() if o.problems]
    assert not problems, "\n\n".join(problems)
