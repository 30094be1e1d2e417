"""One SparkSession for the whole Spark test run, and an icefloe catalog it shares with the tests.

The catalog is SQLite on disk: Spark's Python data source code runs in worker processes, so an
in-memory catalog would not be seen by them. Spark finds it through the session conf
``spark.icefloe.catalog.default.*``, which is the configuration route users take too.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

_counter = itertools.count()


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark-icefloe")


@pytest.fixture(scope="session")
def spark(spark_warehouse: Path) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    import icefloe.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    (spark_warehouse / "wh").mkdir(exist_ok=True)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("icefloe-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.icefloe.catalog.default.uri", f"sqlite:///{spark_warehouse / 'catalog.db'}")
        .config("spark.icefloe.catalog.default.warehouse", (spark_warehouse / "wh").as_uri())
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    icefloe.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_catalog(spark: Any, spark_warehouse: Path) -> Any:
    import icefloe

    cat = icefloe.load_catalog(
        "default",
        type="sql",
        uri=f"sqlite:///{spark_warehouse / 'catalog.db'}",
        warehouse=(spark_warehouse / "wh").as_uri(),
    )
    if ("spark",) not in cat.list_namespaces():
        cat.create_namespace("spark")
    return cat


@pytest.fixture
def table_name(request: pytest.FixtureRequest) -> str:
    """A fresh table name per test (the catalog is shared by the session)."""
    safe = "".join(c if c.isalnum() else "_" for c in request.node.name)[:40]
    return f"spark.t{next(_counter)}_{safe}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test in this folder needs the (shared) SparkSession: `-m "not spark"` skips them."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)
