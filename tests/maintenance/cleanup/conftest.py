"""Fixtures and checks of the snapshot-expiry, orphan-file and metadata-cleanup tests.

The shared SparkSession fixtures come from ``tests/maintenance/conftest.py``.
The checks compute what a table references with a
deliberately naive reader (one manifest list and manifest after the other, straight from
``icefloe.manifest``), independent of ``icefloe.maintenance.reachability``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    import icefloe

    wh = tmp_path / "wh"
    wh.mkdir()
    cat = icefloe.load_catalog("t", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


def local(location: str) -> str:
    from icefloe.io.local import local_path

    return os.path.normpath(local_path(location))


@pytest.fixture(scope="session")
def reference_tables() -> Path:
    """The Iceberg Java reference tables (tests/interop/conftest.py's fixture, shared)."""
    sys.path.insert(0, str(HERE.parents[1] / "interop"))
    import interop_support as sup

    return Path(sup.ensure_reference_tables())
