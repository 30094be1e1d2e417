"""Regression test for what the SQL-catalog database sweep found: a database failure while
reading a table's pointer (``load_table``, and the first step of every commit) escaped as a raw
SQLAlchemy ``OperationalError``; it is now an `IcefloeError`, and the table is unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fault_harness import IDENT, FaultPlan, Kind, rows, sql_catalog

from icefloe.errors import CommitStateUnknownError, IcefloeError


def test_a_database_failure_on_load_is_typed(templates: dict[str, Any], tmp_path: Path) -> None:
    template = templates["cow"]
    plan = FaultPlan("catalog", 1, Kind.RAISE)
    cat = sql_catalog(plan, template, str(tmp_path / "c.db"))
    table = cat.load_table(IDENT)
    plan.armed = True
    with pytest.raises(IcefloeError, match="catalog database") as info:
        cat.load_table(IDENT)
    assert plan.fired == "db connect"
    assert not isinstance(info.value, CommitStateUnknownError)
    plan.armed, plan.fired, plan.catalog_calls = True, None, 0
    with pytest.raises(IcefloeError, match="catalog database"):
        table.append(rows(100))  # the commit's first pointer read fails: nothing committed
    plan.armed = False
    assert cat.load_table(IDENT).metadata_location == template.metadata_location
