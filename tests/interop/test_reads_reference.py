"""Others write, icefloe reads: the Iceberg Java 1.10 reference tables of the oracle.

Every table of ``index.json`` (Hadoop-catalog tables through ``register_table``, JdbcCatalog
tables through icefloe's SqlCatalog on a copy of the oracle's SQLite file), every retained
snapshot by id, and every branch and tag, checked with the oracle's checksum against
``expected/*.json``. Snapshots with row-level deletes (position deletes of ``mor_v2``, v3
deletion vectors of ``mor_v3_dv``) must return exactly Java's rows; a refusal is a failure too.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import traceback
import warnings
from pathlib import Path
from typing import Any

import interop_support as sup
import pytest

pytestmark = [pytest.mark.oracle, pytest.mark.java]

ICE_CATALOG = "interop_r"


def _index_entries() -> list[dict[str, Any]]:
    """Parametrisation happens at collection, before fixtures: read the index if it is there
    (else one placeholder entry whose test asks the fixture to generate it)."""
    idx = sup.reference_dir() / "index.json"
    if not idx.exists():
        return [{"catalog": "?", "table": "reference-tables", "placeholder": True}]
    entries: list[dict[str, Any]] = json.loads(idx.read_text())["tables"]
    return entries


ENTRIES = _index_entries()


@pytest.fixture(scope="module")
def ice_catalogs(reference_tables: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``register`` -> an icefloe catalog to register Hadoop tables in; ``<jdbc name>`` -> icefloe's
    SqlCatalog over a copy of the oracle's JdbcCatalog database (the cache stays untouched)."""
    root = tmp_path_factory.mktemp("interop_reads")
    wh = root / "warehouse"
    wh.mkdir()
    out: dict[str, Any] = {"register": sup.icefloe_catalog(ICE_CATALOG, root / "catalog.db", wh)}
    idx = json.loads((reference_tables / "index.json").read_text())
    if idx.get("catalog_db") and Path(idx["catalog_db"]).exists():
        copy = root / "oracle-jdbc.db"
        shutil.copyfile(idx["catalog_db"], copy)
        out[idx["jdbc_catalog_name"]] = sup.icefloe_catalog(idx["jdbc_catalog_name"], copy, wh)
    return out


def _has_deletes(meta: dict[str, Any], snapshot_id: int) -> bool:
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == snapshot_id)
    summary = snap.get("summary", {})
    assert "total-delete-files" in summary, f"snapshot {snapshot_id} summary lacks total-delete-files"
    return int(summary["total-delete-files"]) > 0


def _load(ice_catalogs: dict[str, Any], entry: dict[str, Any], registered: set[str]) -> Any:
    if entry.get("catalog_kind") == "jdbc-sqlite":
        return ice_catalogs[entry["catalog"]].load_table(entry["table"])
    cat = ice_catalogs["register"]
    ns = f"{entry['catalog']}_ref"
    ident = f"{ns}.{entry['table'].split('.')[-1]}"
    if ident not in registered:
        from icefloe.errors import NamespaceAlreadyExistsError

        with contextlib.suppress(NamespaceAlreadyExistsError):
            cat.create_namespace(ns)
        registered.add(ident)
        return cat.register_table(ident, Path(entry["metadata_location"]).as_uri())
    return cat.load_table(ident)


_REGISTERED: set[str] = set()


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"{e['catalog']}.{e['table']}" for e in ENTRIES])
def test_icefloe_reads_java_table(
    reference_tables: Path, ice_catalogs: dict[str, Any], entry: dict[str, Any]
) -> None:
    if entry.get("placeholder"):
        pytest.fail(f"{reference_tables}/index.json appeared only now; rerun to collect its tables")
    unsupported = sup.unsupported_error()
    expected = json.loads((reference_tables / entry["expected"]).read_text())
    meta = sup.load_metadata(entry["metadata_location"])
    v3 = expected["format_version"] >= 3
    try:
        t = _load(ice_catalogs, entry, _REGISTERED)
    except unsupported as ex:
        if v3:
            pytest.skip(f"icefloe refuses format v3 at load: {ex}")
        raise

    targets: list[tuple[str, dict[str, Any], int]] = []  # (label, scan kwargs, snapshot id)
    cur = expected["current_snapshot_id"]
    targets.append(("current", {}, cur))
    targets += [(f"snapshot_id={sid}", {"snapshot_id": int(sid)}, int(sid)) for sid in expected["snapshots"]]
    targets += [(f"ref={name}", {"ref": name}, r["snapshot_id"]) for name, r in expected["refs"].items()]

    problems: list[str] = []
    for label, kwargs, sid in targets:
        want = expected["snapshots"][str(sid)]
        schema = sup.schema_json(entry["metadata_location"], sid)
        deletes = _has_deletes(meta, sid)
        try:
            got = t.scan(**kwargs).to_arrow()
        except unsupported as ex:
            what = "with" if deletes else "without"
            problems.append(f"{label}: refused a snapshot {what} delete files: {ex}")
            continue
        except Exception:
            problems.append(f"{label}: {traceback.format_exc(limit=6)}")
            continue
        if list(got.column_names) != sup.column_names(schema):
            problems.append(f"{label}: columns {got.column_names} != schema {sup.column_names(schema)}")
        n, ck = sup.checksum(schema, sup.arrow_rows(got))
        if (n, ck) != (want["row_count"], want["checksum"]):
            what = (
                "RETURNED ROWS OF A SNAPSHOT WITH DELETE FILES THAT DIFFER FROM JAVA'S"
                if deletes
                else "differs"
            )
            problems.append(
                f"{label}: {what}: icefloe {n}/{ck} vs Java {want['row_count']}/{want['checksum']}\n"
                + _diff_with_pyiceberg(entry["metadata_location"], sid, schema, sup.arrow_rows(got))
            )
    assert not problems, f"{entry['catalog']}.{entry['table']}:\n" + "\n".join(problems)


def _diff_with_pyiceberg(location: str, sid: int, schema: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """Java's expectation has checksums only; PyIceberg (reads these tables like Java, apart from
    its null list<struct> bug) shows which rows differ."""
    try:
        from pyiceberg.table import StaticTable

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = StaticTable.from_metadata(location).scan(snapshot_id=sid).to_arrow()
        return (
            sup.diff_rows(schema, rows, sup.arrow_rows(ref), "icefloe", "pyiceberg")
            or "(same rows as PyIceberg)"
        )
    except Exception as ex:
        return f"(PyIceberg diff unavailable: {type(ex).__name__}: {ex})"


def test_unknown_snapshot_and_ref_are_typed_errors(
    reference_tables: Path, ice_catalogs: dict[str, Any]
) -> None:
    from icefloe.errors import NoSuchSnapshotError

    entry = next(e for e in ENTRIES if e["table"] == "ref.snapshots_refs" and e["catalog"] == "hcat")
    t = _load(ice_catalogs, entry, _REGISTERED)
    with pytest.raises(NoSuchSnapshotError):
        t.scan(snapshot_id=123456789).to_arrow()
    with pytest.raises(NoSuchSnapshotError):
        t.scan(ref="no_such_ref").to_arrow()
