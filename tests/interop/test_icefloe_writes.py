"""icefloe writes, others read: every v2 type and every partition transform, several appends each.

Readers: PyIceberg in-process (SqlCatalog on the same SQLite file, and StaticTable on the
metadata file), and through the oracle in one batch: Iceberg Java 1.10 (Spark), PyIceberg and
DuckDB 1.5, every snapshot, plus Iceberg Java's metadata consistency check. Expected results are
computed from the rows handed to ``append`` (never from icefloe's read path).
"""

from __future__ import annotations

import dataclasses
import gc
import traceback
import warnings
from pathlib import Path
from typing import Any

import interop_data as data
import interop_support as sup
import pyarrow as pa
import pytest

CATALOG = "interop_w"
NS = "w"


@dataclasses.dataclass
class Written:
    name: str
    batches: list[pa.Table]
    metadata_location: str = ""
    snapshot_ids: list[int] = dataclasses.field(default_factory=list)  # one per append, in order
    error: str = ""

    def rows_at(self, snapshot_id: int) -> list[dict[str, Any]]:
        k = self.snapshot_ids.index(snapshot_id)
        return [r for b in self.batches[: k + 1] for r in sup.arrow_rows(b)]

    def schema(self, snapshot_id: int | None = None) -> dict[str, Any]:
        return sup.schema_json(self.metadata_location, snapshot_id)

    def expected(self) -> dict[int, tuple[int, str]]:
        return {sid: sup.checksum(self.schema(sid), self.rows_at(sid)) for sid in self.snapshot_ids}

    def pyiceberg_bug_expected(self) -> dict[int, tuple[int, str]]:
        """PyIceberg 0.12 reads a null list<struct> as [] (oracle README): the result it gives,
        so that exactly that difference, in exactly that column, is tolerated."""
        out = {}
        for sid in self.snapshot_ids:
            rows = self.rows_at(sid)
            if not any("lst" in r and r["lst"] is None for r in rows):
                continue
            out[sid] = sup.checksum(self.schema(sid), with_pyiceberg_lst_bug(rows))
        return out


def with_pyiceberg_lst_bug(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "lst": []} if "lst" in r and r["lst"] is None else r for r in rows]


ALL_TABLES: dict[str, tuple[str, ...]] = {
    "types_all": (),
    "types_time": (),
    **{c.name: c.partition_by for c in data.PART_CASES},
}
CASES = {c.name: c for c in data.PART_CASES}


def _batches(name: str) -> list[pa.Table]:
    if name == "types_time":
        return data.time_batches()
    return data.types_batches() if name.startswith("types") else data.part_batches()


# documented engine limitations, accepted for exactly these tables
KNOWN_ENGINE_ERRORS = {"types_time": {"spark": "Spark does not support time fields"}}


@pytest.fixture(scope="module")
def catalog_paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("interop_writes")
    return root / "catalog.db", root / "warehouse"


@pytest.fixture(scope="module")
def ice_catalog(catalog_paths: tuple[Path, Path]) -> Any:
    db, wh = catalog_paths
    wh.mkdir(parents=True, exist_ok=True)
    return sup.icefloe_catalog(CATALOG, db, wh)


@pytest.fixture(scope="module")
def written(ice_catalog: Any) -> dict[str, Written]:
    """Every table, written once by icefloe; a table whose write fails records the traceback so
    that only its own tests fail."""
    cat = ice_catalog
    cat.create_namespace(NS)
    out: dict[str, Written] = {}
    for name, partition_by in ALL_TABLES.items():
        w = Written(name, _batches(name))
        out[name] = w
        # a file left open by a failed write surfaces as a ResourceWarning at some later GC;
        # collect here so the leak is charged to the table that caused it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            try:
                schema = w.batches[0].schema
                t = cat.create_table(f"{NS}.{name}", schema=schema, partition_by=list(partition_by))
                for b in w.batches:
                    t.append(b)
                    w.snapshot_ids.append(sup.load_metadata(t.metadata_location)["current-snapshot-id"])
                w.metadata_location = cat.load_table(f"{NS}.{name}").metadata_location
            except Exception:
                w.error = traceback.format_exc()
            gc.collect()
        leaks = [str(c.message) for c in caught if issubclass(c.category, ResourceWarning)]
        if leaks:
            w.error += "\nicefloe left files open (ResourceWarning): " + "; ".join(leaks)
    return out


def _get(written: dict[str, Written], name: str) -> Written:
    w = written[name]
    if w.error:
        pytest.fail(f"icefloe could not write {name}:\n{w.error}")
    assert len(set(w.snapshot_ids)) == len(w.batches), f"{name}: one new snapshot per append"
    return w


NAMES = list(ALL_TABLES)


@pytest.mark.parametrize("name", NAMES)
def test_icefloe_reads_back_every_snapshot(written: dict[str, Written], ice_catalog: Any, name: str) -> None:
    """Baseline: icefloe's own read of what it wrote (tells a writer bug from a reader bug
    when other readers disagree)."""
    w = _get(written, name)
    t = ice_catalog.load_table(f"{NS}.{name}")
    for sid in w.snapshot_ids:
        schema = w.schema(sid)
        got = t.scan(snapshot_id=sid).to_arrow()
        assert sup.column_names(schema) == list(got.column_names)
        diff = sup.diff_rows(schema, sup.arrow_rows(got), w.rows_at(sid), "icefloe", "written")
        assert not diff, f"{name}@{sid}: {diff}"


def _pyiceberg_rows(tbl: Any, snapshot_id: int) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyIceberg's own deprecation chatter is not our concern
        return sup.arrow_rows(tbl.scan(snapshot_id=snapshot_id).to_arrow())


def _compare_pyiceberg(w: Written, tbl: Any, how: str) -> None:
    problems = []
    for sid in w.snapshot_ids:
        schema = w.schema(sid)
        want = w.rows_at(sid)
        got = _pyiceberg_rows(tbl, sid)
        diff = sup.diff_rows(schema, got, want, f"pyiceberg({how})", "written")
        if diff and sup.diff_rows(schema, got, with_pyiceberg_lst_bug(want)):
            problems.append(f"snapshot {sid}: {diff}")
    assert not problems, f"{w.name}: " + "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_pyiceberg_sqlcatalog_reads(
    written: dict[str, Written], catalog_paths: tuple[Path, Path], name: str
) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    w = _get(written, name)
    db, wh = catalog_paths
    cat = SqlCatalog(CATALOG, uri=f"sqlite:///{db}", warehouse=wh.as_uri())
    assert (NS,) in cat.list_namespaces()
    assert (NS, name) in cat.list_tables(NS)
    tbl = cat.load_table(f"{NS}.{name}")
    assert sup.local_path(tbl.metadata_location) == sup.local_path(w.metadata_location)
    _compare_pyiceberg(w, tbl, "SqlCatalog")


@pytest.mark.parametrize("name", NAMES)
def test_pyiceberg_static_table_reads(written: dict[str, Written], name: str) -> None:
    from pyiceberg.table import StaticTable

    w = _get(written, name)
    tbl = StaticTable.from_metadata(w.metadata_location)
    assert [s.snapshot_id for s in tbl.snapshots()] == w.snapshot_ids
    _compare_pyiceberg(w, tbl, "StaticTable")


@pytest.mark.parametrize("name", [c.name for c in data.PART_CASES if c.probes])
def test_pruning_with_pyiceberg_and_icefloe(written: dict[str, Written], ice_catalog: Any, name: str) -> None:
    """Filtered scans prune with the partition values and column bounds icefloe wrote: a wrong
    partition tuple or bound makes PyIceberg (or icefloe) skip a file and lose rows."""
    import duckdb
    from pyiceberg.table import StaticTable

    w = _get(written, name)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("everything", pa.concat_tables(w.batches))
    tbl = StaticTable.from_metadata(w.metadata_location)
    ice = ice_catalog.load_table(f"{NS}.{name}")
    problems = []
    for probe in CASES[name].probes:
        want = sorted(r[0] for r in con.execute(f"SELECT id FROM everything WHERE {probe}").fetchall())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got_py = sorted(tbl.scan(row_filter=probe, selected_fields=("id",)).to_arrow()["id"].to_pylist())
        got_ice = sorted(ice.scan(row_filter=probe, selected_fields=("id",)).to_arrow()["id"].to_pylist())
        if got_py != want:
            problems.append(f"pyiceberg filter {probe!r}: ids {got_py} != {want}")
        if got_ice != want:
            problems.append(f"icefloe filter {probe!r}: ids {got_ice} != {want}")
    assert not problems, f"{name}: " + "\n".join(problems)


# ------------------------------------------------------------------ the oracle, one JVM for all


@pytest.fixture(scope="module")
def oracle_outcomes(
    written: dict[str, Written], oracle_available: None, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, sup.VerifyOutcome]:
    jobs = []
    for name in NAMES:
        w = written[name]
        if w.error or not w.snapshot_ids:
            continue
        jobs.append(
            sup.VerifyJob(
                name=name,
                metadata_location=w.metadata_location,
                current_snapshot_id=w.snapshot_ids[-1],
                snapshots=w.expected(),
                known_engine_bugs={"pyiceberg": w.pyiceberg_bug_expected()},
                known_engine_errors=KNOWN_ENGINE_ERRORS.get(name, {}),
            )
        )
    return sup.run_verify_batch(jobs, tmp_path_factory.mktemp("verify_writes"))


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("name", NAMES)
def test_oracle_engines_read(
    written: dict[str, Written], oracle_outcomes: dict[str, sup.VerifyOutcome], name: str
) -> None:
    """Iceberg Java (Spark), PyIceberg and DuckDB read every snapshot with the rows written, and
    Iceberg Java finds the metadata consistent (files exist, manifest counts and summary totals
    agree)."""
    w = _get(written, name)
    o = oracle_outcomes[name]
    if o.problems:
        pytest.fail(sup.format_outcome(o) + _inprocess_diff(w), pytrace=False)


def _inprocess_diff(w: Written) -> str:
    """verify_table prints rows only when engines disagree; when they agree with each other but
    not with what was written, show the rows through PyIceberg in-process."""
    from pyiceberg.table import StaticTable

    try:
        tbl = StaticTable.from_metadata(w.metadata_location)
        sid = w.snapshot_ids[-1]
        d = sup.diff_rows(w.schema(sid), _pyiceberg_rows(tbl, sid), w.rows_at(sid), "pyiceberg", "written")
        return f"\n--- in-process PyIceberg vs written rows, snapshot {sid} ---\n{d or 'identical'}"
    except Exception as ex:
        return f"\n(in-process PyIceberg read failed: {type(ex).__name__}: {ex})"
