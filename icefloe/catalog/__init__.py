"""Catalogs: where tables are found, and the one place a commit becomes atomic.

`load_catalog` opens a catalog from configuration; `SqlCatalog` (icefloe.catalog.sql) shares its
database with PyIceberg and Iceberg Java; `InMemoryCatalog` (icefloe.catalog.memory) is for tests.
"""

from __future__ import annotations

from icefloe.catalog._base import (
    Catalog,
    Identifier,
    IdentifierLike,
    Namespace,
    NamespaceLike,
    PropertiesUpdateSummary,
    TableCommit,
    to_identifier,
    to_namespace,
)
from icefloe.catalog._config import catalog_properties, load_catalog
from icefloe.catalog._purge import PurgeReport

__all__ = [
    "Catalog",
    "Identifier",
    "IdentifierLike",
    "Namespace",
    "NamespaceLike",
    "PropertiesUpdateSummary",
    "PurgeReport",
    "TableCommit",
    "catalog_properties",
    "load_catalog",
    "to_identifier",
    "to_namespace",
]
