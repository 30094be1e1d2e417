"""Optional dependencies: import them by name and, when one is missing, raise a
`MissingDependencyError` that names the icefloe extra installing it (instead of a bare
``ModuleNotFoundError`` from deep inside a call).

::

    duckdb = require("duckdb", extra="duckdb", feature="DataScan.to_duckdb")
"""

from __future__ import annotations

import importlib
from types import ModuleType

from icefloe.errors import MissingDependencyError

__all__ = ["EXTRAS", "require"]

#: the extras of ``pip install 'icefloe[...]'`` and what each adds (README and docs list them)
EXTRAS: dict[str, str] = {
    "pandas": "DataScan.to_pandas",
    "duckdb": "DataScan.to_duckdb and `icefloe query` (DuckDB, sqlglot)",
    "polars": "DataScan.to_polars",
    "spark": "the PySpark data source, icefloe.spark",
    "postgres": "SQL catalogs in PostgreSQL",
    "rest": "REST catalogs (client)",
    "sigv4": "REST catalogs behind AWS SigV4",
    "server": "the REST catalog server, `icefloe serve`",
    "demo": "the demo's Arrow engine",
    "docs": "building the documentation site (mkdocs)",
}


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module``; `MissingDependencyError` naming ``extra`` when it is not installed.

    ``feature`` says what needed it (``"DataScan.to_pandas"``), for the message."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        missing = e.name or module
        raise MissingDependencyError(
            f"{feature} needs the Python package {missing.split('.')[0]!r}, which is not installed",
            hint=f"pip install 'icefloe[{extra}]'",
            module=missing,
            extra=extra,
        ) from e
