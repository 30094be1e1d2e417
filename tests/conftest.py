"""Shared fixtures: a fresh catalog per test (SQLite and in-memory), and Hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Where the Iceberg Java reference tables live (scripts/oracle_ref_tables.sh writes them there).
# Golden tests skip when they are absent, except in CI (ICEFLOE_REQUIRE_ORACLE=1), where that fails.
os.environ.setdefault("ICEFLOE_ORACLE_REF", os.path.expanduser("~/.cache/icefloe-oracle/ref-tables"))


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
