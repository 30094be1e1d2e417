"""The main job on Spark at a tiny scale, in the suite's shared session: ingest, queries, the late
batch and time travel through the icefloe data source, with the demo's own cross-checks (Q6 against
the source Parquet, every source row readable, time travel returning the earlier answer)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import icefloe
from icefloe.cli._demo_spark import run_spark


def test_spark_demo_smoke(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")
    run_spark(tmp_path, 0.005, fresh=True, spark=spark)
    out = capsys.readouterr().out
    assert "Q6 now matches Q6 computed directly on the source Parquet" in out
    assert "every source row is readable" in out
    assert "tpch.lineitem: 2 snapshots" in out
    assert "tpch.orders: 1 snapshots" in out

    cat = icefloe.load_catalog(
        "demo",
        type="sql",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=(tmp_path / "warehouse").as_uri(),
    )
    lineitem = cat.load_table("tpch.lineitem")
    first, second = lineitem.snapshots()
    # the late batch landed in old partitions: its files share months with the first append's
    assert [s.summary.operation.value for s in (first, second)] == ["append", "append"]
    assert int(second.summary.properties["added-records"]) > 0
    assert str(lineitem.spec().fields[0].transform) == "month"
    assert str(cat.load_table("tpch.orders").spec().fields[0].transform) == "bucket[16]"
