"""An Iceberg REST catalog server over any icefloe catalog (SQLite, PostgreSQL, in-memory).

``python -m icefloe.rest --uri sqlite:///catalog.db --warehouse file:///data/wh --token T``
serves the catalog so that Iceberg Java's ``RESTCatalog``, PyIceberg's ``RestCatalog``, DuckDB's
iceberg extension and icefloe's own REST client (``load_catalog(type="rest")``) share its tables.
In a program: ``serve(catalog, port=8181, tokens=["T"])``, or ``RestServer`` on a background
thread. This package depends on `icefloe.catalog`, never the reverse; it needs the ``server``
extra (FastAPI, uvicorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.rest._main import add_arguments, main, run
from icefloe.rest._serve import (
    RestServer,
    RestServerProcess,
    free_loopback_port,
    is_loopback,
    open_backing_catalog,
    serve,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from icefloe.catalog import Catalog

__all__ = [
    "RestServer",
    "RestServerProcess",
    "add_arguments",
    "create_app",
    "free_loopback_port",
    "is_loopback",
    "main",
    "open_backing_catalog",
    "run",
    "serve",
]


def create_app(catalog: Catalog, **options: Any) -> FastAPI:
    """The FastAPI application serving ``catalog`` (see `icefloe.rest._app.create_app`)."""
    from icefloe.rest._app import create_app as _create

    return _create(catalog, **options)
