"""Keeps ``python -m bench`` from rotting: three cheap scenarios at a tiny size, one timed round,
no timing asserts (benchmarks are never timed inside the test suite); the scoreboard lists every
declared target, and bench/README.md's targets table is the declarations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_bench_entry_point_runs_planning_and_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--scoreboard`` on three cheap scenarios at tiny sizes: results, scoreboard, chart."""
    pytest.importorskip("pyiceberg")
    args = [
        sys.executable,
        "-m",
        "bench",
        "--scoreboard",
        "planning",
        "commit",
        "stream-memory",
        "--planning-manifests",
        "3",
        "--planning-no-fresh",  # its child interpreters take seconds each on a loaded machine
        "--memory-mib",
        "4",
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
    (result_file,) = [p for p in (tmp_path / "out").glob("*.json") if not p.name.startswith("scoreboard-")]
    doc = json.loads(result_file.read_text())
    cases = {(r["scenario"], r["case"]): r for r in doc["results"]}
    assert set(cases) == {
        ("planning", "selective"),
        ("planning", "full"),
        ("commit", "small_append"),
        ("stream-memory", "to_batches"),
    }
    for key in [("planning", "selective"), ("planning", "full"), ("commit", "small_append")]:
        r = cases[key]
        assert r["skipped"] is None
        assert all(len(v) == 1 for v in r["times_s"].values())
        assert all(q["value"] > 0 and q["met"] in (True, False) for q in r["ratios"])
    # Planning opened exactly the manifest list and the matching manifests, and agreed with PyIceberg.
    assert all(c["met"] for c in cases[("planning", "selective")]["checks"])
    assert all(c["met"] for c in cases[("planning", "full")]["checks"])
    # The streamed table was read whole, and the memory bound is known.
    memory = cases[("stream-memory", "to_batches")]
    assert all(c["met"] for c in memory["checks"]), memory["checks"]
    assert memory["metrics"]["bound_bytes"] > 0
    assert "MET" in proc.stdout or "MISSED" in proc.stdout
    if "--no-chart" not in args:
        assert list((tmp_path / "out").glob("*.png"))

    # The scoreboard: printed, saved as JSON and markdown, one row per declared target.
    from bench.scoreboard import declared_targets

    assert "SCOREBOARD" in proc.stdout
    (board_file,) = (tmp_path / "out").glob("scoreboard-*.json")
    (board_md,) = (tmp_path / "out").glob("scoreboard-*.md")
    board = json.loads(board_file.read_text())
    rows = {r["id"]: r for r in board["rows"] if r["declared"]}
    targets = declared_targets()
    assert list(rows) == [t.id for t in targets]
    ran = {"planning", "commit", "stream-memory"}
    for t in targets:
        row = rows[t.id]
        assert (row["verdict"] == "not run") == (t.scenario not in ran), row
        assert t.id in proc.stdout and f"`{t.id}`" in board_md.read_text()
    assert rows["commit.small_append.vs-pyiceberg"]["verdict"] in ("MET", "MISSED")
    assert rows["commit.small_append.vs-pyiceberg"]["wall"] > 0
    assert rows["planning.selective.files-opened"]["verdict"] == "MET"
    assert rows["stream-memory.to_batches.rss-vs-bound"]["verdict"] == "REPORTED"
    # A 4 MiB table is too few batches for Arrow's allocation to be sampled: said, not judged.
    assert rows["stream-memory.to_batches.arrow-vs-bound"]["verdict"] == "SKIPPED"
    assert "not sampled" in rows["stream-memory.to_batches.arrow-vs-bound"]["note"]

    # --from rebuilds the same scoreboard from the saved results, running nothing.
    from bench._cli import main

    capsys.readouterr()
    assert main(["--from", str(result_file)]) == 0
    table = proc.stdout[proc.stdout.index("SCOREBOARD") :].split("\nresults:")[0].strip()
    assert capsys.readouterr().out.strip() == table


def test_readme_targets_table_is_the_declarations() -> None:
    """bench/README.md's targets table is ``python -m bench --targets`` (one source of truth)."""
    from bench.scoreboard import targets_markdown

    text = (ROOT / "bench" / "README.md").read_text()
    begin = text.index("<!-- targets:begin")
    begin = text.index("\n", begin) + 1
    end = text.index("<!-- targets:end -->")
    assert text[begin:end].strip() == targets_markdown(), (
        "bench/README.md's targets table is stale: paste the output of `python -m bench --targets`"
    )


def _result(scenario: str, case: str, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"scenario": scenario, "case": case, "ratios": [], "checks": [], "metrics": {}}
    r["skipped"] = None
    r.update(kw)
    return r


def _ratio(label: str, value: float, op: str | None = ">=", target: float | None = 0.9) -> dict[str, Any]:
    return {"label": label, "value": value, "cpu_value": value * 1.1, "op": op, "target": target, "met": None}


def test_scoreboard_rows_judge_skip_and_list_the_undeclared() -> None:
    from bench.scoreboard import build_rows, declared_targets, render_markdown, render_text

    targets = declared_targets()
    results = [
        _result(
            "scan",
            "full",
            ratios=[
                _ratio("full scan: speed vs pyarrow.dataset", 0.95),
                _ratio("full scan, caches cleared: speed vs pyarrow.dataset", 0.5),
                # the scenario's own target differs from the declaration: flagged, declaration wins
                _ratio("full scan: speed vs PyIceberg", 1.6, ">=", 1.2),
                _ratio("full scan: something new", 2.0, None, None),
            ],
            checks=[{"label": "same rows on every side", "met": False, "detail": "1 vs 2"}],
        ),
        _result("scan", "filtered", skipped="not available yet: something"),
        _result("spark", "write", ratios=[_ratio("spark write: speed vs raw Parquet", 0.7)]),
        _result("spark", "scan_full", metrics={"iceberg_java": "oracle venv not found"}),
        _result("concurrent", "8_writers", metrics={"commits_per_s": 12.5}, checks=[]),
    ]
    run_info = {"scenarios": ["scan", "spark", "concurrent"], "scale": 0.1, "repeat": 1, "warmup": 0}
    rows = build_rows(run_info, results, targets)
    by_id = {r["id"]: r for r in rows if r["declared"]}
    assert len(by_id) == len(targets)
    assert by_id["scan.full.vs-pyarrow"]["verdict"] == "MET"
    assert by_id["scan.full.vs-pyarrow"]["cpu"] == pytest.approx(0.95 * 1.1)
    assert by_id["scan.full.cold-vs-pyarrow"]["verdict"] == "MISSED"
    assert by_id["scan.full.vs-pyiceberg"]["verdict"] == "MET"  # 1.6 >= the declared 1.5
    assert "own target differs" in by_id["scan.full.vs-pyiceberg"]["note"]
    assert by_id["scan.filtered.vs-pyarrow"]["verdict"] == "SKIPPED"
    assert by_id["scan.filtered.vs-pyarrow"]["note"] == "not available yet: something"
    assert by_id["spark.write.vs-raw"]["verdict"] == "MISSED"
    assert by_id["spark.scan_full.vs-raw"]["verdict"] == "SKIPPED"
    assert "oracle venv not found" in by_id["spark.scan_full.vs-raw"]["note"]
    assert by_id["concurrent.8_writers.commits-per-s"]["measured"] == "12.5 commits/s"
    assert by_id["concurrent.8_writers.all-land"]["verdict"] == "SKIPPED"
    assert by_id["planning.full.vs-pyiceberg"]["verdict"] == "not run"
    undeclared = [r for r in rows if not r["declared"]]
    assert [(r["what"], r["verdict"]) for r in undeclared] == [
        ("[undeclared] full: full scan: something new", "REPORTED"),
        ("[check] full: same rows on every side", "MISSED"),
    ]
    text = render_text(rows, run_info)
    assert "[undeclared] full: full scan: something new" in text and "not run" in text
    assert render_markdown(rows, run_info).count("\n| `") == len(rows)


def test_target_declarations_are_checked() -> None:
    from bench._core import Target
    from bench.scoreboard import _validate

    ok = Target("scan.x.y", "scan", "x", "what", ratio="label")
    _validate([ok])
    with pytest.raises(ValueError, match="twice"):
        _validate([ok, ok])
    with pytest.raises(ValueError, match="start with its scenario"):
        _validate([Target("x.y", "scan", "x", "what", ratio="label")])
    with pytest.raises(ValueError, match="exactly one"):
        _validate([Target("scan.x.y", "scan", "x", "what", ratio="a", check="b")])
    with pytest.raises(ValueError, match="go together"):
        _validate([Target("scan.x.y", "scan", "x", "what", ratio="a", op=">=")])


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


def test_small_files_scenario_runs_and_agrees_with_pyarrow(tmp_path: Path) -> None:
    """``small-files`` at 12 files, one round: every side reads the rows it should, icefloe's rows
    equal pyarrow.dataset's with the same deletes applied by pyarrow (the same-work side), and
    every declared ratio of the scenario is reported."""
    args = [
        sys.executable,
        "-m",
        "bench",
        "small-files",
        "--small-files-appends",
        "3",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--no-chart",
        "--data-dir",
        str(tmp_path / "data"),
        "--out",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result_file,) = (tmp_path / "out").glob("*.json")
    cases = {r["case"]: r for r in json.loads(result_file.read_text())["results"]}
    assert set(cases) == {"full", "filtered", "full_deletes", "filtered_deletes"}
    for name, r in cases.items():
        assert r["skipped"] is None
        assert [c["label"] for c in r["checks"] if not c["met"]] == [], (name, r["checks"])
        assert any("same work" in c["label"] for c in r["checks"])
        labels = {q["label"] for q in r["ratios"]}
        assert any(label.endswith("speed vs pyarrow doing the same work") for label in labels), labels
        rows = r["metrics"]
        assert rows["icefloe"]["rows"] == rows["pyarrow_same_work"]["rows"]
        if name.endswith("_deletes"):
            assert rows["icefloe"]["rows"] < rows["pyarrow_dataset"]["rows"]
    from bench.scoreboard import declared_targets

    declared = {t.ratio for t in declared_targets() if t.scenario == "small-files"}
    reported = {q["label"] for r in cases.values() for q in r["ratios"]}
    assert reported <= declared, reported - declared
