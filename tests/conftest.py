"""Shared fixtures: a fresh catalog per test (SQLite and in-memory), and Hypothesis profiles."""

from __future__ import annotations

import itertools
import os
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Where the Iceberg Java reference tables live (scripts/oracle_ref_tables.sh writes them there).
# Golden tests skip when they are absent, except in CI (ICEFLOE_REQUIRE_ORACLE=1), where that fails.
os.environ.setdefault("ICEFLOE_ORACLE_REF", os.path.expanduser("~/.cache/icefloe-oracle/ref-tables"))


def pytest_addoption(parser: pytest.Parser) -> None:
    # The differential read harness's options (tests/differential/conftest.py), registered here so
    # that they work in any run, the whole suite's included; ICEFLOE_DIFF_* work everywhere too.
    group = parser.getgroup("icefloe differential reads")
    group.addoption("--seed", type=int, default=None, help="differential reads: run seed")
    group.addoption("--cases", type=int, default=None, help="differential reads: cases per test")
    group.addoption("--case", type=int, default=None, help="differential reads: only this case")


def pytest_sessionstart(session: pytest.Session) -> None:
    ref = Path(os.environ["ICEFLOE_ORACLE_REF"])
    if os.environ.get("ICEFLOE_REQUIRE_ORACLE") == "1" and not (ref / "index.json").is_file():
        raise pytest.UsageError(
            f"ICEFLOE_REQUIRE_ORACLE=1 but no Iceberg Java reference tables at {ref}; "
            "run scripts/oracle_ref_tables.sh (./run test does)"
        )


settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    wh = tmp_path / "warehouse"
    wh.mkdir()
    return wh


@pytest.fixture(params=["sql", "memory"])
def any_catalog(request: pytest.FixtureRequest, tmp_path: Path, warehouse: Path) -> Iterator[object]:
    """Each catalog implementation, for behaviour tests that must hold for all of them."""
    import icefloe

    if request.param == "sql":
        cat = icefloe.load_catalog(
            "test", type="sql", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=warehouse.as_uri()
        )
    else:
        cat = icefloe.load_catalog("test", type="memory", warehouse=warehouse.as_uri())
    yield cat


# ---------------------------------------------------------------------------------------------
# Real servers (PostgreSQL, SeaweedFS S3), started once per test run by the project's own code
# (icefloe/testing/postgres.py and seaweedfs.py, also behind scripts/postgres.sh and
# scripts/seaweedfs.sh), on 127.0.0.1 and free ports, and stopped at the end of the run. Tests that
# need one skip when its binaries are missing, except in CI (CI=true or ICEFLOE_REQUIRE_SERVERS=1),
# where that fails. Each server is tied to this process: killed test runs leave none behind.

# Catalog implementations every catalog behaviour test runs against (tests/behaviour,
# tests/catalog). To add one, add its name here and a branch to `open_catalog` below.
CATALOG_KINDS = ("memory", "sqlite", "postgres", "rest")
# Stores every table behaviour test runs against (tests/behaviour/conftest.py).
STORE_KINDS = ("local", "s3")

# the S3 Tables bucket the suite's SeaweedFS server creates for its Iceberg REST catalog
SEAWEEDFS_TABLE_BUCKET = "tables"

# the AWS SDK must never ask the instance metadata endpoint for credentials or a region
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")


def _servers_required() -> bool:
    return os.environ.get("ICEFLOE_REQUIRE_SERVERS") == "1" or os.environ.get("CI", "") not in ("", "0")


def _unavailable(what: str, error: Exception) -> None:
    if _servers_required():
        raise error
    pytest.skip(f"{what} unavailable: {error}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A PostgreSQL server for the whole run (`icefloe.testing.postgres.PostgresServer`); give each
    test its own schema (``postgres_server.create_schema(name)`` returns its URL) or database."""
    from icefloe.errors import ConfigError
    from icefloe.testing.postgres import PostgresServer, find_postgres_bin

    try:
        import psycopg  # noqa: F401

        find_postgres_bin(install=_servers_required())
    except (ConfigError, ImportError) as e:
        _unavailable("PostgreSQL", e)
    server = _start_with_retries(PostgresServer)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def seaweedfs_server() -> Iterator[Any]:
    """A SeaweedFS S3 server for the whole run (`icefloe.testing.seaweedfs.SeaweedFS`), bucket
    ``warehouse``; ``file_io_properties()`` gives the s3.* properties, ``iceberg_uri`` its Iceberg
    REST catalog. Give each test its own prefix: ``seaweedfs_server.warehouse(<unique prefix>)``."""
    from icefloe.errors import ConfigError
    from icefloe.testing.seaweedfs import SeaweedFS, find_weed

    try:
        find_weed()
    except ConfigError as e:
        _unavailable("SeaweedFS", e)
    # the table bucket is what SeaweedFS's own Iceberg REST catalog serves
    # (tests/catalog/test_rest_seaweedfs.py)
    server = _start_with_retries(lambda: SeaweedFS(table_buckets=(SEAWEEDFS_TABLE_BUCKET,)))
    try:
        yield server
    finally:
        server.stop()


def _start_with_retries(factory: Callable[[], Any], attempts: int = 3) -> Any:
    """Start a server on free ports; another process may take a port between choosing and
    binding it, so a failed start is retried on new ports."""
    from icefloe.testing._process import ServerStartError

    for attempt in range(attempts):
        server = factory()
        try:
            return server.start()
        except ServerStartError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


_database_counter = itertools.count()

# A REST client opened by `open_catalog` -> the catalog behind its server, which owns the table
# pointers: tests of the pointer primitives reach them there (the `pointer_catalog` fixture).
_rest_backing: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


@pytest.fixture
def pointer_catalog() -> Callable[[Any], Any]:
    """``pointer_catalog(catalog)``: the catalog that swaps ``catalog``'s table pointers, which is
    ``catalog`` itself, or for a REST client of `open_catalog` the catalog behind its server."""
    return lambda catalog: _rest_backing.get(catalog, catalog)


def open_catalog(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    warehouse: str,
    name: str = "suite",
    **props: str,
) -> Callable[[], Any]:
    """A function that opens catalog ``kind`` (one of CATALOG_KINDS) on a fresh, empty backing
    store made for this test; every call opens another handle on the same catalog (as another
    process would), except for ``memory``, which has only the one instance."""
    import icefloe

    if kind == "memory":
        cat = icefloe.load_catalog(name, type="memory", warehouse=warehouse, **props)
        return lambda: cat
    if kind == "rest":
        # icefloe's REST client against icefloe's REST server over a SQLite catalog
        from icefloe.catalog.rest import RestCatalog
        from icefloe.rest import RestServer

        backing = icefloe.load_catalog(
            name,
            type="sql",
            uri=f"sqlite:///{tmp_path / f'{name}-rest-catalog.db'}",
            warehouse=warehouse,
            **props,
        )
        # the suite's tests put tables anywhere in their own directory, not only in the warehouse,
        # and register Iceberg Java's reference tables
        allowed = [tmp_path.as_uri(), Path(os.environ["ICEFLOE_ORACLE_REF"]).as_uri()]
        server = RestServer(backing, tokens=["suite-token"], allowed_locations=allowed).__enter__()
        clients: list[Any] = []

        def stop() -> None:
            for c in clients:
                c.close()
            server.__exit__(None, None, None)
            backing.close()

        request.addfinalizer(stop)

        def rest_opener() -> Any:
            cat = RestCatalog(name, uri=server.url, token="suite-token", **props)
            clients.append(cat)
            _rest_backing[cat] = backing
            return cat

        return rest_opener
    if kind == "sqlite":
        uri = f"sqlite:///{tmp_path / f'{name}-catalog.db'}"
    elif kind == "postgres":
        server = request.getfixturevalue("postgres_server")
        uri = server.create_schema(f"t{os.getpid()}_{next(_database_counter)}")
    else:
        raise ValueError(f"unknown catalog kind {kind!r}")
    opened: list[Any] = []

    def opener() -> Any:
        cat = icefloe.load_catalog(name, type="sql", uri=uri, warehouse=warehouse, **props)
        opened.append(cat)
        return cat

    request.addfinalizer(lambda: [c.close() for c in opened])
    return opener


@pytest.fixture
def catalog_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Callable[[], Any]]:
    """``catalog_opener(kind, warehouse, name="suite", **properties)``: `open_catalog` for this test."""

    def make(kind: str, warehouse: str, name: str = "suite", **props: str) -> Callable[[], Any]:
        return open_catalog(kind, request, tmp_path, warehouse, name, **props)

    return make


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests (or fixtures) taking ``catalog_kind`` run once per catalog in CATALOG_KINDS, and
    those taking ``store_kind`` once per store in STORE_KINDS; ``@pytest.mark.catalogs(...)`` /
    ``@pytest.mark.stores(...)`` narrow the lists. Runs needing a server are marked ``postgres``
    / ``s3`` (deselect with ``-m "not postgres and not s3"``)."""
    for argname, kinds, marker in (
        ("catalog_kind", CATALOG_KINDS, "catalogs"),
        ("store_kind", STORE_KINDS, "stores"),
    ):
        if argname not in metafunc.fixturenames:
            continue
        narrowed = metafunc.definition.get_closest_marker(marker)
        chosen = [k for k in kinds if narrowed is None or k in narrowed.args]
        params = [pytest.param(k, id=k, marks=_server_marks(k)) for k in chosen]
        metafunc.parametrize(argname, params)


def _server_marks(kind: str) -> list[pytest.MarkDecorator]:
    if kind == "postgres":
        return [pytest.mark.postgres]
    if kind == "s3":
        return [pytest.mark.s3]
    return []
