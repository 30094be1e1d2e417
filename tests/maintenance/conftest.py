"""The shared SparkSession fixtures for the maintenance tests (cleanup/ and rewrite/), taken from
``tests/spark/conftest.py`` (imported, not copied, as ``tests/differential/conftest.py`` does)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest


def _load_spark_conftest() -> Any:
    path = Path(__file__).resolve().parents[1] / "spark" / "conftest.py"
    spec = importlib.util.spec_from_file_location("icefloe_maintenance_spark_fixtures", path)
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
