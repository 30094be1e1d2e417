"""Fixtures of the differential read harness: the run's seed and case numbers, and the shared
SparkSession of ``tests/spark/conftest.py`` (its fixtures are imported, not copied, so a run that
includes both folders has one session and one catalog configuration).

Options (registered by ``tests/conftest.py``, so they work in any run, the whole suite's
included; the environment variables work everywhere too):

    --seed S     ICEFLOE_DIFF_SEED   run seed (default 20261)
    --cases N    ICEFLOE_DIFF_CASES  cases per test, instead of each test's bounded default
    --case K     ICEFLOE_DIFF_CASE   run only case K (replay)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "interop"))

from diff_harness import case_numbers, run_seed  # noqa: E402


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test taking ``case_number`` runs once per case; its bounded default count is in its
    module's ``BOUNDED_CASES`` under the test's name."""
    if "case_number" not in metafunc.fixturenames:
        return
    default = int(getattr(metafunc.module, "BOUNDED_CASES", {}).get(metafunc.function.__name__, 10))
    numbers = case_numbers(metafunc.config, default)
    metafunc.parametrize("case_number", numbers, ids=[f"case{n}" for n in numbers])


@pytest.fixture(scope="session")
def diff_seed(request: pytest.FixtureRequest) -> int:
    return run_seed(request.config)


def _load_spark_conftest() -> Any:
    path = HERE.parent / "spark" / "conftest.py"
    spec = importlib.util.spec_from_file_location("icefloe_differential_spark_fixtures", path)
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
