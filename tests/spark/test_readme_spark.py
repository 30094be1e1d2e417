"""The Spark example of README.md runs as written (after the README's other examples, which
create the tables it uses), on the suite's session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icefloe.spark
from icefloe.spark.setup import HIDE_TRACEBACK_CONF
from tests.test_readme_and_docs import ROOT, python_blocks, run_blocks

pytestmark = pytest.mark.spark


def test_readme_spark_example(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))
    readme = ROOT / "README.md"
    spark_blocks = python_blocks(readme, spark=True)
    assert len(spark_blocks) == 1
    before = spark.conf.get(HIDE_TRACEBACK_CONF, None)
    namespace: dict[str, object] = {}
    try:
        run_blocks(readme, python_blocks(readme), tmp_path, namespace)
        run_blocks(readme, spark_blocks, tmp_path, namespace)
    finally:
        if before is None:
            spark.conf.unset(HIDE_TRACEBACK_CONF)
        else:
            spark.conf.set(HIDE_TRACEBACK_CONF, before)
        for key in ("uri", "warehouse"):
            spark.conf.unset(f"spark.icefloe.catalog.prod.{key}")
        icefloe.spark.register(spark)
    out = capsys.readouterr().out
    assert "table 'sales.missing' does not exist in catalog 'prod'" in out
    cat = namespace["cat"]
    assert cat.load_table("sales.events").scan().count() == 1  # type: ignore[attr-defined]
    assert cat.load_table("sales.orders").scan(row_filter="id = 100").count() == 1  # type: ignore[attr-defined]
