"""Fixtures and checks of the rewrite tests (compaction, delete-file and manifest rewrites).

The shared SparkSession comes from ``tests/spark/conftest.py`` (imported, not copied, as
``tests/differential/conftest.py`` does). The checks read tables with plain ``icefloe.manifest``
and ``pyarrow.parquet`` calls, independent of the code under test.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _load_spark_conftest() -> Any:
    path = HERE.parents[1] / "spark" / "conftest.py"
    spec = importlib.util.spec_from_file_location("icefloe_rewrite_spark_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


try:
    _spark_fixtures = _load_spark_conftest()
except pytest.skip.Exception:  # pyspark is not installed: the Spark tests skip
    _spark_fixtures = None
else:
    spark_warehouse = _spark_fixtures.spark_warehouse
    spark = _spark_fixtures.spark
    spark_catalog = _spark_fixtures.spark_catalog


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    import icefloe

    wh = tmp_path / "wh"
    wh.mkdir()
    cat = icefloe.load_catalog(
        "rewrite", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=wh.as_uri()
    )
    cat.create_namespace("ns")
    return cat


def local(location: str) -> str:
    from icefloe.io.local import local_path

    return os.path.normpath(local_path(location))
