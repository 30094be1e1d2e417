"""The main job at a tiny scale: it must run end to end and its own cross-checks must pass."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from icefloe.cli.demo import main


def test_demo_pipeline_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")
    assert main(["--workdir", str(tmp_path), "--scale", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "matches Q6 computed directly on the source Parquet" in out
    assert "tpch.lineitem: 2 snapshots" in out
