"""Fixtures for the spec tests: the Iceberg Java reference tables, when they have been generated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ORACLE_REF = Path(os.environ["ICEFLOE_ORACLE_REF"]) / "hadoop" / "ref"


def java_metadata_files() -> list[Path]:
    """Every metadata.json of the Java reference tables (empty when they are absent)."""
    return sorted(ORACLE_REF.glob("*/metadata/*.metadata.json"))


@pytest.fixture
def oracle_ref() -> Path:
    if not ORACLE_REF.is_dir() or not java_metadata_files():
        pytest.skip(
            f"Iceberg Java reference tables not found under {ORACLE_REF} "
            "(generate them with the ../shared/oracle harness)"
        )
    return ORACLE_REF
