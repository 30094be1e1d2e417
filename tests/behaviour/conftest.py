"""The behaviour suite: the same table behaviour, checked against every catalog and every store.

Every test taking ``env`` runs once per (catalog, store) pair: catalogs are ``CATALOG_KINDS`` of
tests/conftest.py (memory, SQLite, PostgreSQL; a catalog added there, with its branch in
``open_catalog``, joins the suite), stores are ``STORE_KINDS`` (a local warehouse, and S3 on the
suite's SeaweedFS server, where the catalog gets the s3.* FileIO properties). A test narrows
them with ``@pytest.mark.catalogs(...)`` / ``@pytest.mark.stores(...)``.

``env.catalog`` is a fresh, empty catalog; ``env.reopen()`` opens another handle on the same
catalog, as another process would (the memory catalog has only the one instance). ``env.store``
lists what is under a location, for assertions only: icefloe itself never lists or renames.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from icefloe.catalog import Catalog
from icefloe.io.local import local_path


@dataclass
class Store:
    """Where a test's warehouse lives, and a way to look at it from outside icefloe."""

    kind: str
    warehouse: str
    properties: dict[str, str] = field(default_factory=dict)
    fs: Any = None

    def _path(self, location: str) -> str:
        if self.kind == "local":
            return local_path(location)
        assert location.startswith("s3://"), location
        return location[len("s3://") :]

    def _location(self, path: str) -> str:
        return Path(path).as_uri() if self.kind == "local" else f"s3://{path}"

    def key(self, location: str) -> str:
        """A location in one canonical spelling (``file:/x`` and ``file:///x`` differ as text)."""
        return self._location(self._path(location))

    def files(self, location: str) -> set[str]:
        """Every file under ``location`` (recursive listing; canonical spelling)."""
        selector = pafs.FileSelector(self._path(location).rstrip("/"), recursive=True, allow_not_found=True)
        return {
            self._location(info.path)
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        }

    def exists(self, location: str) -> bool:
        return bool(self.fs.get_file_info(self._path(location)).type == pafs.FileType.File)


@dataclass
class Env:
    catalog_kind: str
    store: Store
    catalog: Catalog
    reopen: Callable[[], Catalog]

    @property
    def id(self) -> str:
        return f"{self.catalog_kind}-{self.store.kind}"


@pytest.fixture
def store(store_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if store_kind == "local":
        wh = tmp_path / "warehouse"
        wh.mkdir()
        return Store("local", wh.as_uri(), {}, pafs.LocalFileSystem())
    server = request.getfixturevalue("seaweedfs_server")
    # one prefix per test in the run's bucket: tests never see each other's files
    warehouse = server.warehouse(f"t-{uuid.uuid4().hex[:12]}")
    return Store("s3", warehouse, server.file_io_properties(), server.filesystem())


@pytest.fixture
def env(catalog_kind: str, store: Store, catalog_opener: Callable[..., Callable[[], Catalog]]) -> Env:
    opener = catalog_opener(catalog_kind, store.warehouse, **store.properties)
    return Env(catalog_kind, store, opener(), opener)
