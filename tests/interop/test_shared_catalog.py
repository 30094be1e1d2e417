"""One SQLite catalog, three implementations: icefloe's SqlCatalog, PyIceberg's SqlCatalog and
Iceberg Java's JdbcCatalog share the ``iceberg_tables`` / ``iceberg_namespace_properties`` tables
(keyed by catalog name), so each must see and extend the others' namespaces and tables.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
import warnings
from pathlib import Path
from typing import Any

import interop_support as sup
import pyarrow as pa
import pytest

CATALOG = "shared_cat"
NS = "shared"

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("v", pa.float64()),
        pa.field("cat", pa.string()),
    ]
)
_T0 = dt.datetime(1969, 12, 31, 20, 0, tzinfo=dt.UTC)


def rows(ids: range, tag: str) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "s": f"{tag}-{i}-é",
            "ts": None if i % 11 == 5 else _T0 + dt.timedelta(hours=i * 5, microseconds=i),
            "v": None if i % 7 == 3 else i * 0.5,
            "cat": [None, "x", "y"][i % 3],
        }
        for i in ids
    ]


def table(r: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(r, schema=SCHEMA)


def pyiceberg_catalog(db: Path, wh: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(CATALOG, uri=f"sqlite:///{db}", warehouse=wh.as_uri())


def py_rows(tbl: Any, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sup.arrow_rows(tbl.scan(snapshot_id=snapshot_id).to_arrow())


def check(location: str, got: list[dict[str, Any]], want: list[dict[str, Any]], label: str) -> None:
    diff = sup.diff_rows(sup.schema_json(location), got, want, label, "model")
    assert not diff, f"{label}: {diff}"


@pytest.fixture
def paths(tmp_path: Path) -> tuple[Path, Path]:
    wh = tmp_path / "warehouse"
    wh.mkdir()
    return tmp_path / "catalog.db", wh


def _names(listing: Any) -> set[str]:
    """Table or namespace listings as dotted names, whatever tuple/str shape the library uses."""
    out = set()
    for x in listing:
        if isinstance(x, str):
            out.add(x)
        elif hasattr(x, "namespace") and hasattr(x, "name"):  # an identifier object
            ns = x.namespace if isinstance(x.namespace, str) else ".".join(x.namespace)
            out.add(f"{ns}.{x.name}" if ns else str(x.name))
        else:
            out.add(".".join(str(p) for p in x))
    return out


def test_icefloe_table_appended_by_pyiceberg(paths: tuple[Path, Path]) -> None:
    db, wh = paths
    ice = sup.icefloe_catalog(CATALOG, db, wh)
    ice.create_namespace(NS)
    t = ice.create_table(f"{NS}.ice_tbl", schema=SCHEMA, partition_by=["cat"])
    a, b, c = rows(range(0, 20), "a"), rows(range(20, 35), "b"), rows(range(35, 50), "c")
    t.append(table(a))
    t.append(table(b))

    py = pyiceberg_catalog(db, wh)
    assert NS in _names(py.list_namespaces())
    assert f"{NS}.ice_tbl" in _names(py.list_tables(NS))
    pt = py.load_table(f"{NS}.ice_tbl")
    check(pt.metadata_location, py_rows(pt), a + b, "pyiceberg reads icefloe's table")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt.append(table(c))

    t = ice.load_table(f"{NS}.ice_tbl")
    assert sup.local_path(t.metadata_location) == sup.local_path(
        py.load_table(f"{NS}.ice_tbl").metadata_location
    )
    check(
        t.metadata_location, sup.arrow_rows(t.scan().to_arrow()), a + b + c, "icefloe after pyiceberg append"
    )
    snaps = [s.snapshot_id for s in t.snapshots()]
    assert len(snaps) == 3
    for sid, want in zip(snaps, (a, a + b, a + b + c), strict=True):
        got = sup.arrow_rows(t.scan(snapshot_id=sid).to_arrow())
        check(t.metadata_location, got, want, f"icefloe time travel to {sid}")
    # and icefloe commits on top of PyIceberg's commit
    d = rows(range(50, 55), "d")
    t.append(table(d))
    pt = py.load_table(f"{NS}.ice_tbl")
    check(pt.metadata_location, py_rows(pt), a + b + c + d, "pyiceberg after icefloe append on its commit")


def test_pyiceberg_table_read_and_appended_by_icefloe(paths: tuple[Path, Path]) -> None:
    """A PyIceberg-written table (several appends and a copy-on-write delete) reads identically in
    icefloe at every snapshot; icefloe's append on it is then read back by PyIceberg."""
    db, wh = paths
    py = pyiceberg_catalog(db, wh)
    py.create_namespace(NS)
    ptab = py.create_table(f"{NS}.py_tbl", schema=SCHEMA)
    with ptab.update_spec() as u:
        u.add_identity("cat")
    batches = [rows(range(0, 15), "p"), rows(range(15, 40), "q"), rows(range(40, 47), "r")]
    models: list[list[dict[str, Any]]] = []
    acc: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for bt in batches:
            ptab = py.load_table(f"{NS}.py_tbl")
            ptab.append(table(bt))
            acc = acc + bt
            models.append(acc)
        ptab = py.load_table(f"{NS}.py_tbl")
        ptab.delete("id >= 10 and id < 20")
    acc = [r for r in acc if not 10 <= r["id"] < 20]
    models.append(acc)
    ptab = py.load_table(f"{NS}.py_tbl")
    py_snaps = [s.snapshot_id for s in ptab.snapshots()]

    ice = sup.icefloe_catalog(CATALOG, db, wh)
    assert f"{NS}.py_tbl" in _names(ice.list_tables(NS))
    t = ice.load_table(f"{NS}.py_tbl")
    assert [s.snapshot_id for s in t.snapshots()] == py_snaps
    # the delete may add one or two snapshots; the last one holds the final rows
    for sid, want in zip(py_snaps[: len(batches)], models[: len(batches)], strict=True):
        check(
            t.metadata_location, sup.arrow_rows(t.scan(snapshot_id=sid).to_arrow()), want, f"icefloe @ {sid}"
        )
    check(t.metadata_location, sup.arrow_rows(t.scan().to_arrow()), acc, "icefloe current after delete")

    e = rows(range(100, 110), "ice")
    t.append(table(e))
    ptab = py.load_table(f"{NS}.py_tbl")
    check(ptab.metadata_location, py_rows(ptab), acc + e, "pyiceberg after icefloe append")


# ------------------------------------------------------------------ with Iceberg Java


def _json_rows(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return [
        {
            **{k: v for k, v in x.items() if k != "ts"},
            "ts_us": None if x["ts"] is None else (x["ts"] - epoch) // dt.timedelta(microseconds=1),
        }
        for x in r
    ]


PG_JDBC_JAR = Path("/usr/share/java/postgresql.jar")


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.catalogs("sqlite", "postgres")
def test_java_jdbc_catalog_round_trip(
    oracle_available: None,
    paths: tuple[Path, Path],
    tmp_path: Path,
    catalog_kind: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """icefloe, PyIceberg's SqlCatalog and Iceberg Java's JdbcCatalog on one catalog database
    (a SQLite file, or a PostgreSQL database on the suite's server) see and extend each other's
    namespaces, tables and commits."""
    db, wh = paths
    if catalog_kind == "postgres":
        if not PG_JDBC_JAR.is_file():
            pytest.skip(
                f"no PostgreSQL JDBC driver at {PG_JDBC_JAR} (apt-get install libpostgresql-jdbc-java)"
            )
        from pyiceberg.catalog.sql import SqlCatalog

        import icefloe

        server = request.getfixturevalue("postgres_server")
        database = f"java_{uuid.uuid4().hex[:10]}"
        uri = server.create_database(database)
        monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))  # no ~/.icefloe.yaml
        ice = icefloe.load_catalog(CATALOG, uri=uri, warehouse=wh.as_uri())
        py = SqlCatalog(CATALOG, uri=uri, warehouse=wh.as_uri())
        request.addfinalizer(py.engine.dispose)
        request.addfinalizer(ice.close)
        java: dict[str, Any] = {
            "jdbc": {"uri": server.jdbc_url(database), "user": server.user, "password": server.password}
        }
        monkeypatch.setenv("ORACLE_EXTRA_JARS", str(PG_JDBC_JAR))
    else:
        ice = sup.icefloe_catalog(CATALOG, db, wh)
        py = pyiceberg_catalog(db, wh)
        java = {"db": str(db)}
    ice.create_namespace(NS)
    t = ice.create_table(f"{NS}.ice_tbl", schema=SCHEMA, partition_by=["day(ts)", "bucket(4, id)"])
    a, b = rows(range(0, 20), "a"), rows(range(20, 30), "b")
    t.append(table(a))
    t.append(table(b))
    p1 = rows(range(200, 210), "py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt = py.create_table(f"{NS}.py_tbl", schema=SCHEMA)
        pt.append(table(p1))

    j_append = rows(range(300, 308), "java")
    j_batches = [rows(range(400, 420), "j1"), rows(range(420, 425), "j2")]
    spec = {
        **java,
        "metadata_locations": {
            f"{NS}.ice_tbl": t.metadata_location,
            f"{NS}.py_tbl": py.load_table(f"{NS}.py_tbl").metadata_location,
        },
        "catalog": CATALOG,
        "warehouse": str(wh),
        "namespace": NS,
        "read": [f"{NS}.ice_tbl", f"{NS}.py_tbl"],
        "append": {f"{NS}.ice_tbl": _json_rows(j_append)},
        "create": {"table": f"{NS}.java_tbl", "batches": [_json_rows(x) for x in j_batches]},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    script = Path(__file__).with_name("java_sqlite_roundtrip.py")
    proc = sup.run_oracle_script([str(script), str(tmp_path / "spec.json"), str(tmp_path / "out.json")])
    assert proc.returncode == 0, f"Java round trip failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    out = json.loads((tmp_path / "out.json").read_text())
    assert not out["errors"], "Iceberg Java: " + "\n".join(out["errors"])
    assert NS in out["namespaces"], out
    assert {"ice_tbl", "py_tbl"} <= set(out["tables"]), out

    ice_loc = t.metadata_location
    for name, model, loc in ((f"{NS}.ice_tbl", a + b, ice_loc), (f"{NS}.py_tbl", p1, pt.metadata_location)):
        want = sup.checksum(sup.schema_json(loc), model)
        assert (out["reads"][name]["rows"], out["reads"][name]["checksum"]) == want, (
            f"Iceberg Java read {name}: {out['reads'][name]} != model {want}"
        )

    # icefloe reads Java's commits and commits on top of them
    t = ice.load_table(f"{NS}.ice_tbl")
    check(
        t.metadata_location,
        sup.arrow_rows(t.scan().to_arrow()),
        a + b + j_append,
        "icefloe after Java append",
    )
    assert f"{NS}.java_tbl" in _names(ice.list_tables(NS))
    jt = ice.load_table(f"{NS}.java_tbl")
    j_all = j_batches[0] + j_batches[1]
    check(jt.metadata_location, sup.arrow_rows(jt.scan().to_arrow()), j_all, "icefloe reads Java's table")
    more = rows(range(500, 512), "ice2")
    jt.append(table(more))
    pjt = py.load_table(f"{NS}.java_tbl")
    check(pjt.metadata_location, py_rows(pjt), j_all + more, "pyiceberg after icefloe append on Java's table")

    # final states through the oracle's PyIceberg and DuckDB, in catalog mode (no JVM)
    finals = {"ice_tbl": a + b + j_append, "java_tbl": j_all + more}
    for name, model in finals.items():
        loc = ice.load_table(f"{NS}.{name}").metadata_location
        exp = tmp_path / f"{name}.expected.json"
        n, ck = sup.checksum(sup.schema_json(loc), model)
        exp.write_text(json.dumps({"row_count": n, "checksum": ck, "snapshots": {}}))
        where = (
            ["--catalog-db", str(db), "--catalog-name", CATALOG, "--table", f"{NS}.{name}"]
            if catalog_kind == "sqlite"
            else ["--metadata", sup.local_path(loc)]
        )
        proc = sup.run_oracle_script(
            [
                str(sup.oracle_dir() / "verify_table.py"), *where,
                "--engines", "pyiceberg,duckdb", "--expect-json", str(exp),
            ]
        )  # fmt: skip
        assert proc.returncode == 0, f"verify_table {name}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
