"""The ``spark-memory`` bench harness (bench/scenarios/spark_memory.py): it runs on a tiny table
in a child Spark driver with a 512m heap, reads every row, finds the data source's Python workers
and measures them against the documented bound; its verdicts follow the figures. Memory, never
timing. The fast-path case (another JVM: ~30 s more) runs with ICEFLOE_BENCH_SPARK_MEMORY_ALL=1."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from icefloe.spark._source_memory import read_memory_bound, worker_memory_bound

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

MIB = 8  # the stream-memory table of 8 MiB of Arrow data: 2 files


def test_bound_grows_with_batch_row_group_and_parallelism_only() -> None:
    assert worker_memory_bound(4_000_000, 3_000_000) == 2 * 3_000_000 + 3 * 4_000_000
    assert read_memory_bound(4_000_000, 3_000_000, 1) == worker_memory_bound(4_000_000, 3_000_000)
    assert read_memory_bound(4_000_000, 3_000_000, 4) == 4 * worker_memory_bound(4_000_000, 3_000_000)
    assert worker_memory_bound(2_000_000, 3_000_000) < worker_memory_bound(4_000_000, 3_000_000)


def _round(**kw: Any) -> dict[str, Any]:
    rows = 1000
    r: dict[str, Any] = {
        "case": "data_source",
        "table_rows": rows,
        "decoded_bytes": 5120 << 20,
        "files": 3,
        "rows": rows,
        "id_sum": rows * (rows - 1) // 2,
        "chars": 16 * rows,
        "seconds": 1.0,
        "hwm_reset": True,
        "heap_peak": 100 << 20,
        "heap_after_gc_max": 60 << 20,
        "heap_max": 512 << 20,
        "jvm_growth": 10 << 20,
        "workers_warm": 2,
        "worker_growth_max": 8 << 20,
        "workers_growth_sampled": 15 << 20,
        "bound": 40 << 20,
        "worker_bound": 20 << 20,
        "batch_bytes": 4 << 20,
        "row_group_bytes": 3 << 20,
    }
    r.update(kw)
    return r


def test_verdicts_follow_the_figures() -> None:
    from bench.scenarios.spark_memory import evaluate

    ok = evaluate("data_source", [_round(), _round(worker_growth_max=12 << 20)], 5120)
    assert all(c["met"] for c in ok.checks)
    ratios = {q["label"]: q for q in ok.ratios}
    worker = ratios["data source: worker RSS growth vs bound"]
    assert worker["met"] is True and worker["value"] == pytest.approx(12 / 20)  # the worst round
    assert ok.metrics["table_vs_heap_limit"] == pytest.approx(10.0)

    over = evaluate("data_source", [_round(worker_growth_max=21 << 20)], 5120)
    assert {q["label"]: q["met"] for q in over.ratios}["data source: worker RSS growth vs bound"] is False

    wrong = evaluate("data_source", [_round(id_sum=7)], 5120)
    assert [c["met"] for c in wrong.checks] == [True, False]

    # A child that ran out of heap: the check fails with its reason, nothing is judged.
    oom = evaluate("fast_path", [{**_round(), "failed": "child exited 1: java.lang.OutOfMemoryError"}], 5120)
    assert oom.checks[0]["met"] is False and "OutOfMemoryError" in oom.checks[0]["detail"]
    assert oom.ratios == []

    # Without a warm worker whose high-water mark was reset there is no per-worker verdict.
    cold = evaluate("data_source", [_round(workers_warm=0)], 5120)
    assert "data source: worker RSS growth vs bound" not in {q["label"] for q in cold.ratios}


def _measure(tmp_path: Path, case: str) -> dict[str, Any]:
    pytest.importorskip("pyspark")
    from bench.scenarios.spark_memory import measure

    r = measure(tmp_path / "data", MIB << 20, case, timeout=300)
    assert "failed" not in r, r.get("failed")
    assert r["rows"] == r["table_rows"] > 0
    assert r["id_sum"] == r["table_rows"] * (r["table_rows"] - 1) // 2
    assert r["chars"] == 16 * r["table_rows"]
    if not r["hwm_reset"]:
        pytest.skip("this kernel does not let /proc/<pid>/clear_refs reset high-water marks")
    # The heap limit was applied to the child's JVM, and its peaks were read.
    assert r["heap_max"] <= 512 << 20 and 0 < r["heap_peak"] <= r["heap_max"]
    assert r["jvm_peak"] > 0
    return r


@pytest.mark.spark
def test_data_source_workers_stay_within_their_bound(tmp_path: Path) -> None:
    r = _measure(tmp_path, "data_source")
    assert r["workers_warm"] >= 1 and r["workers_seen"] >= 1  # the reading workers were found
    assert r["worker_bound"] == worker_memory_bound(r["batch_bytes"], r["row_group_bytes"])
    assert r["bound"] == read_memory_bound(r["batch_bytes"], r["row_group_bytes"], r["parallelism"])
    assert 0 <= r["worker_growth_max"] <= r["worker_bound"], r
    assert r["workers_growth_sampled"] <= r["bound"], r


@pytest.mark.spark
@pytest.mark.skipif(
    os.environ.get("ICEFLOE_BENCH_SPARK_MEMORY_ALL") != "1", reason="set ICEFLOE_BENCH_SPARK_MEMORY_ALL=1"
)
def test_fast_path_reads_without_python_workers(tmp_path: Path) -> None:
    r = _measure(tmp_path, "fast_path")
    assert r["workers_seen"] == 0  # Spark's Parquet reader: no Python worker reads data
