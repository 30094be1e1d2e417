"""The main job at a tiny scale on the Arrow engine (no JVM): it must run end to end and its own
cross-checks must pass. The Spark engine's smoke test is ``tests/spark/test_demo_spark.py``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from icefloe.cli.demo import main


def _require_tpchgen() -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")


def test_demo_pipeline_smoke_arrow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _require_tpchgen()
    assert main(["--engine", "arrow", "--workdir", str(tmp_path), "--scale", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "matches Q6 computed directly on the source Parquet" in out
    assert "tpch.lineitem: 2 snapshots" in out


def test_demo_rejects_an_unknown_engine(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--engine", "flink"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
