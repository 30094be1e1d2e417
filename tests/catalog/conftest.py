"""Fixtures for the catalog suite: every behaviour test runs against each catalog."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog import Catalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType, TimestamptzType

ORACLE_REF = Path(os.environ["ICEFLOE_ORACLE_REF"])


def make_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "s", StringType()),
    )


@pytest.fixture
def schema() -> Schema:
    return make_schema()


@pytest.fixture
def warehouse_dir(tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    wh.mkdir()
    return wh


def open_catalog(kind: str, tmp_path: Path, warehouse_dir: Path, name: str = "suite") -> Catalog:
    if kind == "sql":
        from icefloe.catalog.sql import SqlCatalog

        return SqlCatalog(name, uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=warehouse_dir.as_uri())
    from icefloe.catalog.memory import InMemoryCatalog

    return InMemoryCatalog(name, warehouse=warehouse_dir.as_uri())


@pytest.fixture(params=["sql", "memory"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path, warehouse_dir: Path) -> Iterator[Catalog]:
    cat = open_catalog(request.param, tmp_path, warehouse_dir)
    yield cat
    cat.close()


@pytest.fixture
def oracle_ref() -> Path:
    if not (ORACLE_REF / "index.json").is_file():
        pytest.skip(f"Iceberg Java reference tables not generated at {ORACLE_REF} (see ../shared/oracle)")
    return ORACLE_REF
