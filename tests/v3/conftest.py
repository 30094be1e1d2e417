"""Fixtures of the format v3 tests: a SQLite catalog per test and a small partitioned table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def rows(ids: range | list[int]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "cat": "ab"[i % 2]} for i in ids], schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    cat = icefloe.load_catalog(
        "v3", type="sql", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("ns")
    return cat


@pytest.fixture(scope="session")
def oracle_available() -> None:
    """Skip (or fail under ICEFLOE_REQUIRE_ORACLE=1) without the ../shared/oracle harness."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    import interop_support

    interop_support.require_oracle()
