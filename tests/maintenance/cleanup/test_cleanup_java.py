"""Snapshot expiry against Iceberg Java 1.10 (the oracle).

- On the same tables (icefloe-written ones, and copies of Java-written reference tables, format
  v3 with deletion vectors included),
  Java's ``ExpireSnapshotsSparkAction`` (what ``CALL ... expire_snapshots`` runs; here through
  ``expireFiles()``, which commits in Java's own JdbcCatalog and deletes nothing) and icefloe's
  ``expire_snapshots`` with the same ``older_than`` / ``retain_last`` expire the same snapshots
  and refs and name the same files to delete, kind by kind.
- After icefloe's expiry, Iceberg Java (and PyIceberg, DuckDB) read every retained snapshot of
  every table and agree with icefloe; the oracle's consistency check finds every referenced file.

The shared reference tables are never touched: each is copied to a temporary directory with its
metadata paths rewritten (``table_clone.py``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cleanup_checks import SCHEMA, assert_intact, local, rows
from table_clone import clone_table
from test_expire_snapshots import build_history

pytestmark = [pytest.mark.oracle, pytest.mark.java]

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "interop"))

import interop_support as sup  # noqa: E402

JAVA_TABLES = ("snapshots_refs", "cow_v2", "part_identity", "mor_v2", "mor_v3_dv")
# Position-delete files name the data files they delete by path: a moved copy of a table with
# them (mor_v2) is compared by deleted files, but not read.
NOT_READ = {"java_mor_v2"}
V3_TABLES = {"java_mor_v3_dv"}
JAVA_KINDS = {
    "DATA": "data",
    "POSITION_DELETES": "position_deletes",
    "EQUALITY_DELETES": "equality_deletes",
    "Manifest": "manifest",
    "Manifest List": "manifest_list",
    "Statistics Files": "statistics",
}


@dataclass
class Case:
    key: str
    before: str  # metadata location both sides start from
    older_than: int
    retain_last: int | None
    icefloe: Any = None  # ExpireSnapshotsResult
    java: dict[str, Any] | None = None


def _reference(reference_tables: Path, table: str) -> Path:
    index = json.loads((reference_tables / "index.json").read_text())
    for e in index["tables"]:
        if e["catalog"] == "hcat" and e["table"] == f"ref.{table}":
            return Path(sup.local_path(e["metadata_location"])).parents[1]
    raise AssertionError(f"reference table {table} is missing from {reference_tables}")


def _ref_age_table(catalog: Any) -> Any:
    t = catalog.create_table("ns.refs", schema=SCHEMA, partition_by=["cat"])
    first = t.append(rows(1, cat="a"))
    t.append(rows(2, cat="b"), branch="b1")
    t.append(rows(3, cat="a"))
    assert first is not None
    with t.manage_snapshots() as ms:
        ms.create_tag("gone", first.snapshot_id, max_ref_age_ms=1)
        ms.create_tag("kept", first.snapshot_id)
        ms.set_max_ref_age_ms("b1", 1)
    time.sleep(0.01)
    t.delete("id = 3")
    return t


@pytest.fixture(scope="module")
def cases(reference_tables: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    sup.require_oracle()
    tmp = tmp_path_factory.mktemp("expire_java")
    (tmp / "wh").mkdir()
    cat = sup.icefloe_catalog("expire_java", tmp / "c.db", tmp / "wh")
    cat.create_namespace("ns")
    tables: dict[str, Any] = {
        "ice_cow": build_history(cat, "copy-on-write", "ns.cow"),
        "ice_mor": build_history(cat, "merge-on-read", "ns.mor"),
        "ice_refs": _ref_age_table(cat),
    }
    for name in JAVA_TABLES:
        target = tmp / "clones" / name
        clone_table(_reference(reference_tables, name), target)
        hint = (target / "metadata" / "version-hint.text").read_text().strip()
        t = cat.register_table(f"ns.java_{name}", (target / "metadata" / f"v{hint}.metadata.json").as_uri())
        if name == "snapshots_refs":  # its refs are all that is left: let them age out
            with t.transaction() as tx:
                tx.set_properties(**{"history.expire.max-ref-age-ms": "1"})
        tables[f"java_{name}"] = cat.load_table(f"ns.java_{name}")
    older_than = time.time_ns() // 1_000_000 + 1
    out: dict[str, Case] = {}
    for key, t in tables.items():
        retain = 2 if key == "java_cow_v2" else 1
        out[key] = Case(key, t.metadata_location, older_than, retain)

    spec = {
        "catalog_db": str(tmp / "java.db"),
        "warehouse": str(tmp / "java_wh"),
        "jobs": [
            {
                "key": c.key,
                "metadata": sup.local_path(c.before),
                "older_than": c.older_than,
                "retain_last": c.retain_last,
            }
            for c in out.values()
        ],
    }
    (tmp / "spec.json").write_text(json.dumps(spec))
    proc = sup.run_oracle_script(
        [str(HERE / "java_expire.py"), str(tmp / "spec.json"), str(tmp / "out.json")]
    )
    if not (tmp / "out.json").exists():
        raise AssertionError(
            f"java_expire.py failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    java = json.loads((tmp / "out.json").read_text())
    assert not java["errors"], java["errors"]
    for key, c in out.items():
        c.java = java["jobs"][key]
        t = cat.load_table(tables[key].identifier)
        assert t.metadata_location == c.before
        c.icefloe = t.maintenance.expire_snapshots(older_than=c.older_than, retain_last=c.retain_last)
    out["_catalog"] = cat  # type: ignore[assignment]
    return out


CASE_KEYS = ["ice_cow", "ice_mor", "ice_refs", *(f"java_{n}" for n in JAVA_TABLES)]


@pytest.mark.parametrize("key", CASE_KEYS)
def test_java_and_icefloe_expire_the_same_snapshots_and_refs(cases: dict[str, Case], key: str) -> None:
    c = cases[key]
    assert c.java is not None
    expired = set(c.java["before"]) - set(c.java["after"])
    assert set(c.icefloe.expired_snapshot_ids) == expired
    assert expired, "the case expires nothing: it proves nothing"
    after = set(c.icefloe.metadata.snapshots_by_id)
    assert after == set(c.java["after"])
    assert sorted(c.icefloe.metadata.refs) == c.java["refs_after"]


@pytest.mark.parametrize("key", CASE_KEYS)
def test_java_and_icefloe_delete_the_same_files(cases: dict[str, Case], key: str) -> None:
    c = cases[key]
    assert c.java is not None
    theirs: dict[str, set[str]] = {}
    for path, kind in c.java["files"]:
        theirs.setdefault(JAVA_KINDS[kind], set()).add(local(path))
    ours = {kind: {local(p) for p in paths} for kind, paths in c.icefloe.files.items()}
    assert ours == theirs
    assert not c.icefloe.not_deleted and not c.icefloe.unreadable
    assert not any(os.path.exists(p) for paths in ours.values() for p in paths)


def test_java_reads_every_retained_snapshot_after_icefloe_expiry(
    cases: dict[str, Case], tmp_path_factory: pytest.TempPathFactory
) -> None:
    cat = cases["_catalog"]  # type: ignore[index]
    jobs = []
    for key in CASE_KEYS:
        if key in NOT_READ:
            continue
        name = {"ice_cow": "ns.cow", "ice_mor": "ns.mor", "ice_refs": "ns.refs"}.get(key, f"ns.{key}")
        t = cat.load_table(name)
        assert_intact(t)
        loc = t.metadata_location
        expected = {
            s.snapshot_id: sup.checksum(
                sup.schema_json(loc, s.snapshot_id),
                sup.arrow_rows(t.scan(snapshot_id=s.snapshot_id).to_arrow()),
            )
            for s in t.metadata.snapshots
        }
        jobs.append(
            sup.VerifyJob(
                name=key,
                metadata_location=loc,
                current_snapshot_id=t.metadata.current_snapshot_id,
                snapshots=expected,
            )
        )
    # PyIceberg 0.12 does not apply deletion vectors (format v3): those tables are read by
    # Iceberg Java and DuckDB only
    v3 = [j for j in jobs if j.name in V3_TABLES]
    outcomes = sup.run_verify_batch(
        [j for j in jobs if j not in v3], tmp_path_factory.mktemp("verify_expire")
    )
    if v3:
        outcomes |= sup.run_verify_batch(
            v3, tmp_path_factory.mktemp("verify_expire_v3"), engines=("spark", "duckdb")
        )
    problems = [sup.format_outcome(o) for o in outcomes.values() if o.problems]
    assert not problems, "\n\n".join(problems)
