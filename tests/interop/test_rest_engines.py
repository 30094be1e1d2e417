"""icefloe's REST catalog server shared by PyIceberg, DuckDB, Iceberg Java and icefloe itself.

One server (``python -m icefloe.rest`` on a SQLite catalog, OAuth2 client credentials) per module.
Each test is a round trip: icefloe writes a table, the other engine reads it through the server,
appends to it and creates a table of its own, and icefloe (and PyIceberg) read back what it
committed. PyIceberg runs in-process; DuckDB 1.5 and Iceberg Java 1.10 (Spark 3.5) run in the
oracle's venv (see ``scripts/rest_engines_setup.sh`` for the pieces they need beside it).
"""

from __future__ import annotations

import glob
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import interop_support as sup
import pyarrow as pa
import pytest

import icefloe
from icefloe.catalog import Catalog

CLIENT_ID, CLIENT_SECRET = "engines", "engines-secret"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
CACHE = Path(os.environ.get("ICEFLOE_REST_CACHE", os.path.expanduser("~/.cache/icefloe-rest")))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from icefloe.rest import RestServerProcess

    root = tmp_path_factory.mktemp("rest-engines")
    (root / "wh").mkdir()
    with RestServerProcess(
        f"sqlite:///{root / 'catalog.db'}",
        (root / "wh").as_uri(),
        extra_args=["--credential", f"{CLIENT_ID}:{CLIENT_SECRET}"],
        log_path=str(root / "server.log"),
    ) as srv:
        yield srv.url


@pytest.fixture
def catalog(server: str) -> Iterator[Catalog]:
    cat = icefloe.load_catalog("engines", uri=server, credential=f"{CLIENT_ID}:{CLIENT_SECRET}")
    yield cat
    cat.close()


def seed(catalog: Catalog, namespace: str, name: str, partition: str = "bucket(4, id)") -> None:
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.{name}", SCHEMA, partition_by=[partition])
    table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=SCHEMA))
    table.append(pa.table({"id": [4], "s": ["d"]}, schema=SCHEMA))


def rows(catalog: Catalog, ident: str) -> list[list[Any]]:
    return sorted([r["id"], r["s"]] for r in catalog.load_table(ident).scan().to_arrow().to_pylist())


def pyiceberg_catalog(server: str) -> Any:
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog(
        "py",
        uri=server,
        credential=f"{CLIENT_ID}:{CLIENT_SECRET}",
        **{"oauth2-server-uri": f"{server}/v1/oauth/tokens"},
    )


def pyiceberg_rows(server: str, ident: str) -> list[list[Any]]:
    cat = pyiceberg_catalog(server)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = cat.load_table(ident).scan().to_arrow().to_pylist()
    return sorted([r["id"], r["s"]] for r in data)


def test_pyiceberg_through_rest(server: str, catalog: Catalog) -> None:
    from pyiceberg.types import IntegerType

    seed(catalog, "py", "t", partition="s")  # PyIceberg writes bucket partitions only with pyiceberg-core
    py = pyiceberg_catalog(server)
    assert ("py",) in py.list_namespaces()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = py.load_table("py.t")
        assert sorted([r["id"], r["s"]] for r in table.scan().to_arrow().to_pylist()) == rows(catalog, "py.t")
        table.append(pa.table({"id": [10], "s": ["py"]}, schema=SCHEMA))
        # a create transaction (stage-create, then one commit with assert-create)
        tx = py.create_table_transaction("py.created", schema=SCHEMA)
        tx.append(pa.table({"id": [7], "s": ["x"]}, schema=SCHEMA))
        tx.commit_transaction()
        with py.load_table("py.t").update_schema() as update:
            update.add_column("extra", IntegerType())
    assert rows(catalog, "py.t") == [[1, "a"], [2, "b"], [3, "c"], [4, "d"], [10, "py"]]
    assert rows(catalog, "py.created") == [[7, "x"]]
    assert catalog.load_table("py.t").schema().find_field("extra").field_id == 3
    # icefloe's row-level change, seen by PyIceberg
    catalog.load_table("py.t").delete("id = 2")
    assert pyiceberg_rows(server, "py.t") == [[1, "a"], [3, "c"], [4, "d"], [10, "py"]]


def _engine(engine: str, server: str, tmp_path: Path, namespace: str, **extra: Any) -> dict[str, Any]:
    spec = {
        "engine": engine,
        "url": server,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "namespace": namespace,
        "read": "t",
        "insert": [[100, f"{engine}-1"], [101, f"{engine}-2"]],
        "create": f"by_{engine}",
        **extra,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    script = Path(__file__).with_name("rest_engine_script.py")
    proc = sup.run_oracle_script([str(script), str(tmp_path / "spec.json"), str(tmp_path / "out.json")])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return dict(json.loads((tmp_path / "out.json").read_text()))


@pytest.mark.oracle
def test_duckdb_through_rest(server: str, catalog: Catalog, tmp_path: Path, oracle_available: None) -> None:
    found = glob.glob(str(CACHE / "duckdb-ext/duckdb_extension_httpfs/extensions/*/httpfs.duckdb_extension"))
    if not found:
        sup.require_oracle_piece("DuckDB's httpfs extension (run scripts/rest_engines_setup.sh)")
    seed(catalog, "duck", "t")
    out = _engine("duckdb", server, tmp_path, "duck", httpfs=found[0])
    assert out["seen"] == [[1, "a"], [2, "b"], [3, "c"], [4, "d"]]
    expected = [[1, "a"], [2, "b"], [3, "c"], [4, "d"], [100, "duckdb-1"], [101, "duckdb-2"]]
    assert out["after"] == expected
    assert rows(catalog, "duck.t") == expected
    assert rows(catalog, "duck.by_duckdb") == [[1, "d1"], [2, "d2"], [3, "d3"]]
    assert pyiceberg_rows(server, "duck.by_duckdb") == [[1, "d1"], [2, "d2"], [3, "d3"]]
    # and DuckDB's table takes icefloe's commits
    catalog.load_table("duck.by_duckdb").append(pa.table({"id": [4], "s": ["i"]}, schema=SCHEMA))
    assert rows(catalog, "duck.by_duckdb")[-1] == [4, "i"]


@pytest.mark.oracle
@pytest.mark.java
def test_iceberg_java_through_rest(
    server: str, catalog: Catalog, tmp_path: Path, oracle_available: None
) -> None:
    jar = CACHE / "iceberg-shaded-httpclient5.jar"
    if not jar.is_file():
        sup.require_oracle_piece(
            f"HttpClient 5 for Iceberg Java at {jar} (run scripts/rest_engines_setup.sh)"
        )
    seed(catalog, "java", "t")
    os.environ["ORACLE_EXTRA_JARS"] = os.pathsep.join(
        [p for p in os.environ.get("ORACLE_EXTRA_JARS", "").split(os.pathsep) if p] + [str(jar)]
    )
    try:
        out = _engine("java", server, tmp_path, "java")
    finally:
        os.environ["ORACLE_EXTRA_JARS"] = os.pathsep.join(
            p for p in os.environ["ORACLE_EXTRA_JARS"].split(os.pathsep) if p and p != str(jar)
        )
    assert "java" in out["namespaces"]
    assert out["seen"] == [[1, "a"], [2, "b"], [3, "c"], [4, "d"]]
    expected = [[1, "a"], [2, "b"], [3, "c"], [4, "d"], [100, "java-1"], [101, "java-2"]]
    assert out["after"] == expected
    assert rows(catalog, "java.t") == expected
    # Java's partitioned merge-on-read table with a position delete, read by icefloe and PyIceberg
    created = catalog.load_table("java.by_java")
    assert str(created.spec().fields[0].transform) == "bucket[2]"
    assert rows(catalog, "java.by_java") == [[1, "j1"], [3, "j3"]]
    assert pyiceberg_rows(server, "java.by_java") == [[1, "j1"], [3, "j3"]]
    created.append(pa.table({"id": [5], "s": ["i"]}, schema=SCHEMA))
    assert rows(catalog, "java.by_java") == [[1, "j1"], [3, "j3"], [5, "i"]]
