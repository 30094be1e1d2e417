"""Keeps the REST benchmark from rotting: ``rest-commit`` for one round, no timing asserts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_rest_commit_runs(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    args = [sys.executable, "-m", "bench", "rest-commit", "--repeat", "1", "--warmup", "0", "--no-chart"]
    args += ["--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result_file,) = (tmp_path / "out").glob("*.json")
    (result,) = json.loads(result_file.read_text())["results"]
    assert (result["scenario"], result["case"], result["skipped"]) == ("rest-commit", "small_append", None)
    assert all(c["met"] for c in result["checks"])
    assert all(q["value"] > 0 for q in result["ratios"])
