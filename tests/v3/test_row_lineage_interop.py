"""Row lineage across implementations: Iceberg Java 1.10 (Spark 3.5, via ../shared/oracle) reads
the ``_row_id`` and ``_last_updated_sequence_number`` of an icefloe-written v3 table at every
snapshot exactly as icefloe reads them, and icefloe reads Java's v3 reference table (``mor_v3_dv``:
MERGE, UPDATE and DELETE with deletion vectors) exactly as Java does. One JVM reads everything.

The icefloe table (partitioned, so changes touch some files and not others): two appends, a
copy-on-write update, a merge-on-read update and delete (deletion vectors), a third append, a
bin-pack compaction of every file (deletes applied, vectors dropped), a manifest rewrite, and a
last merge-on-read update after the compaction. The icefloe side is also checked against a
model: ids never change and the sequence numbers are those of the snapshots that wrote the rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import interop_support as sup

pytestmark = [pytest.mark.oracle, pytest.mark.java]

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()), pa.field("n", pa.int64())]
)
LINEAGE = ("_row_id", "_last_updated_sequence_number")


def _rows(ids: range | list[int]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "cat": "xyz"[i % 3], "n": i} for i in ids], schema=SCHEMA)


def _lineage(t: Any, snapshot_id: int) -> list[list[int]]:
    scan = t.scan(selected_fields=("id", *LINEAGE), snapshot_id=snapshot_id)
    return sorted(
        [r["id"], r["_row_id"], r["_last_updated_sequence_number"]] for r in scan.to_arrow().to_pylist()
    )


def _set_modes(t: Any, mode: str) -> None:
    tx = t.transaction()
    tx.set_properties(**{f"write.{c}.mode": mode for c in ("delete", "update")})
    tx.commit()


@pytest.fixture(scope="module")
def icefloe_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("lineage_interop")
    (root / "wh").mkdir()
    cat = sup.icefloe_catalog("lineage_interop", root / "catalog.db", root / "wh")
    cat.create_namespace("v")
    t = cat.create_table("v.lineage", schema=SCHEMA, partition_by=["cat"], properties={"format-version": "3"})
    t.append(_rows(range(0, 30)))
    t.append(_rows(range(30, 45)))
    t.update("id in (1, 2, 31)", set={"n": -1})  # copy-on-write
    _set_modes(t, "merge-on-read")
    t.update("id in (4, 5, 40)", set={"n": -2})
    t.delete("id in (6, 7, 33)")
    t.append(_rows(range(45, 50)))
    t.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    t.maintenance.rewrite_manifests()
    t.update("id in (8, 46)", set={"n": -3})
    return t.refresh()


def test_icefloe_lineage_follows_the_model(icefloe_table: Any) -> None:
    t = icefloe_table
    first_ids: dict[int, int] = {}
    for snap in t.snapshots():
        for i, row_id, last in _lineage(t, snap.snapshot_id):
            assert first_ids.setdefault(i, row_id) == row_id, f"row {i} changed its _row_id"
            assert last <= snap.sequence_number
    final = {r[0]: r for r in _lineage(t, t.current_snapshot().snapshot_id)}
    by_seq = {s.sequence_number: s for s in t.snapshots()}
    # the last update wrote ids 8 and 46; the merge-on-read update 4, 5 and 40 (kept by compaction)
    assert {i for i, r in final.items() if r[2] == t.current_snapshot().sequence_number} == {8, 46}
    assert final[4][2] == final[5][2] == final[40][2]
    assert by_seq[final[4][2]].operation.value == "overwrite"
    assert len({r[1] for r in final.values()}) == len(final)


def test_java_reads_icefloe_lineage_and_icefloe_reads_javas(
    icefloe_table: Any, oracle_available: None, tmp_path: Path
) -> None:
    import icefloe

    t = icefloe_table
    jobs = [
        {
            "name": str(s.snapshot_id),
            "metadata": sup.local_path(t.metadata_location),
            "snapshot_id": s.snapshot_id,
            "key": "id",
        }
        for s in t.snapshots()
    ]
    expected = {str(s.snapshot_id): _lineage(t, s.snapshot_id) for s in t.snapshots()}
    reference = sup.ensure_reference_tables()
    ref_doc = json.loads((reference / "expected" / "hcat.ref.mor_v3_dv.json").read_text())
    jobs.append(
        {"name": "java_ref", "metadata": ref_doc["metadata_location"], "snapshot_id": None, "key": "id"}
    )
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    proc = sup.run_oracle_script(
        [
            str(Path(__file__).with_name("java_row_lineage.py")),
            str(tmp_path / "jobs.json"),
            str(tmp_path / "out.json"),
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    java = json.loads((tmp_path / "out.json").read_text())
    for name, want in expected.items():
        assert java[name] == want, f"snapshot {name}: Java {java[name]!r}"
    # Java's own v3 table: icefloe reads the lineage Java reports
    assert isinstance(java["java_ref"], list) and java["java_ref"], java["java_ref"]
    (tmp_path / "wh").mkdir()
    cat = icefloe.load_catalog(
        "ref", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("ns")
    ref = cat.register_table("ns.ref", Path(ref_doc["metadata_location"]).as_uri())
    assert _lineage(ref, ref.current_snapshot().snapshot_id) == java["java_ref"]
