"""The ``icefloe`` command under click's test runner, against a SQLite catalog in a temporary
directory (no ``~/.icefloe.yaml`` and no ``ICEFLOE_*`` variables of the machine apply)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import icefloe
from icefloe.cli._app import cli

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def rows(start: int, n: int, day: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + n)),
            "s": [f"s{i % 3}" for i in range(start, start + n)],
            "ts": [dt.datetime(2024, 1, day, 12, tzinfo=dt.UTC)] * n,
        },
        schema=SCHEMA,
    )


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for key in list(__import__("os").environ):
        if key.startswith("ICEFLOE_CATALOG") or key == "ICEFLOE_DEBUG":
            monkeypatch.delenv(key)


@pytest.fixture
def catalog_args(tmp_path: Path) -> list[str]:
    (tmp_path / "wh").mkdir(exist_ok=True)
    return ["--uri", f"sqlite:///{tmp_path / 'cat.db'}", "--warehouse", (tmp_path / "wh").as_uri()]


@pytest.fixture
def catalog(tmp_path: Path, catalog_args: list[str]) -> icefloe.Catalog:
    return icefloe.load_catalog("default", uri=catalog_args[1], warehouse=catalog_args[3])


@pytest.fixture
def orders(catalog: icefloe.Catalog) -> icefloe.Table:
    """sales.orders: day-partitioned, five appends over three days, then a merge-on-read delete."""
    catalog.create_namespace("sales")
    t = catalog.create_table(
        "sales.orders",
        schema=SCHEMA,
        partition_by=["day(ts)"],
        properties={"write.delete.mode": "merge-on-read"},
    )
    for i in range(5):
        t.append(rows(i * 100, 100, 1 + i % 3))
    t.delete("id < 20")
    return t


Invoke = Callable[..., Result]


@pytest.fixture
def icefloe_cli(catalog_args: list[str]) -> Invoke:
    """``icefloe_cli("tables", "--json")`` runs ``icefloe --uri ... --warehouse ... tables --json``;
    ``code=`` is the expected exit code (0 by default)."""
    runner = CliRunner()

    def invoke(
        *args: str, code: int = 0, input: str | None = None, global_args: list[str] | None = None
    ) -> Result:
        argv = [*(catalog_args if global_args is None else global_args), *args]
        result = runner.invoke(cli, argv, input=input, catch_exceptions=True)
        assert result.exit_code == code, (
            f"icefloe {' '.join(argv)} exited {result.exit_code}, expected {code}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}\nexception: {result.exception!r}"
        )
        return result

    return invoke


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)
