"""Keeps ``python -m bench`` from rotting: two cheap scenarios at a tiny size, one timed round, no
timing asserts (benchmarks are never timed inside the test suite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_bench_entry_point_runs_planning_and_commit(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    args = [
        sys.executable,
        "-m",
        "bench",
        "planning",
        "commit",
        "--planning-manifests",
        "3",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--data-dir",
        str(tmp_path / "data"),
        "--out",
        str(tmp_path / "out"),
    ]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        args.append("--no-chart")
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result_file,) = (tmp_path / "out").glob("*.json")
    doc = json.loads(result_file.read_text())
    cases = {(r["scenario"], r["case"]): r for r in doc["results"]}
    assert set(cases) == {("planning", "selective"), ("planning", "full"), ("commit", "small_append")}
    for r in cases.values():
        assert r["skipped"] is None
        assert all(len(v) == 1 for v in r["times_s"].values())
        assert all(q["value"] > 0 and q["met"] in (True, False) for q in r["ratios"])
    # Planning opened exactly the manifest list and the matching manifests, and agreed with PyIceberg.
    assert all(c["met"] for c in cases[("planning", "selective")]["checks"])
    assert all(c["met"] for c in cases[("planning", "full")]["checks"])
    assert "MET" in proc.stdout or "MISSED" in proc.stdout
    if "--no-chart" not in args:
        assert list((tmp_path / "out").glob("*.png"))


@pytest.mark.postgres
def test_bench_catalogs_scenario_runs(tmp_path: Path) -> None:
    """The per-catalog commit latency scenario (it starts its own PostgreSQL) runs end to end."""
    pytest.importorskip("pyiceberg")
    pytest.importorskip("psycopg")
    from icefloe.testing.postgres import find_postgres_bin

    try:
        find_postgres_bin()
    except Exception as e:
        if os.environ.get("CI", "") not in ("", "0"):
            raise
        pytest.skip(str(e))
    args = [sys.executable, "-m", "bench", "catalogs", "--repeat", "1", "--warmup", "0", "--no-chart"]
    args += ["--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result_file,) = (tmp_path / "out").glob("*.json")
    (case,) = json.loads(result_file.read_text())["results"]
    assert case["skipped"] is None, case["skipped"]
    kinds = ("sqlite", "postgres", "rest", "rest-postgres")
    assert set(case["median_s"]) == {f"{side}-{kind}" for side in ("icefloe", "pyiceberg") for kind in kinds}
    assert all(c["met"] for c in case["checks"]), case["checks"]
