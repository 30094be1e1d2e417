"""Fixtures and checks of the rewrite tests (compaction, delete-file and manifest rewrites).

The shared SparkSession fixtures come from ``tests/maintenance/conftest.py``.
The checks read tables with plain ``icefloe.manifest``
and ``pyarrow.parquet`` calls, independent of the code under test.
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
    cat = icefloe.load_catalog(
        "rewrite", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=wh.as_uri()
    )
    cat.create_namespace("ns")
    return cat


def local(location: str) -> str:
    from icefloe.io.local import local_path

    return os.path.normpath(local_path(location))
