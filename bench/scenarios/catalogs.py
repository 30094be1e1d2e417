"""Commit latency per catalog: a small append (10 rows: write one data file, a manifest, a manifest
list and a metadata file, then swap the catalog pointer) through each catalog, side by side with
PyIceberg 0.12 on the same catalog.

Catalogs (``CATALOGS``; another backend is one more entry there):

- ``sqlite``: a SQLite file (WAL, as icefloe opens it);
- ``postgres``: PostgreSQL 15 on loopback, started for the run by ``icefloe.testing.postgres``
  with durable settings (fsync on, PostgreSQL's defaults), one database for both libraries.

Both libraries commit to the same catalog database (their own table each) and write to the local
disk, so the difference between catalogs is the pointer swap and the metadata reads around it.
All contenders run in one case and alternate (the order flips every round); a timed run is
``APPENDS`` appends, the median is reported per append.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, run_case, skipped

__all__ = ["CATALOGS", "run"]

APPENDS = 5
NAME = "bench_catalogs"


@contextlib.contextmanager
def _sqlite(root: Path) -> Iterator[str]:
    yield f"sqlite:///{(root / 'catalog.db').resolve()}"


@contextlib.contextmanager
def _postgres(root: Path) -> Iterator[str]:
    from icefloe.testing.postgres import PostgresServer

    with PostgresServer(durable=True) as server:
        yield server.uri()


# name -> a context manager giving the SQLAlchemy URL both libraries use (started and stopped
# around the case)
CATALOGS: dict[str, Callable[[Path], contextlib.AbstractContextManager[str]]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
}


def run(ctx: Context) -> list[CaseResult]:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    import icefloe

    description = f"small append (10 rows) latency per catalog, per append ({APPENDS} per run)"
    small = pa.table({"id": pa.array(range(10), pa.int64()), "name": pa.array([f"n{i}" for i in range(10)])})
    contenders: list[Contender] = []
    ratios: list[Ratio] = []
    tables: dict[str, Any] = {}
    missing: list[str] = []
    with contextlib.ExitStack() as stack:
        for kind, start in CATALOGS.items():
            root = ctx.work_dir / f"catalogs-{kind}"
            (root / "warehouse").mkdir(parents=True)
            warehouse = (root / "warehouse").resolve().as_uri()
            try:
                uri = stack.enter_context(start(root))
            except Exception as e:  # a server that cannot start here: report, run the others
                missing.append(f"{kind}: {e}")
                continue
            ours = icefloe.load_catalog(NAME, type="sql", uri=uri, warehouse=warehouse)
            stack.callback(ours.close)
            ours.create_namespace("ice")
            theirs = PySqlCatalog(NAME, uri=uri, warehouse=warehouse)
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
