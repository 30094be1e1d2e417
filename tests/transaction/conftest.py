"""Fixtures for the commit-protocol tests: an in-memory catalog over a temporary warehouse, and
each catalog implementation behind a fault injector."""

from __future__ import annotations

from pathlib import Path

import pytest

import icefloe
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.testing import FaultInjectingCatalog


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "warehouse"
    wh.mkdir()
    return InMemoryCatalog("memory", warehouse=wh.as_uri())


@pytest.fixture(params=["memory", "sql"])
def faulty(request: pytest.FixtureRequest, tmp_path: Path) -> FaultInjectingCatalog:
    wh = tmp_path / "faulty-warehouse"
    wh.mkdir()
    if request.param == "sql":
        inner = icefloe.load_catalog(
            "test", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=wh.as_uri()
        )
    else:
        inner = icefloe.load_catalog("test", type="memory", warehouse=wh.as_uri())
    return FaultInjectingCatalog(inner)
