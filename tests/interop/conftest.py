"""Fixtures of the interoperability suite (icefloe <-> Iceberg Java, PyIceberg, DuckDB).

Oracle-backed tests skip with the reason when the oracle venv is missing, and fail instead when
``ICEFLOE_REQUIRE_ORACLE=1`` (CI). JVMs are expensive (about 8 s before the first row), so every
Java check is batched behind a session fixture.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import interop_support as sup


@pytest.fixture(scope="session")
def oracle_available() -> None:
    sup.require_oracle()


@pytest.fixture(scope="session")
def reference_tables() -> Path:
    """Directory of the Iceberg Java reference tables (generated once into the cache if missing)."""
    return sup.ensure_reference_tables()
