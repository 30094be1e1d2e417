"""Commit latency per catalog: a small append (10 rows: write one data file, a manifest, a manifest
list and a metadata file, then swap the catalog pointer) through each catalog, side by side with
PyIceberg 0.12 on the same catalog.

Catalogs (``CATALOGS``; another backend is one more entry there):

- ``sqlite``: a SQLite file (WAL, as icefloe opens it);
- ``postgres``: PostgreSQL 15 on loopback, started for the run by ``icefloe.testing.postgres``
  with durable settings (fsync on, PostgreSQL's defaults), one database for both libraries;
- ``rest``: icefloe's REST server (``python -m icefloe.rest``, its own process, bearer token) on
  a SQLite catalog; icefloe's ``RestCatalog`` against PyIceberg's ``RestCatalog``;
- ``rest-postgres``: the same server on the PostgreSQL database (the deployed shape).

Both libraries commit to the same catalog (their own table each) and write to the local disk,
so the difference between catalogs is the pointer swap and the metadata reads around it (over
REST: one POST of requirements and updates, the server writing the metadata file). All
contenders run in one case and alternate (the order flips every round); a timed run is
``APPENDS`` appends, the median is reported per append.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, ratio_target, run_case, skipped

__all__ = ["CATALOGS", "run"]

APPENDS = 5
NAME = "bench_catalogs"
TOKEN = "bench-token"


@dataclass(frozen=True)
class Backend:
    """How each library opens one catalog kind."""

    icefloe: dict[str, str]  # load_catalog properties
    pyiceberg: Callable[[], Any]  # a PyIceberg catalog on the same backend


def _sql(uri: str, warehouse: str) -> Backend:
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    return Backend(
        {"type": "sql", "uri": uri, "warehouse": warehouse},
        lambda: PySqlCatalog(NAME, uri=uri, warehouse=warehouse),
    )


class Services:
    """Servers the catalogs share within a run: one PostgreSQL (durable), started on first use,
    one database per catalog kind."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self._postgres: Any = None

    def postgres_database(self, name: str) -> str:
        if self._postgres is None:
            from icefloe.testing.postgres import PostgresServer

            self._postgres = self._stack.enter_context(PostgresServer(durable=True))
        return str(self._postgres.create_database(name))


@contextlib.contextmanager
def _sqlite(root: Path, services: Services) -> Iterator[Backend]:
    yield _sql(f"sqlite:///{(root / 'catalog.db').resolve()}", (root / "warehouse").resolve().as_uri())


@contextlib.contextmanager
def _postgres(root: Path, services: Services) -> Iterator[Backend]:
    yield _sql(services.postgres_database("bench_sql"), (root / "warehouse").resolve().as_uri())


@contextlib.contextmanager
def _rest_on(uri: str, root: Path) -> Iterator[Backend]:
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    from icefloe.rest import RestServerProcess

    warehouse = (root / "warehouse").resolve().as_uri()
    with RestServerProcess(uri, warehouse, token=TOKEN, log_path=str(root / "server.log")) as server:
        yield Backend(
            {"type": "rest", "uri": server.url, "token": TOKEN},
            lambda: PyRestCatalog(NAME, uri=server.url, token=TOKEN),
        )


@contextlib.contextmanager
def _rest(root: Path, services: Services) -> Iterator[Backend]:
    with _rest_on(f"sqlite:///{(root / 'catalog.db').resolve()}", root) as backend:
        yield backend


@contextlib.contextmanager
def _rest_postgres(root: Path, services: Services) -> Iterator[Backend]:
    with _rest_on(services.postgres_database("bench_rest"), root) as backend:
        yield backend


# name -> a context manager giving how both libraries open that catalog (started and stopped
# around the case)
CATALOGS: dict[str, Callable[[Path, Services], contextlib.AbstractContextManager[Backend]]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "rest": _rest,
    "rest-postgres": _rest_postgres,
}


def run(ctx: Context) -> list[CaseResult]:
    import pyarrow as pa

    import icefloe

    description = f"small append (10 rows) latency per catalog, per append ({APPENDS} per run)"
    small = pa.table({"id": pa.array(range(10), pa.int64()), "name": pa.array([f"n{i}" for i in range(10)])})
    contenders: list[Contender] = []
    ratios: list[Ratio] = []
    tables: dict[str, Any] = {}
    missing: list[str] = []
    with contextlib.ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyIceberg's deprecation notes
        services = Services(stack)
        for kind, start in CATALOGS.items():
            root = ctx.work_dir / f"catalogs-{kind}"
            (root / "warehouse").mkdir(parents=True)
            try:
                backend = stack.enter_context(start(root, services))
            except Exception as e:  # a server that cannot start here: report, run the others
                missing.append(f"{kind}: {e}")
                continue
            ours = icefloe.load_catalog(NAME, **backend.icefloe)
            stack.callback(ours.close)
            ours.create_namespace("ice")
            theirs = backend.pyiceberg()
            if hasattr(theirs, "engine"):
                stack.callback(theirs.engine.dispose)
            theirs.create_namespace("py")
            tables[f"icefloe-{kind}"] = ours.create_table("ice.small", schema=small.schema)
            tables[f"pyiceberg-{kind}"] = theirs.create_table("py.small", schema=small.schema)
            for side in ("icefloe", "pyiceberg"):
                contenders.append(Contender(f"{side}-{kind}", _appender(tables[f"{side}-{kind}"], small)))
            ratios.append(
                Ratio(
                    f"{kind}: small append latency vs PyIceberg",
                    f"icefloe-{kind}",
                    f"pyiceberg-{kind}",
                    "time",
                    "<=",
                    0.5,
                )
            )
        if not contenders:
            return [skipped("catalogs", "small_append", description, "; ".join(missing))]
        kinds = [k for k in CATALOGS if f"icefloe-{k}" in tables]
        for kind in kinds[1:]:
            label = f"icefloe: {kind} vs {kinds[0]} latency"
            ratios.append(Ratio(label, f"icefloe-{kind}", f"icefloe-{kinds[0]}", "time"))

        def evaluate(_: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
            counts = {name: len(t.refresh().snapshots()) for name, t in tables.items()}
            same = len(set(counts.values())) == 1
            checks = [Check("every append committed on every side", same, str(counts))]
            return checks, {"snapshots": counts, "unavailable": missing}

        case = Case("catalogs", "small_append", description, contenders, ratios, evaluate, APPENDS)
        return [run_case(ctx, case)]


def _appender(table: Any, data: Any) -> Callable[[], None]:
    def append() -> None:
        for _ in range(APPENDS):
            table.append(data)

    return append


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
_CATALOG_TEXT = {
    "sqlite": "SQLite",
    "postgres": "PostgreSQL 15",
    "rest": "the REST server on SQLite",
    "rest-postgres": "the REST server on PostgreSQL",
}
TARGETS = [
    ratio_target(
        f"catalogs.small_append.{kind}-vs-pyiceberg",
        "small_append",
        f"{kind}: small append latency vs PyIceberg",
        f"small append (10 rows) via {text} vs PyIceberg 0.12 on it",
        "<=",
        0.5,
        "latency",
    )
    for kind, text in _CATALOG_TEXT.items()
] + [
    ratio_target(
        f"catalogs.small_append.{kind}-vs-sqlite",
        "small_append",
        f"icefloe: {kind} vs sqlite latency",
        f"icefloe's small append via {text} vs on SQLite",
    )
    for kind, text in _CATALOG_TEXT.items()
    if kind != "sqlite"
]
