"""A REST catalog server on a background thread over a fresh SQLite catalog, and an HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.rest import RestServer

TOKEN = "server-test-token"


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[SqlCatalog]:
    (tmp_path / "wh").mkdir()
    cat = SqlCatalog("srv", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=(tmp_path / "wh").as_uri())
    yield cat
    cat.close()


@pytest.fixture
def server(backing: SqlCatalog) -> Iterator[RestServer]:
    with RestServer(backing, tokens=[TOKEN], credentials={"app": "app-secret"}, token_lifetime_s=600) as srv:
        yield srv


@pytest.fixture
def http(server: RestServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client
