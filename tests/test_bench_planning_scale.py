"""The planning-scale bench scenario runs at a tiny size (no timing asserts): tables are built and
cached, every engine plans the matching files, icefloe opens exactly the matching manifests, and
the curve renders. Iceberg Java joins only with ICEFLOE_BENCH_JAVA=1 (it starts a JVM)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def test_grid_from_options_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.scenarios import SCENARIOS, planning_scale

    assert planning_scale.grid(
        {"planning_scale_files": (100, 1000), "planning_scale_manifests": (10, 1000)}
    ) == [
        (100, 10),
        (1000, 10),
        (1000, 1000),
    ]
    monkeypatch.setenv("BENCH_PLANNING_SCALE_FILES", "10_000")
    monkeypatch.setenv("BENCH_PLANNING_SCALE_MANIFESTS", "100,1000,10000")
    assert planning_scale.grid({}) == [(10_000, 100), (10_000, 1000), (10_000, 10_000)]
    with pytest.raises(ValueError, match="unknown engines"):
        planning_scale._engines({"planning_scale_engines": "icefloe,spark"})
    assert "planning-scale" in SCENARIOS


def test_planning_scale_runs_at_a_tiny_size(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    from bench._core import Context
    from bench.scenarios import planning_scale

    engines = "icefloe,pyiceberg,java" if os.environ.get("ICEFLOE_BENCH_JAVA") == "1" else "icefloe,pyiceberg"
    ctx = Context(
        scale=1.0,
        repeat=1,
        warmup=0,
        data_dir=tmp_path / "data",
        work_dir=tmp_path / "work",
        options={
            "planning_scale_files": (12,),
            "planning_scale_manifests": (2, 4),
            "planning_scale_engines": engines,
        },
    )
    ctx.say = lambda msg: None  # type: ignore[method-assign]
    results = planning_scale.run(ctx)
    assert [r.name for r in results] == [
        "selective_f12_m2",
        "full_f12_m2",
        "selective_f12_m4",
        "full_f12_m4",
    ]
    for r in results:
        assert r.skipped is None
        assert all(c["met"] for c in r.checks), r.checks
        expected = {"icefloe-cold", "icefloe", "pyiceberg"} | ({"java"} if "java" in engines else set())
        assert set(r.median_s) == expected
        assert r.metrics["pyiceberg_manifests_opened"] == r.metrics["matching_manifests"]
        assert r.metrics["pyiceberg_files"] == r.metrics["matching_files"]
    selective, full = results[2], results[3]
    assert (selective.metrics["icefloe_manifests_opened"], full.metrics["icefloe_manifests_opened"]) == (1, 4)
    assert (selective.metrics["matching_files"], full.metrics["matching_files"]) == (3, 12)
    # The tables are cached: a second run builds nothing and plans the same.
    built = sorted(p.name for p in (tmp_path / "data" / "planning-scale").iterdir())
    assert built == ["f12-m2", "f12-m4"]
    again = planning_scale.run(ctx)
    assert [r.metrics["icefloe_files"] for r in again] == [r.metrics["icefloe_files"] for r in results]
    table = planning_scale.render(results)
    assert table.count("\n") == len(results) + 1
    assert "| full | 12 | 4 | 4 |" in table
