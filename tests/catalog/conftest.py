"""Fixtures for the catalog suite: every test taking ``catalog`` runs against each catalog kind
(memory, SQLite, PostgreSQL, ...: ``catalog_kind`` in tests/conftest.py) on a local warehouse."""

from __future__ import annotations

import os
from collections.abc import Callable
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


@pytest.fixture
def catalog(
    catalog_kind: str, catalog_opener: Callable[..., Callable[[], Catalog]], warehouse_dir: Path
) -> Catalog:
    """Each catalog of CATALOG_KINDS (tests/conftest.py) over a local warehouse; its handles are
    closed when the test ends."""
    return catalog_opener(catalog_kind, warehouse_dir.as_uri())()


@pytest.fixture
def oracle_ref() -> Path:
    if not (ORACLE_REF / "index.json").is_file():
        pytest.skip(f"Iceberg Java reference tables not generated at {ORACLE_REF} (see ../shared/oracle)")
    return ORACLE_REF


@pytest.fixture
def pointers(catalog: Catalog, pointer_catalog: Callable[[Catalog], Catalog]) -> Catalog:
    """The catalog whose pointer primitives (``_read``, ``_swap_pointer``) ``catalog``'s commits go
    through: ``catalog`` itself, or for a REST client the catalog behind its server, so that a
    race staged there reaches the client as the server's answer (a 409)."""
    return pointer_catalog(catalog)
